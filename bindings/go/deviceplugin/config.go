// SPDX-License-Identifier: MIT

package deviceplugin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rdmad/rdmad/bindings/go/cdi"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// DefaultConfig is where rdmad-device-plugin reads its configuration.
const DefaultConfig = "/etc/rdmad/device-plugin.json"

// Modes of a resource.
const (
	// Exclusive: one allocatable unit per device, for one container.
	Exclusive = "exclusive"
	// Shared: Slots units per device, as k8s-rdma-shared-dev-plugin, for
	// containers that share the device (RDMA devices are shared by
	// design: every process opens its own context).
	Shared = "shared"
)

// Config is rdmad-device-plugin's configuration (rdmad-device-plugin(8)):
//
//	{"resources": [
//	   {"name": "hca", "select": "link_layer:InfiniBand pf"},
//	   {"name": "roce", "select": "driver:mlx5_core link_layer:Ethernet",
//	    "mode": "shared", "slots": 64}],
//	 "resourcePrefix": "rdmad.io",
//	 "cdiSpecDir": "/var/run/cdi", "socketMount": "/run/rdmad",
//	 "deviceSpecs": false}
type Config struct {
	Resources []Resource `json:"resources"`
	// ResourcePrefix makes the resources' names: PREFIX/NAME.
	ResourcePrefix string `json:"resourcePrefix"`
	// CDISpecDir, when set, is where the plugin keeps rdmad's CDI spec
	// as rdmad-cdi does (leave it unset where rdmad-cdi runs).
	CDISpecDir string `json:"cdiSpecDir"`
	// SocketMount, when set, is rdmad's socket directory, mounted
	// read-only into containers (in the CDI spec and in Allocate).
	SocketMount string `json:"socketMount"`
	// DeviceSpecs: Allocate also lists the device nodes and the socket
	// mount, for kubelets and runtimes without CDI (default false).
	// The kubelet keeps them for the pod's life, and they name the
	// kernel's nodes as they were at Allocate: after a re-plug that
	// hands those numbers to another device, a restarted container
	// would get that device too.  Off, all the kubelet keeps is the CDI
	// name, bound to the device's identity.
	DeviceSpecs *bool `json:"deviceSpecs"`
}

// Resource is one extended resource the plugin serves.
type Resource struct {
	Name string `json:"name"`
	// Select: matchers as rdmad.conf's [alias] ones, all of which must
	// hold: pci:ADDR id:IDENTITY guid:GUID netdev:NAME driver:NAME
	// link_layer:InfiniBand|Ethernet vf pf, and alias:GLOB name:GLOB
	// (shell patterns on rdmad's aliases and the kernel name).  Empty:
	// every device.
	Select string `json:"select"`
	Mode   string `json:"mode"`  // Exclusive (default) or Shared
	Slots  int    `json:"slots"` // Shared: units per device, 1..1000
	sel    rdmad.Selector
}

// SocketWarning says why rdmad's socket may reach no container, "" where
// it does or none is asked for.  With socketMount, the socket reaches a
// container through the CDI spec the plugin writes (cdiSpecDir) or
// Allocate's mounts (deviceSpecs); with neither, only through a spec
// rdmad-cdi writes with --socket-mount, which the plugin cannot see to:
// it says whether the spec it finds in the usual CDI directories
// (@specDirs) has the mount.
func (c *Config) SocketWarning(specDirs ...string) string {
	if c.SocketMount == "" || c.CDISpecDir != "" || c.WantDeviceSpecs() {
		return ""
	}
	w := fmt.Sprintf("socketMount %s with neither cdiSpecDir nor deviceSpecs: "+
		"containers get rdmad's socket only where rdmad-cdi writes the CDI spec with --socket-mount %s",
		c.SocketMount, c.SocketMount)
	for _, dir := range specDirs {
		path := filepath.Join(dir, cdi.FileName)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var spec struct {
			ContainerEdits struct {
				Mounts []struct {
					ContainerPath string `json:"containerPath"`
				} `json:"mounts"`
			} `json:"containerEdits"`
		}
		if json.Unmarshal(b, &spec) != nil {
			continue
		}
		for _, m := range spec.ContainerEdits.Mounts {
			if m.ContainerPath == c.SocketMount {
				return w + fmt.Sprintf(" (%s has it)", path)
			}
		}
		return w + fmt.Sprintf(": %s has no such mount, so no container gets the socket", path)
	}
	return w + fmt.Sprintf(": no %s found in %s", cdi.FileName, strings.Join(specDirs, " or "))
}

// WantDeviceSpecs says whether Allocate lists device nodes.
func (c *Config) WantDeviceSpecs() bool {
	return c.DeviceSpecs != nil && *c.DeviceSpecs
}

// FullName is the resource's name as the kubelet knows it.
func (c *Config) FullName(r *Resource) string {
	return c.ResourcePrefix + "/" + r.Name
}

// LoadConfig reads and checks a configuration file.
func LoadConfig(file string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// A resource name's part after the prefix: a DNS label, as the kubelet
// wants; a prefix: a DNS subdomain.
var (
	labelRE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$`)
	domainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
)

// ParseConfig checks a configuration: unknown fields, bad names, modes,
// slots and matchers are errors that say which resource and why.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if c.ResourcePrefix == "" {
		c.ResourcePrefix = "rdmad.io"
	}
	if !domainRE.MatchString(c.ResourcePrefix) {
		return nil, fmt.Errorf("resourcePrefix %q is not a DNS subdomain",
			c.ResourcePrefix)
	}
	if len(c.Resources) == 0 {
		return nil, fmt.Errorf("no resources")
	}
	seen := map[string]bool{}
	for i := range c.Resources {
		r := &c.Resources[i]
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("resource %q: %w", r.Name, err)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("resource %q named twice", r.Name)
		}
		seen[r.Name] = true
	}
	return &c, nil
}

func (r *Resource) check() error {
	if !labelRE.MatchString(r.Name) {
		return fmt.Errorf("name: lower-case letters, digits, '-', '_', '.', at most 63")
	}
	switch r.Mode {
	case "":
		r.Mode = Exclusive
		fallthrough
	case Exclusive:
		if r.Slots > 1 {
			return fmt.Errorf("slots in exclusive mode")
		}
		r.Slots = 1
	case Shared:
		if r.Slots < 1 || r.Slots > 1000 {
			return fmt.Errorf("shared mode needs slots, 1..1000")
		}
	default:
		return fmt.Errorf("mode %q: %q or %q", r.Mode, Exclusive, Shared)
	}
	sel, err := rdmad.ParseSelector(r.Select)
	r.sel = sel
	return err
}

// Matches reports whether d is one of the resource's devices.
func (r *Resource) Matches(d *rdmadpb.Device) bool {
	return r.sel.Matches(d)
}
