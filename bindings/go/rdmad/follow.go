// SPDX-License-Identifier: MIT

package rdmad

import (
	"context"
	"time"
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
