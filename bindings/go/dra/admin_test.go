// SPDX-License-Identifier: MIT

package dra_test

// An admin claim (a request with adminAccess, DRAAdminAccess): it gets
// what an ordinary claim of the device gets (its uverbs node, its MAD
// nodes, rdma_cm, rdmad's socket), whoever holds the device and whether
// or not it is ready, and it holds nothing: no slot, no exclusive
// device kept from an ordinary claim.

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
)

func TestAdminClaim(t *testing.T) {
	for _, n := range []int{0, 1} {
		t.Run(map[int]string{0: "exclusive", 1: "one slot"}[n], func(t *testing.T) {
			e := newEnv(t, slots(n))
			sick := dev("mlx5_1", 1, "InfiniBand")
			sick.Ready = false
			a := dev("mlx5_0", 0, "InfiniBand")
			a.MadNodes = []string{"umad0", "issm0"}
			e.d.Set(snap(1, a, sick), true)
			e.pool("two", "pci-0000-00-00-0", "pci-0000-01-00-0")
			k := e.register()
			ask := func(dev string, admin bool) []k8sfake.Ask {
				return []k8sfake.Ask{{Request: "r", Driver: driver, Pool: node, Device: dev, Admin: admin}}
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(e.api.Allocate("ns", "user", claimUID(0), ask("pci-0000-00-00-0", false)))
			if r := k.prepare(t, claimUID(0), "user"); r.Error != "" {
				t.Fatal(r)
			}
			// The admin claim beside it: allocated and prepared.
			must(e.api.Allocate("ns", "admin", claimUID(1), ask("pci-0000-00-00-0", true)))
			r := k.prepare(t, claimUID(1), "admin")
			if r.Error != "" || len(cdiIDs(r)) != 1 {
				t.Fatalf("admin claim: %v", r)
			}
			nodes, err := resolve(t, e.o.CDISpecDir, cdiIDs(r)[0])
			if err != nil || !reflect.DeepEqual(nodes, []string{"/dev/infiniband/uverbs0",
				"/dev/infiniband/umad0", "/dev/infiniband/issm0"}) {
				t.Fatalf("the admin claim's nodes: %v %v", nodes, err)
			}
			// It holds nothing: the user's claim gone, another takes
			// the device while the admin claim stays.
			unprepare(t, k, claimUID(0), "user")
			e.api.DeleteClaim("ns", "user")
			must(e.api.Allocate("ns", "next", claimUID(2), ask("pci-0000-00-00-0", false)))
			if r := k.prepare(t, claimUID(2), "next"); r.Error != "" {
				t.Fatalf("the admin claim held the device: %v", r)
			}
			// A device not ready: an admin claim gets it, an ordinary one not.
			must(e.api.Allocate("ns", "fix", claimUID(3), ask("pci-0000-01-00-0", true)))
			if r := k.prepare(t, claimUID(3), "fix"); r.Error != "" {
				t.Fatalf("admin claim of a sick device: %v", r)
			}
			e.api.PutClaim("ns", "use", claimUID(4), []k8sfake.Result{{Request: "r", Driver: driver,
				Pool: node, Device: "pci-0000-01-00-0"}})
			if r := k.prepare(t, claimUID(4), "use"); !strings.Contains(r.Error, "not ready") {
				t.Fatalf("ordinary claim of a sick device: %v", r)
			}
			for uid, pc := range e.d.Prepared() {
				if admin := uid == claimUID(1) || uid == claimUID(3); pc.Devices[0].Admin != admin {
					t.Fatalf("claim %s: admin %v", uid, pc.Devices[0].Admin)
				}
			}
		})
	}
}
