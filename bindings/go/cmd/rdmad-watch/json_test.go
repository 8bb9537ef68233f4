// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Lines as rdmactl monitor --json prints them (json-c, plain): the same
// keys in the same order.  tests/integration/test_go.py compares the two
// programs on a real daemon.
func TestUpdateLines(t *testing.T) {
	d := &rdmadpb.Device{Name: "mlx5_1", Id: "pci-0000:03:00.0",
		Uverbs: "uverbs1", MadNodes: []string{"umad1", "issm1"},
		NodeGuid:     "0002:c903:0000:1234",
		SysImageGuid: "0002:c903:0000:1237", NodeType: "CA",
		FwVer: "16.35.2000", PciAddress: "0000:03:00.0", NumaNode: -1,
		State: rdmadpb.DeviceState_DEVICE_STATE_REMOVED, Ports: []*rdmadpb.Port{{
			Port: 1, State: "ACTIVE", PhysState: "LinkUp",
			LinkLayer: "Ethernet", Rate: "100 Gb/sec (4X EDR)",
			Netdev: "ens1f0", NetdevUp: true}},
		Holders: []*rdmadpb.Holder{{Pid: 4242, Uid: 1000,
			Comm: "nccl<test>&"}},
		Driver: "mlx5_core", Generation: 43, OldName: "mlx5_0",
		HolderCount: 0, Identity: "pci-0000:03:00.0", Incarnation: 2,
		Aliases: []string{"ib0", "rail0"}, AwayDeadlineMs: 99}
	ev := &rdmadpb.Event{Generation: 43,
		Type: rdmadpb.EventType_EVENT_TYPE_RENAMED, Device: d}
	got, err := updateLine(rdmad.Update{Kind: rdmad.UpdateEvent,
		Generation: 43, Event: ev})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"generation":43,"event":"renamed","old_name":"mlx5_0",` +
		`"device":{"name":"mlx5_1","id":"pci-0000:03:00.0",` +
		`"uverbs":"uverbs1","mad_nodes":["umad1","issm1"],` +
		`"node_guid":"0002:c903:0000:1234",` +
		`"sys_image_guid":"0002:c903:0000:1237","node_type":"CA",` +
		`"fw_ver":"16.35.2000","pci_address":"0000:03:00.0",` +
		`"numa_node":-1,"driver":"mlx5_core","state":"removed",` +
		`"generation":43,"ports":[{"port":1,"state":"ACTIVE",` +
		`"phys_state":"LinkUp","link_layer":"Ethernet",` +
		`"rate":"100 Gb/sec (4X EDR)","netdev":"ens1f0",` +
		`"netdev_up":true,"netdev_state":"up","lid":0}],` +
		`"holders":[{"pid":4242,` +
		`"uid":1000,"comm":"nccl<test>&"}],"holder_count":1,` +
		`"identity":"pci-0000:03:00.0","incarnation":2,"ready":false,` +
		`"aliases":["ib0","rail0"],"unusable":false}}`
	if string(got) != want {
		t.Errorf("renamed:\n got %s\nwant %s", got, want)
	}

	// Only a renamed event has old_name; empty lists are [], not null.
	bare := &rdmadpb.Device{Name: "efa0"}
	got, _ = updateLine(rdmad.Update{Kind: rdmad.UpdateEvent, Generation: 7,
		Event: &rdmadpb.Event{Generation: 7, Device: bare}})
	if !strings.HasPrefix(string(got), `{"generation":7,"event":"added",`+
		`"device":{"name":"efa0",`) ||
		!strings.Contains(string(got), `"ports":[],"holders":[],`) {
		t.Errorf("added: %s", got)
	}
	got, _ = updateLine(rdmad.Update{Kind: rdmad.UpdateResync, Generation: 9,
		State: &rdmad.Snapshot{Generation: 9}})
	if string(got) != `{"generation":9,"event":"resync","devices":[]}` {
		t.Errorf("resync: %s", got)
	}
}

// The lifecycle events (PROTOCOL.md 8a) as rdmactl prints them: "event"
// keeps one of the five names, "lifecycle" names the event, "sriov" comes
// before the device (the PF), and the device's keys that only mean
// something in one state or event are left out elsewhere.
func TestLifecycleLines(t *testing.T) {
	vf := &rdmadpb.Device{Name: "mlx5_4", Id: "pci:0000:03:00.2",
		Uverbs: "uverbs4", NumaNode: -1, Generation: 50,
		Identity: "pci:0000:03:00.2", Incarnation: 2, Ready: true,
		SriovPf: "0000:03:00.0", AwayDeadlineMs: 1700000000123}
	const head = `"device":{"name":"mlx5_4","id":"pci:0000:03:00.2",` +
		`"uverbs":"uverbs4","mad_nodes":[],"node_guid":"","sys_image_guid":"",` +
		`"node_type":"","fw_ver":"","pci_address":"","numa_node":-1,` +
		`"driver":"",`
	const tail = `"generation":50,"ports":[],"holders":[],` +
		`"holder_count":0,"identity":"pci:0000:03:00.2",` +
		`"incarnation":2,"ready":true,"aliases":[]`
	line := func(typ rdmadpb.EventType, d *rdmadpb.Device,
		sriov *rdmadpb.Sriov) string {
		t.Helper()
		b, err := updateLine(rdmad.Update{Kind: rdmad.UpdateEvent,
			Generation: 50, Event: &rdmadpb.Event{Generation: 50,
				Type: typ, Device: d, Sriov: sriov}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name string
		typ  rdmadpb.EventType
		d    func(*rdmadpb.Device)
		want string
	}{
		{"returned, nothing changed", rdmadpb.EventType_EVENT_TYPE_RETURNED,
			func(*rdmadpb.Device) {},
			`{"generation":50,"event":"added","lifecycle":"returned",` +
				head + `"state":"present",` + tail +
				`,"changed":[],"sriov_pf":"0000:03:00.0","unusable":false}}`},
		{"returned with changes", rdmadpb.EventType_EVENT_TYPE_RETURNED,
			func(d *rdmadpb.Device) { d.Changed = []string{"name", "netdev"} },
			`{"generation":50,"event":"added","lifecycle":"returned",` +
				head + `"state":"present",` + tail +
				`,"changed":["name","netdev"],"sriov_pf":"0000:03:00.0","unusable":false}}`},
		{"ready", rdmadpb.EventType_EVENT_TYPE_READY,
			func(*rdmadpb.Device) {},
			`{"generation":50,"event":"changed","lifecycle":"ready",` +
				head + `"state":"present",` + tail +
				`,"sriov_pf":"0000:03:00.0","unusable":false}}`},
		{"unready", rdmadpb.EventType_EVENT_TYPE_UNREADY,
			func(d *rdmadpb.Device) { d.Ready = false; d.SriovPf = "" },
			`{"generation":50,"event":"changed","lifecycle":"unready",` +
				head + `"state":"present",` +
				strings.Replace(tail, `"ready":true`, `"ready":false`, 1) +
				`,"unusable":false}}`},
		{"removed, away", rdmadpb.EventType_EVENT_TYPE_REMOVED,
			func(d *rdmadpb.Device) {
				d.State = rdmadpb.DeviceState_DEVICE_STATE_AWAY
			},
			`{"generation":50,"event":"removed",` +
				head + `"state":"away",` + tail +
				`,"away_deadline_ms":1700000000123,` +
				`"sriov_pf":"0000:03:00.0","unusable":false}}`},
	} {
		d := proto.Clone(vf).(*rdmadpb.Device)
		tc.d(d)
		if got := line(tc.typ, d, nil); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}

	pf := &rdmadpb.Device{Name: "mlx5_0", Identity: "pci:0000:03:00.0",
		Incarnation: 1, Ready: true, Aliases: []string{"ib0"}}
	sriov := &rdmadpb.Sriov{Pf: "0000:03:00.0", Expected: 4, Ready: 3}
	got := line(rdmadpb.EventType_EVENT_TYPE_SETTLED, pf, sriov)
	want := `{"generation":50,"event":"changed","lifecycle":"settled",` +
		`"sriov":{"pf":"0000:03:00.0","expected":4,"ready":3},` +
		`"device":{"name":"mlx5_0","id":"","uverbs":"","mad_nodes":[],"node_guid":"",` +
		`"sys_image_guid":"","node_type":"","fw_ver":"",` +
		`"pci_address":"","numa_node":0,"driver":"","state":"present",` +
		`"generation":0,"ports":[],"holders":[],"holder_count":0,` +
		`"identity":"pci:0000:03:00.0","incarnation":1,"ready":true,` +
		`"aliases":["ib0"],"unusable":false}}`
	if got != want {
		t.Errorf("settled:\n got %s\nwant %s", got, want)
	}
	got = line(rdmadpb.EventType_EVENT_TYPE_EXPECTING, pf,
		&rdmadpb.Sriov{Pf: "0000:03:00.0", Expected: 4})
	if !strings.HasPrefix(got, `{"generation":50,"event":"changed",`+
		`"lifecycle":"expecting","sriov":{"pf":"0000:03:00.0",`+
		`"expected":4,"ready":0},"device":{"name":"mlx5_0",`) {
		t.Errorf("expecting: %s", got)
	}
	// The five names of the contract have no "lifecycle" key.
	got = line(rdmadpb.EventType_EVENT_TYPE_CHANGED, pf, nil)
	if strings.Contains(got, "lifecycle") || strings.Contains(got, "sriov") {
		t.Errorf("changed: %s", got)
	}
}

// Views (PROTOCOL.md 8b) as rdmactl prints them: "unusable" always and
// "reason" where a device left the view, after the other keys; a holder's
// "pidns", "netns", "mntns", "pod_uid" each only where it is not zero or
// empty.
func TestViewLines(t *testing.T) {
	d := &rdmadpb.Device{Name: "mlx5_0", Uverbs: "uverbs0", NumaNode: -1,
		Holders: []*rdmadpb.Holder{{Pid: 4242, Uid: 1000,
			Comm: "nccl-test", Pidns: 4026531836, Netns: 4026532101,
			Mntns: 4026532102, PodUid: "pod-a"}},
		Unusable: true, Reason: "mount"}
	got, err := updateLine(rdmad.Update{Kind: rdmad.UpdateEvent,
		Generation: 9, Event: &rdmadpb.Event{Generation: 9,
			Type: rdmadpb.EventType_EVENT_TYPE_REMOVED, Device: d}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"generation":9,"event":"removed","device":{"name":"mlx5_0",` +
		`"id":"","uverbs":"uverbs0","mad_nodes":[],"node_guid":"","sys_image_guid":"",` +
		`"node_type":"","fw_ver":"","pci_address":"","numa_node":-1,` +
		`"driver":"","state":"present","generation":0,"ports":[],` +
		`"holders":[{"pid":4242,"uid":1000,"comm":"nccl-test",` +
		`"pidns":4026531836,"netns":4026532101,"mntns":4026532102,` +
		`"pod_uid":"pod-a"}],"holder_count":1,"identity":"",` +
		`"incarnation":0,"ready":false,"aliases":[],"unusable":true,` +
		`"reason":"mount"}}`
	if string(got) != want {
		t.Errorf("removed from the view:\n got %s\nwant %s", got, want)
	}

	h := d.Holders[0]
	h.Pidns, h.Mntns, h.PodUid = 0, 0, ""
	d.Unusable, d.Reason = false, ""
	got, _ = updateLine(rdmad.Update{Kind: rdmad.UpdateResync, Generation: 10,
		State: &rdmad.Snapshot{Generation: 10,
			Devices: []*rdmadpb.Device{d}}})
	if !strings.Contains(string(got), `"holders":[{"pid":4242,"uid":1000,`+
		`"comm":"nccl-test","netns":4026532101}]`) ||
		!strings.HasSuffix(string(got), `"aliases":[],"unusable":false}]}`) {
		t.Errorf("resync: %s", got)
	}
}

func TestUnreachableExit3(t *testing.T) {
	var out, errb bytes.Buffer
	path := t.TempDir() + "/nobody.sock"
	if rc := run([]string{"--socket", path}, &out, &errb); rc != exitUnreachable {
		t.Errorf("exit %d, want %d", rc, exitUnreachable)
	}
	msg := errb.String()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, path) {
		t.Errorf("want one line naming %s, got %q", path, msg)
	}
	if rc := run([]string{"extra"}, &out, &errb); rc != exitUsage {
		t.Errorf("exit %d for a stray argument", rc)
	}
}
