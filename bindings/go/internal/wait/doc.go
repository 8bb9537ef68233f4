// SPDX-License-Identifier: MIT

// Package wait stands in for the part of k8s.io/apimachinery/pkg/util/wait
// that client-go's reflector paces its lists and watches with:
// NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0, clock), as
// ExponentialBackoffManager, and Jitter.  Debian 12 packages no
// k8s.io/apimachinery.
//
// It differs in shape: Next returns the wait rather than a timer
// (upstream's Backoff() returns a clock.Timer), the clock and the random
// source are fields for tests, and the source is seeded from the
// kernel's (Go before 1.20 seeds math/rand with 1).  Left out: the rest
// of the package (Until, Poll, Backoff, conditions).
package wait
