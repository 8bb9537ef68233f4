// SPDX-License-Identifier: MIT

package rdmad

// The follower (follow.go) walks the same cases as the C clients' one,
// proto/follow.c: the rows of the tables in tests/unit/proto/test-follow.c,
// read from that file, so that there is one table for both and a row
// added there is walked here too.

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// followS is the Subscribe's seq in every row (S in test-follow.c).
const followS = 7

// followCTest is the text of test-follow.c, found under tests/unit.
func followCTest(t *testing.T) string {
	t.Helper()
	root := os.Getenv("RDMAD_SOURCE_ROOT")
	if root == "" {
		root = filepath.Join("..", "..", "..")
	}
	var path string
	filepath.Walk(filepath.Join(root, "tests", "unit"),
		func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Name() == "test-follow.c" {
				path = p
			}
			return nil
		})
	if path == "" {
		t.Fatalf("no test-follow.c under %s", filepath.Join(root, "tests", "unit"))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cRows are the rows of the C array @name: each {"...", ...}, its
// quoted name then its other fields split at commas.
func cRows(t *testing.T, text, name string) [][]string {
	t.Helper()
	start := strings.Index(text, name+"[] = {")
	if start < 0 {
		t.Fatalf("test-follow.c has no %s", name)
	}
	end := strings.Index(text[start:], "\n};")
	block := strings.Join(strings.Fields(text[start+len(name)+6:start+end]), " ")
	var rows [][]string
	for _, m := range regexp.MustCompile(`\{("[^"]*")\s*,([^{}]*)\}`).FindAllStringSubmatch(block, -1) {
		row := []string{m[1]}
		for _, f := range strings.Split(m[2], ",") {
			row = append(row, strings.TrimSpace(f))
		}
		rows = append(rows, row)
	}
	if n := strings.Count(block, `{"`); len(rows) != n || n == 0 {
		t.Fatalf("%s: read %d rows of %d", name, len(rows), n)
	}
	return rows
}

var (
	followStates = map[string]followState{"FOLLOW_IDLE": followIdle,
		"FOLLOW_AWAITING": followAwaiting, "FOLLOW_FOLLOWING": followFollowing}
	followActions = map[string]followAction{"FOLLOW_IGNORE": followIgnore,
		"FOLLOW_SKIP": followSkip, "FOLLOW_APPLY": followApply,
		"FOLLOW_RESYNC": followResync, "FOLLOW_PART": followPart,
		"FOLLOW_REFUSED": followRefused}
	followTypes = map[string]rdmadpb.EventType{"0": 0,
		"ADDED":    rdmadpb.EventType_EVENT_TYPE_ADDED,
		"REMOVING": rdmadpb.EventType_EVENT_TYPE_REMOVING,
		"UNKNOWN":  rdmadpb.EventType(77)}
	followSeqs = map[string]uint64{"0": 0, "S": followS, "S + 1": followS + 1}
)

// field is @m[@k], failing the test where the C table names something
// this test does not know.
func field[K comparable, V any](t *testing.T, row string, m map[K]V, k K) V {
	t.Helper()
	v, ok := m[k]
	if !ok {
		t.Fatalf("%s: %v is not known to this test", row, k)
	}
	return v
}

// Every row of frame_rows: a follower at generation 10 in the row's
// state, the row's frame, what it means; the follower unchanged.
func TestFollowFrames(t *testing.T) {
	rows := cRows(t, followCTest(t), "frame_rows")
	t.Logf("%d rows of test-follow.c's frame_rows", len(rows))
	for _, r := range rows {
		if len(r) != 8 {
			t.Fatalf("row %v: %d fields, not 8", r, len(r))
		}
		what, _ := strconv.Unquote(r[0])
		f := follower{state: field(t, what, followStates, r[1]),
			subscribeSeq: followS, generation: 10}
		fr := followFrame{seq: field(t, what, followSeqs, r[2]),
			refused: r[4] != "OK"}
		gen, err := strconv.ParseUint(r[5], 10, 64)
		if err != nil {
			t.Fatalf("%s: generation %q", what, r[5])
		}
		switch r[3] {
		case "EVENT":
			fr.event = &rdmadpb.Event{Generation: gen,
				Type: field(t, what, followTypes, r[6])}
		case "SNAPSHOT":
			fr.snapshot = true
		case "HOLD_REPLY":
		default:
			t.Fatalf("%s: body %s", what, r[3])
		}
		before := f
		if got, want := f.frame(fr), field(t, what, followActions, r[7]); got != want {
			t.Errorf("%s: %d, not %d (%s)", what, got, want, r[7])
		}
		if f != before {
			t.Errorf("%s: frame() changed the follower", what)
		}
	}
}

// Every row of snapshot_rows: a whole snapshot of the row's seq taken in
// its state: the state entered and whether it answered the Subscribe.
func TestFollowSnapshots(t *testing.T) {
	for _, r := range cRows(t, followCTest(t), "snapshot_rows") {
		if len(r) != 5 {
			t.Fatalf("row %v: %d fields, not 5", r, len(r))
		}
		what, _ := strconv.Unquote(r[0])
		f := follower{state: field(t, what, followStates, r[1]),
			subscribeSeq: followS, generation: 10}
		answer := f.snapshot(field(t, what, followSeqs, r[2]), 20)
		if want := field(t, what, followStates, r[3]); f.state != want {
			t.Errorf("%s: state %d, not %s", what, f.state, r[3])
		}
		if answer != (r[4] == "true") {
			t.Errorf("%s: answer %v", what, answer)
		}
		if f.generation != 20 {
			t.Errorf("%s: generation %d", what, f.generation)
		}
	}
}

// A life, as test-follow.c's: subscribe, the snapshot, an event.
func TestFollowLife(t *testing.T) {
	var f follower
	ev := followFrame{event: &rdmadpb.Event{Generation: 1}}
	if f.frame(ev) != followSkip {
		t.Error("idle at first")
	}
	f.subscribed(followS)
	if f.state != followAwaiting || f.subscribeSeq != followS {
		t.Error("awaiting")
	}
	if !f.snapshot(followS, 5) {
		t.Error("the answer")
	}
	ev.event.Generation = 6
	if f.frame(ev) != followApply {
		t.Error("6 after 5")
	}
	f.applied(6)
	if f.frame(ev) != followSkip {
		t.Error("6 again")
	}
}

// Every type the schema lists is known; none past it.
func TestFollowKnownTypes(t *testing.T) {
	for v, name := range rdmadpb.EventType_name {
		if !eventKnown(rdmadpb.EventType(v)) {
			t.Errorf("%s not known", name)
		}
	}
	for _, v := range []int32{77, -1} {
		if eventKnown(rdmadpb.EventType(v)) {
			t.Errorf("%d known", v)
		}
	}
}

// The row "unsolicited, awaiting" through a Subscription: a snapshot the
// daemon sends unasked while the one asked for after a gap is awaited
// becomes the state at once (PROTOCOL.md 9: accepted at any time), and
// the events after it still wait for the answer.
func TestUnsolicitedSnapshotWhileAwaiting(t *testing.T) {
	d := newFake(t)
	done := d.serve(func(p *peer) {
		p.hello(9)
		f := p.expect("Subscribe", isSubscribe)
		p.snapshot(f.GetSeq(), 10, []*rdmadpb.Device{dev("mlx5_0")})
		p.event(12, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("mlx5_2"))
		f = p.expect("Subscribe again", isSubscribe)
		p.snapshot(0, 20, []*rdmadpb.Device{dev("ib0")})
		p.event(21, rdmadpb.EventType_EVENT_TYPE_ADDED, dev("ib1"))
		p.snapshot(f.GetSeq(), 21, []*rdmadpb.Device{dev("ib0"), dev("ib1")})
		p.event(22, rdmadpb.EventType_EVENT_TYPE_REMOVED, dev("ib0"))
		p.recv()
	})
	c := dial(t, d)
	sub, err := c.Subscribe(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	u := expectUpdate(t, sub, UpdateResync, 20)
	if !equal(names(u.State), []string{"ib0"}) {
		t.Errorf("unsolicited snapshot: %v", names(u.State))
	}
	u = expectUpdate(t, sub, UpdateResync, 21)
	if !equal(names(u.State), []string{"ib0", "ib1"}) {
		t.Errorf("the answer: %v", names(u.State))
	}
	u = expectUpdate(t, sub, UpdateEvent, 22)
	if !equal(names(u.State), []string{"ib1"}) {
		t.Errorf("after 22: %v", names(u.State))
	}
	c.Close()
	wait(t, done)
}
