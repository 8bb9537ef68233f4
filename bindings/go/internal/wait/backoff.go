// SPDX-License-Identifier: MIT

package wait

// Pacing toward the API server, as client-go's reflector paces its
// lists and watches (k8s.io/client-go/tools/cache/reflector.go:
// wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)): each
// wait is the current step plus up to as much again at random (jitter
// 1.0: [800 ms, 1.6 s) first), the step doubles up to 30 s (waits of
// [30 s, 60 s) from then on), and a manager not asked to wait for two
// minutes (the API server healthy that long) starts again from the
// first step.  A cluster's drivers failing at once (an API server
// restart, an etcd compaction that answers every watch 410 Gone) so
// spread their retries over the jitter and thin them out exponentially,
// instead of coming back together every second.

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand"
	"sync"
	"time"
)

// Backoff parameters of client-go's reflector.
const (
	BackoffInitial = 800 * time.Millisecond
	BackoffMax     = 30 * time.Second
	BackoffReset   = 2 * time.Minute
	backoffFactor  = 2.0
	backoffJitter  = 1.0
)

// ExponentialBackoffManager is one exponential backoff manager: the
// waits of one path to the API server.  It is safe for concurrent use.
type ExponentialBackoffManager struct {
	Initial, Max, Reset time.Duration // BackoffInitial, ... where 0
	Now                 func() time.Time
	Rand                func() float64 // in [0, 1); a seeded source where nil

	mu   sync.Mutex
	step time.Duration // the next wait's base, 0 before the first
	last time.Time     // when Next was last called
}

func (b *ExponentialBackoffManager) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Next is how long to wait before the next try: the step, jittered,
// then the step doubled (up to Max); the first step again where Next was
// not called for Reset.
func (b *ExponentialBackoffManager) Next() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	initial, max, reset := b.Initial, b.Max, b.Reset
	if initial <= 0 {
		initial = BackoffInitial
	}
	if max <= 0 {
		max = BackoffMax
	}
	if reset <= 0 {
		reset = BackoffReset
	}
	now := b.now()
	if b.step == 0 || now.Sub(b.last) > reset {
		b.step = initial
	}
	b.last = now
	d := b.step
	b.step = time.Duration(float64(b.step) * backoffFactor)
	if b.step > max {
		b.step = max
	}
	r := random
	if b.Rand != nil {
		r = b.Rand
	}
	return d + time.Duration(r()*backoffJitter*float64(d))
}

// Jitter is @d plus up to @maxFactor times it, at random (wait.Jitter).
func Jitter(d time.Duration, maxFactor float64) time.Duration {
	return d + time.Duration(random()*maxFactor*float64(d))
}

// The jitter's source, seeded from the kernel's: Go before 1.20 seeds
// math/rand's own with 1, which would give every node's driver the same
// waits, and a cluster's drivers would come back together after all.
var (
	randMu  sync.Mutex
	randSrc = rand.New(rand.NewSource(seed()))
)

func seed() int64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return time.Now().UnixNano()
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// random is a number in [0, 1).
func random() float64 {
	randMu.Lock()
	defer randMu.Unlock()
	return randSrc.Float64()
}
