// SPDX-License-Identifier: MIT

package dra_test

// shares.go's taints: a device none of whose ports is up is tainted
// within a second, the scheduler stops giving it, and the taint goes
// when a port is back; the effect is the operator's; a pool with a
// tainted device is cut at 64 devices a slice; an API server with
// DRADeviceTaints off drops the taints and is not written again and
// again.

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// roce is a ready RoCE device whose port is ACTIVE with its net device up.
func roce(name string, n int) *rdmadpb.Device {
	d := dev(name, n, "Ethernet")
	d.Ports[0].State, d.Ports[0].Netdev, d.Ports[0].NetdevUp = "ACTIVE", "eth"+fmt.Sprint(n), true
	return d
}

func taints(d map[string]interface{}) []interface{} {
	ts, _ := d["taints"].([]interface{})
	return ts
}

// within waits until @f holds, failing where it takes more than @limit.
func within(t *testing.T, what string, limit time.Duration, f func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !f() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

func TestTaintFollowsPort(t *testing.T) {
	for _, effect := range []string{"", dra.TaintNoExecute} {
		t.Run("effect="+effect, func(t *testing.T) {
			e := newEnv(t, func(o *dra.Options) { o.TaintEffect = effect })
			want := effect
			if want == "" {
				want = dra.TaintNoSchedule
			}
			up := roce("mlx5_0", 0)
			e.d.Set(snap(1, up), true)
			e.pool("up", "pci-0000-00-00-0")
			name := "pci-0000-00-00-0"
			if ts := taints(e.api.Device(driver, node, name)); len(ts) != 0 {
				t.Fatalf("a device with its port up tainted: %v", ts)
			}
			down := clone(up)
			down.Ready, down.Ports[0].State, down.Ports[0].PhysState = false, "DOWN", "Disabled"
			e.d.Set(snap(2, down), true)
			took := within(t, "the taint", time.Second, func() bool {
				return len(taints(e.api.Device(driver, node, name))) == 1
			})
			tm := taints(e.api.Device(driver, node, name))[0].(map[string]interface{})
			if tm["key"] != dra.TaintPortDown || tm["value"] != "DOWN" || tm["effect"] != want || tm["timeAdded"] == nil {
				t.Fatalf("taint %v", tm)
			}
			t.Logf("tainted %v after the port went down", took)
			ask := []k8sfake.Ask{{Request: "r", Driver: driver, Pool: node, Device: name}}
			if err := e.api.Allocate("ns", "c", claimUID(0), ask); err == nil {
				t.Fatal("the scheduler gave a tainted device")
			}
			// The net device down under an ACTIVE port is down too.
			nd := clone(up)
			nd.Ready, nd.Ports[0].NetdevUp = false, false
			e.d.Set(snap(3, nd), true)
			within(t, "the netdev's taint", time.Second, func() bool {
				ts := taints(e.api.Device(driver, node, name))
				return len(ts) == 1 && ts[0].(map[string]interface{})["value"] == "netdev-down"
			})
			e.d.Set(snap(4, up), true)
			took = within(t, "the taint gone", time.Second, func() bool {
				return len(taints(e.api.Device(driver, node, name))) == 0
			})
			t.Logf("untainted %v after the port came back", took)
			if err := e.api.Allocate("ns", "c", claimUID(0), ask); err != nil {
				t.Fatalf("the port back, yet: %v", err)
			}
			if r := e.api.Refused(); len(r) > 0 {
				t.Fatalf("refused: %v", r)
			}
		})
	}
}

// --taint-effect off: no taint; a pool with a tainted device holds at
// most 64 devices a slice.
func TestTaintOffAndSliceLimit(t *testing.T) {
	e := newEnv(t, func(o *dra.Options) { o.TaintEffect = dra.TaintOff })
	down := roce("mlx5_0", 0)
	down.Ready, down.Ports[0].State = false, "DOWN"
	e.d.Set(snap(1, down), true)
	e.pool("off", "pci-0000-00-00-0")
	if ts := taints(e.api.Device(driver, node, "pci-0000-00-00-0")); len(ts) != 0 {
		t.Fatalf("--taint-effect off, yet %v", ts)
	}
	e2 := newEnv(t)
	var devs []*rdmadpb.Device
	var names []string
	for i := 0; i < 100; i++ {
		d := roce(fmt.Sprintf("mlx5_%d", i), 0)
		d.Identity = fmt.Sprintf("pci:0000:%02x:00.1", i)
		names = append(names, fmt.Sprintf("pci-0000-%02x-00-1", i))
		if i == 7 {
			d.Ready, d.Ports[0].State = false, "DOWN"
		}
		devs = append(devs, d)
	}
	e2.d.Set(snap(1, devs...), true)
	e2.pool("100 devices, one down", names...)
	if n := len(e2.api.Slices()); n != 2 {
		t.Fatalf("%d slices, want 2 (64 devices a slice with a taint)", n)
	}
}

func TestTaintGateOff(t *testing.T) {
	e := newEnv(t)
	e.api.SetGate(k8sfake.GateDeviceTaints, false)
	down := roce("mlx5_0", 0)
	down.Ready, down.Ports[0].State = false, "DOWN"
	e.d.Set(snap(1, down), true)
	e.pool("gate off", "pci-0000-00-00-0")
	time.Sleep(300 * time.Millisecond)
	before := len(e.api.Writes)
	time.Sleep(time.Second)
	if n := len(e.api.Writes) - before; n != 0 {
		t.Fatalf("%d writes in a second with nothing changed", n)
	}
}
