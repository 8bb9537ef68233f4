// SPDX-License-Identifier: MIT

package rdmad

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Views (PROTOCOL.md section 8b) against the fake daemon.  The daemon's
// frames are written here byte by byte from the field numbers of
// proto/rdmad.proto, not marshalled from rdmadpb, so that these tests
// check the numbers the generated code decodes, as a daemon in C sends
// them.

// msg is a protobuf message under construction.
type msg []byte

func (m msg) varint(num protowire.Number, v uint64) msg {
	m = protowire.AppendTag(m, num, protowire.VarintType)
	return protowire.AppendVarint(m, v)
}

func (m msg) str(num protowire.Number, s string) msg {
	m = protowire.AppendTag(m, num, protowire.BytesType)
	return protowire.AppendString(m, s)
}

func (m msg) sub(num protowire.Number, inner msg) msg {
	m = protowire.AppendTag(m, num, protowire.BytesType)
	return protowire.AppendBytes(m, inner)
}

// The View of a pod in shared mode, the numbers of message View.
var podView = msg{}.
	varint(1, 4026532001). // netns
	varint(2, 4026532002). // mntns
	varint(3, 4026532003). // pidns
	str(4, "1b2c3d4e-0000-4000-8000-00000000abcd").
	str(5, "shared"). // netns_mode
	varint(7, 1)      // verified; all (6) and host (8) false

// frame is Frame{version 1, seq, body} with body field num.
func frame(seq uint64, num protowire.Number, body msg) []byte {
	return msg{}.varint(1, 1).varint(2, seq).sub(num, body)
}

func welcomeBytes(seq, gen uint64, view msg) []byte {
	w := msg{}.varint(1, 1).varint(2, gen).str(3, "views")
	if view != nil {
		w = w.sub(5, view)
	}
	return frame(seq, 20, w)
}

func snapshotBytes(seq, gen uint64, part, parts uint32, view msg,
	devices ...msg) []byte {
	s := msg{}.varint(1, gen).varint(2, uint64(part)).
		varint(3, uint64(parts))
	for _, d := range devices {
		s = s.sub(4, d)
	}
	if view != nil {
		s = s.sub(5, view)
	}
	return frame(seq, 21, s)
}

// deviceBytes is a present, ready device of lifecycle identity "pci:" +
// name, incarnation 1, with the view's fields and the holders given.
func deviceBytes(name string, unusable bool, reason string,
	holders ...msg) msg {
	d := msg{}.str(1, name).str(2, "uverbs0").str(12, "pci:"+name)
	for _, h := range holders {
		d = d.sub(11, h)
	}
	d = d.varint(16, uint64(len(holders))).str(17, "pci:"+name).
		varint(18, 1).varint(19, 1)
	if unusable {
		d = d.varint(24, 1)
	}
	if reason != "" {
		d = d.str(25, reason)
	}
	return d
}

// A holder as root in the host's namespaces sees it: namespaces and pod.
var podHolder = msg{}.varint(1, 4242).varint(2, 1000).str(3, "nccl-test").
	varint(4, 4026531836). // pidns
	varint(5, 4026532101). // netns
	varint(6, 4026532102). // mntns
	str(7, "pod-a")

func eventBytes(gen uint64, typ rdmadpb.EventType, device msg) []byte {
	return frame(0, 22, msg{}.varint(1, gen).varint(2, uint64(typ)).
		sub(3, device))
}

func checkPodView(t *testing.T, what string, v *rdmadpb.View) {
	t.Helper()
	if v.GetNetns() != 4026532001 || v.GetMntns() != 4026532002 ||
		v.GetPidns() != 4026532003 ||
		v.GetPodUid() != "1b2c3d4e-0000-4000-8000-00000000abcd" ||
		v.GetNetnsMode() != "shared" || v.GetAll() || !v.GetVerified() ||
		v.GetHost() {
		t.Errorf("%s: view %v", what, v)
	}
}

func TestViewInWelcomeAndSnapshot(t *testing.T) {
	d := newFake(t)
	done := d.serve(func(p *peer) {
		h := p.recv()
		p.sendBytes(welcomeBytes(h.GetSeq(), 41, podView), nil)
		f := p.expect("GetStatus", isGetStatus)
		// Every part carries the view (section 8b).
		p.sendBytes(snapshotBytes(f.GetSeq(), 42, 0, 2, podView,
			deviceBytes("mlx5_0", false, "", podHolder)), nil)
		p.sendBytes(snapshotBytes(f.GetSeq(), 42, 1, 2, podView,
			deviceBytes("mlx5_1", true, "")), nil)
		p.recv()
	})
	c := dial(t, d)
	checkPodView(t, "Conn.View", c.View())
	if c.View() != c.Welcome().GetView() {
		t.Error("Conn.View is not the Welcome's")
	}
	s, err := c.Snapshot(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	checkPodView(t, "Snapshot.View", s.View)

	ok, bad := s.Device("mlx5_0"), s.Device("mlx5_1")
	if ok == nil || bad == nil {
		t.Fatalf("snapshot %v", names(s))
	}
	if Unusable(ok) || !Usable(ok) || !Ready(ok) || ok.GetReason() != "" {
		t.Errorf("mlx5_0: Unusable %v Usable %v Ready %v reason %q",
			Unusable(ok), Usable(ok), Ready(ok), ok.GetReason())
	}
	// Listed, present and ready as the daemon sees it, yet not for us.
	if !Unusable(bad) || Usable(bad) || Ready(bad) || !Present(bad) ||
		!bad.GetReady() {
		t.Errorf("mlx5_1: Unusable %v Usable %v Ready %v Present %v",
			Unusable(bad), Usable(bad), Ready(bad), Present(bad))
	}
	h := ok.GetHolders()
	if len(h) != 1 || h[0].GetPid() != 4242 || h[0].GetComm() != "nccl-test" ||
		h[0].GetPidns() != 4026531836 || h[0].GetNetns() != 4026532101 ||
		h[0].GetMntns() != 4026532102 || h[0].GetPodUid() != "pod-a" {
		t.Errorf("holders %v", h)
	}
	c.Close()
	wait(t, done)
}

// A daemon from before views sends none: nil, and nothing flagged.
func TestNoViewFromAnOlderDaemon(t *testing.T) {
	d := newFake(t)
	d.serve(func(p *peer) {
		h := p.recv()
		p.sendBytes(welcomeBytes(h.GetSeq(), 1, nil), nil)
		f := p.expect("GetStatus", isGetStatus)
		p.sendBytes(snapshotBytes(f.GetSeq(), 1, 0, 1, nil,
			deviceBytes("mlx5_0", false, "",
				msg{}.varint(1, 7).str(3, "old"))), nil)
		p.recv()
	})
	c := dial(t, d)
	if c.View() != nil {
		t.Errorf("Conn.View %v", c.View())
	}
	s, err := c.Snapshot(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	dv := s.Device("mlx5_0")
	if s.View != nil || dv == nil || Unusable(dv) || !Usable(dv) {
		t.Fatalf("snapshot view %v, device %v", s.View, dv)
	}
	h := dv.GetHolders()[0]
	if h.GetPidns() != 0 || h.GetNetns() != 0 || h.GetMntns() != 0 ||
		h.GetPodUid() != "" {
		t.Errorf("holder %v", h)
	}
}

// A subscription: the view stays with the states events make; a device
// flagged unusable comes as CHANGED; one that leaves the view comes as
// REMOVED with a reason and goes, even held (it is in no later snapshot
// of this view); a resync brings the view of its snapshot.
func TestSubscribeView(t *testing.T) {
	other := msg{}.varint(1, 4026532201).varint(2, 4026532202).
		varint(3, 4026532203).str(5, "exclusive").varint(7, 1)
	d := newFake(t)
	done := d.serve(func(p *peer) {
		h := p.recv()
		p.sendBytes(welcomeBytes(h.GetSeq(), 9, podView), nil)
		f := p.expect("Subscribe", isSubscribe)
		p.sendBytes(snapshotBytes(f.GetSeq(), 10, 0, 1, podView,
			deviceBytes("mlx5_0", false, "", podHolder),
			deviceBytes("mlx5_1", false, "")), nil)
		p.sendBytes(eventBytes(11, evChanged,
			deviceBytes("mlx5_1", true, "")), nil)
		p.sendBytes(eventBytes(12, evRemoved,
			deviceBytes("mlx5_0", false, "mount", podHolder)), nil)
		// A gap: the client subscribes again.
		p.sendBytes(eventBytes(14, evAdded, deviceBytes("mlx5_2",
			false, "")), nil)
		f = p.expect("Subscribe", isSubscribe)
		p.sendBytes(snapshotBytes(f.GetSeq(), 14, 0, 1, other,
			deviceBytes("mlx5_1", true, "")), nil)
		p.recv()
	})
	c := dial(t, d)
	sub, err := c.Subscribe(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	checkPodView(t, "subscription", sub.State().View)

	u := expectUpdate(t, sub, UpdateEvent, 11)
	if !Unusable(u.State.Device("mlx5_1")) || Unusable(u.Previous) ||
		u.State.View != sub.State().View {
		t.Errorf("changed: %s, view %v", lives(u.State), u.State.View)
	}
	checkPodView(t, "after an event", u.State.View)

	u = expectUpdate(t, sub, UpdateEvent, 12)
	if u.Event.GetDevice().GetReason() != "mount" ||
		u.State.Device("mlx5_0") != nil || u.Previous.GetName() != "mlx5_0" {
		t.Errorf("removed from the view: %s, reason %q", lives(u.State),
			u.Event.GetDevice().GetReason())
	}

	u = expectUpdate(t, sub, UpdateResync, 14)
	if v := u.State.View; v.GetNetns() != 4026532201 ||
		v.GetNetnsMode() != "exclusive" || v.GetPodUid() != "" {
		t.Errorf("resync view %v", v)
	}
	c.Close()
	wait(t, done)
}

// REMOVED without a reason keeps a held device as before views; with one
// it goes whatever holds it.
func TestApplyRemovedFromView(t *testing.T) {
	const pci = "0000:03:00.0"
	held := life("mlx5_0", pci, 1, heldBy(7))
	s := &Snapshot{Generation: 1, Devices: []*rdmadpb.Device{held}}
	unplugged := life("mlx5_0", pci, 1, heldBy(7), inState(removed))
	runSteps(t, s, true, []step{{evRemoved, unplugged,
		"mlx5_0/1/removed/held", "mlx5_0/1/present/held/ready"}})
	left := life("mlx5_0", pci, 1, heldBy(7), func(d *rdmadpb.Device) {
		d.Reason = "mount"
	})
	runSteps(t, s, true, []step{{evRemoved, left, "",
		"mlx5_0/1/present/held/ready"}})
	runSteps(t, s, false, []step{{evRemoved, left, "",
		"mlx5_0/1/present/held/ready"}})
}
