// SPDX-License-Identifier: MIT

package dra

// Publishing the pool: one ResourceSlice per 128 devices (the API's
// limit), named NODE-DRIVER-N, all with the pool's generation, owned by
// the Node.  The publisher follows what the API server holds, not what it
// last wrote: after every registration with the kubelet (which deletes
// the node's slices when it starts, before plugins register again), on
// a slow period (Options.ResyncPeriod), after a conflict and at start, it
// lists the node's slices of this driver and repairs whatever differs
// from the pool it should publish.  A pool it writes has a generation
// above every one it has seen, and is written only after a list
// succeeded: a failed read is tried again a second later, never taken
// for "no slices" (which would write a generation below the one still
// there, and the scheduler, reading the highest generation only, would
// see an incomplete pool).  Only the newest pool is published: one that
// changes while a request is under way is published right after it.  A
// failure is logged and tried again a second later.

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// DefaultResyncPeriod is how often the slices are compared with the API
// server's where nothing else asks for it.
const DefaultResyncPeriod = time.Minute

// SliceName is the name of slice @i of the pool: the node's name (cut so
// that the whole fits 253 characters), the driver's, and @i.
func SliceName(node, driver string, i int) string {
	suffix := fmt.Sprintf("-%s-%d", driver, i)
	if len(node)+len(suffix) > 253 {
		node = strings.TrimRight(node[:253-len(suffix)], ".-")
	}
	return node + suffix
}

// Slices are the ResourceSlices of @devs at pool generation @gen, owned
// by @owner (nil: none).
func Slices(node, driver string, owner *OwnerReference, gen int64, devs []Device) []*ResourceSlice {
	n := (len(devs) + maxSliceDevices - 1) / maxSliceDevices
	if n == 0 {
		n = 1 // an empty pool is one empty slice: "no devices here"
	}
	var owners []OwnerReference
	if owner != nil {
		owners = []OwnerReference{*owner}
	}
	var out []*ResourceSlice
	for i := 0; i < n; i++ {
		part := devs[min(i*maxSliceDevices, len(devs)):min((i+1)*maxSliceDevices, len(devs))]
		if part == nil {
			part = []Device{}
		}
		out = append(out, &ResourceSlice{APIVersion: APIVersion,
			Kind: "ResourceSlice",
			Metadata: ObjectMeta{Name: SliceName(node, driver, i),
				Labels:          map[string]string{"app.kubernetes.io/managed-by": "rdmad-dra"},
				OwnerReferences: owners},
			Spec: ResourceSliceSpec{Driver: driver, NodeName: node,
				Pool: ResourcePool{Name: node, Generation: gen,
					ResourceSliceCount: int64(n)},
				Devices: part}})
	}
	return out
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// publisher keeps the API server's slices of this node and driver equal
// to the pool d.Set hands it, until its context ends.
type publisher struct {
	d     *Driver
	gen   int64                    // the highest pool generation seen or written
	held  map[string]ResourceSlice // the slices there, as last listed or written
	owner *OwnerReference          // the Node, once read
	stale bool                     // held must be listed again before a write
}

func (d *Driver) publisher(ctx context.Context) {
	p := &publisher{d: d, stale: true}
	var want []Device
	have := false
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	period := time.NewTicker(d.o.ResyncPeriod)
	defer period.Stop()
	for {
		if have {
			if err := p.sync(ctx, want); err != nil {
				if ctx.Err() != nil {
					return
				}
				d.o.logf("publishing ResourceSlices: %v (again in 1 s)", err)
				retry.Reset(time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return
		case want = <-d.publish:
			have = true
		case <-d.resync:
			p.stale = true
		case <-period.C:
			p.stale = true
		case <-retry.C:
		}
	}
}

// sync lists the slices where they may have changed behind the driver's
// back, and writes @devs where what is there differs.
func (p *publisher) sync(ctx context.Context, devs []Device) error {
	if p.stale {
		if err := p.read(ctx); err != nil {
			return err
		}
	}
	if p.matches(devs) {
		return nil
	}
	err := p.put(ctx, devs)
	if IsStatus(err, http.StatusConflict) || IsStatus(err, http.StatusNotFound) {
		p.stale = true // someone else wrote or deleted one: list, then again
		if err := p.read(ctx); err != nil {
			return err
		}
		err = p.put(ctx, devs)
	}
	if err != nil {
		p.stale = true
	}
	return err
}

// read lists what the API server holds, and the Node the slices belong
// to; held and gen change only when both reads succeed.
func (p *publisher) read(ctx context.Context) error {
	o := &p.d.o
	n, err := o.API.GetNode(ctx, o.NodeName)
	if err != nil {
		return fmt.Errorf("reading Node %s (the slices' owner): %w", o.NodeName, err)
	}
	list, err := o.API.ListSlices(ctx, o.NodeName, o.DriverName)
	if err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	owner := NodeOwner(o.NodeName, n.Metadata.UID)
	p.owner = &owner
	p.held = map[string]ResourceSlice{}
	for _, s := range list {
		p.held[s.Metadata.Name] = s
		if s.Spec.Pool.Generation > p.gen {
			p.gen = s.Spec.Pool.Generation
		}
	}
	p.stale = false
	return nil
}

// matches reports whether the slices held are exactly those of @devs at
// one generation (the highest seen), with the owner.
func (p *publisher) matches(devs []Device) bool {
	o := &p.d.o
	want := Slices(o.NodeName, o.DriverName, p.owner, p.gen, devs)
	if len(want) != len(p.held) {
		return false
	}
	for _, w := range want {
		h, ok := p.held[w.Metadata.Name]
		if !ok || !sameSpec(h.Spec, w.Spec) ||
			!reflect.DeepEqual(h.Metadata.OwnerReferences, w.Metadata.OwnerReferences) {
			return false
		}
	}
	return true
}

// sameSpec compares two specs, an empty device list and none alike.
func sameSpec(a, b ResourceSliceSpec) bool {
	if len(a.Devices) == 0 && len(b.Devices) == 0 {
		a.Devices, b.Devices = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// put publishes @devs as the pool's next generation and deletes every
// other slice of this node and driver.
func (p *publisher) put(ctx context.Context, devs []Device) error {
	o := &p.d.o
	gen := p.gen + 1
	slices := Slices(o.NodeName, o.DriverName, p.owner, gen, devs)
	keep := map[string]bool{}
	for _, s := range slices {
		if err := p.write(ctx, s); err != nil {
			return err
		}
		keep[s.Metadata.Name] = true
	}
	p.gen = gen
	for name := range p.held {
		if keep[name] {
			continue
		}
		if err := o.API.DeleteSlice(ctx, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		delete(p.held, name)
	}
	return nil
}

// write replaces @s where a version of it is held, else creates it.
func (p *publisher) write(ctx context.Context, s *ResourceSlice) error {
	api := p.d.o.API
	name := s.Metadata.Name
	var out *ResourceSlice
	var err error
	if h, ok := p.held[name]; ok {
		s.Metadata.ResourceVersion = h.Metadata.ResourceVersion
		out, err = api.UpdateSlice(ctx, s)
	} else {
		out, err = api.CreateSlice(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	p.held[name] = *out
	return nil
}
