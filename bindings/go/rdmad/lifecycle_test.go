// SPDX-License-Identifier: MIT

package rdmad

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// The lifecycle feature (PROTOCOL.md section 8a) against the fake daemon:
// entries keyed by (identity, incarnation), AWAY, RETURNED, READY,
// UNREADY, EXPECTING, SETTLED, and the two sequences of issue 11.

const (
	present = rdmadpb.DeviceState_DEVICE_STATE_PRESENT
	removed = rdmadpb.DeviceState_DEVICE_STATE_REMOVED
	away    = rdmadpb.DeviceState_DEVICE_STATE_AWAY

	evAdded     = rdmadpb.EventType_EVENT_TYPE_ADDED
	evRemoved   = rdmadpb.EventType_EVENT_TYPE_REMOVED
	evChanged   = rdmadpb.EventType_EVENT_TYPE_CHANGED
	evRenamed   = rdmadpb.EventType_EVENT_TYPE_RENAMED
	evReleased  = rdmadpb.EventType_EVENT_TYPE_RELEASED
	evReturned  = rdmadpb.EventType_EVENT_TYPE_RETURNED
	evReady     = rdmadpb.EventType_EVENT_TYPE_READY
	evUnready   = rdmadpb.EventType_EVENT_TYPE_UNREADY
	evExpecting = rdmadpb.EventType_EVENT_TYPE_EXPECTING
	evSettled   = rdmadpb.EventType_EVENT_TYPE_SETTLED
)

// life is a device of identity "pci:"+pci in its incarnation inc, named
// name, present and ready unless changed by the options.
func life(name, pci string, inc uint64, opts ...func(*rdmadpb.Device)) *rdmadpb.Device {
	d := dev(name)
	d.Id = "pci:" + pci
	d.Identity = d.Id
	d.PciAddress = pci
	d.Incarnation = inc
	d.Uverbs = fmt.Sprintf("uverbs%d", inc)
	d.Ready = true
	for _, o := range opts {
		o(d)
	}
	return d
}

func heldBy(pid uint32) func(*rdmadpb.Device) {
	return func(d *rdmadpb.Device) {
		d.Holders = []*rdmadpb.Holder{{Pid: pid, Comm: "plugin"}}
	}
}

func inState(st rdmadpb.DeviceState) func(*rdmadpb.Device) {
	return func(d *rdmadpb.Device) {
		d.State = st
		if st != present {
			d.Ready = false
		}
		if st == away {
			d.AwayDeadlineMs = 1700000000123
		}
	}
}

func notReady(d *rdmadpb.Device) { d.Ready = false }

// lives describes a state as "name/incarnation/state[/held]" entries in
// its order.
func lives(s *Snapshot) string {
	var out []string
	for _, d := range s.Devices {
		e := fmt.Sprintf("%s/%d/%s", d.GetName(), d.GetIncarnation(),
			strings.ToLower(strings.TrimPrefix(d.GetState().String(),
				"DEVICE_STATE_")))
		if HolderCount(d) > 0 {
			e += "/held"
		}
		if Ready(d) {
			e += "/ready"
		}
		out = append(out, e)
	}
	return strings.Join(out, " ")
}

type step struct {
	typ  rdmadpb.EventType
	d    *rdmadpb.Device
	want string
	prev string // the entry replaced or dropped, as lives() names it
}

func runSteps(t *testing.T, s *Snapshot, lifecycle bool, steps []step) *Snapshot {
	t.Helper()
	for i, st := range steps {
		next, prev, ok := s.apply(&rdmadpb.Event{
			Generation: s.Generation + 1, Type: st.typ, Device: st.d},
			lifecycle)
		if !ok {
			t.Fatalf("step %d: %v not applied", i, st.typ)
		}
		if got := lives(next); got != st.want {
			t.Fatalf("step %d: %v of %s/%d:\n got %s\nwant %s", i, st.typ,
				st.d.GetName(), st.d.GetIncarnation(), got, st.want)
		}
		gotPrev := ""
		if prev != nil {
			gotPrev = lives(&Snapshot{Devices: []*rdmadpb.Device{prev}})
		}
		if gotPrev != st.prev {
			t.Errorf("step %d: %v replaced %q, want %q", i, st.typ,
				gotPrev, st.prev)
		}
		if next.Generation != s.Generation+1 {
			t.Errorf("step %d: generation %d", i, next.Generation)
		}
		s = next
	}
	return s
}

// Issue 11, first sequence: a process holds mlx5_0; it is unplugged, and
// its PCI function is plugged again as mlx5_0 with a new uverbs number.
// The daemon lists the ended life (removed, held) and the new one
// (present, incarnation + 1): so must the client, and a later RELEASED of
// the old life must leave the new one.
func TestApplyHeldDeviceReplugged(t *testing.T) {
	const pci = "0000:03:00.0"
	for _, back := range []rdmadpb.EventType{evReturned, evAdded} {
		t.Run(back.String(), func(t *testing.T) {
			s := &Snapshot{Generation: 1, Devices: []*rdmadpb.Device{
				life("mlx5_0", pci, 1, heldBy(7)),
				life("mlx5_1", "0000:04:00.0", 1)}}
			s = runSteps(t, s, true, []step{
				{evRemoved, life("mlx5_0", pci, 1, heldBy(7),
					inState(removed)),
					"mlx5_0/1/removed/held mlx5_1/1/present/ready",
					"mlx5_0/1/present/held/ready"},
				{back, life("mlx5_0", pci, 2, notReady),
					"mlx5_0/1/removed/held mlx5_0/2/present " +
						"mlx5_1/1/present/ready", ""},
				{evReady, life("mlx5_0", pci, 2),
					"mlx5_0/1/removed/held mlx5_0/2/present/ready " +
						"mlx5_1/1/present/ready",
					"mlx5_0/2/present"},
				{evReleased, life("mlx5_0", pci, 1, inState(removed)),
					"mlx5_0/2/present/ready mlx5_1/1/present/ready",
					"mlx5_0/1/removed/held"},
			})
			if d := s.Device("mlx5_0"); d == nil || d.GetIncarnation() != 2 {
				t.Errorf("Device(mlx5_0) %v", d)
			}
		})
	}
}

// Issue 11, second sequence: rdmad was busy while a held efa_0 was
// unplugged and plugged again; it ends the held life with REMOVED and
// brings the new one as RETURNED.  The holds stay with the old life (the
// holder's contexts belong to it): RETURNED must not replace a REMOVED
// entry, only an AWAY one.
func TestApplyQuickReplugWhileBusy(t *testing.T) {
	const pci = "0000:05:00.0"
	s := &Snapshot{Generation: 10, Devices: []*rdmadpb.Device{
		life("efa_0", pci, 3, heldBy(9))}}
	s = runSteps(t, s, true, []step{
		{evRemoved, life("efa_0", pci, 3, heldBy(9), inState(removed)),
			"efa_0/3/removed/held", "efa_0/3/present/held/ready"},
		{evReturned, life("efa_0", pci, 4, func(d *rdmadpb.Device) {
			d.Changed = []string{}
		}), "efa_0/3/removed/held efa_0/4/present/ready", ""},
		// The holder releases: the old life goes, the new one stays.
		{evReleased, life("efa_0", pci, 3, inState(removed)),
			"efa_0/4/present/ready", "efa_0/3/removed/held"},
		// Unheld and gone without a grace period: dropped at once.
		{evRemoved, life("efa_0", pci, 4, inState(removed)),
			"", "efa_0/4/present/ready"},
	})
	if len(s.Devices) != 0 {
		t.Errorf("left %s", lives(s))
	}
}

// A VF in its grace period: AWAY keeps the entry (and its holds); the
// same identity back in time replaces it as the next incarnation, under
// whatever name the kernel gave it; READY, UNREADY, EXPECTING and SETTLED
// replace their entry.
func TestApplyAwayReturnedReady(t *testing.T) {
	const pf, vf = "0000:03:00.0", "0000:03:00.2"
	s := &Snapshot{Generation: 1, Devices: []*rdmadpb.Device{
		life("mlx5_0", pf, 1), life("mlx5_2", vf, 1, heldBy(5))}}
	s = runSteps(t, s, true, []step{
		{evRemoved, life("mlx5_2", vf, 1, heldBy(5), inState(away)),
			"mlx5_0/1/present/ready mlx5_2/1/away/held",
			"mlx5_2/1/present/held/ready"},
		{evReturned, life("mlx5_7", vf, 2, heldBy(5), notReady,
			func(d *rdmadpb.Device) { d.Changed = []string{"name"} }),
			"mlx5_0/1/present/ready mlx5_7/2/present/held",
			"mlx5_2/1/away/held"},
		{evReady, life("mlx5_7", vf, 2, heldBy(5)),
			"mlx5_0/1/present/ready mlx5_7/2/present/held/ready",
			"mlx5_7/2/present/held"},
		{evUnready, life("mlx5_7", vf, 2, heldBy(5), notReady),
			"mlx5_0/1/present/ready mlx5_7/2/present/held",
			"mlx5_7/2/present/held/ready"},
		{evExpecting, life("mlx5_0", pf, 1, notReady),
			"mlx5_0/1/present mlx5_7/2/present/held",
			"mlx5_0/1/present/ready"},
		{evSettled, life("mlx5_0", pf, 1),
			"mlx5_0/1/present/ready mlx5_7/2/present/held",
			"mlx5_0/1/present"},
		// Renamed: the same life under a new name.
		{evRenamed, life("ib_vf0", vf, 2, heldBy(5), notReady,
			func(d *rdmadpb.Device) { d.OldName = "mlx5_7" }),
			"ib_vf0/2/present/held mlx5_0/1/present/ready",
			"mlx5_7/2/present/held"},
		// The grace period ran out while held: REMOVED, kept.
		{evRemoved, life("ib_vf0", vf, 2, heldBy(5), inState(away)),
			"ib_vf0/2/away/held mlx5_0/1/present/ready",
			"ib_vf0/2/present/held"},
		{evRemoved, life("ib_vf0", vf, 2, heldBy(5), inState(removed)),
			"ib_vf0/2/removed/held mlx5_0/1/present/ready",
			"ib_vf0/2/away/held"},
		// A return after that is a new entry beside the ended life.
		{evReturned, life("mlx5_2", vf, 3),
			"ib_vf0/2/removed/held mlx5_0/1/present/ready " +
				"mlx5_2/3/present/ready", ""},
		{evReleased, life("ib_vf0", vf, 2, inState(removed)),
			"mlx5_0/1/present/ready mlx5_2/3/present/ready",
			"ib_vf0/2/removed/held"},
		// An unheld AWAY entry is kept too, until its deadline.
		{evRemoved, life("mlx5_2", vf, 3, inState(away)),
			"mlx5_0/1/present/ready mlx5_2/3/away",
			"mlx5_2/3/present/ready"},
		{evRemoved, life("mlx5_2", vf, 3, inState(removed)),
			"mlx5_0/1/present/ready", "mlx5_2/3/away"},
	})
}

// Without the feature (or from a daemon that sends no identity) entries
// are keyed by name, as PROTOCOL.md section 8 has it.
func TestApplyByNameWithoutLifecycle(t *testing.T) {
	const pci = "0000:03:00.0"
	s := &Snapshot{Generation: 1, Devices: []*rdmadpb.Device{
		life("mlx5_0", pci, 1, heldBy(7))}}
	runSteps(t, s, false, []step{
		{evRemoved, life("mlx5_0", pci, 1, heldBy(7), inState(removed)),
			"mlx5_0/1/removed/held", "mlx5_0/1/present/held/ready"},
		{evAdded, life("mlx5_0", pci, 2),
			"mlx5_0/2/present/ready", "mlx5_0/1/removed/held"},
		{evRenamed, life("ib0", pci, 2, func(d *rdmadpb.Device) {
			d.OldName = "mlx5_0"
		}), "ib0/2/present/ready", "mlx5_0/2/present/ready"},
	})
	noIdentity := dev("x")
	s = &Snapshot{Generation: 1, Devices: []*rdmadpb.Device{dev("x")}}
	runSteps(t, s, true, []step{
		{evChanged, noIdentity, "x/0/present", "x/0/present"},
		{evReleased, noIdentity, "", "x/0/present"},
	})
}

func TestLookups(t *testing.T) {
	const pci = "0000:03:00.0"
	ended := life("mlx5_0", pci, 1, heldBy(7), inState(removed))
	now := life("mlx5_0", pci, 2, func(d *rdmadpb.Device) {
		d.Aliases = []string{"ib0"}
	})
	gone := life("mlx5_3", "0000:03:00.3", 4, inState(away),
		func(d *rdmadpb.Device) { d.Aliases = []string{"rail3", "ib0"} })
	unready := life("mlx5_1", "0000:04:00.0", 1, notReady)
	// Out of order, as a daemon might send the parts: sorted on assembly.
	a := &assembly{}
	s, err := a.add(&rdmadpb.Snapshot{Generation: 3, Parts: 1,
		Devices: []*rdmadpb.Device{now, gone, ended, unready}})
	if err != nil || s == nil {
		t.Fatal(err)
	}
	if got := lives(s); got != "mlx5_0/1/removed/held mlx5_0/2/present/ready "+
		"mlx5_1/1/present mlx5_3/4/away" {
		t.Fatalf("order: %s", got)
	}
	if s.Device("mlx5_0") != now || s.Device("mlx5_3") != gone {
		t.Error("Device() prefers the present life")
	}
	if s.Life(LifeOf(ended)) != ended || s.Life(LifeOf(now)) != now ||
		s.Life(Life{"pci:" + pci, 3}) != nil {
		t.Error("Life()")
	}
	for _, tc := range []struct {
		name string
		want *rdmadpb.Device
	}{
		{"mlx5_0", now}, {"ib0", now}, {"rail3", gone}, {"mlx5_3", gone},
		{"mlx5_1", unready}, {"nosuch", nil}, {"", nil},
	} {
		if got := Resolve(s, tc.name); got != tc.want {
			t.Errorf("Resolve(%q) = %s/%d", tc.name, got.GetName(),
				got.GetIncarnation())
		}
	}
	for _, tc := range []struct {
		d                            *rdmadpb.Device
		present, ready, usable, gone bool
	}{
		{now, true, true, true, false},
		{unready, true, false, true, false},
		{ended, false, false, false, false},
		{gone, false, false, false, true},
		// A state from a newer daemon: not usable, whatever it says.
		{&rdmadpb.Device{State: rdmadpb.DeviceState(9), Ready: true},
			false, false, false, false},
	} {
		if Present(tc.d) != tc.present || Ready(tc.d) != tc.ready ||
			Usable(tc.d) != tc.usable || Away(tc.d) != tc.gone {
			t.Errorf("%s/%d: Present %v Ready %v Usable %v Away %v",
				tc.d.GetName(), tc.d.GetIncarnation(), Present(tc.d),
				Ready(tc.d), Usable(tc.d), Away(tc.d))
		}
	}
}

func TestHelloFeatures(t *testing.T) {
	for _, tc := range []struct {
		opts []Option
		want []string
	}{
		{nil, []string{"lifecycle", "removing"}},
		{[]Option{WithoutLifecycle()}, nil},
		{[]Option{WithoutRemoving()}, []string{"lifecycle"}},
	} {
		d := newFake(t)
		hello := make(chan *rdmadpb.Hello, 1)
		done := d.serve(func(p *peer) {
			hello <- p.hello(1)
			p.recv()
		})
		c, err := Dial(testContext(t), d.path, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		h := <-hello
		if !equal(h.GetFeatures(), tc.want) && !(len(tc.want) == 0 &&
			len(h.GetFeatures()) == 0) {
			t.Errorf("features %q, want %q", h.GetFeatures(), tc.want)
		}
		if c.Lifecycle() != (len(tc.want) > 0) {
			t.Errorf("Lifecycle() %v", c.Lifecycle())
		}
		c.Close()
		wait(t, done)
	}
}

// The whole stream through Next: the events of section 8a applied, the
// SR-IOV numbers in Update.Sriov, the replaced entry in Update.Previous,
// and an event type newer than these still a resync.
func TestSubscribeLifecycle(t *testing.T) {
	const pf, vf, pci = "0000:03:00.0", "0000:03:00.2", "0000:05:00.0"
	sriov := &rdmadpb.Sriov{Pf: pf, Expected: 1}
	d := newFake(t)
	done := d.serve(func(p *peer) {
		if h := p.hello(1); !equal(h.GetFeatures(), []string{"lifecycle", "removing"}) {
			p.t.Errorf("Hello features %q", h.GetFeatures())
		}
		f := p.expect("Subscribe", isSubscribe)
		p.snapshot(f.GetSeq(), 1, []*rdmadpb.Device{life("efa_0", pci, 1),
			life("mlx5_0", pf, 1)})
		p.send(&rdmadpb.Frame{Body: &rdmadpb.Frame_Event{Event: &rdmadpb.Event{
			Generation: 2, Type: evExpecting, Sriov: sriov,
			Device: life("mlx5_0", pf, 1)}}})
		p.event(3, evAdded, life("mlx5_2", vf, 1, notReady))
		p.event(4, evReady, life("mlx5_2", vf, 1))
		settled := proto.Clone(sriov).(*rdmadpb.Sriov)
		settled.Ready = 1
		p.send(&rdmadpb.Frame{Body: &rdmadpb.Frame_Event{Event: &rdmadpb.Event{
			Generation: 5, Type: evSettled, Sriov: settled,
			Device: life("mlx5_0", pf, 1)}}})
		p.event(6, evRemoved, life("mlx5_2", vf, 1, inState(away)))
		p.event(7, evReturned, life("mlx5_4", vf, 2, notReady))
		p.event(8, evReady, life("mlx5_4", vf, 2))
		// Issue 11: the held efa_0 replugged while rdmad was busy.
		p.event(9, evChanged, life("efa_0", pci, 1, heldBy(9)))
		p.event(10, evRemoved, life("efa_0", pci, 1, heldBy(9),
			inState(removed)))
		p.event(11, evReturned, life("efa_0", pci, 2))
		p.event(12, evReleased, life("efa_0", pci, 1, inState(removed)))
		p.event(13, evUnready, life("efa_0", pci, 2, notReady))
		// A newer daemon's event type: resync.
		p.event(14, rdmadpb.EventType(42), life("efa_0", pci, 2))
		f = p.expect("Subscribe after an unknown event", isSubscribe)
		p.snapshot(f.GetSeq(), 14, []*rdmadpb.Device{life("efa_0", pci, 2)})
		p.recv()
	})
	c := dial(t, d)
	sub, err := c.Subscribe(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	next := func(gen uint64, typ rdmadpb.EventType, want string) Update {
		t.Helper()
		u := expectUpdate(t, sub, UpdateEvent, gen)
		if u.Event.GetType() != typ || lives(u.State) != want {
			t.Fatalf("%d: %v, state %s; want %v, %s", gen,
				u.Event.GetType(), lives(u.State), typ, want)
		}
		if (typ == evExpecting || typ == evSettled) != (u.Sriov != nil) {
			t.Errorf("%d: Sriov %v", gen, u.Sriov)
		}
		return u
	}
	u := next(2, evExpecting, "efa_0/1/present/ready mlx5_0/1/present/ready")
	if u.Sriov.GetPf() != pf || u.Sriov.GetExpected() != 1 ||
		u.Event.GetDevice().GetName() != "mlx5_0" {
		t.Errorf("expecting: %v", u.Event)
	}
	next(3, evAdded, "efa_0/1/present/ready mlx5_0/1/present/ready "+
		"mlx5_2/1/present")
	next(4, evReady, "efa_0/1/present/ready mlx5_0/1/present/ready "+
		"mlx5_2/1/present/ready")
	u = next(5, evSettled, "efa_0/1/present/ready mlx5_0/1/present/ready "+
		"mlx5_2/1/present/ready")
	if u.Sriov.GetReady() != 1 || u.Sriov.GetExpected() != 1 {
		t.Errorf("settled: %v", u.Sriov)
	}
	next(6, evRemoved, "efa_0/1/present/ready mlx5_0/1/present/ready "+
		"mlx5_2/1/away")
	u = next(7, evReturned, "efa_0/1/present/ready mlx5_0/1/present/ready "+
		"mlx5_4/2/present")
	if u.Previous.GetName() != "mlx5_2" || !Away(u.Previous) {
		t.Errorf("returned replaced %v", u.Previous)
	}
	next(8, evReady, "efa_0/1/present/ready mlx5_0/1/present/ready "+
		"mlx5_4/2/present/ready")
	next(9, evChanged, "efa_0/1/present/held/ready mlx5_0/1/present/ready "+
		"mlx5_4/2/present/ready")
	next(10, evRemoved, "efa_0/1/removed/held mlx5_0/1/present/ready "+
		"mlx5_4/2/present/ready")
	u = next(11, evReturned, "efa_0/1/removed/held efa_0/2/present/ready "+
		"mlx5_0/1/present/ready mlx5_4/2/present/ready")
	if u.Previous != nil {
		t.Errorf("a return beside an ended life replaced %v", u.Previous)
	}
	if Resolve(u.State, "efa_0").GetIncarnation() != 2 {
		t.Error("Resolve(efa_0) is not the present life")
	}
	next(12, evReleased, "efa_0/2/present/ready mlx5_0/1/present/ready "+
		"mlx5_4/2/present/ready")
	next(13, evUnready, "efa_0/2/present mlx5_0/1/present/ready "+
		"mlx5_4/2/present/ready")
	u = expectUpdate(t, sub, UpdateResync, 14)
	if lives(u.State) != "efa_0/2/present/ready" || u.Previous != nil ||
		u.Sriov != nil {
		t.Errorf("resync: %s", lives(u.State))
	}
	c.Close()
	wait(t, done)
}
