// SPDX-License-Identifier: MIT

package rdmad

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// A deadline, not a pace: a loaded machine is slow, a passing test never
// waits for it.
const deadline = 30 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// fakeDaemon is a SOCK_SEQPACKET listener that a test scripts frame by
// frame from its own goroutine.
type fakeDaemon struct {
	t    *testing.T
	path string
	ln   *net.UnixListener
}

func newFake(t *testing.T) *fakeDaemon {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rdmad.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path,
		Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &fakeDaemon{t: t, path: path, ln: ln}
}

// serve runs script on the first connection in a goroutine; the returned
// channel is closed when it has returned.
func (d *fakeDaemon) serve(script func(p *peer)) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.ln.SetDeadline(time.Now().Add(deadline))
		c, err := d.ln.AcceptUnix()
		if err != nil {
			d.t.Errorf("accept: %v", err)
			return
		}
		defer c.Close()
		script(&peer{t: d.t, c: c})
	}()
	return done
}

type peer struct {
	t *testing.T
	c *net.UnixConn
}

// recv is the next request, or nil when the client closed.
func (p *peer) recv() *rdmadpb.Frame {
	buf := make([]byte, maxRequest)
	p.c.SetReadDeadline(time.Now().Add(deadline))
	n, err := p.c.Read(buf)
	if err != nil || n == 0 {
		return nil
	}
	f := &rdmadpb.Frame{}
	if err := proto.Unmarshal(buf[:n], f); err != nil {
		p.t.Errorf("fake daemon: undecodable request: %v", err)
		return nil
	}
	return f
}

func (p *peer) sendBytes(b []byte, oob []byte) {
	if _, _, err := p.c.WriteMsgUnix(b, oob, nil); err != nil {
		p.t.Errorf("fake daemon: send: %v", err)
	}
}

// send writes f as version 1 with an unknown field appended, as a newer
// daemon might: the client must ignore it.
func (p *peer) send(f *rdmadpb.Frame) {
	if f.Version == 0 {
		f.Version = Version
	}
	b, err := proto.Marshal(f)
	if err != nil {
		p.t.Errorf("fake daemon: marshal: %v", err)
		return
	}
	b = protowire.AppendTag(b, 999, protowire.BytesType)
	b = protowire.AppendString(b, "from a newer daemon")
	p.sendBytes(b, nil)
}

// hello expects Hello and answers Welcome at generation gen; it returns
// the Hello.
func (p *peer) hello(gen uint64) *rdmadpb.Hello {
	f := p.recv()
	if f.GetHello() == nil || f.GetSeq() == 0 || f.GetVersion() != 1 {
		p.t.Errorf("fake daemon: expected Hello, got %v", f)
	}
	p.send(&rdmadpb.Frame{Seq: f.GetSeq(), Body: &rdmadpb.Frame_Welcome{
		Welcome: &rdmadpb.Welcome{Version: 1, Generation: gen,
			DaemonVersion: "test"}}})
	return f.GetHello()
}

// snapshot sends the devices as len(split) parts of the given sizes.
func (p *peer) snapshot(seq, gen uint64, devs []*rdmadpb.Device, split ...int) {
	if len(split) == 0 {
		split = []int{len(devs)}
	}
	for i, n := range split {
		p.send(&rdmadpb.Frame{Seq: seq, Body: &rdmadpb.Frame_Snapshot{
			Snapshot: &rdmadpb.Snapshot{Generation: gen, Part: uint32(i),
				Parts: uint32(len(split)), Devices: devs[:n]}}})
		devs = devs[n:]
	}
}

func (p *peer) event(gen uint64, typ rdmadpb.EventType, d *rdmadpb.Device) {
	p.send(&rdmadpb.Frame{Body: &rdmadpb.Frame_Event{Event: &rdmadpb.Event{
		Generation: gen, Type: typ, Device: d}}})
}

func (p *peer) status(seq uint64, st rdmadpb.Status, text string) {
	p.send(&rdmadpb.Frame{Seq: seq, Status: st, Error: text})
}

// expect reads the next request and checks its body with ok.
func (p *peer) expect(what string, ok func(*rdmadpb.Frame) bool) *rdmadpb.Frame {
	f := p.recv()
	if f == nil || !ok(f) {
		p.t.Errorf("fake daemon: expected %s, got %v", what, f)
		return &rdmadpb.Frame{}
	}
	return f
}

func isSubscribe(f *rdmadpb.Frame) bool { return f.GetSubscribe() != nil }
func isGetStatus(f *rdmadpb.Frame) bool { return f.GetGetStatus_() != nil }

func dev(name string) *rdmadpb.Device {
	d := &rdmadpb.Device{Name: name, Id: "pci:" + name, Uverbs: "uverbs0",
		Ports: []*rdmadpb.Port{{Port: 1, State: "ACTIVE"}}}
	// A field this client does not know, inside a nested message.
	var raw []byte
	raw = protowire.AppendTag(raw, 777, protowire.VarintType)
	raw = protowire.AppendVarint(raw, 42)
	d.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
	return d
}

func names(s *Snapshot) []string {
	out := []string{}
	for _, d := range s.Devices {
		out = append(out, d.GetName())
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func dial(t *testing.T, d *fakeDaemon) *Conn {
	t.Helper()
	c, err := Dial(testContext(t), d.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wait(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatal("fake daemon did not finish")
	}
}

func TestSnapshotAssembledFromParts(t *testing.T) {
	d := newFake(t)
	done := d.serve(func(p *peer) {
		p.hello(41)
		f := p.expect("GetStatus", isGetStatus)
		// Three parts, one of them empty, as section 7 allows.
		p.snapshot(f.GetSeq(), 42, []*rdmadpb.Device{dev("a"), dev("b"),
			dev("c")}, 2, 0, 1)
		p.recv() // until the client closes
	})
	c := dial(t, d)
	if c.Welcome().GetGeneration() != 41 || c.Generation() != 41 {
		t.Errorf("welcome generation %d, Generation() %d",
			c.Welcome().GetGeneration(), c.Generation())
	}
	if c.HasGenerationPage() {
		t.Error("a generation page without a descriptor")
	}
	s, err := c.Snapshot(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Generation != 42 || !equal(names(s), []string{"a", "b", "c"}) {
		t.Errorf("snapshot %d %v", s.Generation, names(s))
	}
	if s.Device("b") == nil || s.Device("x") != nil {
		t.Error("Device() lookup")
	}
	if c.Generation() != 42 {
		t.Errorf("Generation() %d after a snapshot at 42", c.Generation())
	}
	c.Close()
	wait(t, done)
}

func TestEmptySnapshot(t *testing.T) {
	d := newFake(t)
	d.serve(func(p *peer) {
		p.hello(1)
		f := p.expect("GetStatus", isGetStatus)
		p.snapshot(f.GetSeq(), 1, nil)
		p.recv()
	})
	s, err := dial(t, d).Snapshot(testContext(t))
	if err != nil || s.Generation != 1 || s.Devices == nil ||
		len(s.Devices) != 0 {
		t.Fatalf("empty snapshot: %v %v", s, err)
	}
}

func TestSnapshotPartsOutOfOrderIsProtocolError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []*rdmadpb.Snapshot
	}{
		{"skipped part", []*rdmadpb.Snapshot{
			{Generation: 5, Part: 0, Parts: 3},
			{Generation: 5, Part: 2, Parts: 3}}},
		{"other generation", []*rdmadpb.Snapshot{
			{Generation: 5, Part: 0, Parts: 2},
			{Generation: 6, Part: 1, Parts: 2}}},
		{"other parts", []*rdmadpb.Snapshot{
			{Generation: 5, Part: 0, Parts: 2},
			{Generation: 5, Part: 1, Parts: 3}}},
		{"zero parts", []*rdmadpb.Snapshot{
			{Generation: 5, Part: 0, Parts: 0}}},
		{"not from part 0", []*rdmadpb.Snapshot{
			{Generation: 5, Part: 1, Parts: 2}}},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			d := newFake(t)
			d.serve(func(p *peer) {
				p.hello(1)
				f := p.expect("GetStatus", isGetStatus)
				for _, s := range tc.parts {
					p.send(&rdmadpb.Frame{Seq: f.GetSeq(),
						Body: &rdmadpb.Frame_Snapshot{Snapshot: s}})
				}
				p.recv()
			})
			c := dial(t, d)
			_, err := c.Snapshot(testContext(t))
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("got %v, want ErrProtocol", err)
			}
			<-c.Done()
			if !errors.Is(c.Err(), ErrProtocol) {
				t.Errorf("Err() %v", c.Err())
			}
		})
	}
}

func TestFrameInsideSnapshotPartsIsProtocolError(t *testing.T) {
	d := newFake(t)
	d.serve(func(p *peer) {
		p.hello(1)
		f := p.expect("GetStatus", isGetStatus)
		p.send(&rdmadpb.Frame{Seq: f.GetSeq(), Body: &rdmadpb.Frame_Snapshot{
			Snapshot: &rdmadpb.Snapshot{Generation: 5, Parts: 2}}})
		p.event(6, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("x"))
		p.recv()
	})
	if _, err := dial(t, d).Snapshot(testContext(t)); !errors.Is(err,
		ErrProtocol) {
		t.Fatalf("got %v, want ErrProtocol", err)
	}
}

func TestStatusErrors(t *testing.T) {
	d := newFake(t)
	d.serve(func(p *peer) {
		p.hello(1)
		f := p.expect("Hold", func(f *rdmadpb.Frame) bool {
			return f.GetHold().GetName() == "mlx5_9"
		})
		p.status(f.GetSeq(), rdmadpb.Status_STATUS_NO_SUCH_DEVICE, "not listed")
		f = p.expect("Release", func(f *rdmadpb.Frame) bool {
			return f.GetRelease().GetName() == "mlx5_0"
		})
		p.status(f.GetSeq(), rdmadpb.Status_STATUS_NOT_HELD, "")
		f = p.expect("Rescan", func(f *rdmadpb.Frame) bool {
			return f.GetRescan() != nil
		})
		p.status(f.GetSeq(), rdmadpb.Status(42), "from the future")
		f = p.expect("Hold", func(f *rdmadpb.Frame) bool {
			return f.GetHold().GetName() == "mlx5_0"
		})
		p.status(f.GetSeq(), rdmadpb.Status_STATUS_OK, "")
		p.recv()
	})
	c := dial(t, d)
	ctx := testContext(t)
	err := c.Hold(ctx, "mlx5_9")
	var se *StatusError
	if !errors.Is(err, ErrNoSuchDevice) || !errors.As(err, &se) ||
		se.Message != "not listed" {
		t.Errorf("hold: %v", err)
	}
	if err := c.Release(ctx, "mlx5_0"); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release: %v", err)
	}
	err = c.Rescan(ctx)
	if err == nil || !errors.As(err, &se) || se.Status != 42 ||
		errors.Is(err, ErrInternal) {
		t.Errorf("an unknown status must fail and match no sentinel: %v", err)
	}
	// Refused here, never sent: the daemon counts bad requests.
	for _, bad := range []string{"", "a/b", ".x", "a b", "é",
		"0123456789012345678901234567890123456789012345678901234567890123"} {
		if err := c.Hold(ctx, bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("hold %q: %v", bad, err)
		}
	}
	if err := c.Hold(ctx, "mlx5_0"); err != nil {
		t.Errorf("hold: %v", err)
	}
}

func TestContextDeadline(t *testing.T) {
	d := newFake(t)
	release := make(chan struct{})
	d.serve(func(p *peer) {
		p.hello(1)
		p.recv() // the Hold, never answered
		<-release
	})
	defer close(release)
	c := dial(t, d)
	ctx, cancel := context.WithTimeout(context.Background(),
		100*time.Millisecond)
	defer cancel()
	err := c.Hold(ctx, "mlx5_0")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if c.Err() != nil {
		t.Errorf("a deadline must leave the connection usable: %v", c.Err())
	}
}

func TestDialDeadlineWithoutWelcome(t *testing.T) {
	d := newFake(t)
	release := make(chan struct{})
	d.serve(func(p *peer) {
		p.recv()
		<-release
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(),
		100*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, d.path); !errors.Is(err,
		context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
}

func TestDialNobody(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nobody.sock")
	_, err := Dial(testContext(t), path)
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("got %v, want ENOENT", err)
	}
}

func TestOtherVersion(t *testing.T) {
	d := newFake(t)
	d.serve(func(p *peer) {
		f := p.recv()
		p.send(&rdmadpb.Frame{Version: 2, Seq: f.GetSeq(),
			Status: rdmadpb.Status_STATUS_UNSUPPORTED_VERSION})
	})
	_, err := Dial(testContext(t), d.path)
	if !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("got %v, want ErrUnsupportedVersion", err)
	}
}

func TestTruncatedDatagram(t *testing.T) {
	d := newFake(t)
	d.serve(func(p *peer) {
		p.hello(1)
		p.expect("GetStatus", isGetStatus)
		p.sendBytes(make([]byte, maxFrame+100), nil)
		p.recv()
	})
	_, err := dial(t, d).Snapshot(testContext(t))
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v, want ErrProtocol", err)
	}
}

func TestDisconnect(t *testing.T) {
	d := newFake(t)
	d.serve(func(p *peer) {
		p.hello(1)
		f := p.expect("Subscribe", isSubscribe)
		p.snapshot(f.GetSeq(), 1, nil)
		p.expect("Hold", func(f *rdmadpb.Frame) bool {
			return f.GetHold() != nil
		})
		// ... and go away without answering.
	})
	c := dial(t, d)
	ctx := testContext(t)
	sub, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(ctx, "mlx5_0"); !errors.Is(err, ErrDisconnected) {
		t.Errorf("hold: %v", err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, ErrDisconnected) {
		t.Errorf("next: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := c.Hold(ctx, "mlx5_0"); !errors.Is(err, ErrDisconnected) &&
		!errors.Is(err, ErrClosed) {
		t.Errorf("hold after close: %v", err)
	}
}

func TestCloseEndsWaits(t *testing.T) {
	d := newFake(t)
	release := make(chan struct{})
	d.serve(func(p *peer) {
		p.hello(1)
		f := p.expect("Subscribe", isSubscribe)
		p.snapshot(f.GetSeq(), 1, nil)
		<-release
	})
	defer close(release)
	c := dial(t, d)
	sub, err := c.Subscribe(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		c.Close()
	}()
	if _, err := sub.Next(testContext(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

// expectUpdate is the next Update, which must be of kind k at gen.
func expectUpdate(t *testing.T, sub *Subscription, k UpdateKind, gen uint64) Update {
	t.Helper()
	u, err := sub.Next(testContext(t))
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	if u.Kind != k || u.Generation != gen || u.State.Generation != gen {
		t.Fatalf("got %v at %d (state %d), want %v at %d", u.Kind,
			u.Generation, u.State.Generation, k, gen)
	}
	return u
}

func TestSubscribeEventsGapsAndResync(t *testing.T) {
	d := newFake(t)
	done := d.serve(func(p *peer) {
		p.hello(9)
		f := p.expect("Subscribe", isSubscribe)
		p.snapshot(f.GetSeq(), 10, []*rdmadpb.Device{dev("mlx5_0")})
		p.event(10, rdmadpb.EventType_EVENT_TYPE_CHANGED, dev("mlx5_0"))
		p.event(11, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("mlx5_1"))
		p.event(11, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("mlx5_1"))
		// A gap: 12 is missing.  The client must subscribe again.
		p.event(13, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("mlx5_3"))
		p.event(14, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("mlx5_4"))
		f = p.expect("Subscribe again", isSubscribe)
		p.event(15, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("mlx5_5"))
		p.snapshot(f.GetSeq(), 15, []*rdmadpb.Device{dev("mlx5_0"),
			dev("mlx5_1"), dev("mlx5_3"), dev("mlx5_4"), dev("mlx5_5")},
			2, 3)
		p.event(15, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("mlx5_5"))
		p.event(16, rdmadpb.EventType_EVENT_TYPE_REMOVED, dev("mlx5_0"))
		// An event type from a newer daemon: resync too.
		p.event(17, rdmadpb.EventType(99), dev("mlx5_1"))
		f = p.expect("Subscribe after an unknown event", isSubscribe)
		p.snapshot(f.GetSeq(), 17, []*rdmadpb.Device{dev("mlx5_1")})
		// The daemon dropped events for a slow reader: seq 0.
		p.snapshot(0, 30, []*rdmadpb.Device{dev("ib0"), dev("ib1")}, 1, 1)
		p.event(31, rdmadpb.EventType_EVENT_TYPE_RELEASED, dev("ib0"))
		p.recv()
	})
	c := dial(t, d)
	sub, err := c.Subscribe(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if sub.Generation() != 10 || !equal(names(sub.State()),
		[]string{"mlx5_0"}) {
		t.Fatalf("initial state %d %v", sub.Generation(), names(sub.State()))
	}
	u := expectUpdate(t, sub, UpdateEvent, 11)
	if u.Event.GetType() != rdmadpb.EventType_EVENT_TYPE_ADDED ||
		!equal(names(u.State), []string{"mlx5_0", "mlx5_1"}) {
		t.Errorf("event 11: %v %v", u.Event, names(u.State))
	}
	u = expectUpdate(t, sub, UpdateResync, 15)
	if !equal(names(u.State), []string{"mlx5_0", "mlx5_1", "mlx5_3",
		"mlx5_4", "mlx5_5"}) || u.Event != nil {
		t.Errorf("resync: %v", names(u.State))
	}
	u = expectUpdate(t, sub, UpdateEvent, 16)
	if !equal(names(u.State), []string{"mlx5_1", "mlx5_3", "mlx5_4",
		"mlx5_5"}) {
		t.Errorf("after removal: %v", names(u.State))
	}
	u = expectUpdate(t, sub, UpdateResync, 17)
	u = expectUpdate(t, sub, UpdateResync, 30)
	if !equal(names(u.State), []string{"ib0", "ib1"}) {
		t.Errorf("unsolicited snapshot: %v", names(u.State))
	}
	u = expectUpdate(t, sub, UpdateEvent, 31)
	if !equal(names(u.State), []string{"ib1"}) {
		t.Errorf("after release: %v", names(u.State))
	}
	if _, err := c.Subscribe(testContext(t)); !errors.Is(err,
		ErrAlreadySubscribed) {
		t.Errorf("second Subscribe: %v", err)
	}
	c.Close()
	wait(t, done)
}

func TestSlowSubscriberResyncs(t *testing.T) {
	const events = maxQueued + 10
	d := newFake(t)
	sent := make(chan struct{})
	d.serve(func(p *peer) {
		p.hello(1)
		f := p.expect("Subscribe", isSubscribe)
		p.snapshot(f.GetSeq(), 1, nil)
		for g := uint64(2); g < 2+events; g++ {
			p.event(g, rdmadpb.EventType_EVENT_TYPE_CHANGED, dev("x"))
		}
		// A reply after them all: once it is in, so are they.
		f = p.expect("Hold", func(f *rdmadpb.Frame) bool {
			return f.GetHold() != nil
		})
		p.status(f.GetSeq(), rdmadpb.Status_STATUS_OK, "")
		close(sent)
		f = p.expect("Subscribe again", isSubscribe)
		p.snapshot(f.GetSeq(), 1+events, []*rdmadpb.Device{dev("x")})
		p.recv()
	})
	c := dial(t, d)
	sub, err := c.Subscribe(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(testContext(t), "x"); err != nil {
		t.Fatal(err)
	}
	<-sent
	expectUpdate(t, sub, UpdateResync, 1+events)
}

func TestApply(t *testing.T) {
	held := dev("mlx5_1")
	held.State = rdmadpb.DeviceState_DEVICE_STATE_REMOVED
	held.Holders = []*rdmadpb.Holder{{Pid: 1, Comm: "x"}}
	counted := dev("mlx5_2")
	counted.HolderCount = 70 // more than listed: still held
	renamed := dev("ib0")
	renamed.OldName = "mlx5_0"
	s := &Snapshot{Generation: 1, Devices: []*rdmadpb.Device{dev("mlx5_0"),
		dev("mlx5_1"), dev("mlx5_2")}}
	for _, step := range []struct {
		typ  rdmadpb.EventType
		d    *rdmadpb.Device
		want []string
	}{
		{rdmadpb.EventType_EVENT_TYPE_REMOVED, held,
			[]string{"mlx5_0", "mlx5_1", "mlx5_2"}},
		{rdmadpb.EventType_EVENT_TYPE_REMOVED, counted,
			[]string{"mlx5_0", "mlx5_1", "mlx5_2"}},
		{rdmadpb.EventType_EVENT_TYPE_RENAMED, renamed,
			[]string{"ib0", "mlx5_1", "mlx5_2"}},
		{rdmadpb.EventType_EVENT_TYPE_RELEASED, dev("mlx5_1"),
			[]string{"ib0", "mlx5_2"}},
		{rdmadpb.EventType_EVENT_TYPE_REMOVED, dev("ib0"),
			[]string{"mlx5_2"}},
		{rdmadpb.EventType_EVENT_TYPE_ADDED, dev("a"),
			[]string{"a", "mlx5_2"}},
		{rdmadpb.EventType_EVENT_TYPE_CHANGED, dev("a"),
			[]string{"a", "mlx5_2"}},
	} {
		next, _, ok := s.apply(&rdmadpb.Event{Generation: s.Generation + 1,
			Type: step.typ, Device: step.d}, true)
		if !ok || !equal(names(next), step.want) ||
			next.Generation != s.Generation+1 {
			t.Fatalf("%v %s: %v, want %v", step.typ, step.d.GetName(),
				names(next), step.want)
		}
		if next.Device(step.d.GetName()) != nil && Usable(step.d) !=
			(step.d.GetState() == rdmadpb.DeviceState_DEVICE_STATE_PRESENT) {
			t.Error("Usable")
		}
		s = next
	}
	if Usable(&rdmadpb.Device{State: rdmadpb.DeviceState(7)}) || Usable(held) {
		t.Error("an unknown or removed state is not usable")
	}
	if HolderCount(counted) != 70 || HolderCount(held) != 1 {
		t.Error("HolderCount")
	}
}

// memfd makes a generation page as the daemon does, writable here.
func memfd(t *testing.T, magic uint32, seals int) (int, []byte) {
	t.Helper()
	name, _ := syscall.BytePtrFromString("genpage-test")
	// memfd_create(2): not in package syscall; 319 on x86-64, 279 on
	// arm64 and the other architectures of the generic table.
	sysMemfdCreate := uintptr(279)
	if runtime.GOARCH == "amd64" {
		sysMemfdCreate = 319
	} else if runtime.GOARCH != "arm64" && runtime.GOARCH != "riscv64" &&
		runtime.GOARCH != "loong64" {
		t.Skipf("memfd_create's number on %s is not known here", runtime.GOARCH)
	}
	const mfdCloexec, mfdAllowSealing = 1, 2
	r, _, errno := syscall.Syscall(sysMemfdCreate,
		uintptr(unsafe.Pointer(name)), mfdCloexec|mfdAllowSealing, 0)
	if errno != 0 {
		t.Skipf("memfd_create: %v", errno)
	}
	fd := int(r)
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Ftruncate(fd, pageSize); err != nil {
		t.Fatal(err)
	}
	mem, err := syscall.Mmap(fd, 0, pageSize,
		syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	*(*uint32)(unsafe.Pointer(&mem[0])) = magic
	*(*uint32)(unsafe.Pointer(&mem[4])) = pageLayout
	*(*uint64)(unsafe.Pointer(&mem[8])) = 42
	const fAddSeals = 1033
	if seals != 0 {
		if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd),
			fAddSeals, uintptr(seals)); errno != 0 {
			t.Fatalf("F_ADD_SEALS: %v", errno)
		}
	}
	return fd, mem
}

func TestGenerationPage(t *testing.T) {
	const sealShrinkGrow = 0x2 | 0x4
	for _, tc := range []struct {
		name   string
		magic  uint32
		seals  int
		mapped bool
	}{
		{"sealed", pageMagic, sealShrinkGrow, true},
		{"not sealed", pageMagic, 0, false},
		{"bad magic", 0x12345678, sealShrinkGrow, false},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			fd, mem := memfd(t, tc.magic, tc.seals)
			d := newFake(t)
			d.serve(func(p *peer) {
				f := p.recv()
				b, _ := proto.Marshal(&rdmadpb.Frame{Version: 1,
					Seq: f.GetSeq(), Body: &rdmadpb.Frame_Welcome{
						Welcome: &rdmadpb.Welcome{Version: 1,
							Generation: 42, GenerationPage: true}}})
				p.sendBytes(b, syscall.UnixRights(fd))
				p.recv()
			})
			c := dial(t, d)
			if c.HasGenerationPage() != tc.mapped {
				t.Fatalf("mapped: %v", c.HasGenerationPage())
			}
			*(*uint64)(unsafe.Pointer(&mem[8])) = 43
			want := uint64(42) // from the Welcome
			if tc.mapped {
				want = 43 // from the page, no message needed
			}
			if g := c.Generation(); g != want {
				t.Errorf("Generation() %d, want %d", g, want)
			}
			c.Close()
			if c.HasGenerationPage() {
				t.Error("still mapped after Close")
			}
		})
	}
}
