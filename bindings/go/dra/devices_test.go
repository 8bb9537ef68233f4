// SPDX-License-Identifier: MIT

package dra_test

// devices.go: device names in the pool, and which devices it lists.

import (
	"strings"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

func TestDeviceNames(t *testing.T) {
	for id, want := range map[string]string{
		"pci:0000:03:00.0":                       "pci-0000-03-00-0",
		"guid:0011:2233:4455:6677/netdev:dummy0": "guid-0011-2233-4455-6677-netdev-dummy0",
		"PCI:0000:AF:00.1":                       "pci-0000-af-00-1",
		strings.Repeat("x", 64):                  "id-",
		"/odd":                                   "id-",
		"":                                       "mlx5-0", // no identity: the kernel name
	} {
		got := dra.DeviceName(&rdmadpb.Device{Name: "mlx5_0", Identity: id})
		if got != want && !(want == "id-" && strings.HasPrefix(got, "id-") && len(got) == 63) {
			t.Errorf("%q: %q, want %q", id, got, want)
		}
	}
}

// --select (rdmad-device-plugin's matchers) limits what the driver offers:
// the pool, the health list, and what a claim may be prepared with.
func TestSelectLimitsWhatIsOffered(t *testing.T) {
	sel, err := rdmad.ParseSelector("link_layer:Ethernet")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *dra.Options) { o.Select = sel })
	e.d.Set(snap(1, dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "Ethernet")), true)
	e.pool("Ethernet only", "pci-0000-01-00-0")
	if list, _ := e.d.HealthList(); len(list) != 1 || list[0].Device != "pci-0000-01-00-0" {
		t.Fatalf("health list %v", list)
	}
	k := e.register()
	if err := e.api.PutClaim("ns", "ib", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a106", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a106", "ib"); !strings.Contains(r.Error, "not offered") {
		t.Fatalf("a device not selected: %v", r)
	}
	if _, err := rdmad.ParseSelector("speed:100"); err == nil {
		t.Fatal("a bad --select taken")
	}
}
