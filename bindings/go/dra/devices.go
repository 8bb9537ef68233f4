// SPDX-License-Identifier: MIT

package dra

// What an rdmad device is on the DRA path: its name in the pool, whether
// the pool lists it, its attributes, its health.

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"sort"
	"strings"

	resourceapi "github.com/rdmad/rdmad/bindings/go/internal/api/resource/v1"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// maxDNSLabel is the longest DNS label (a device name is one).
const maxDNSLabel = 63

// DeviceName is d's name in the pool: a DNS label made from its identity
// (what survives renames and returns, so that a claim allocated before a
// rename still names the same hardware): lower case, every character
// other than a-z and 0-9 made '-', e.g. pci:0000:03:00.0 is
// pci-0000-03-00-0.  Where that is no DNS label (longer than 63, or not
// starting and ending with a letter or digit) it is "id-" and the first
// 60 hexadecimal digits of the SHA-256 of the identity.  A device
// without an identity (a daemon before the lifecycle feature) is named
// after its kernel name the same way.
func DeviceName(d *rdmadpb.Device) string {
	id := d.GetIdentity()
	if id == "" {
		id = d.GetName()
	}
	b := []byte(strings.ToLower(id))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	if len(b) == 0 || len(b) > maxDNSLabel || b[0] == '-' || b[len(b)-1] == '-' {
		sum := sha256.Sum256([]byte(id))
		return "id-" + hex.EncodeToString(sum[:])[:maxDNSLabel-3]
	}
	return string(b)
}

// pooled reports whether the pool lists d: rdmad.Allocatable (a device
// that is away, removed or removing leaves the slice, so that no new
// claim is given it; one present but not ready stays, with ready false:
// a DeviceClass selects ready devices) and taken by @sel (--select).
func pooled(d *rdmadpb.Device, sel rdmad.Selector) bool {
	return rdmad.Allocatable(d) && sel.Matches(d)
}

// Attribute names (the driver's domain is implied: in CEL,
// device.attributes["rdmad.io"].numaNode).
const (
	AttrName       = "name"
	AttrIdentity   = "identity"
	AttrPCIAddress = "pciAddress"
	AttrNodeGUID   = "nodeGUID"
	AttrLinkLayer  = "linkLayer"
	AttrDriver     = "driver"
	AttrNUMANode   = "numaNode"
	AttrReady      = "ready"
	AttrAlias      = "alias"
	AttrAliases    = "aliases"
	AttrSRIOVPF    = "sriovPF"
	AttrPCIeRoot   = "resource.kubernetes.io/pcieRoot"
)

func str(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{String: &s} }

// Attributes are d's attributes: strings the API takes (at most 64
// characters; a longer one is left out), the NUMA node where known, the
// first port's link layer, the first alias and every alias joined by
// commas (as many as fit), and the standard pcieRoot where sysfs under
// @sysRoot says which PCI root bus the device hangs from.
func Attributes(d *rdmadpb.Device, sysRoot string) map[string]resourceapi.DeviceAttribute {
	a := map[string]resourceapi.DeviceAttribute{}
	put := func(k, v string) {
		if v != "" && len(v) <= resourceapi.DeviceAttributeMaxValueLength {
			a[k] = str(v)
		}
	}
	put(AttrName, d.GetName())
	put(AttrIdentity, d.GetIdentity())
	put(AttrPCIAddress, d.GetPciAddress())
	put(AttrNodeGUID, d.GetNodeGuid())
	put(AttrDriver, d.GetDriver())
	put(AttrSRIOVPF, d.GetSriovPf())
	if p := d.GetPorts(); len(p) > 0 {
		put(AttrLinkLayer, p[0].GetLinkLayer())
	}
	if n := int64(d.GetNumaNode()); n >= 0 {
		a[AttrNUMANode] = resourceapi.DeviceAttribute{Int: &n}
	}
	ready := rdmad.Ready(d)
	a[AttrReady] = resourceapi.DeviceAttribute{Bool: &ready}
	if al := d.GetAliases(); len(al) > 0 {
		put(AttrAlias, al[0])
		joined := ""
		for _, x := range al {
			next := x
			if joined != "" {
				next = joined + "," + x
			}
			if len(next) > resourceapi.DeviceAttributeMaxValueLength {
				break
			}
			joined = next
		}
		put(AttrAliases, joined)
	}
	put(AttrPCIeRoot, pcieRoot(sysRoot, d.GetPciAddress()))
	return a
}

// pcieRoot is the PCI root of the function at @addr, "pci0000:00", from
// where /sys/bus/pci/devices/ADDR leads; "" where unknown.
func pcieRoot(sysRoot, addr string) string {
	if addr == "" {
		return ""
	}
	p, err := filepath.EvalSymlinks(filepath.Join(sysRoot, "bus", "pci", "devices", addr))
	if err != nil {
		return ""
	}
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, "pci") && strings.Contains(part, ":") {
			return part
		}
	}
	return ""
}

// Pool is the devices of state @s that the pool lists and @sel takes,
// sorted by name; a name met twice (two lives of one identity listed at
// once, which rdmad does not do) is listed once.
func Pool(s *rdmad.Snapshot, sel rdmad.Selector, sysRoot string) []resourceapi.Device {
	var devs []resourceapi.Device
	seen := map[string]bool{}
	if s != nil {
		for _, d := range s.Devices {
			n := DeviceName(d)
			if !pooled(d, sel) || seen[n] {
				continue
			}
			seen[n] = true
			devs = append(devs, resourceapi.Device{Name: n, Attributes: Attributes(d, sysRoot)})
		}
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	return devs
}
