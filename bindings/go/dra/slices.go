// SPDX-License-Identifier: MIT

package dra

// Publishing the pool: one ResourceSlice per 128 devices (the API's
// limit), named NODE-DRIVER-N, all with the pool's generation, which
// grows at every change and goes on from the slices found at start.
// Only the newest pool is published: one that changes while a request
// is under way is published right after it.  A failure is logged and
// tried again a second later.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// SliceName is the name of slice @i of the pool: the node's name (cut so
// that the whole fits 253 characters), the driver's, and @i.
func SliceName(node, driver string, i int) string {
	suffix := fmt.Sprintf("-%s-%d", driver, i)
	if len(node)+len(suffix) > 253 {
		node = strings.TrimRight(node[:253-len(suffix)], ".-")
	}
	return node + suffix
}

// Slices are the ResourceSlices of @devs at pool generation @gen.
func Slices(node, driver string, gen int64, devs []Device) []*ResourceSlice {
	n := (len(devs) + maxSliceDevices - 1) / maxSliceDevices
	if n == 0 {
		n = 1 // an empty pool is one empty slice: "no devices here"
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
				Labels: map[string]string{"app.kubernetes.io/managed-by": "rdmad-dra"}},
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

// publisher publishes every pool d.Set hands it until @ctx ends.
type publisher struct {
	d     *Driver
	gen   int64             // the pool's generation last published
	rv    map[string]string // resourceVersion of each slice published
	count int               // slices published
}

func (d *Driver) publisher(ctx context.Context) {
	p := &publisher{d: d, rv: map[string]string{}}
	p.adopt(ctx)
	var pending []Device
	have := false
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case pending = <-d.publish:
			have = true
		case <-retry.C:
		}
		if !have {
			continue
		}
		if err := p.put(ctx, pending); err != nil {
			if ctx.Err() != nil {
				return
			}
			d.o.logf("publishing ResourceSlices: %v (again in 1 s)", err)
			retry.Reset(time.Second)
			continue
		}
		have = false
	}
}

// adopt learns the slices a driver before this one left: their
// generation (the new ones go on from it) and how many there are.
func (p *publisher) adopt(ctx context.Context) {
	o := &p.d.o
	for i := 0; ; i++ {
		s, err := o.API.GetSlice(ctx, SliceName(o.NodeName, o.DriverName, i))
		if err != nil {
			if !IsStatus(err, http.StatusNotFound) {
				o.logf("reading ResourceSlices: %v", err)
			}
			return
		}
		if s.Spec.Pool.Generation > p.gen {
			p.gen = s.Spec.Pool.Generation
		}
		p.rv[s.Metadata.Name] = s.Metadata.ResourceVersion
		p.count = i + 1
	}
}

// put publishes @devs as the pool's next generation and deletes the
// slices it no longer needs.
func (p *publisher) put(ctx context.Context, devs []Device) error {
	o := &p.d.o
	slices := Slices(o.NodeName, o.DriverName, p.gen+1, devs)
	for _, s := range slices {
		if err := p.upsert(ctx, s); err != nil {
			return err
		}
	}
	for i := len(slices); i < p.count; i++ {
		name := SliceName(o.NodeName, o.DriverName, i)
		if err := o.API.DeleteSlice(ctx, name); err != nil {
			return err
		}
		delete(p.rv, name)
	}
	p.gen++
	p.count = len(slices)
	return nil
}

// upsert writes @s: an update of the version last seen, a create where
// there is none; a conflict (someone else wrote it) reads it again.
func (p *publisher) upsert(ctx context.Context, s *ResourceSlice) error {
	api := p.d.o.API
	name := s.Metadata.Name
	for try := 0; try < 3; try++ {
		var out *ResourceSlice
		var err error
		if rv, ok := p.rv[name]; ok {
			s.Metadata.ResourceVersion = rv
			out, err = api.UpdateSlice(ctx, s)
		} else {
			s.Metadata.ResourceVersion = ""
			out, err = api.CreateSlice(ctx, s)
		}
		switch {
		case err == nil:
			p.rv[name] = out.Metadata.ResourceVersion
			return nil
		case IsStatus(err, http.StatusNotFound):
			delete(p.rv, name)
		case IsStatus(err, http.StatusConflict):
			cur, gerr := api.GetSlice(ctx, name)
			if gerr != nil && !IsStatus(gerr, http.StatusNotFound) {
				return gerr
			}
			if gerr == nil {
				p.rv[name] = cur.Metadata.ResourceVersion
			} else {
				delete(p.rv, name)
			}
		default:
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return fmt.Errorf("%s: conflicts, three in a row", name)
}
