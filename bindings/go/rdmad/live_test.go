// SPDX-License-Identifier: MIT

package rdmad

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Tests against a real rdmad: tests/integration/test_go.py starts one on
// fake devices and runs this package's test binary with
//   RDMAD_TEST_SOCKET   the daemon's socket
//   RDMAD_TEST_RDMACTL  the rdmactl to compare with
//   RDMAD_TEST_DEVICE   a present device to hold
// Without them these tests skip.

type liveEnv struct {
	socket, rdmactl, device string
}

func live(t *testing.T) liveEnv {
	e := liveEnv{os.Getenv("RDMAD_TEST_SOCKET"),
		os.Getenv("RDMAD_TEST_RDMACTL"), os.Getenv("RDMAD_TEST_DEVICE")}
	if e.socket == "" || e.rdmactl == "" || e.device == "" {
		t.Skip("no real rdmad (tests/integration/test_go.py runs these)")
	}
	return e
}

// statusJSON is the part of `rdmactl status --json` these tests read.
type statusJSON struct {
	Generation uint64 `json:"generation"`
	Devices    []struct {
		Name        string `json:"name"`
		State       string `json:"state"`
		Identity    string `json:"identity"`
		Incarnation uint64 `json:"incarnation"`
		Ready       bool   `json:"ready"`
		Holders     []struct {
			Pid  uint32 `json:"pid"`
			UID  uint32 `json:"uid"`
			Comm string `json:"comm"`
		} `json:"holders"`
	} `json:"devices"`
}

func (e liveEnv) status(t *testing.T) statusJSON {
	t.Helper()
	cmd := exec.Command(e.rdmactl, "--socket", e.socket, "status", "--json")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rdmactl status --json: %v", err)
	}
	var st statusJSON
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("rdmactl status --json: %v", err)
	}
	return st
}

// holders are the (pid, comm) holders rdmactl lists for the device.
func (e liveEnv) holders(t *testing.T, name string) map[uint32]string {
	t.Helper()
	for _, d := range e.status(t).Devices {
		if d.Name == name {
			out := map[uint32]string{}
			for _, h := range d.Holders {
				out[h.Pid] = h.Comm
			}
			return out
		}
	}
	t.Fatalf("rdmactl status does not list %s", name)
	return nil
}

func myComm(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// nextEvent waits for an event of type typ for device name; ok checks it.
func nextEvent(t *testing.T, ctx context.Context, sub *Subscription,
	typ rdmadpb.EventType, name string, ok func(*rdmadpb.Device) bool) Update {
	t.Helper()
	for {
		u, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %v of %s: %v", typ, name, err)
		}
		if u.Kind == UpdateEvent && u.Event.GetType() == typ &&
			u.Event.GetDevice().GetName() == name &&
			ok(u.Event.GetDevice()) {
			return u
		}
	}
}

func holdsMe(d *rdmadpb.Device) bool {
	for _, h := range d.GetHolders() {
		if h.GetPid() == uint32(os.Getpid()) {
			return true
		}
	}
	return false
}

func TestLiveHoldShowsInStatus(t *testing.T) {
	e := live(t)
	ctx := testContext(t)
	c, err := Dial(ctx, e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := sub.State().Device(e.device); d == nil || !Usable(d) {
		t.Fatalf("%s not present in the subscription's snapshot", e.device)
	}
	if err := c.Hold(ctx, e.device); err != nil {
		t.Fatal(err)
	}
	pid := uint32(os.Getpid())
	if comm, ok := e.holders(t, e.device)[pid]; !ok || comm != myComm(t) {
		t.Errorf("rdmactl status lists holders %v of %s, want pid %d comm %s",
			e.holders(t, e.device), e.device, pid, myComm(t))
	}
	u := nextEvent(t, ctx, sub, rdmadpb.EventType_EVENT_TYPE_CHANGED,
		e.device, holdsMe)
	if !holdsMe(u.State.Device(e.device)) || HolderCount(u.Event.GetDevice()) < 1 {
		t.Errorf("state after the hold: %v", u.State.Device(e.device))
	}
	// A second hold on the same connection is refused.
	if err := c.Hold(ctx, e.device); !errors.Is(err, ErrBadRequest) {
		t.Errorf("second hold: %v", err)
	}
	if err := c.Release(ctx, e.device); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.holders(t, e.device)[pid]; ok {
		t.Errorf("still listed as a holder after Release")
	}
	nextEvent(t, ctx, sub, rdmadpb.EventType_EVENT_TYPE_CHANGED, e.device,
		func(d *rdmadpb.Device) bool { return !holdsMe(d) })
	if err := c.Release(ctx, e.device); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release of what is not held: %v", err)
	}
	if err := c.Hold(ctx, "nosuch9"); !errors.Is(err, ErrNoSuchDevice) {
		t.Errorf("hold of an unknown device: %v", err)
	}
}

func TestLiveHoldEndsWithConnection(t *testing.T) {
	e := live(t)
	ctx := testContext(t)
	c, err := Dial(ctx, e.socket)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(ctx, e.device); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The daemon lets go when it sees the connection close; watch for it
	// from a second connection instead of sleeping.
	w, err := Dial(ctx, e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sub, err := w.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if holdsMe(sub.State().Device(e.device)) {
		nextEvent(t, ctx, sub, rdmadpb.EventType_EVENT_TYPE_CHANGED,
			e.device, func(d *rdmadpb.Device) bool { return !holdsMe(d) })
	}
	if _, ok := e.holders(t, e.device)[uint32(os.Getpid())]; ok {
		t.Error("a closed connection's hold is still listed")
	}
}

func TestLiveSnapshotMatchesRdmactl(t *testing.T) {
	e := live(t)
	ctx := testContext(t)
	c, err := Dial(ctx, e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.HasGenerationPage() {
		t.Error("rdmad passed no generation page")
	}
	s, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := e.status(t)
	var theirs []string
	for _, d := range st.Devices {
		theirs = append(theirs, fmt.Sprintf("%s %s %s/%d ready=%v",
			d.Name, d.State, d.Identity, d.Incarnation, d.Ready))
	}
	var ours []string
	for _, d := range s.Devices {
		state := "removed"
		if Present(d) {
			state = "present"
		} else if Away(d) {
			state = "away"
		}
		ours = append(ours, fmt.Sprintf("%s %s %s/%d ready=%v",
			d.GetName(), state, d.GetIdentity(), d.GetIncarnation(),
			d.GetReady()))
	}
	sort.Strings(theirs)
	// Nothing changes the fake devices meanwhile; the generation can
	// only have grown between the two requests.
	if !equal(ours, theirs) || st.Generation < s.Generation {
		t.Errorf("snapshot %d %v, rdmactl status %d %v", s.Generation, ours,
			st.Generation, theirs)
	}
	if g := c.Generation(); g < s.Generation {
		t.Errorf("the generation page says %d, below the snapshot's %d",
			g, s.Generation)
	}
}
