// SPDX-License-Identifier: MIT

package dra_test

// backoff.go: the waits are client-go's reflector's, and under every way
// an API server fails a driver (a compacted watch history, a plain 410,
// a watch cut at once, 500s, the server down) the driver sends at most
// about two requests a second, further and further apart, and puts the
// pool right once the server is back.

import (
	"context"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
)

func TestBackoffAsClientGo(t *testing.T) {
	now := time.Unix(1000, 0)
	r := 0.0
	b := &dra.Backoff{Now: func() time.Time { return now }, Rand: func() float64 { return r }}
	ms := time.Millisecond
	want := []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms,
		25600 * ms, 30000 * ms, 30000 * ms}
	for i, w := range want {
		if got := b.Next(); got != w {
			t.Fatalf("wait %d without jitter: %v, want %v", i, got, w)
		}
		now = now.Add(time.Second)
	}
	// Jitter 1.0: up to as much again.
	r = 0.999
	if got := b.Next(); got < 59*time.Second || got >= 60*time.Second {
		t.Fatalf("capped wait with the most jitter: %v, want [59 s, 60 s)", got)
	}
	// Two minutes without a wait: from the first step again.
	now = now.Add(dra.BackoffReset + time.Second)
	r = 0.5
	if got := b.Next(); got != 1200*ms {
		t.Fatalf("after two healthy minutes: %v, want 1.2 s", got)
	}
	// Under two minutes: the steps go on.
	now = now.Add(dra.BackoffReset - time.Second)
	if got := b.Next(); got != 2400*ms {
		t.Fatalf("within two minutes: %v, want 2.4 s", got)
	}
}

// dialCounter counts the connections the driver tries to open.
type dialCounter struct {
	mu  sync.Mutex
	ats []time.Time
}

func (c *dialCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	c.ats = append(c.ats, time.Now())
	c.mu.Unlock()
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

func (c *dialCounter) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.ats...)
}

// failureWindow is how long each failure mode is held and measured.
const failureWindow = 5 * time.Second

func TestBackoffUnderFailures(t *testing.T) {
	modes := []struct {
		name  string
		fail  func(e *env)
		clear func(e *env)
	}{
		{"410 in the watch stream", func(e *env) {
			e.api.SetWatchFailure(k8sfake.WatchGoneInStream)
			e.api.Compact()
		}, func(e *env) { e.api.SetWatchFailure(k8sfake.WatchServe) }},
		{"plain HTTP 410", func(e *env) {
			e.api.SetWatchFailure(k8sfake.WatchGoneHTTP)
			e.api.Compact()
		}, func(e *env) { e.api.SetWatchFailure(k8sfake.WatchServe) }},
		{"200 with an empty body", func(e *env) {
			e.api.SetWatchFailure(k8sfake.WatchEmpty)
			e.api.EndWatches()
		}, func(e *env) { e.api.SetWatchFailure(k8sfake.WatchServe) }},
		{"500 to everything", func(e *env) {
			e.api.FailAll(http.StatusInternalServerError)
			e.api.EndWatches()
		}, func(e *env) { e.api.FailAll(0) }},
		{"connection refused", func(e *env) { e.api.Stop() }, func(e *env) {
			if err := e.api.Start(); err != nil {
				e.t.Fatal(err)
			}
		}},
	}
	for _, m := range modes {
		m := m
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dials := &dialCounter{}
			e := newEnv(t, func(o *dra.Options) {
				o.ResyncPeriod = time.Hour
				o.API.HTTP.Transport.(*http.Transport).DialContext = dials.dial
			})
			devs, names := devices130()
			e.d.Set(snap(1, devs...), true)
			e.pool("before", names...)
			for deadline := time.Now().Add(5 * time.Second); e.api.Watches() != 1; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d watches, want 1", e.api.Watches())
				}
			}
			start := time.Now()
			m.fail(e)
			e.api.Delete(dra.SliceName(node, driver, 1)) // to repair once back
			time.Sleep(failureWindow)
			end := time.Now()
			var ats []time.Time
			for _, at := range e.api.Requests() {
				if !at.Before(start) && at.Before(end) {
					ats = append(ats, at)
				}
			}
			for _, at := range dials.times() {
				if m.name == "connection refused" && !at.Before(start) && at.Before(end) {
					ats = append(ats, at)
				}
			}
			sort.Slice(ats, func(i, j int) bool { return ats[i].Before(ats[j]) })
			limit := int(2 * failureWindow / time.Second)
			if len(ats) > limit {
				t.Fatalf("%d requests in %v, want at most %d (2 a second)", len(ats), failureWindow, limit)
			}
			// Exponential: the tries grow apart (a fixed one-second
			// retry never leaves 1.6 s between two).
			longest := time.Duration(0)
			for i := 1; i < len(ats); i++ {
				if g := ats[i].Sub(ats[i-1]); g > longest {
					longest = g
				}
			}
			if len(ats) < 2 || longest < 1600*time.Millisecond {
				t.Fatalf("%d requests, at most %v apart: want tries at least 1.6 s apart by now", len(ats), longest)
			}
			t.Logf("%d requests in %v, at most %v apart", len(ats), failureWindow, longest)
			m.clear(e)
			// Back: the pool is right again after the waits under way
			// (the fourth may reach 12.8 s) and a list.
			e.poolWithin(25*time.Second, "after the failure ended", names)
		})
	}
}
