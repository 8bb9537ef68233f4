// SPDX-License-Identifier: MIT

package rdmad

import (
	"context"
	"time"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Follow keeps a subscription to rdmad at path (as in Dial) for as long as
// ctx lasts, for programs that mirror the device list somewhere else
// (rdmad-cdi's CDI spec, rdmad-device-plugin's ListAndWatch): fn gets every
// new state, in generation order, and (nil, err) each time the connection
// is lost or cannot be made.  It dials again after 100 ms, doubling up to
// 5 s while rdmad stays away, and back to 100 ms once a subscription
// held.  fn runs on Follow's goroutine; Follow returns ctx's error.
func Follow(ctx context.Context, path string, fn func(*Snapshot, error),
	opts ...Option) error {
	const first, most = 100 * time.Millisecond, 5 * time.Second
	wait := first
	for {
		held, err := followOnce(ctx, path, fn, opts)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fn(nil, err)
		if held {
			wait = first
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if wait *= 2; wait > most {
			wait = most
		}
	}
}

// followOnce is one connection: whether its subscription held, and why it
// ended.
func followOnce(ctx context.Context, path string, fn func(*Snapshot, error),
	opts []Option) (bool, error) {
	c, err := Dial(ctx, path, opts...)
	if err != nil {
		return false, err
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx)
	if err != nil {
		return false, err
	}
	fn(sub.State(), nil)
	for {
		u, err := sub.Next(ctx)
		if err != nil {
			return true, err
		}
		fn(u.State, nil)
	}
}

// The follower of PROTOCOL.md 8 and 9, as proto/follow.c is the C
// clients': what each frame a subscriber receives means, by state.
// Subscription decides with it; follow_test.go walks the rows of the
// table in tests/unit/proto/test-follow.c through it.  "seq" is the frame's, S
// the Subscribe's:
//
//	frame                        idle     awaiting   following
//	Event, seq 0                 skip     skip       by generation:
//	  <= generation                                    skip
//	  generation + 1, known type                       apply
//	  generation + 1, unknown                          resync
//	  > generation + 1 (a gap)                         resync
//	Snapshot, seq 0 (9)          part     part       part
//	Snapshot, seq S              ignore   part       ignore
//	status != OK, seq S          ignore   refused    ignore
//	anything else                ignore   ignore     ignore
//
// The connection (Conn's reader) passes a Subscription only the frames
// that can mean something to it (events of seq 0, snapshots of seq 0 or
// of a Subscribe, refusals of a Subscribe), whole snapshots rather than
// parts; the rest it drops, which is "ignore".
type followState int

const (
	followIdle      followState = iota // not subscribed
	followAwaiting                     // Subscribe sent as subscribeSeq
	followFollowing                    // the list is at generation
)

// followAction is what to do with a frame.
type followAction int

const (
	followIgnore  followAction = iota // nothing for the follower
	followSkip                        // an event the list has, or will get
	followApply                       // the next event: apply it
	followResync                      // a gap or an unknown type: Subscribe again
	followPart                        // a snapshot: it becomes the list
	followRefused                     // the daemon refused our Subscribe
)

// follower is the state the table is read in; the zero value is idle (a
// Subscription is idle only before its first Subscribe: it ends with its
// connection).
type follower struct {
	state        followState
	subscribeSeq uint64 // awaiting: the Subscribe's seq
	generation   uint64 // of the list; 0 before the first snapshot
}

// followFrame is a frame as the follower reads it.
type followFrame struct {
	seq      uint64
	refused  bool           // its status is not OK
	event    *rdmadpb.Event // an Event frame's
	snapshot bool           // a Snapshot frame (or a whole snapshot)
}

// eventKnown reports whether this build knows event type t: one it does
// not is a reason to resync (PROTOCOL.md 3), never an event to guess at.
func eventKnown(t rdmadpb.EventType) bool {
	_, ok := rdmadpb.EventType_name[int32(t)]
	return ok
}

// frame is what fr means; it changes nothing.
func (f *follower) frame(fr followFrame) followAction {
	awaited := f.state == followAwaiting && fr.seq != 0 &&
		fr.seq == f.subscribeSeq
	switch {
	case awaited && fr.refused:
		return followRefused
	case fr.snapshot && (fr.seq == 0 || awaited):
		return followPart
	case fr.event != nil && fr.seq == 0:
		return f.onEvent(fr.event)
	}
	return followIgnore
}

func (f *follower) onEvent(ev *rdmadpb.Event) followAction {
	gen := ev.GetGeneration()
	if f.state != followFollowing || gen <= f.generation {
		return followSkip
	}
	if gen != f.generation+1 || !eventKnown(ev.GetType()) {
		return followResync
	}
	return followApply
}

// subscribed: Subscribe went out as seq.
func (f *follower) subscribed(seq uint64) {
	f.state, f.subscribeSeq = followAwaiting, seq
}

// snapshot: a whole snapshot at generation, the reply to seq (0:
// unsolicited), became the list.  It reports whether it answered the
// awaited Subscribe; an unsolicited one while awaiting replaces the list
// and the generation, and events still wait for the answer.
func (f *follower) snapshot(seq, generation uint64) bool {
	answer := f.state == followAwaiting && seq != 0 && seq == f.subscribeSeq
	f.generation = generation
	if answer || f.state != followAwaiting {
		f.state = followFollowing
	}
	return answer
}

// applied: the event at generation is in the list.
func (f *follower) applied(generation uint64) {
	f.generation = generation
}
