// SPDX-License-Identifier: MIT

package dra_test

// internal/resourceslice, as the driver uses it: the pool published, kept equal to what it should be.

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/resourceslice"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// The slices follow every event of a device's life: plug, unready,
// ready, away, return, rename, unplug, removed while held; every write
// matches the published schema; attributes say what a claim selects by.
func TestSlicesFollowDevices(t *testing.T) {
	e := newEnv(t)
	a, b := dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "Ethernet")
	b.Aliases = []string{"roce0", "east"}
	e.d.Set(snap(1), true)
	e.pool("no device")
	e.d.Set(snap(2, a), true)
	e.pool("plug", "pci-0000-00-00-0")
	e.d.Set(snap(3, a, b), true)
	e.pool("second plug", "pci-0000-00-00-0", "pci-0000-01-00-0")
	pd := e.api.Device(driver, node, "pci-0000-01-00-0")
	for k, want := range map[string]interface{}{"name": "mlx5_1", "linkLayer": "Ethernet",
		"numaNode": 1.0, "ready": true, "alias": "roce0", "aliases": "roce0,east",
		"pciAddress": "0000:01:00.0", "identity": "pci:0000:01:00.0", "driver": "mlx5_core",
		"nodeGUID": "0002:c903:0000:0001"} {
		if got := attr(pd, k); got != want {
			t.Errorf("attribute %s: %v, want %v", k, got, want)
		}
	}
	unready := clone(b)
	unready.Ready = false
	e.d.Set(snap(4, a, unready), true)
	e.pool("unready stays", "pci-0000-00-00-0", "pci-0000-01-00-0")
	e.attrIs("unready", "pci-0000-01-00-0", "ready", false)
	gone := clone(b)
	gone.State = away
	e.d.Set(snap(5, a, gone), true)
	e.pool("away leaves", "pci-0000-00-00-0")
	back := clone(b)
	back.Incarnation = 2
	e.d.Set(snap(6, a, back), true)
	e.pool("return", "pci-0000-00-00-0", "pci-0000-01-00-0")
	e.attrIs("return", "pci-0000-01-00-0", "ready", true)
	renamed := back
	renamed.Name = "roce_b"
	e.d.Set(snap(7, a, renamed), true)
	e.pool("rename keeps the device's name", "pci-0000-00-00-0", "pci-0000-01-00-0")
	e.attrIs("renamed", "pci-0000-01-00-0", "name", "roce_b")
	removing := renamed
	removing.Removing = true
	e.d.Set(snap(8, a, removing), true)
	e.pool("removing leaves", "pci-0000-00-00-0")
	held := clone(a)
	held.State = removed
	e.d.Set(snap(9, held), true)
	e.pool("removed (still held) leaves")
	// rdmad out of reach: the slices stay as they were.
	e.d.Set(snap(10, a), true)
	e.pool("back", "pci-0000-00-00-0")
	e.d.Set(nil, false)
	time.Sleep(50 * time.Millisecond)
	e.pool("rdmad gone", "pci-0000-00-00-0")
}

// More than 128 devices take two slices of one pool generation; fewer
// again, and the second slice goes.  A failed write is tried again.
func TestSlicesSplitAndRetry(t *testing.T) {
	e := newEnv(t)
	devs, names := devices130()
	e.api.FailNext(500)
	e.d.Set(snap(1, devs...), true)
	e.pool("130 devices", names...)
	if n := len(e.api.Slices()); n != 2 {
		t.Fatalf("%d slices for 130 devices", n)
	}
	e.d.Set(snap(2, devs[:3]...), true)
	e.pool("3 devices", names[:3]...)
	// The pool is whole once slice 0 says it is one slice; slice 1
	// goes right after.
	for deadline := time.Now().Add(5 * time.Second); len(e.api.Slices()) != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d slices for 3 devices", len(e.api.Slices()))
		}
	}
	// A restarted driver goes on from the generation it finds.
	gen := func() float64 { return generation(e.api.Slices()[resourceslice.SliceName(node, driver, 0)]) }
	before := gen()
	e.stop()
	e.start()
	e.d.Set(snap(3, devs[:2]...), true)
	e.pool("after restart", names[:2]...)
	if after := gen(); after <= before {
		t.Fatalf("generation %v after a restart, %v before", after, before)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// generation is a stored slice's pool generation.
func generation(sl map[string]interface{}) float64 {
	return sl["spec"].(map[string]interface{})["pool"].(map[string]interface{})["generation"].(float64)
}

// devices130 are 130 ready devices (two slices) and their pool names.
func devices130() ([]*rdmadpb.Device, []string) {
	var devs []*rdmadpb.Device
	var names []string
	for i := 0; i < 130; i++ {
		id := "guid:vf" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i)
		devs = append(devs, &rdmadpb.Device{Name: "mlx5_" + itoa(i), Identity: id,
			State: present, Ready: true, NumaNode: -1})
		names = append(names, dra.DeviceName(devs[i]))
	}
	return devs, names
}

// poolWithin waits @d for the pool published to be @want, complete.
func (e *env) poolWithin(d time.Duration, what string, want []string) {
	e.t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		got, complete := e.api.PoolDevices(driver, node)
		if complete && reflect.DeepEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: after %v the pool is %d devices (complete %v), want %d",
				what, d, len(got), complete, len(want))
		}
	}
}

// A kubelet that starts deletes the node's slices, then registers the
// driver again (wipeResourceSlices, then the plugin watcher): the pool is
// back within a second of the registration, although rdmad said nothing
// new.  A slice deleted by hand is back within a second of the next
// registration too.
func TestKubeletRestartWipeIsHealed(t *testing.T) {
	e := newEnv(t)
	devs, names := devices130()
	e.d.Set(snap(1, devs...), true)
	e.register()
	e.pool("before", names...)
	e.kubeletStarts()
	e.poolWithin(time.Second, "wiped by the kubelet's start, then registered", names)
	if n := len(e.api.Slices()); n != 2 {
		t.Fatalf("%d slices after the wipe, want 2", n)
	}
	e.api.Delete(resourceslice.SliceName(node, driver, 1))
	e.register()
	e.poolWithin(time.Second, "a slice deleted by hand, then registered", names)
}

// Where nobody registers the driver again, the slow period repairs a
// slice deleted behind the driver's back.
func TestPeriodRepairs(t *testing.T) {
	e := newEnv(t, func(o *dra.Options) { o.ResyncPeriod = 200 * time.Millisecond })
	devs, names := devices130()
	e.d.Set(snap(1, devs...), true)
	e.pool("before", names...)
	e.api.Delete(resourceslice.SliceName(node, driver, 0))
	e.poolWithin(time.Second, "a slice deleted by hand, no registration", names)
}

// At a restart of the driver, a failed read of what the API server holds
// (a 500, or the API server out of reach) is tried again: no slice is
// written with a generation below one already there (the scheduler reads
// the highest generation only: a slice rewritten below it leaves that
// generation incomplete for good), and the pool ends complete.
func TestFailedReadIsRetried(t *testing.T) {
	e := newEnv(t)
	devs, names := devices130()
	for g := uint64(1); g <= 5; g++ { // a few generations
		e.d.Set(snap(g, devs[:125+int(g)]...), true)
		e.pool("generation", names[:125+int(g)]...)
	}
	before := generation(e.api.Slices()[resourceslice.SliceName(node, driver, 1)])
	e.stop()
	for len(e.api.Writes) > 0 {
		<-e.api.Writes
	}
	e.api.FailNextRead(500, 500, 503)
	e.start()
	e.d.Set(snap(6, devs[:129]...), true)
	// Three failures: waits of up to 1.6, 3.2 and 6.4 s (internal/wait).
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, complete := e.api.PoolDevices(driver, node)
		if complete && reflect.DeepEqual(got, names[:129]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a failed read: pool of %d devices, complete %v", len(got), complete)
		}
		time.Sleep(time.Millisecond)
	}
	for len(e.api.Writes) > 0 {
		w := <-e.api.Writes
		if w.Slice != nil && generation(w.Slice) <= before {
			t.Fatalf("%s %s written at generation %v, %v already there", w.Method, w.Name, generation(w.Slice), before)
		}
	}
}

// Each slice is owned by its Node (the garbage collector deletes the
// slices of a deleted node), as k8s.io/dynamic-resource-allocation sets
// it: apiVersion v1, kind Node, its name and UID, the controller.
func TestSlicesOwnedByNode(t *testing.T) {
	e := newEnv(t)
	devs, names := devices130()
	e.d.Set(snap(1, devs...), true)
	e.pool("published", names...)
	for name, sl := range e.api.Slices() {
		refs, _ := sl["metadata"].(map[string]interface{})["ownerReferences"].([]interface{})
		want := map[string]interface{}{"apiVersion": "v1", "kind": "Node", "name": node,
			"uid": nodeUID, "controller": true}
		if len(refs) != 1 || !reflect.DeepEqual(refs[0], want) {
			t.Fatalf("%s: ownerReferences %v, want [%v]", name, refs, want)
		}
	}
}

// driverWrites drains the writes recorded so far and counts those the
// driver made (not the test's).
func (e *env) driverWrites() int {
	n := 0
	for {
		select {
		case w := <-e.api.Writes:
			if !w.Admin {
				n++
			}
		default:
			return n
		}
	}
}

// A slice someone else deletes or changes is repaired within seconds
// (the watch), not at the next resync (an hour here), with one write;
// a watch the API server ends is resumed from its last resourceVersion,
// without listing again.
func TestRepairAfterOthersChange(t *testing.T) {
	e := newEnv(t, func(o *dra.Options) { o.ResyncPeriod = time.Hour })
	devs, names := devices130()
	e.d.Set(snap(1, devs...), true)
	e.pool("130 devices", names...)
	for deadline := time.Now().Add(5 * time.Second); e.api.Watches() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d watches, want 1", e.api.Watches())
		}
	}
	time.Sleep(50 * time.Millisecond)
	e.driverWrites()
	lists := e.api.Lists()
	repaired := func(what string) {
		t.Helper()
		start := time.Now()
		e.poolWithin(5*time.Second, what, names)
		for deadline := time.Now().Add(5 * time.Second); len(e.api.Slices()) != 2; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d slices", what, len(e.api.Slices()))
			}
		}
		t.Logf("%s: repaired in %v", what, time.Since(start))
		time.Sleep(100 * time.Millisecond) // a second write would be here by now
		if n := e.driverWrites(); n != 1 {
			t.Fatalf("%s: %d writes, want 1", what, n)
		}
	}
	e.api.Delete(resourceslice.SliceName(node, driver, 1))
	repaired("slice 1 deleted")
	if _, err := e.api.Edit(resourceslice.SliceName(node, driver, 0), func(spec map[string]interface{}) {
		spec["devices"] = []interface{}{}
	}); err != nil {
		t.Fatal(err)
	}
	repaired("slice 0 emptied")
	e.api.EndWatches()
	for deadline := time.Now().Add(5 * time.Second); e.api.Watches() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d watches after the server ended one, want 1", e.api.Watches())
		}
	}
	e.api.Delete(resourceslice.SliceName(node, driver, 0))
	repaired("slice 0 deleted after the watch resumed")
	if got := e.api.Lists(); got != lists {
		t.Fatalf("%d lists since the first watch, want none (resumed from its resourceVersion)", got-lists)
	}
	// The history compacted: the resumed watch is answered 410 Gone,
	// the driver lists again and watches from there.
	e.api.Compact()
	for deadline := time.Now().Add(5 * time.Second); e.api.Lists() == lists || e.api.Watches() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 410 Gone: %d lists, %d watches", e.api.Lists()-lists, e.api.Watches())
		}
	}
	e.driverWrites()
	e.api.Delete(resourceslice.SliceName(node, driver, 1))
	repaired("slice 1 deleted after a 410")
}
