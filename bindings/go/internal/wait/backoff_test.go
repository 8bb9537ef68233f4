// SPDX-License-Identifier: MIT

package wait

// The waits are client-go's reflector's.

import (
	"testing"
	"time"
)

func TestBackoffAsClientGo(t *testing.T) {
	now := time.Unix(1000, 0)
	r := 0.0
	b := &ExponentialBackoffManager{Now: func() time.Time { return now }, Rand: func() float64 { return r }}
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
	now = now.Add(BackoffReset + time.Second)
	r = 0.5
	if got := b.Next(); got != 1200*ms {
		t.Fatalf("after two healthy minutes: %v, want 1.2 s", got)
	}
	// Under two minutes: the steps go on.
	now = now.Add(BackoffReset - time.Second)
	if got := b.Next(); got != 2400*ms {
		t.Fatalf("within two minutes: %v, want 2.4 s", got)
	}
}
