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
// by name.  A Snapshot and the devices in it are shared and must not be
// modified: updates make new ones.
type Snapshot struct {
	Generation uint64
	Devices    []*rdmadpb.Device
}

// Device returns the device listed under name, or nil.
func (s *Snapshot) Device(name string) *rdmadpb.Device {
	i, ok := s.find(name)
	if !ok {
		return nil
	}
	return s.Devices[i]
}

func (s *Snapshot) find(name string) (int, bool) {
	i := sort.Search(len(s.Devices), func(i int) bool {
		return s.Devices[i].GetName() >= name
	})
	return i, i < len(s.Devices) && s.Devices[i].GetName() == name
}

// Usable reports whether d can be used: present.  A removed device (still
// held by someone) is not, and neither is a state this package does not
// know (PROTOCOL.md section 3).
func Usable(d *rdmadpb.Device) bool {
	return d.GetState() == rdmadpb.DeviceState_DEVICE_STATE_PRESENT
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

// with returns a copy of s at generation gen with d put in under d.Name
// (replacing what was there) and the device called drop, if any, left out.
func (s *Snapshot) with(gen uint64, d *rdmadpb.Device, drop string) *Snapshot {
	out := &Snapshot{Generation: gen,
		Devices: make([]*rdmadpb.Device, 0, len(s.Devices)+1)}
	for _, e := range s.Devices {
		if (drop != "" && e.GetName() == drop) ||
			(d != nil && e.GetName() == d.GetName()) {
			continue
		}
		out.Devices = append(out.Devices, e)
	}
	if d != nil {
		i, _ := out.find(d.GetName())
		out.Devices = append(out.Devices, nil)
		copy(out.Devices[i+1:], out.Devices[i:])
		out.Devices[i] = d
	}
	return out
}

// apply returns the state after ev (PROTOCOL.md section 8), or false for an
// event type this package does not know (a reason to resync).
func (s *Snapshot) apply(ev *rdmadpb.Event) (*Snapshot, bool) {
	d := ev.GetDevice()
	if d == nil {
		return nil, false
	}
	gen := ev.GetGeneration()
	switch ev.GetType() {
	case rdmadpb.EventType_EVENT_TYPE_ADDED,
		rdmadpb.EventType_EVENT_TYPE_CHANGED:
		return s.with(gen, d, ""), true
	case rdmadpb.EventType_EVENT_TYPE_REMOVED:
		if HolderCount(d) == 0 {
			return s.with(gen, nil, d.GetName()), true
		}
		return s.with(gen, d, ""), true
	case rdmadpb.EventType_EVENT_TYPE_RENAMED:
		return s.with(gen, d, d.GetOldName()), true
	case rdmadpb.EventType_EVENT_TYPE_RELEASED:
		return s.with(gen, nil, d.GetName()), true
	}
	return nil, false
}

// assembly collects the parts of one snapshot (PROTOCOL.md section 7).
type assembly struct {
	seq        uint64
	generation uint64
	parts      uint32
	next       uint32
	devices    []*rdmadpb.Device
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
	// Sorted by the daemon; sorting again costs nothing when it is, and
	// keeps Device() right if some daemon does not.
	sort.SliceStable(devs, func(i, j int) bool {
		return devs[i].GetName() < devs[j].GetName()
	})
	return &Snapshot{Generation: a.generation, Devices: devs}, nil
}
