// SPDX-License-Identifier: MIT

// Command cdi-resolve resolves CDI device names as a container runtime
// does, through the CDI library's registry (what podman, containerd and
// CRI-O vendor): the specs of DIR are read and validated, each NAME is
// looked up, and the names that do not resolve are refused with the
// registry's own error (InjectDevices: "unresolvable CDI devices ...").
// It prints one JSON object:
//
//	{"devices":{NAME:[CONTAINER-PATH...]},"mounts":{NAME:[PATH...]},
//	 "unresolved":[NAME...],"error":TEXT,"spec_errors":{FILE:[TEXT]}}
//
// The device nodes are listed as the spec gives them, not injected into
// an OCI spec: injection reads the host's nodes (their major and minor),
// and the nodes of umockdev's fake devices exist only to programs
// under its preload.
//
//	cdi-resolve DIR NAME...
package main

import (
	"encoding/json"
	"fmt"
	"os"

	cdiapi "github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"
	oci "github.com/opencontainers/runtime-spec/specs-go"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: cdi-resolve DIR NAME...")
		os.Exit(2)
	}
	reg := cdiapi.GetRegistry(cdiapi.WithSpecDirs(os.Args[1]),
		cdiapi.WithAutoRefresh(false))
	refreshErr := reg.Refresh()
	out := map[string]interface{}{}
	devices, mounts := map[string][]string{}, map[string][]string{}
	var unresolved []string
	for _, name := range os.Args[2:] {
		d := reg.DeviceDB().GetDevice(name)
		if d == nil {
			unresolved = append(unresolved, name)
			continue
		}
		paths := []string{}
		for _, n := range d.ContainerEdits.DeviceNodes {
			paths = append(paths, n.Path)
		}
		devices[name] = paths
		ms := []string{}
		for _, m := range d.GetSpec().ContainerEdits.Mounts {
			ms = append(ms, m.ContainerPath)
		}
		mounts[name] = ms
	}
	if len(unresolved) > 0 {
		_, err := reg.InjectDevices(&oci.Spec{}, os.Args[2:]...)
		out["error"] = fmt.Sprint(err)
	}
	specErrs := map[string][]string{}
	for file, errs := range reg.GetErrors() {
		for _, e := range errs {
			specErrs[file] = append(specErrs[file], e.Error())
		}
	}
	if refreshErr != nil && len(specErrs) == 0 {
		specErrs[""] = []string{refreshErr.Error()}
	}
	out["devices"], out["mounts"], out["unresolved"] = devices, mounts, unresolved
	out["spec_errors"] = specErrs
	json.NewEncoder(os.Stdout).Encode(out)
}
