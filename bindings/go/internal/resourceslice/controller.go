// SPDX-License-Identifier: MIT

package resourceslice

// Publishing the pool: one ResourceSlice per 128 devices (the API's
// limit), named NODE-DRIVER-N, all with the pool's generation, owned by
// the Node.  The publisher follows what the API server holds, not what it
// last wrote: it lists the node's slices of this driver (at start, after
// every registration with the kubelet, which deletes the node's slices
// when it starts, on a slow period, Options.ResyncPeriod, and after a
// conflict), and between lists it watches them, resumed from the last
// resourceVersion it saw (a list's, then each event's; a list again
// where the API server no longer has it), so that a slice someone else
// deletes or changes is repaired at once, with one write for each slice
// damaged, at the pool's generation.  A pool that changed (rdmad's
// events) is written whole at a generation above every one it has seen,
// and only after a list succeeded: a failed read is tried again later,
// never taken for "no slices" (which would write a generation below the
// one still there, and the scheduler, reading the highest generation
// only, would see an incomplete pool).  Only the newest pool is
// published: one that changes while a request is under way is published
// right after it.  Every failure (a list, the Node's read, a write, a
// watch refused, ended with 410 Gone or ended at once) is logged and
// waited on as client-go's reflector waits (internal/wait): from under a
// second, doubling to 30 s, jittered, the first step again after two
// minutes without a failure; nothing is sent meanwhile.  What it stands in
// for, and how it differs: doc.go.

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	resourceapi "github.com/rdmad/rdmad/bindings/go/internal/api/resource/v1"
	metav1 "github.com/rdmad/rdmad/bindings/go/internal/apimachinery/meta/v1"
	"github.com/rdmad/rdmad/bindings/go/internal/rest"
	"github.com/rdmad/rdmad/bindings/go/internal/wait"
)

// DefaultResyncPeriod is how often the slices are compared with the API
// server's where nothing else asks for it.
const DefaultResyncPeriod = time.Minute

// Options of a Controller.
type Options struct {
	DriverName string       // the slices' driver
	NodeName   string       // the slices' node, the pool's name, their owner
	Client     *rest.Client // the API server
	// ResyncPeriod is how often the slices are compared with the API
	// server's besides (DefaultResyncPeriod where 0).
	ResyncPeriod time.Duration
	// Backoff paces the requests after failures (a new one where nil;
	// the driver shares one with its other writers).
	Backoff *wait.ExponentialBackoffManager
	// Metrics counts what is published and why watches restart (nil:
	// not counted).
	Metrics Metrics
	// Logf reports what happens; nil: nothing.
	Logf func(format string, args ...interface{})
}

// Metrics is what the controller reports: each watch restarted, and
// each pool published whole.
type Metrics interface {
	WatchRestart(reason string)
	Published(slices, devices int, gen int64)
}

// Controller publishes the newest pool Update hands it (Run).
type Controller struct {
	o       Options
	publish chan []resourceapi.Device // the newest pool not yet published
	resync  chan struct{}             // compare the slices with the API server's
}

// New makes a Controller; nothing is published before Run.
func New(o Options) *Controller {
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	if o.Backoff == nil {
		o.Backoff = &wait.ExponentialBackoffManager{}
	}
	return &Controller{o: o, publish: make(chan []resourceapi.Device, 1),
		resync: make(chan struct{}, 1)}
}

func (o *Options) logf(format string, args ...interface{}) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Update hands the controller the pool to publish, replacing an older
// one not yet taken.
func (c *Controller) Update(devs []resourceapi.Device) {
	for {
		select {
		case c.publish <- devs:
			return
		default:
		}
		select {
		case <-c.publish:
		default:
		}
	}
}

// Resync has the controller compare the slices with the API server's and
// repair them (the kubelet registered the driver: it may have deleted
// them at its start).
func (c *Controller) Resync() {
	select {
	case c.resync <- struct{}{}:
	default:
	}
}

// watchRestart and published count in o.Metrics where there is one.
func (o *Options) watchRestart(reason string) {
	if o.Metrics != nil {
		o.Metrics.WatchRestart(reason)
	}
}

func (o *Options) published(slices, devices int, gen int64) {
	if o.Metrics != nil {
		o.Metrics.Published(slices, devices, gen)
	}
}

// nodeOwner is the ownerReference to Node @name of UID @uid: a slice's
// owner, so that the garbage collector deletes the slices of a deleted
// node (as upstream's controller sets it for a kubelet plugin: the Node,
// as the controller).
func nodeOwner(name, uid string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid,
		Controller: &yes}
}

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
func Slices(node, driver string, owner *metav1.OwnerReference, gen int64, devs []resourceapi.Device) []*resourceapi.ResourceSlice {
	per := perSlice(devs)
	n := (len(devs) + per - 1) / per
	if n == 0 {
		n = 1 // an empty pool is one empty slice: "no devices here"
	}
	var owners []metav1.OwnerReference
	if owner != nil {
		owners = []metav1.OwnerReference{*owner}
	}
	var out []*resourceapi.ResourceSlice
	for i := 0; i < n; i++ {
		part := devs[min(i*per, len(devs)):min((i+1)*per, len(devs))]
		if part == nil {
			part = []resourceapi.Device{}
		}
		out = append(out, &resourceapi.ResourceSlice{APIVersion: resourceapi.APIVersion,
			Kind: "ResourceSlice",
			Metadata: metav1.ObjectMeta{Name: SliceName(node, driver, i),
				Labels:          map[string]string{"app.kubernetes.io/managed-by": "rdmad-dra"},
				OwnerReferences: owners},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: node,
				Pool: resourceapi.ResourcePool{Name: node, Generation: gen,
					ResourceSliceCount: int64(n)},
				Devices: part}})
	}
	return out
}

// perSlice is how many of @devs one slice may list: 128, or 64 where
// one of them has taints (the API's limits).
func perSlice(devs []resourceapi.Device) int {
	for _, d := range devs {
		if len(d.Taints) > 0 {
			return resourceapi.ResourceSliceMaxDevicesWithTaints
		}
	}
	return resourceapi.ResourceSliceMaxDevices
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// publisher keeps the API server's slices of this node and driver equal
// to the pool Update hands it, until its context ends.
type publisher struct {
	o     *Options
	gen   int64                                // the highest pool generation seen or written
	held  map[string]resourceapi.ResourceSlice // the slices there, as last listed, watched or written
	owner *metav1.OwnerReference               // the Node, once read
	stale bool                                 // held must be listed again before a write
	// nodeStale: the Node is read again at the next list (at start, at
	// a registration, on the period), not at every list: a relist
	// after a 410 costs one request.
	nodeStale bool
	// rv is the resourceVersion the watch resumes from: the last list's,
	// then each event's.  tomb is, for each slice this driver deleted,
	// the resourceVersion it had: an older event of it is history.
	rv   string
	tomb map[string]string
	// published is the pool of the last complete write: a repair of
	// that pool rewrites only the slices that differ, at the same
	// generation (one write for one slice deleted).
	published []resourceapi.Device
	done      bool
	// dropped: the fields (dropTaints, dropCapacity) the API server was
	// seen to drop, left out of every write since.
	dropped int
}

// watchEvent is what the watch hands the publisher: an event, or the
// end of one watch request (end set, err why, events how many it
// carried, started when it was made).
type watchEvent struct {
	typ     string
	slice   *resourceapi.ResourceSlice
	end     bool
	err     error
	events  int
	started time.Time
}

// shortWatch is how long a watch must last not to be a "very short
// watch" (client-go's reflector: under a second).
const shortWatch = time.Second

// Run publishes what Update hands it until @ctx ends.
func (c *Controller) Run(ctx context.Context) {
	o := &c.o
	p := &publisher{o: o, stale: true, nodeStale: true, tomb: map[string]string{}}
	var want []resourceapi.Device
	have := false
	// paused: a request failed; nothing is sent until pace fires.
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	paused := false
	pause := func(what string, err error) {
		wait := o.Backoff.Next()
		o.logf("%s: %v (again in %v)", what, err, wait.Round(time.Millisecond))
		pace.Reset(wait)
		paused = true
	}
	period := time.NewTicker(o.ResyncPeriod)
	defer period.Stop()
	events := make(chan watchEvent, 64)
	watching := false
	for {
		if have && !paused {
			if err := p.sync(ctx, want); err != nil {
				if ctx.Err() != nil {
					return
				}
				pause("publishing ResourceSlices", err)
			}
		}
		if have && !paused && !watching && p.rv != "" && !p.stale {
			watching = true
			go p.watch(ctx, p.rv, events)
		}
		select {
		case <-ctx.Done():
			return
		case want = <-c.publish:
			have = true
		case <-c.resync:
			p.stale, p.nodeStale = true, true
		case <-period.C:
			p.stale, p.nodeStale = true, true
		case <-pace.C:
			paused = false
		case ev := <-events:
			if !ev.end {
				p.apply(ev.typ, ev.slice)
				break
			}
			watching = false
			if ctx.Err() != nil {
				return
			}
			p.watchEnded(ev, pause)
		}
	}
}

// watchEnded decides what follows the end of a watch request, as
// client-go's reflector does: a resourceVersion the API server no
// longer has (410 Gone, in the stream or as the answer) is listed
// again once, after a wait; a watch that ends within a second having
// carried no event (a proxy that cuts long requests, an API server
// going away) is an error too, listed again after a wait, so that an
// API server answering every watch at once with nothing never makes
// the driver loop; any other error is waited on, then the watch resumed
// from its resourceVersion; a watch that ran its course, or carried
// events, is made again at once from the last resourceVersion.
func (p *publisher) watchEnded(ev watchEvent, pause func(string, error)) {
	m := p.o
	switch {
	case rest.IsStatus(ev.err, http.StatusGone):
		p.stale, p.rv = true, "" // list again, watch from there
		m.watchRestart("gone")
		pause("watching ResourceSlices", ev.err)
	case ev.err != nil:
		m.watchRestart("error")
		pause("watching ResourceSlices", ev.err)
	case ev.events == 0 && time.Since(ev.started) < shortWatch:
		p.stale, p.rv = true, ""
		m.watchRestart("short")
		pause("watching ResourceSlices", fmt.Errorf("very short watch: ended within %v with no event", shortWatch))
	}
}

// watch follows the slices from resourceVersion @rv until one watch
// request ends, handing its events to the publisher.
func (p *publisher) watch(ctx context.Context, rv string, events chan<- watchEvent) {
	o := p.o
	started := time.Now()
	n := 0
	err := o.Client.WatchSlices(ctx, o.NodeName, o.DriverName, rv,
		func(typ string, s *resourceapi.ResourceSlice) {
			n++
			select {
			case events <- watchEvent{typ: typ, slice: s}:
			case <-ctx.Done():
			}
		})
	select {
	case events <- watchEvent{end: true, err: err, events: n, started: started}:
	case <-ctx.Done():
	}
}

// apply takes a watched event into held, where it is news: an event of
// this driver's own write (a resourceVersion it holds, or older) or of a
// slice it deleted since is history.  Others' deletions and changes are
// repaired by the sync that follows.
func (p *publisher) apply(typ string, s *resourceapi.ResourceSlice) {
	rv := s.Metadata.ResourceVersion
	if newer(rv, p.rv) {
		p.rv = rv
	}
	name := s.Metadata.Name
	h, ok := p.held[name]
	switch typ {
	case metav1.WatchAdded, metav1.WatchModified:
		if ok && !newer(rv, h.Metadata.ResourceVersion) ||
			!ok && !newer(rv, p.tomb[name]) {
			return
		}
		p.held[name] = *s
		if s.Spec.Pool.Generation > p.gen {
			p.gen = s.Spec.Pool.Generation
		}
	case metav1.WatchDeleted:
		// The event carries the resourceVersion of the deletion.
		if ok && !newer(h.Metadata.ResourceVersion, rv) {
			delete(p.held, name)
		}
	}
}

// newer reports whether resourceVersion @a comes after @b ("": before
// all).  The API server's resourceVersions are integers (etcd's
// revision), which k8s.io/dynamic-resource-allocation's resourceslice
// controller compares as such too (its mutation cache); one that is not
// is taken as newer when it differs.
func newer(a, b string) bool {
	if b == "" {
		return a != ""
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}

// sync lists the slices where they may have changed behind the driver's
// back, and writes @devs where what is there differs.
func (p *publisher) sync(ctx context.Context, devs []resourceapi.Device) error {
	devs = strip(devs, p.dropped)
	if p.stale {
		if err := p.read(ctx); err != nil {
			return err
		}
	}
	if p.matches(devs) {
		return nil
	}
	err := p.repair(ctx, devs)
	if rest.IsStatus(err, http.StatusConflict) || rest.IsStatus(err, http.StatusNotFound) {
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

// repair writes @devs: where they are the pool last published, only the
// slices that differ from it, at its generation (the pool was damaged:
// a slice deleted or changed by someone else); else the next generation
// whole (put).
func (p *publisher) repair(ctx context.Context, devs []resourceapi.Device) error {
	if !p.done || !reflect.DeepEqual(devs, p.published) {
		return p.put(ctx, devs)
	}
	o := p.o
	want := Slices(o.NodeName, o.DriverName, p.owner, p.gen, devs)
	keep := map[string]bool{}
	for _, w := range want {
		keep[w.Metadata.Name] = true
		h, ok := p.held[w.Metadata.Name]
		if ok && sameSpec(h.Spec, w.Spec) &&
			reflect.DeepEqual(h.Metadata.OwnerReferences, w.Metadata.OwnerReferences) {
			continue
		}
		if err := p.write(ctx, w); err != nil {
			return err
		}
	}
	return p.deleteOthers(ctx, keep)
}

// read lists what the API server holds, and where due the Node the
// slices belong to; held and gen change only when the list succeeds.
func (p *publisher) read(ctx context.Context) error {
	o := p.o
	if p.nodeStale || p.owner == nil {
		n, err := o.Client.GetNode(ctx, o.NodeName)
		if err != nil {
			return fmt.Errorf("reading Node %s (the slices' owner): %w", o.NodeName, err)
		}
		owner := nodeOwner(o.NodeName, n.Metadata.UID)
		p.owner, p.nodeStale = &owner, false
	}
	list, err := o.Client.ListSlices(ctx, o.NodeName, o.DriverName)
	if err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	p.held = map[string]resourceapi.ResourceSlice{}
	for _, s := range list.Items {
		p.held[s.Metadata.Name] = s
		if s.Spec.Pool.Generation > p.gen {
			p.gen = s.Spec.Pool.Generation
		}
	}
	p.rv = list.Metadata.ResourceVersion
	p.stale = false
	return nil
}

// matches reports whether the slices held are exactly those of @devs at
// one generation (the highest seen), with the owner.
func (p *publisher) matches(devs []resourceapi.Device) bool {
	o := p.o
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

// sameSpec compares two specs, an empty device list and none alike,
// and a taint's time left out (the API server sets it) like any.
func sameSpec(a, b resourceapi.ResourceSliceSpec) bool {
	if len(a.Devices) == 0 && len(b.Devices) == 0 {
		a.Devices, b.Devices = nil, nil
	}
	a.Devices, b.Devices = untimed(a.Devices), untimed(b.Devices)
	return reflect.DeepEqual(a, b)
}

// untimed is @devs with their taints' timeAdded cleared (a copy).
func untimed(devs []resourceapi.Device) []resourceapi.Device {
	if devs == nil {
		return nil
	}
	out := make([]resourceapi.Device, len(devs))
	for i, d := range devs {
		if len(d.Taints) > 0 {
			ts := append([]resourceapi.DeviceTaint(nil), d.Taints...)
			for j := range ts {
				ts[j].TimeAdded = ""
			}
			d.Taints = ts
		}
		out[i] = d
	}
	return out
}

// Fields of a device that an API server with the feature's gate off
// drops from what it stores.
const (
	dropTaints   = 1 << iota // taints: DRADeviceTaints
	dropCapacity             // allowMultipleAllocations, capacity: DRAConsumableCapacity
)

// dropped are the fields @sent had and the API server's @got lacks.
func dropped(sent, got []resourceapi.Device) int {
	var m int
	for i := range sent {
		if i >= len(got) {
			break
		}
		if len(sent[i].Taints) > 0 && len(got[i].Taints) == 0 {
			m |= dropTaints
		}
		if sent[i].AllowMultipleAllocations != nil && got[i].AllowMultipleAllocations == nil ||
			len(sent[i].Capacity) > 0 && len(got[i].Capacity) == 0 {
			m |= dropCapacity
		}
	}
	return m
}

// strip is @devs without the fields in @m (a copy where one had them).
func strip(devs []resourceapi.Device, m int) []resourceapi.Device {
	if m == 0 {
		return devs
	}
	out := make([]resourceapi.Device, len(devs))
	for i, d := range devs {
		if m&dropTaints != 0 {
			d.Taints = nil
		}
		if m&dropCapacity != 0 {
			d.AllowMultipleAllocations, d.Capacity = nil, nil
		}
		out[i] = d
	}
	return out
}

// put publishes @devs as the pool's next generation and deletes every
// other slice of this node and driver.
func (p *publisher) put(ctx context.Context, devs []resourceapi.Device) error {
	o := p.o
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
	if err := p.deleteOthers(ctx, keep); err != nil {
		return err
	}
	p.published, p.done = devs, true
	p.o.published(len(slices), len(devs), gen)
	return nil
}

// deleteOthers deletes every slice held but not in @keep.
func (p *publisher) deleteOthers(ctx context.Context, keep map[string]bool) error {
	for name, h := range p.held {
		if keep[name] {
			continue
		}
		if err := p.o.Client.DeleteSlice(ctx, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p.tomb[name] = h.Metadata.ResourceVersion
		delete(p.held, name)
	}
	return nil
}

// write replaces @s where a version of it is held, else creates it.
func (p *publisher) write(ctx context.Context, s *resourceapi.ResourceSlice) error {
	api := p.o.Client
	name := s.Metadata.Name
	var out *resourceapi.ResourceSlice
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
	if m := dropped(s.Spec.Devices, out.Spec.Devices) &^ p.dropped; m != 0 {
		p.dropped |= m
		p.o.logf("the API server dropped the devices' %s: its feature gate is off; published without them", droppedWhat(m))
	}
	return nil
}

func droppedWhat(m int) string {
	switch m {
	case dropTaints:
		return "taints (DRADeviceTaints)"
	case dropCapacity:
		return "shared capacity (DRAConsumableCapacity)"
	}
	return "taints (DRADeviceTaints) and shared capacity (DRAConsumableCapacity)"
}
