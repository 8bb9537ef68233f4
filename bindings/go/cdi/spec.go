// SPDX-License-Identifier: MIT

// Package cdi makes Container Device Interface specs of rdmad's devices,
// so that container runtimes (podman, containerd, CRI-O) and the kubelet
// hand out RDMA devices by name: `podman run --device rdmad.io/rdma=mlx5_0`.
//
// Spec turns one state of rdmad (a [rdmad.Snapshot]) into one spec of kind
// rdmad.io/rdma: a CDI device for each present device, named by its kernel
// name and by each rdmad.conf alias, that adds its nodes under
// /dev/infiniband (uverbsN, the umadN and issmN of its ports, rdma_cm) and,
// when asked, rdmad's socket directory.  A Writer puts it in a CDI spec
// directory, checked by the CDI library's own validation (its JSON schema
// and its spec and name rules) and written atomically (a temporary file
// renamed over the old one), only when it changed.  rdmad-cdi(8) and
// rdmad-device-plugin(8) keep such a spec current from rdmad's events.
package cdi

import (
	"os"
	"path/filepath"

	cdiapi "github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"
	specs "github.com/container-orchestrated-devices/container-device-interface/specs-go"

	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

const (
	// Vendor and Class make the spec's kind, rdmad.io/rdma, and the
	// devices' qualified names, rdmad.io/rdma=NAME.
	Vendor = "rdmad.io"
	Class  = "rdma"
	Kind   = Vendor + "/" + Class
	// Version is the CDI version of the specs written: the newest that
	// Debian 12's podman 4.3 (its vendored CDI library, 0.5.x) reads.
	// It refuses "0.6.0".
	Version = "0.5.0"
	// DefaultDir is the spec directory runtimes read besides /etc/cdi.
	DefaultDir = "/var/run/cdi"
	// FileName is the spec's file in that directory.
	FileName = "rdmad.io-rdma.json"
	// DevDir is where the kernel's RDMA character devices are.
	DevDir = "/dev/infiniband"
)

// Options shape the spec.
type Options struct {
	// SocketDir, when set, is bind-mounted read-only at the same path
	// into every container that gets an rdmad device, so that librdmad
	// there reaches rdmad (its socket, e.g. /run/rdmad).
	SocketDir string
	// Exists says whether a node exists on this host; rdma_cm is added
	// only where it does.  Nil: os.Stat.
	Exists func(path string) bool
}

func (o Options) exists(path string) bool {
	if o.Exists != nil {
		return o.Exists(path)
	}
	_, err := os.Stat(path)
	return err == nil
}

// Name is the qualified CDI name of a device or alias: rdmad.io/rdma=NAME.
func Name(name string) string {
	return cdiapi.QualifiedName(Vendor, Class, name)
}

// Offered reports whether d gets a CDI device: present (not away, not
// removed), not being unregistered, and with a uverbs node.
func Offered(d *rdmadpb.Device) bool {
	return rdmad.Allocatable(d) && d.GetUverbs() != ""
}

// Nodes are d's device nodes: its uverbs device, the MAD devices of its
// ports, and rdma_cm (shared by all devices) where the host has it.
func Nodes(d *rdmadpb.Device, o Options) []string {
	nodes := []string{filepath.Join(DevDir, d.GetUverbs())}
	for _, m := range d.GetMadNodes() {
		nodes = append(nodes, filepath.Join(DevDir, m))
	}
	if cm := filepath.Join(DevDir, "rdma_cm"); o.exists(cm) {
		nodes = append(nodes, cm)
	}
	return nodes
}

// Names are the CDI device names of d: its kernel name, then each alias
// that is a valid CDI device name and not already taken in @taken.
func Names(d *rdmadpb.Device, taken map[string]bool) []string {
	names := []string{d.GetName()}
	for _, a := range d.GetAliases() {
		if !taken[a] && a != d.GetName() &&
			cdiapi.ValidateDeviceName(a) == nil {
			names = append(names, a)
		}
	}
	return names
}

// Spec is the CDI spec of state s: the devices Offered, by name and alias.
func Spec(s *rdmad.Snapshot, o Options) *specs.Spec {
	spec := &specs.Spec{Version: Version, Kind: Kind,
		Devices: []specs.Device{}}
	if o.SocketDir != "" {
		spec.ContainerEdits.Mounts = []*specs.Mount{{
			HostPath: o.SocketDir, ContainerPath: o.SocketDir,
			Options: []string{"bind", "ro", "nosuid", "nodev",
				"noexec"},
		}}
	}
	if s == nil {
		return spec
	}
	taken := map[string]bool{}
	offered := []*rdmadpb.Device{}
	for _, d := range s.Devices {
		if Offered(d) && cdiapi.ValidateDeviceName(d.GetName()) == nil {
			taken[d.GetName()] = true
			offered = append(offered, d)
		}
	}
	for _, d := range offered {
		var edits specs.ContainerEdits
		for _, n := range Nodes(d, o) {
			edits.DeviceNodes = append(edits.DeviceNodes,
				&specs.DeviceNode{Path: n})
		}
		for _, name := range Names(d, taken) {
			taken[name] = true
			spec.Devices = append(spec.Devices,
				specs.Device{Name: name, ContainerEdits: edits})
		}
	}
	return spec
}
