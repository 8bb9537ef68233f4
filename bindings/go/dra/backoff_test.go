// SPDX-License-Identifier: MIT

package dra_test

// The driver paces its requests with internal/wait's backoff: under every way
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
	"github.com/rdmad/rdmad/bindings/go/internal/resourceslice"
)

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
			e.api.Delete(resourceslice.SliceName(node, driver, 1)) // to repair once back
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
