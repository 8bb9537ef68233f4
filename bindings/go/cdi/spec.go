// SPDX-License-Identifier: MIT

// Package cdi makes Container Device Interface specs of rdmad's devices,
// so that container runtimes (podman, containerd, CRI-O) and the kubelet
// hand out RDMA devices by name: `podman run --device rdmad.io/rdma=mlx5_0`.
//
// Spec turns one state of rdmad (a [rdmad.Snapshot]) into one spec of kind
// rdmad.io/rdma: a CDI device for each present device, named by its kernel
// name, by its rdmad identity (IdentityName) and by each rdmad.conf alias,
// that adds its nodes under /dev/infiniband (uverbsN, the umadN and issmN
// of its ports, rdma_cm) and, when asked, rdmad's socket directory.  The
// kernel name and the aliases are names a person types; what a program
// stores for later (rdmad-device-plugin's answers, which the kubelet
// keeps) is the identity's name, which the kernel never gives to another
// device.
//
// ClaimSpec is the spec of one DRA claim (kind rdmad.io/claim, a file of
// its own), whose devices are named by the claim's UID and the device's
// name in the driver's pool, and whose nodes are those of the device that
// has the prepared identity now, or none.  A Writer puts it in a CDI spec
// directory, checked by the CDI library's own validation (its JSON schema
// and its spec and name rules) and written atomically (a temporary file
// renamed over the old one), only when it changed.  rdmad-cdi(8) and
// rdmad-device-plugin(8) keep such a spec current from rdmad's events.
package cdi

import (
	"crypto/sha256"
	"encoding/hex"
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
	// ClaimClass and ClaimKind are those of a DRA claim's own spec:
	// rdmad.io/claim=UID-DEVICE.
	ClaimClass = "claim"
	ClaimKind  = Vendor + "/" + ClaimClass
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

// IdentityName is the CDI device name of d's rdmad identity (which
// survives renames and returns, and which the kernel never hands to
// another device): the identity with every character a CDI device name
// may not hold made '_', e.g. pci:0000:c1:00.0 stays pci:0000:c1:00.0.
// Where that is no valid CDI device name (it must start and end with a
// letter or digit) it is "id-" and the first 32 hexadecimal digits of the
// identity's SHA-256.  A device without an identity (a daemon before the
// lifecycle feature) has none: "".
func IdentityName(d *rdmadpb.Device) string {
	id := d.GetIdentity()
	if id == "" {
		return ""
	}
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
			c >= '0' && c <= '9' || c == '_' || c == '-' ||
			c == '.' || c == ':') {
			b[i] = '_'
		}
	}
	if cdiapi.ValidateDeviceName(string(b)) != nil {
		sum := sha256.Sum256([]byte(id))
		return "id-" + hex.EncodeToString(sum[:])[:32]
	}
	return string(b)
}

// StableName is the qualified CDI name to store for d: its identity's
// (rdmad.io/rdma=IDENTITY), or its kernel name's where rdmad gives no
// identity.
func StableName(d *rdmadpb.Device) string {
	if n := IdentityName(d); n != "" {
		return Name(n)
	}
	return Name(d.GetName())
}

// Names are the CDI device names of d: its kernel name, its identity's
// name (IdentityName, where rdmad gives one), then each alias that is a
// valid CDI device name and not already taken in @taken.
func Names(d *rdmadpb.Device, taken map[string]bool) []string {
	names := []string{d.GetName()}
	id := IdentityName(d)
	if id != "" && id != d.GetName() {
		names = append(names, id)
	}
	for _, a := range d.GetAliases() {
		if !taken[a] && a != d.GetName() && a != id &&
			cdiapi.ValidateDeviceName(a) == nil {
			names = append(names, a)
		}
	}
	return names
}

// Spec is the CDI spec of state s: the devices Offered, by name,
// identity and alias.
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
	// Kernel names and identities are taken first: no alias takes one.
	taken := map[string]bool{}
	offered := []*rdmadpb.Device{}
	for _, d := range s.Devices {
		if Offered(d) && cdiapi.ValidateDeviceName(d.GetName()) == nil {
			taken[d.GetName()] = true
			taken[IdentityName(d)] = true
			offered = append(offered, d)
		}
	}
	for _, d := range offered {
		edits := nodeEdits(d, o)
		for _, name := range Names(d, taken) {
			taken[name] = true
			spec.Devices = append(spec.Devices,
				specs.Device{Name: name, ContainerEdits: edits})
		}
	}
	return spec
}

// nodeEdits are the container edits that give d's nodes.
func nodeEdits(d *rdmadpb.Device, o Options) specs.ContainerEdits {
	var edits specs.ContainerEdits
	for _, n := range Nodes(d, o) {
		edits.DeviceNodes = append(edits.DeviceNodes,
			&specs.DeviceNode{Path: n})
	}
	return edits
}

// ClaimName is the qualified CDI name of device @device (its name in the
// DRA driver's pool, made from its identity) of the claim of UID @uid:
// rdmad.io/claim=UID-DEVICE.
func ClaimName(uid, device string) string {
	return cdiapi.QualifiedName(Vendor, ClaimClass, uid+"-"+device)
}

// ClaimFile is the file name of the spec of the claim of UID @uid,
// rdmad.io-claim_UID.json, as the CDI library names a transient spec
// (GenerateTransientSpecName).
func ClaimFile(uid string) string {
	return Vendor + "-" + ClaimClass + "_" + uid + ".json"
}

// ClaimDevice is one device of a prepared claim: its name in the pool,
// and the rdmad device that has its identity now (nil: none has).
type ClaimDevice struct {
	Name string
	Dev  *rdmadpb.Device
}

// ClaimSpec is the spec of the claim of UID @uid: a CDI device
// (ClaimName) for each of @devs whose identity a device Offered has now,
// with that device's nodes.  A device away, removed or unknown has no
// entry, so that a container created for the claim then fails to
// resolve the name rather than get another device's nodes.
func ClaimSpec(uid string, devs []ClaimDevice, o Options) *specs.Spec {
	spec := Spec(nil, o)
	spec.Kind = ClaimKind
	for _, cd := range devs {
		if cd.Dev == nil || !Offered(cd.Dev) {
			continue
		}
		spec.Devices = append(spec.Devices, specs.Device{
			Name:           uid + "-" + cd.Name,
			ContainerEdits: nodeEdits(cd.Dev, o)})
	}
	return spec
}
