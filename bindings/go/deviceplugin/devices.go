// SPDX-License-Identifier: MIT

package deviceplugin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	api "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/deviceplugin/v1beta1"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// unit is one allocatable unit of a resource: a device, or one of its
// slots in shared mode.
type unit struct {
	dev    *rdmadpb.Device
	health string
}

// Inventory is what a resource offers at one state of rdmad: its units by
// kubelet device ID, and the list ListAndWatch sends.
type Inventory struct {
	units map[string]unit
	List  []*api.Device
}

// Health is a listed device's health: Healthy when rdmad says it is
// ready (present, usable, a port active, not being unregistered) and the
// plugin is connected to rdmad; Unhealthy otherwise (unready, away,
// removing, removed and still held, or rdmad out of reach, when nothing
// the plugin lists can be trusted).
func Health(d *rdmadpb.Device, connected bool) string {
	if connected && rdmad.Ready(d) {
		return api.Healthy
	}
	return api.Unhealthy
}

// DeviceID is a device's kubelet ID: its rdmad identity (which survives
// renames and re-plugs, so a pod's checkpointed allocation keeps meaning
// the same hardware), with every character but [A-Za-z0-9._-] made '_';
// where that is longer than @room, "id-" and a hash of the identity.
func DeviceID(d *rdmadpb.Device, room int) string {
	id := d.GetIdentity()
	if id == "" {
		id = d.GetName()
	}
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
			c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > room {
		sum := sha256.Sum256([]byte(id))
		return "id-" + hex.EncodeToString(sum[:])[:room-3]
	}
	return string(b)
}

// maxID is the kubelet's limit on a device ID.
const maxID = 63

// unitIDs are the IDs of a device's units: DeviceID in exclusive mode,
// DeviceID-N (N = 0 .. slots-1) in shared mode.
func (r *Resource) unitIDs(d *rdmadpb.Device) []string {
	if r.Mode != Shared {
		return []string{DeviceID(d, maxID)}
	}
	suffix := len(fmt.Sprint(r.Slots-1)) + 1
	base := DeviceID(d, maxID-suffix)
	ids := make([]string, r.Slots)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", base, i)
	}
	return ids
}

// Inventory is what r offers in state s (nil: none known yet).
func (r *Resource) Inventory(s *rdmad.Snapshot, connected bool) *Inventory {
	inv := &Inventory{units: map[string]unit{}, List: []*api.Device{}}
	if s == nil {
		return inv
	}
	// rdmad.Tracked: a removed device stays, Unhealthy, while it is held
	// (the kubelet would show a device dropped from the list Healthy);
	// of two lives of one identity (one ID), the present one first.
	devs := append([]*rdmadpb.Device(nil), s.Devices...)
	sort.SliceStable(devs, func(i, j int) bool {
		return rdmad.StateRank(devs[i]) < rdmad.StateRank(devs[j])
	})
	for _, d := range devs {
		if !rdmad.Tracked(d) || !r.Matches(d) {
			continue
		}
		u := unit{dev: d, health: Health(d, connected)}
		var topo *api.TopologyInfo
		if n := d.GetNumaNode(); n >= 0 {
			topo = &api.TopologyInfo{
				Nodes: []*api.NUMANode{{ID: int64(n)}}}
		}
		for _, id := range r.unitIDs(d) {
			if _, dup := inv.units[id]; dup {
				continue // one life of an identity at a time
			}
			inv.units[id] = u
			inv.List = append(inv.List, &api.Device{ID: id,
				Health: u.health, Topology: topo})
		}
	}
	sort.Slice(inv.List, func(i, j int) bool {
		return inv.List[i].ID < inv.List[j].ID
	})
	return inv
}

// Device is the device behind a unit ID, or nil.
func (inv *Inventory) Device(id string) *rdmadpb.Device {
	return inv.units[id].dev
}

// numa is a unit's NUMA node, -1 when unknown.
func (inv *Inventory) numa(id string) int32 {
	if d := inv.units[id].dev; d != nil {
		return d.GetNumaNode()
	}
	return -1
}
