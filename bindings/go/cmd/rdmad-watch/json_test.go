// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Lines as rdmactl monitor --json prints them (json-c, plain): the same
// keys in the same order.  tests/integration/test_go.py compares the two
// programs on a real daemon.
func TestUpdateLines(t *testing.T) {
	d := &rdmadpb.Device{Name: "mlx5_1", Id: "pci-0000:03:00.0",
		Uverbs: "uverbs1", NodeGuid: "0002:c903:0000:1234",
		SysImageGuid: "0002:c903:0000:1237", NodeType: "CA",
		FwVer: "16.35.2000", PciAddress: "0000:03:00.0", NumaNode: -1,
		State: rdmadpb.DeviceState_DEVICE_STATE_REMOVED, Ports: []*rdmadpb.Port{{
			Port: 1, State: "ACTIVE", PhysState: "LinkUp",
			LinkLayer: "Ethernet", Rate: "100 Gb/sec (4X EDR)",
			Netdev: "ens1f0", NetdevUp: true}},
		Holders: []*rdmadpb.Holder{{Pid: 4242, Uid: 1000,
			Comm: "nccl<test>&"}},
		Driver: "mlx5_core", Generation: 43, OldName: "mlx5_0",
		HolderCount: 0}
	ev := &rdmadpb.Event{Generation: 43,
		Type: rdmadpb.EventType_EVENT_TYPE_RENAMED, Device: d}
	got, err := updateLine(rdmad.Update{Kind: rdmad.UpdateEvent,
		Generation: 43, Event: ev})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"generation":43,"event":"renamed","old_name":"mlx5_0",` +
		`"device":{"name":"mlx5_1","id":"pci-0000:03:00.0",` +
		`"uverbs":"uverbs1","node_guid":"0002:c903:0000:1234",` +
		`"sys_image_guid":"0002:c903:0000:1237","node_type":"CA",` +
		`"fw_ver":"16.35.2000","pci_address":"0000:03:00.0",` +
		`"numa_node":-1,"driver":"mlx5_core","state":"removed",` +
		`"generation":43,"ports":[{"port":1,"state":"ACTIVE",` +
		`"phys_state":"LinkUp","link_layer":"Ethernet",` +
		`"rate":"100 Gb/sec (4X EDR)","netdev":"ens1f0",` +
		`"netdev_up":true,"lid":0}],"holders":[{"pid":4242,` +
		`"uid":1000,"comm":"nccl<test>&"}],"holder_count":1}}`
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
