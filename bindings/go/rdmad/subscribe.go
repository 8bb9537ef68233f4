// SPDX-License-Identifier: MIT

package rdmad

import (
	"context"
	"fmt"
	"sync"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// maxQueued bounds what the connection keeps for a subscriber that does
// not call Next: past it the queued frames are dropped and the next Next
// resynchronises, as the daemon does for a slow client (PROTOCOL.md
// section 9).  Replies to other calls never wait for the subscriber.
const maxQueued = 4096

// UpdateKind says what an Update is.
type UpdateKind int

const (
	// UpdateEvent: one change, Update.Event, applied to the state.
	UpdateEvent UpdateKind = iota
	// UpdateResync: the state was replaced by a new snapshot, after a
	// gap, an event this package does not know, or because the daemon
	// sent one (it dropped events for a slow reader).
	UpdateResync
)

func (k UpdateKind) String() string {
	switch k {
	case UpdateEvent:
		return "event"
	case UpdateResync:
		return "resync"
	}
	return fmt.Sprintf("UpdateKind(%d)", int(k))
}

// Update is one step of a Subscription.
type Update struct {
	Kind       UpdateKind
	Generation uint64
	// Event is the change, for UpdateEvent: its type, and the whole
	// device as it is after the change (Event.Device.OldName is the
	// previous name of a renamed one; for EXPECTING and SETTLED the
	// device is the PF).  Nil for UpdateResync.
	Event *rdmadpb.Event
	// Previous is the entry of the state that Event replaced or dropped:
	// the device as it was before (for RETURNED, the AWAY entry of the
	// identity, whose contexts are dead), nil where Event added one and
	// for UpdateResync.
	Previous *rdmadpb.Device
	// Sriov is Event.Sriov for EXPECTING and SETTLED: the PF's PCI
	// address, the VFs its sriov_numvfs asks for and, for SETTLED, how
	// many of their RDMA devices are ready.  Nil otherwise.
	Sriov *rdmadpb.Sriov
	// State is the whole device list after this update.
	State *Snapshot
}

// Subscription is a subscribed connection's view of the device list: a
// snapshot, then every change in generation order.  Its methods are for
// one goroutine at a time.
type Subscription struct {
	c *Conn

	mu       sync.Mutex
	items    []item
	overflow bool
	wake     chan struct{} // a token when items or overflow changed

	state *Snapshot
	f     follower // what each item means (follow.go)
	// resubscribe: a Subscribe is to be sent (a gap, an unknown event
	// type, an overflow of the queue, a refusal to try again).
	resubscribe bool
}

// item is one thing the connection's reader passed on, in wire order.
type item struct {
	event *rdmadpb.Event
	snap  *Snapshot
	seq   uint64
	err   error
}

func (s *Subscription) push(it item) {
	s.mu.Lock()
	if len(s.items) >= maxQueued && it.err == nil {
		s.items = s.items[:0]
		s.overflow = true
	} else {
		s.items = append(s.items, it)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pop waits for the next item within ctx; overflow reports that items were
// dropped (and clears it).
func (s *Subscription) pop(ctx context.Context) (it item, overflow bool, err error) {
	for {
		s.mu.Lock()
		if s.overflow {
			s.overflow = false
			s.mu.Unlock()
			return item{}, true, nil
		}
		if len(s.items) > 0 {
			it = s.items[0]
			s.items[0] = item{}
			s.items = s.items[1:]
			s.mu.Unlock()
			return it, false, nil
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return item{}, false, ctx.Err()
		}
	}
}

// Subscribe asks for the device list and then for every change to it.  It
// returns once the snapshot is in; State has it, Next gives the changes.
// A Conn has at most one Subscription.
func (c *Conn) Subscribe(ctx context.Context) (*Subscription, error) {
	s := &Subscription{c: c, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.sub != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("rdmad: subscribe: %w", ErrAlreadySubscribed)
	}
	c.sub = s
	c.mu.Unlock()
	snap, err := s.subscribe(ctx)
	if err != nil {
		c.mu.Lock()
		c.sub = nil
		c.mu.Unlock()
		return nil, fmt.Errorf("rdmad: subscribe: %w", err)
	}
	s.state = snap
	return s, nil
}

// sendSubscribe sends Subscribe, for the follower to await its snapshot.
func (s *Subscription) sendSubscribe(ctx context.Context) (uint64, error) {
	cl := &call{kind: callSubscribe, done: make(chan result, 1)}
	seq, err := s.c.write(ctx, &rdmadpb.Frame{Body: &rdmadpb.Frame_Subscribe{
		Subscribe: &rdmadpb.Subscribe{Scope: s.c.requestScope()}}}, cl)
	if err == nil {
		s.f.subscribed(seq)
	}
	return seq, err
}

// frameOf is the frame an item stands for, as the follower reads it.
func frameOf(it item) followFrame {
	return followFrame{seq: it.seq, refused: it.err != nil,
		event: it.event, snapshot: it.snap != nil}
}

// subscribe sends Subscribe and waits for its snapshot in the stream,
// dropping what came before it (already in it).
func (s *Subscription) subscribe(ctx context.Context) (*Snapshot, error) {
	seq, err := s.sendSubscribe(ctx)
	if err != nil {
		return nil, err
	}
	for {
		it, overflow, err := s.pop(ctx)
		if err != nil {
			s.c.forget(seq)
			return nil, err
		}
		if overflow {
			// The answer may be among what was dropped: ask again.
			if seq, err = s.sendSubscribe(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if it.err != nil && it.seq == 0 {
			return nil, it.err // the connection ended
		}
		switch s.f.frame(frameOf(it)) {
		case followRefused:
			return nil, it.err
		case followPart:
			// An unsolicited one before the answer: the answer,
			// which follows, is at least as new.
			if s.f.snapshot(it.seq, it.snap.Generation) {
				return it.snap, nil
			}
		}
	}
}

// State is the device list as of the last Update (or the subscription's
// snapshot).
func (s *Subscription) State() *Snapshot {
	return s.state
}

// Generation is the generation of State.
func (s *Subscription) Generation() uint64 {
	return s.state.Generation
}

// Next waits for the next change within ctx and returns it applied.
// Under the lifecycle feature entries are keyed by (identity, incarnation)
// (PROTOCOL.md section 8a): RETURNED replaces the AWAY entry of its
// identity or adds one, READY, UNREADY, EXPECTING and SETTLED replace
// their entry, REMOVED keeps an AWAY or held one, and an ended life still
// held stays beside the next one until its RELEASED.  Without it (or from
// a daemon that sends no identity) entries are keyed by name (section 8).
// Events already contained in the state are skipped; a gap, an event type
// this package does not know, or an overflow of the queue makes it send
// Subscribe again and return the new snapshot as an UpdateResync; a
// snapshot the daemon sends unasked (PROTOCOL.md 9) is an UpdateResync
// too, also while the one asked for is awaited.  Which frame means what
// is follow.go's table, proto/follow.c's.  An error other than ctx's
// means the connection has ended (Conn.Err).
func (s *Subscription) Next(ctx context.Context) (Update, error) {
	for {
		if s.resubscribe {
			if _, err := s.sendSubscribe(ctx); err != nil {
				return Update{}, fmt.Errorf("rdmad: resubscribe: %w", err)
			}
			s.resubscribe = false
		}
		it, overflow, err := s.pop(ctx)
		switch {
		case err != nil:
			return Update{}, err
		case overflow:
			// What was dropped may include the awaited snapshot.
			s.resubscribe = true
			continue
		case it.err != nil && it.seq == 0:
			return Update{}, fmt.Errorf("rdmad: subscription: %w", it.err)
		}
		switch s.f.frame(frameOf(it)) {
		case followRefused:
			// The daemon refused: try again on the next call.
			s.resubscribe = true
			return Update{}, fmt.Errorf("rdmad: resubscribe: %w", it.err)
		case followPart:
			// Any snapshot in the stream is a whole state at its
			// generation: ours, or one the daemon sent unasked
			// (PROTOCOL.md 9), also while ours is awaited.
			s.f.snapshot(it.seq, it.snap.Generation)
			s.state = it.snap
			return Update{Kind: UpdateResync,
				Generation: it.snap.Generation, State: it.snap}, nil
		case followResync:
			s.resubscribe = true
		case followApply:
			if u, ok := s.apply(it.event); ok {
				return u, nil
			}
			s.resubscribe = true // the list cannot take it
		}
	}
}

// apply applies the next event ev to the state.
func (s *Subscription) apply(ev *rdmadpb.Event) (Update, bool) {
	next, prev, ok := s.state.apply(ev, s.c.lifecycle)
	if !ok {
		return Update{}, false
	}
	s.state = next
	s.f.applied(ev.GetGeneration())
	u := Update{Kind: UpdateEvent, Generation: ev.GetGeneration(),
		Event: ev, Previous: prev, State: next}
	switch ev.GetType() {
	case rdmadpb.EventType_EVENT_TYPE_EXPECTING,
		rdmadpb.EventType_EVENT_TYPE_SETTLED:
		u.Sriov = ev.GetSriov()
	}
	return u, true
}
