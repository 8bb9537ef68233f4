// SPDX-License-Identifier: MIT

package rdmad

import (
	"sort"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Bounds on what one snapshot may announce, as librdmad's assembly has
// them (proto/wire.h): a daemon claiming more is treated as broken rather
// than trusted with this process's memory.
const (
	maxSnapshotParts   = 4096
	maxSnapshotDevices = 65536
)

// Snapshot is the whole device list at one generation.  Devices are sorted
// by name, and entries of one name (an ended life still held beside the
// present one, PROTOCOL.md section 8a) by incarnation.  A Snapshot and the
// devices in it are shared and must not be modified: updates make new
// ones.
type Snapshot struct {
	Generation uint64
	Devices    []*rdmadpb.Device
	// View is what this connection sees (PROTOCOL.md section 8b): the
	// namespaces rdmad found for this process, its pod, the kernel's
	// RDMA netns mode, whether it sees every device and holder.  It
	// comes with every snapshot; the states a Subscription makes from
	// events keep the last one.  Nil from a daemon before views.
	View *rdmadpb.View
}

// Life names one entry of the list under the lifecycle feature: a
// device's identity, which survives every registration, and the
// incarnation, which counts them (PROTOCOL.md section 8a).
type Life struct {
	Identity    string
	Incarnation uint64
}

// LifeOf is d's (identity, incarnation); Identity is empty where the
// daemon predates the lifecycle feature.
func LifeOf(d *rdmadpb.Device) Life {
	return Life{Identity: d.GetIdentity(), Incarnation: d.GetIncarnation()}
}

// Device returns the device listed under name, or nil.  Where two entries
// share the name (a removed life still held, and the device registered
// again under the same name) it is the one that is not removed, else the
// newest.
func (s *Snapshot) Device(name string) *rdmadpb.Device {
	i, ok := s.find(name)
	if !ok {
		return nil
	}
	best := s.Devices[i]
	for _, d := range s.Devices[i+1:] {
		if d.GetName() != name {
			break
		}
		if StateRank(d) <= StateRank(best) {
			best = d
		}
	}
	return best
}

// Life returns the entry of life l, or nil.
func (s *Snapshot) Life(l Life) *rdmadpb.Device {
	for _, d := range s.Devices {
		if d.GetIdentity() == l.Identity &&
			d.GetIncarnation() == l.Incarnation {
			return d
		}
	}
	return nil
}

// Resolve returns the device that nameOrAlias names in s: a device of
// that kernel name or one whose Aliases (rdmad.conf's [alias], which
// follow the hardware across its lives) list it.  Where several match, a
// present one wins over an away one, and that over a removed one; at the
// same state a kernel name wins over an alias.  Nil when none matches.
func Resolve(s *Snapshot, nameOrAlias string) *rdmadpb.Device {
	var best *rdmadpb.Device
	bestRank := 0
	for _, d := range s.Devices {
		rank := 2 * StateRank(d)
		if d.GetName() != nameOrAlias {
			if !hasAlias(d, nameOrAlias) {
				continue
			}
			rank++
		}
		if best == nil || rank < bestRank {
			best, bestRank = d, rank
		}
	}
	return best
}

func hasAlias(d *rdmadpb.Device, alias string) bool {
	for _, a := range d.GetAliases() {
		if a == alias {
			return true
		}
	}
	return false
}

// StateRank orders states for lookups (the life of a name or identity to
// prefer first): present, away, the rest.
func StateRank(d *rdmadpb.Device) int {
	switch d.GetState() {
	case rdmadpb.DeviceState_DEVICE_STATE_PRESENT:
		return 0
	case rdmadpb.DeviceState_DEVICE_STATE_AWAY:
		return 1
	}
	return 2
}

// less is the order of Snapshot.Devices: name, then incarnation.
func less(a, b *rdmadpb.Device) bool {
	if a.GetName() != b.GetName() {
		return a.GetName() < b.GetName()
	}
	return a.GetIncarnation() < b.GetIncarnation()
}

func (s *Snapshot) find(name string) (int, bool) {
	i := sort.Search(len(s.Devices), func(i int) bool {
		return s.Devices[i].GetName() >= name
	})
	return i, i < len(s.Devices) && s.Devices[i].GetName() == name
}

// Usable reports whether d can be used: present (Present) and not flagged
// Unusable in this view.  A removed device (still held by someone) is
// not, an away one (gone, expected back) is not, and neither is a state
// this package does not know (PROTOCOL.md section 3).  Ready says whether
// it can be used now.
func Usable(d *rdmadpb.Device) bool {
	return Present(d) && !Unusable(d)
}

// Unusable reports whether a client of this view (its namespaces and
// uid) could not open d: ibv_open_device() failed with EPERM or EACCES,
// the device cgroup or the node's permissions refused it (PROTOCOL.md
// section 8b).  The flag holds for this incarnation; librdmad leaves such
// a device out of ibv_refresh_device_list().
func Unusable(d *rdmadpb.Device) bool {
	return d.GetUnusable()
}

// Present reports whether d is registered with the kernel now: state
// PRESENT, neither AWAY nor REMOVED (nor a state this package does not
// know).
func Present(d *rdmadpb.Device) bool {
	return d.GetState() == rdmadpb.DeviceState_DEVICE_STATE_PRESENT
}

// Away reports whether d is gone with a grace period: expected back, as a
// new incarnation of the same entry (RETURNED), before
// d.AwayDeadlineMs (PROTOCOL.md section 8a).
func Away(d *rdmadpb.Device) bool {
	return d.GetState() == rdmadpb.DeviceState_DEVICE_STATE_AWAY
}

// Ready reports whether d is usable now: Usable (present, not flagged
// unusable in this view), and ready as the daemon judges it (its uverbs
// device exists, a port is ACTIVE with a GID 0 that is not all zeros and,
// for RoCE and iWARP, a net device that is not down).  A daemon without
// the lifecycle feature never says ready.
func Ready(d *rdmadpb.Device) bool {
	return Usable(d) && d.GetReady() && !d.GetRemoving()
}

// Removing reports whether the kernel has begun to unregister d (the
// event REMOVING, PROTOCOL.md "Removing"): close every verbs context on
// it now.  Drivers without disassociate_ucontext (rxe, siw) finish the
// removal, and the daemon says REMOVED, only once every context is
// closed, so a program that waits for REMOVED first waits for itself.
func Removing(d *rdmadpb.Device) bool {
	return d.GetState() == rdmadpb.DeviceState_DEVICE_STATE_PRESENT &&
		d.GetRemoving()
}

// Allocatable reports whether d may be given to a new claim or container
// now: present and not being unregistered (ready or not: rdmad-dra's pool
// says which with its attribute "ready").  rdmad-dra's pool lists exactly
// these; an away, removing or removed device has left it.
func Allocatable(d *rdmadpb.Device) bool {
	return Present(d) && !d.GetRemoving()
}

// Tracked reports whether d is one that a holder may still have in hand:
// present (being unregistered or not), away (expected back), or removed
// and still held (a snapshot keeps a removed device only while someone
// holds it).  rdmad-device-plugin lists exactly these, Unhealthy unless
// Ready: the kubelet shows a device the plugin no longer lists as Healthy
// in a pod's allocatedResourcesStatus, so a device is dropped only once
// nobody holds it.
func Tracked(d *rdmadpb.Device) bool {
	return Present(d) || Away(d) ||
		d.GetState() == rdmadpb.DeviceState_DEVICE_STATE_REMOVED
}

// HolderCount is the number of holders of d: the daemon lists at most 64
// in d.Holders and counts them all in d.HolderCount, which a daemon older
// than that field leaves 0 (PROTOCOL.md, "Hold and Release").
func HolderCount(d *rdmadpb.Device) uint32 {
	n := uint32(len(d.GetHolders()))
	if d.GetHolderCount() > n {
		return d.GetHolderCount()
	}
	return n
}

// edit returns a copy of s at generation gen without the entries drop
// says yes to, with d (if not nil) put in at its place in the order; the
// first entry dropped is returned too, or nil.
func (s *Snapshot) edit(gen uint64, d *rdmadpb.Device,
	drop func(*rdmadpb.Device) bool) (*Snapshot, *rdmadpb.Device) {
	out := &Snapshot{Generation: gen, View: s.View,
		Devices: make([]*rdmadpb.Device, 0, len(s.Devices)+1)}
	var dropped *rdmadpb.Device
	for _, e := range s.Devices {
		if drop(e) {
			if dropped == nil {
				dropped = e
			}
			continue
		}
		out.Devices = append(out.Devices, e)
	}
	if d != nil {
		i := sort.Search(len(out.Devices), func(i int) bool {
			return !less(out.Devices[i], d)
		})
		out.Devices = append(out.Devices, nil)
		copy(out.Devices[i+1:], out.Devices[i:])
		out.Devices[i] = d
	}
	return out, dropped
}

// apply returns the state after ev and the entry ev replaced or dropped
// (nil when it added one), or false for an event type this package does
// not know (a reason to resync).
//
// With lifecycle (the Hello said the feature) and a device that has an
// identity, the entry ev is about is the one of the same (identity,
// incarnation) (PROTOCOL.md section 8a); else the one of the same name,
// as section 8 has it.  A device REMOVED with a Reason left this view
// (section 8b): it goes whatever its holders, as it is in no later
// snapshot of the view.
func (s *Snapshot) apply(ev *rdmadpb.Event, lifecycle bool) (*Snapshot, *rdmadpb.Device, bool) {
	d := ev.GetDevice()
	if d == nil {
		return nil, nil, false
	}
	gen := ev.GetGeneration()
	same := func(e *rdmadpb.Device) bool { return e.GetName() == d.GetName() }
	if lifecycle && d.GetIdentity() != "" {
		same = func(e *rdmadpb.Device) bool {
			return e.GetIdentity() == d.GetIdentity() &&
				e.GetIncarnation() == d.GetIncarnation()
		}
	}
	put := func(drop func(*rdmadpb.Device) bool) (*Snapshot, *rdmadpb.Device, bool) {
		next, prev := s.edit(gen, d, drop)
		return next, prev, true
	}
	switch ev.GetType() {
	case rdmadpb.EventType_EVENT_TYPE_ADDED,
		rdmadpb.EventType_EVENT_TYPE_CHANGED,
		rdmadpb.EventType_EVENT_TYPE_READY,
		rdmadpb.EventType_EVENT_TYPE_UNREADY,
		rdmadpb.EventType_EVENT_TYPE_REMOVING,
		rdmadpb.EventType_EVENT_TYPE_EXPECTING,
		rdmadpb.EventType_EVENT_TYPE_SETTLED:
		return put(same)
	case rdmadpb.EventType_EVENT_TYPE_RETURNED:
		// The AWAY entry of this identity comes back as this life; an
		// ended life (REMOVED, still held) stays beside it.
		return put(func(e *rdmadpb.Device) bool {
			return same(e) || (d.GetIdentity() != "" &&
				e.GetIdentity() == d.GetIdentity() && Away(e))
		})
	case rdmadpb.EventType_EVENT_TYPE_REMOVED:
		if d.GetReason() != "" || (!Away(d) && HolderCount(d) == 0) {
			next, prev := s.edit(gen, nil, same)
			return next, prev, true
		}
		return put(same)
	case rdmadpb.EventType_EVENT_TYPE_RENAMED:
		if lifecycle && d.GetIdentity() != "" {
			return put(same) // the same life under a new name
		}
		return put(func(e *rdmadpb.Device) bool {
			return same(e) || e.GetName() == d.GetOldName()
		})
	case rdmadpb.EventType_EVENT_TYPE_RELEASED:
		next, prev := s.edit(gen, nil, same)
		return next, prev, true
	}
	return nil, nil, false
}

// assembly collects the parts of one snapshot (PROTOCOL.md section 7).
type assembly struct {
	seq        uint64
	generation uint64
	parts      uint32
	next       uint32
	devices    []*rdmadpb.Device
	view       *rdmadpb.View // part 0's; every part carries the same
}

// add takes the next part; it returns the snapshot once the last part is
// in, or an error when the part is not the one that must come next.
func (a *assembly) add(p *rdmadpb.Snapshot) (*Snapshot, error) {
	if a.next == 0 {
		if p.GetParts() < 1 || p.GetParts() > maxSnapshotParts {
			return nil, protocolError("snapshot announces %d parts",
				p.GetParts())
		}
		a.generation, a.parts = p.GetGeneration(), p.GetParts()
		a.view = p.GetView()
	}
	if p.GetPart() != a.next || p.GetParts() != a.parts ||
		p.GetGeneration() != a.generation {
		return nil, protocolError("snapshot part %d of %d at generation %d "+
			"where part %d of %d at generation %d must come",
			p.GetPart(), p.GetParts(), p.GetGeneration(), a.next, a.parts,
			a.generation)
	}
	if len(a.devices)+len(p.GetDevices()) > maxSnapshotDevices {
		return nil, protocolError("snapshot of more than %d devices",
			maxSnapshotDevices)
	}
	a.devices = append(a.devices, p.GetDevices()...)
	a.next++
	if a.next < a.parts {
		return nil, nil
	}
	devs := a.devices
	if devs == nil {
		devs = []*rdmadpb.Device{}
	}
	// Sorted by name by the daemon; sorting again costs nothing when it is, and
	// keeps Device() right if some daemon does not.
	sort.SliceStable(devs, func(i, j int) bool {
		return less(devs[i], devs[j])
	})
	return &Snapshot{Generation: a.generation, Devices: devs,
		View: a.view}, nil
}
