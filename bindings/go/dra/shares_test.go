// SPDX-License-Identifier: MIT

package dra_test

// shares.go: a shared device (--slots) published with consumable
// capacity, allocated to as many claims as it has slots by a scheduler
// reading the slice, and refused past them by the driver too; one claim
// shared by many pods on an exclusive device; and what an API server
// with DRAConsumableCapacity off makes of it.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
)

func claimUID(n int) string { return fmt.Sprintf("5f0e3c1a-7b2d-4e8f-9a6b-%012x", 0x5a000+n) }

func slots(n int) func(*dra.Options) { return func(o *dra.Options) { o.Slots = n } }

// A device of --slots 3 is published with allowMultipleAllocations and
// the capacity "slots" of 3; the scheduler (reading that slice) gives it
// to three claims, one slot each, and refuses the fourth; the driver
// prepares the three and refuses a fourth claim that an over-committing
// allocator gave it anyway, until one of the three is unprepared; a
// claim asking two slots where one is left is refused too.
func TestSharedDeviceSlots(t *testing.T) {
	e := newEnv(t, slots(3))
	e.d.Set(snap(1, dev("mlx5_0", 0, "Ethernet")), true)
	e.pool("shared", "pci-0000-00-00-0")
	d := e.api.Device(driver, node, "pci-0000-00-00-0")
	c, _ := d["capacity"].(map[string]interface{})[dra.CapacitySlots].(map[string]interface{})
	if d["allowMultipleAllocations"] != true || c["value"] != "3" {
		t.Fatalf("device %v: want allowMultipleAllocations and capacity slots 3", d)
	}
	k := e.register()
	ask := func(n int64) []k8sfake.Ask {
		a := k8sfake.Ask{Request: "rdma", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}
		if n > 0 {
			a.Capacity = map[string]int64{dra.CapacitySlots: n}
		}
		return []k8sfake.Ask{a}
	}
	ids := map[string]bool{}
	for i := 0; i < 3; i++ {
		if err := e.api.Allocate("ns", claimUID(i), claimUID(i), ask(0)); err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		r := k.prepare(t, claimUID(i), claimUID(i))
		if r.Error != "" || len(cdiIDs(r)) != 1 || ids[cdiIDs(r)[0]] {
			t.Fatalf("claim %d: %v", i, r)
		}
		ids[cdiIDs(r)[0]] = true
	}
	if err := e.api.Allocate("ns", claimUID(3), claimUID(3), ask(0)); err == nil ||
		!strings.Contains(err.Error(), "3 of 3 consumed") {
		t.Fatalf("the scheduler gave a fourth slot of three: %v", err)
	}
	// An allocator that over-commits: the driver refuses.
	over := []k8sfake.Result{{Request: "rdma", Driver: driver, Pool: node,
		Device: "pci-0000-00-00-0", ShareID: "5a4e0000-0000-4000-8000-0000000000ff",
		Consumed: map[string]string{dra.CapacitySlots: "1"}}}
	if err := e.api.PutClaim("ns", claimUID(3), claimUID(3), over); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, claimUID(3), claimUID(3)); !strings.Contains(r.Error, "has 3 slots: 3 held") {
		t.Fatalf("a fourth share prepared: %v", r)
	}
	unprepare(t, k, claimUID(0), claimUID(0))
	e.api.DeleteClaim("ns", claimUID(0))
	if r := k.prepare(t, claimUID(3), claimUID(3)); r.Error != "" {
		t.Fatalf("a slot freed, yet: %v", r)
	}
	if err := e.api.Allocate("ns", claimUID(4), claimUID(4), ask(2)); err == nil {
		t.Fatal("the scheduler gave two slots where none is left")
	}
	over[0].Consumed[dra.CapacitySlots] = "2"
	e.api.PutClaim("ns", claimUID(4), claimUID(4), over)
	if r := k.prepare(t, claimUID(4), claimUID(4)); !strings.Contains(r.Error, "2 asked") {
		t.Fatalf("two slots prepared where none is left: %v", r)
	}
	// The claims' status: one entry per share, with its shareID.
	waitFor(t, "the share's status entry", func() bool {
		st := e.api.ClaimStatus("ns", claimUID(1))
		return len(st) == 1 && st[0].(map[string]interface{})["shareID"] != nil
	})
	if r := e.api.Refused(); len(r) > 0 {
		t.Fatalf("refused: %v", r)
	}
}

// Without --slots a device is exclusive: one claim, however many pods
// share it (the kubelet prepares it once and the driver answers the
// same for each), and no second claim on it while the first holds it.
func TestOneClaimManyPods(t *testing.T) {
	e := newEnv(t)
	e.d.Set(snap(1, dev("mlx5_0", 0, "Ethernet")), true)
	e.pool("exclusive", "pci-0000-00-00-0")
	if d := e.api.Device(driver, node, "pci-0000-00-00-0"); d["allowMultipleAllocations"] != nil || d["capacity"] != nil {
		t.Fatalf("exclusive device published shared: %v", d)
	}
	k := e.register()
	ask := []k8sfake.Ask{{Request: "rdma", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}
	if err := e.api.Allocate("ns", "shared", claimUID(0), ask); err != nil {
		t.Fatal(err)
	}
	var first string
	for pod := 0; pod < 4; pod++ {
		r := k.prepare(t, claimUID(0), "shared")
		if r.Error != "" || len(cdiIDs(r)) != 1 || first != "" && cdiIDs(r)[0] != first {
			t.Fatalf("pod %d: %v", pod, r)
		}
		first = cdiIDs(r)[0]
	}
	if n := len(e.d.Prepared()); n != 1 {
		t.Fatalf("%d claims prepared, want 1", n)
	}
	if err := e.api.Allocate("ns", "other", claimUID(1), ask); err == nil {
		t.Fatal("the scheduler gave an exclusive device to a second claim")
	}
	e.api.PutClaim("ns", "other", claimUID(1), []k8sfake.Result{{Request: "rdma",
		Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}})
	if r := k.prepare(t, claimUID(1), "other"); !strings.Contains(r.Error, "exclusive") {
		t.Fatalf("an exclusive device prepared for a second claim: %v", r)
	}
	unprepare(t, k, claimUID(0), "shared")
	if r := k.prepare(t, claimUID(1), "other"); r.Error != "" {
		t.Fatalf("the device freed, yet: %v", r)
	}
}

// An API server with DRAConsumableCapacity off drops the fields: the
// driver says so once and publishes without them, no write again and
// again.
func TestSharedGateOff(t *testing.T) {
	e := newEnv(t, slots(4), func(o *dra.Options) { o.TaintEffect = dra.TaintOff })
	e.api.SetGate(k8sfake.GateConsumableCapacity, false)
	e.d.Set(snap(1, dev("mlx5_0", 0, "Ethernet")), true)
	e.pool("gate off", "pci-0000-00-00-0")
	time.Sleep(300 * time.Millisecond)
	before := len(e.api.Writes)
	time.Sleep(time.Second)
	if n := len(e.api.Writes) - before; n != 0 {
		t.Fatalf("%d writes in a second with nothing changed", n)
	}
	if d := e.api.Device(driver, node, "pci-0000-00-00-0"); d["allowMultipleAllocations"] != nil {
		t.Fatalf("stored %v", d)
	}
}

func unprepare(t *testing.T, k *kubelet, uid, name string) {
	t.Helper()
	r, err := k.v1.NodeUnprepareResources(context.Background(), &drav1.NodeUnprepareResourcesRequest{
		Claims: []*drav1.Claim{{Namespace: "ns", Uid: uid, Name: name}}})
	if err != nil || r.Claims[uid].GetError() != "" {
		t.Fatalf("unprepare %s: %v %v", uid, r, err)
	}
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !f(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
	}
}
