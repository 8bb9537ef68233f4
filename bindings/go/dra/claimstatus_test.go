// SPDX-License-Identifier: MIT

package dra_test

// claimstatus.go: a prepared claim's status.devices, applied as the API
// server takes it (k8sfake: server-side apply, the merged claim checked
// against the published schema of resource.k8s.io/v1), beside another
// driver's entry, and nothing where the claim has none of this driver's
// devices or the role does not allow it.

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// statusOf waits for the driver's apply to claim @name and returns the
// claim's status.devices by device then.
func (e *env) statusOf(name string) map[string]map[string]interface{} {
	e.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case w := <-e.api.StatusWrites:
			if w.Name != name || w.Manager != driver {
				continue
			}
			out := map[string]map[string]interface{}{}
			for _, d := range w.Devices {
				m := d.(map[string]interface{})
				out[m["device"].(string)] = m
			}
			return out
		case <-deadline:
			e.t.Fatalf("no status applied to claim %s; refused: %v", name, e.api.Refused())
		}
	}
}

// noStatus checks that the driver applies nothing within a while.
func (e *env) noStatus(what string) {
	e.t.Helper()
	select {
	case w := <-e.api.StatusWrites:
		e.t.Fatalf("%s: status applied %v", what, w)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestClaimStatusNetworkData(t *testing.T) {
	e := newEnv(t)
	sys := e.o.SysRoot
	ib, roce := dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "Ethernet")
	// The RoCE port's net device: lo, whose addresses the kernel has
	// here (the driver reads them through netlink, as on a node);
	// its hardware address and the GIDs from sysfs.
	roce.Ports[0].Netdev, roce.Ports[0].NetdevUp = "lo", true
	writeFile(t, filepath.Join(sys, "class/net/lo/address"), "02:00:00:00:00:05")
	gids := filepath.Join(sys, "class/infiniband/mlx5_1/ports/1/gids")
	writeFile(t, filepath.Join(gids, "0"), "fe80:0000:0000:0000:0000:00ff:fe00:0005")
	writeFile(t, filepath.Join(gids, "1"), "0000:0000:0000:0000:0000:0000:0000:0000")
	writeFile(t, filepath.Join(gids, "2"), "0000:0000:0000:0000:0000:ffff:c000:0205")
	e.d.Set(snap(1, ib, roce), true)
	k := e.register()
	gpu := k8sfake.Result{Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: "gpu-0"}
	if err := e.api.PutClaim("ns", "c", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", []k8sfake.Result{
		{Request: "ib", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"},
		{Request: "roce", Driver: driver, Pool: node, Device: "pci-0000-01-00-0"}, gpu}); err != nil {
		t.Fatal(err)
	}
	// Another driver's entry, there before: it stays.
	if err := e.o.API.ApplyClaimStatus(context.Background(), "gpu.example.com", &dra.ClaimStatusApply{
		APIVersion: dra.APIVersion, Kind: "ResourceClaim",
		Metadata: dra.ObjectMeta{Name: "c", Namespace: "ns"},
		Status: dra.ClaimStatus{Devices: []dra.AllocatedDeviceStatus{
			{Driver: "gpu.example.com", Pool: node, Device: "gpu-0"}}}}); err != nil {
		t.Fatal(err)
	}
	<-e.api.StatusWrites
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c"); r.Error != "" {
		t.Fatal(r.Error)
	}
	st := e.statusOf("c")
	if len(st) != 3 || st["gpu-0"] == nil {
		t.Fatalf("status.devices %v: want the gpu's and both of ours", st)
	}
	nd, _ := st["pci-0000-01-00-0"]["networkData"].(map[string]interface{})
	if nd["interfaceName"] != "lo" || nd["hardwareAddress"] != "02:00:00:00:00:05" {
		t.Fatalf("RoCE device's networkData %v", nd)
	}
	found := false
	for _, ip := range nd["ips"].([]interface{}) {
		found = found || ip == "127.0.0.1/8"
	}
	if !found {
		t.Fatalf("networkData.ips %v: no 127.0.0.1/8 (lo's)", nd["ips"])
	}
	data := st["pci-0000-01-00-0"]["data"].(map[string]interface{})
	g := data["gids"].([]interface{})
	if data["identity"] != "pci:0000:01:00.0" || len(g) != 2 ||
		g[0].(map[string]interface{})["gid"] != "fe80:0000:0000:0000:0000:00ff:fe00:0005" ||
		g[1].(map[string]interface{})["index"] != 2.0 {
		t.Fatalf("RoCE device's data %v", data)
	}
	if _, ok := st["pci-0000-00-00-0"]["networkData"]; ok {
		t.Fatalf("InfiniBand device without a net device: networkData %v", st["pci-0000-00-00-0"])
	}
	// A claim with none of this driver's devices: nothing applied.
	if err := e.api.PutClaim("ns", "g", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a105", []k8sfake.Result{gpu}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a105", "g"); r.Error != "" || len(r.Devices) != 0 {
		t.Fatalf("another driver's claim: %v", r)
	}
	e.noStatus("another driver's claim")
	// A role without resourceclaims/status: prepared all the same.
	e.api.FailNextStatus(403)
	if err := e.api.PutClaim("ns", "f", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a104", []k8sfake.Result{
		{Request: "ib", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a104", "f"); r.Error != "" || len(r.Devices) != 1 {
		t.Fatalf("prepare without the status role: %v", r)
	}
	e.noStatus("403")
	if got := e.api.ClaimStatus("ns", "f"); len(got) != 0 {
		t.Fatalf("status written despite 403: %v", got)
	}
	if r := e.api.Refused(); len(r) > 0 {
		t.Fatalf("the API server refused: %v", r)
	}
}
