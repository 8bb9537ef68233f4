// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"encoding/json"

	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// The JSON of `rdmactl monitor --json` (rdmactl/output.c): the same keys
// in the same order, so that the two print the same lines.

type portJSON struct {
	Port      uint32 `json:"port"`
	State     string `json:"state"`
	PhysState string `json:"phys_state"`
	LinkLayer string `json:"link_layer"`
	Rate      string `json:"rate"`
	Netdev    string `json:"netdev"`
	NetdevUp  bool   `json:"netdev_up"`
	// "up", "down", "unknown" (rdmad does not see it), "" without one.
	NetdevState string `json:"netdev_state"`
	Lid         uint32 `json:"lid"`
}

type holderJSON struct {
	Pid  uint32 `json:"pid"`
	UID  uint32 `json:"uid"`
	Comm string `json:"comm"`
	// Views (PROTOCOL.md 8b): only for viewers that see all, each where
	// the daemon filled it in.
	Pidns  uint64 `json:"pidns,omitempty"`
	Netns  uint64 `json:"netns,omitempty"`
	Mntns  uint64 `json:"mntns,omitempty"`
	PodUID string `json:"pod_uid,omitempty"`
}

type deviceJSON struct {
	Name         string       `json:"name"`
	ID           string       `json:"id"`
	Uverbs       string       `json:"uverbs"`
	MadNodes     []string     `json:"mad_nodes"`
	NodeGUID     string       `json:"node_guid"`
	SysImageGUID string       `json:"sys_image_guid"`
	NodeType     string       `json:"node_type"`
	FwVer        string       `json:"fw_ver"`
	PciAddress   string       `json:"pci_address"`
	NumaNode     int32        `json:"numa_node"`
	Driver       string       `json:"driver"`
	State        string       `json:"state"`
	Generation   uint64       `json:"generation"`
	Ports        []portJSON   `json:"ports"`
	Holders      []holderJSON `json:"holders"`
	HolderCount  uint32       `json:"holder_count"`
	// The lifecycle keys (PROTOCOL.md 8a): away_deadline_ms only for an
	// away device, changed where it names something (and on every
	// returned event, empty or not), sriov_pf where there is one.
	Identity       string    `json:"identity"`
	Incarnation    uint64    `json:"incarnation"`
	Ready          bool      `json:"ready"`
	Removing       bool      `json:"removing,omitempty"`
	Aliases        []string  `json:"aliases"`
	AwayDeadlineMs *uint64   `json:"away_deadline_ms,omitempty"`
	Changed        *[]string `json:"changed,omitempty"`
	SriovPF        string    `json:"sriov_pf,omitempty"`
	// Views (PROTOCOL.md 8b): unusable always, reason where a device
	// left the view (a removed event).
	Unusable bool   `json:"unusable"`
	Reason   string `json:"reason,omitempty"`
	// Exclusive mode, to those who see all: the network namespace a
	// device is in when not rdmad's, and that namespace's pod.
	Netns    uint64 `json:"netns,omitempty"`
	PodUID   string `json:"pod_uid,omitempty"`
	Stranded bool   `json:"stranded,omitempty"`
}

type sriovJSON struct {
	PF       string `json:"pf"`
	Expected uint32 `json:"expected"`
	Ready    uint32 `json:"ready"`
}

type eventJSON struct {
	Generation uint64      `json:"generation"`
	Event      string      `json:"event"`
	Lifecycle  string      `json:"lifecycle,omitempty"`
	Sriov      *sriovJSON  `json:"sriov,omitempty"`
	OldName    *string     `json:"old_name,omitempty"`
	Device     *deviceJSON `json:"device,omitempty"`
}

type resyncJSON struct {
	Generation uint64       `json:"generation"`
	Event      string       `json:"event"`
	Devices    []deviceJSON `json:"devices"`
}

func stateName(s rdmadpb.DeviceState) string {
	switch s {
	case rdmadpb.DeviceState_DEVICE_STATE_PRESENT:
		return "present"
	case rdmadpb.DeviceState_DEVICE_STATE_REMOVED:
		return "removed"
	case rdmadpb.DeviceState_DEVICE_STATE_AWAY:
		return "away"
	}
	return "unknown"
}

func eventName(t rdmadpb.EventType) string {
	switch t {
	case rdmadpb.EventType_EVENT_TYPE_ADDED:
		return "added"
	case rdmadpb.EventType_EVENT_TYPE_REMOVED:
		return "removed"
	case rdmadpb.EventType_EVENT_TYPE_CHANGED:
		return "changed"
	case rdmadpb.EventType_EVENT_TYPE_RENAMED:
		return "renamed"
	case rdmadpb.EventType_EVENT_TYPE_RELEASED:
		return "released"
	case rdmadpb.EventType_EVENT_TYPE_RETURNED:
		return "returned"
	case rdmadpb.EventType_EVENT_TYPE_READY:
		return "ready"
	case rdmadpb.EventType_EVENT_TYPE_UNREADY:
		return "unready"
	case rdmadpb.EventType_EVENT_TYPE_EXPECTING:
		return "expecting"
	case rdmadpb.EventType_EVENT_TYPE_SETTLED:
		return "settled"
	case rdmadpb.EventType_EVENT_TYPE_REMOVING:
		return "removing"
	}
	return "unknown"
}

// baseEventName is what "event" says: one of the five names of the
// contract, the one a client without the lifecycle feature gets for a
// lifecycle event (a return is "added", the others a change, of the PF
// for expecting and settled); "lifecycle" then names the event itself.
func baseEventName(t rdmadpb.EventType) string {
	switch t {
	case rdmadpb.EventType_EVENT_TYPE_RETURNED:
		return "added"
	case rdmadpb.EventType_EVENT_TYPE_READY,
		rdmadpb.EventType_EVENT_TYPE_UNREADY,
		rdmadpb.EventType_EVENT_TYPE_EXPECTING,
		rdmadpb.EventType_EVENT_TYPE_SETTLED,
		rdmadpb.EventType_EVENT_TYPE_REMOVING:
		return "changed"
	}
	return eventName(t)
}

func deviceObject(d *rdmadpb.Device) deviceJSON {
	out := deviceJSON{
		Name:         d.GetName(),
		ID:           d.GetId(),
		Uverbs:       d.GetUverbs(),
		MadNodes:     append([]string{}, d.GetMadNodes()...),
		NodeGUID:     d.GetNodeGuid(),
		SysImageGUID: d.GetSysImageGuid(),
		NodeType:     d.GetNodeType(),
		FwVer:        d.GetFwVer(),
		PciAddress:   d.GetPciAddress(),
		NumaNode:     d.GetNumaNode(),
		Driver:       d.GetDriver(),
		State:        stateName(d.GetState()),
		Generation:   d.GetGeneration(),
		Ports:        []portJSON{},
		Holders:      []holderJSON{},
		HolderCount:  rdmad.HolderCount(d),
		Identity:     d.GetIdentity(),
		Incarnation:  d.GetIncarnation(),
		Ready:        d.GetReady(),
		Removing:     d.GetRemoving(),
		Aliases:      append([]string{}, d.GetAliases()...),
		SriovPF:      d.GetSriovPf(),
		Unusable:     d.GetUnusable(),
		Reason:       d.GetReason(),
		Netns:        d.GetNetns(),
		PodUID:       d.GetPodUid(),
		Stranded:     d.GetStranded(),
	}
	if rdmad.Away(d) {
		deadline := d.GetAwayDeadlineMs()
		out.AwayDeadlineMs = &deadline
	}
	if len(d.GetChanged()) > 0 {
		changed := append([]string{}, d.GetChanged()...)
		out.Changed = &changed
	}
	for _, p := range d.GetPorts() {
		out.Ports = append(out.Ports, portJSON{
			Port:        p.GetPort(),
			State:       p.GetState(),
			PhysState:   p.GetPhysState(),
			LinkLayer:   p.GetLinkLayer(),
			Rate:        p.GetRate(),
			Netdev:      p.GetNetdev(),
			NetdevUp:    p.GetNetdevUp(),
			NetdevState: netdevState(p),
			Lid:         p.GetLid(),
		})
	}
	for _, h := range d.GetHolders() {
		out.Holders = append(out.Holders, holderJSON{
			Pid: h.GetPid(), UID: h.GetUid(), Comm: h.GetComm(),
			Pidns: h.GetPidns(), Netns: h.GetNetns(),
			Mntns: h.GetMntns(), PodUID: h.GetPodUid()})
	}
	return out
}

// updateLine is the line rdmactl monitor --json prints for u, without the
// newline.
func updateLine(u rdmad.Update) ([]byte, error) {
	var v any
	switch u.Kind {
	case rdmad.UpdateResync:
		r := resyncJSON{Generation: u.Generation, Event: "resync",
			Devices: []deviceJSON{}}
		for _, d := range u.State.Devices {
			r.Devices = append(r.Devices, deviceObject(d))
		}
		v = r
	default:
		t := u.Event.GetType()
		e := eventJSON{Generation: u.Generation, Event: baseEventName(t)}
		if name := eventName(t); name != e.Event {
			e.Lifecycle = name
		}
		if s := u.Event.GetSriov(); s != nil {
			e.Sriov = &sriovJSON{PF: s.GetPf(),
				Expected: s.GetExpected(), Ready: s.GetReady()}
		}
		if dev := u.Event.GetDevice(); dev != nil {
			if t == rdmadpb.EventType_EVENT_TYPE_RENAMED {
				old := dev.GetOldName()
				e.OldName = &old
			}
			d := deviceObject(dev)
			if t == rdmadpb.EventType_EVENT_TYPE_RETURNED &&
				d.Changed == nil {
				// A return that changed nothing still says so.
				d.Changed = &[]string{}
			}
			e.Device = &d
		}
		v = e
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// json-c escapes neither '/' nor HTML characters.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// netdevState is rdmactl's netdev_state (rdmactl/output.c).
func netdevState(p *rdmadpb.Port) string {
	switch {
	case p.GetNetdev() == "":
		return ""
	case p.GetNetdevUnknown():
		return "unknown"
	case p.GetNetdevUp():
		return "up"
	}
	return "down"
}
