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
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	resourceapi "github.com/rdmad/rdmad/bindings/go/internal/api/resource/v1"
	metav1 "github.com/rdmad/rdmad/bindings/go/internal/apimachinery/meta/v1"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
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
	if err := e.o.API.ApplyClaimStatus(context.Background(), "gpu.example.com", &resourceapi.ClaimStatusApply{
		APIVersion: resourceapi.APIVersion, Kind: "ResourceClaim",
		Metadata: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Status: resourceapi.ClaimStatus{Devices: []resourceapi.AllocatedDeviceStatus{
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
	// A role without resourceclaims/status: prepared all the same (an
	// admin claim: the device is the first claim's).
	e.api.FailNextStatus(403)
	if err := e.api.PutClaim("ns", "f", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a104", []k8sfake.Result{
		{Request: "ib", Driver: driver, Pool: node, Device: "pci-0000-00-00-0", Admin: true}}); err != nil {
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

// statusUntil waits @within for claim @name's status.devices, by device,
// to satisfy @ok.
func (e *env) statusUntil(what, name string, within time.Duration, ok func(map[string]map[string]interface{}) bool) map[string]map[string]interface{} {
	e.t.Helper()
	var got map[string]map[string]interface{}
	for deadline := time.Now().Add(within); ; time.Sleep(5 * time.Millisecond) {
		got = map[string]map[string]interface{}{}
		for _, d := range e.api.ClaimStatus("ns", name) {
			m := d.(map[string]interface{})
			got[m["device"].(string)] = m
		}
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: after %v claim %s's status.devices is %v", what, within, name, got)
		}
	}
}

func ips(entry map[string]interface{}) []interface{} {
	nd, _ := entry["networkData"].(map[string]interface{})
	l, _ := nd["ips"].([]interface{})
	return l
}

func gidsOf(entry map[string]interface{}) []interface{} {
	data, _ := entry["data"].(map[string]interface{})
	g, _ := data["gids"].([]interface{})
	return g
}

func hasIP(entry map[string]interface{}, ip string) bool {
	for _, x := range ips(entry) {
		if x == ip {
			return true
		}
	}
	return false
}

// A claim's status stays true: an apply that fails is tried again; it
// follows rdmad's states (the port's net device gone, the device away
// and back) and the kernel's address changes (and the GIDs read with
// them); unprepare takes this driver's entries out, others' stay.
func TestClaimStatusStaysTrue(t *testing.T) {
	e := newEnv(t)
	sys := e.o.SysRoot
	roce := dev("mlx5_1", 1, "Ethernet")
	roce.Ports[0].Netdev, roce.Ports[0].NetdevUp = "lo", true
	writeFile(t, filepath.Join(sys, "class/net/lo/address"), "02:00:00:00:00:05")
	gid0 := filepath.Join(sys, "class/infiniband/mlx5_1/ports/1/gids/0")
	writeFile(t, gid0, "fe80:0000:0000:0000:0000:00ff:fe00:0005")
	e.d.Set(snap(1, roce), true)
	k := e.register()
	const uid = "5f0e3c1a-7b2d-4e8f-9a6b-00000000057a"
	const ours = "pci-0000-01-00-0"
	if err := e.api.PutClaim("ns", "s", uid, []k8sfake.Result{
		{Request: "roce", Driver: driver, Pool: node, Device: ours},
		{Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: "gpu-0"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.o.API.ApplyClaimStatus(context.Background(), "gpu.example.com", &resourceapi.ClaimStatusApply{
		APIVersion: resourceapi.APIVersion, Kind: "ResourceClaim",
		Metadata: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
		Status: resourceapi.ClaimStatus{Devices: []resourceapi.AllocatedDeviceStatus{
			{Driver: "gpu.example.com", Pool: node, Device: "gpu-0"}}}}); err != nil {
		t.Fatal(err)
	}
	// The first apply fails: tried again within the first wait.
	e.api.FailNextStatus(500)
	if r := k.prepare(t, uid, "s"); r.Error != "" {
		t.Fatal(r.Error)
	}
	e.statusUntil("after a 500", "s", 3*time.Second, func(st map[string]map[string]interface{}) bool {
		return st[ours] != nil && st["gpu-0"] != nil && hasIP(st[ours], "127.0.0.1/8")
	})
	// rdmad: the port's net device gone; then the device away.
	nonet := clone(roce)
	nonet.Ports[0].Netdev, nonet.Ports[0].NetdevUp = "", false
	e.d.Set(snap(2, nonet), true)
	e.statusUntil("net device gone", "s", 2*time.Second, func(st map[string]map[string]interface{}) bool {
		_, nd := st[ours]["networkData"]
		return st[ours] != nil && !nd
	})
	gone := clone(roce)
	gone.State = away
	e.d.Set(snap(3, gone), true)
	e.statusUntil("device away", "s", 2*time.Second, func(st map[string]map[string]interface{}) bool {
		return st[ours] == nil && st["gpu-0"] != nil
	})
	back := clone(roce)
	back.Name, back.Incarnation = "mlx5_7", 2
	writeFile(t, filepath.Join(sys, "class/infiniband/mlx5_7/ports/1/gids/0"), "fe80:0000:0000:0000:0000:00ff:fe00:0007")
	e.d.Set(snap(4, back), true)
	e.statusUntil("device back", "s", 2*time.Second, func(st map[string]map[string]interface{}) bool {
		g := gidsOf(st[ours])
		return len(g) == 1 && g[0].(map[string]interface{})["gid"] == "fe80:0000:0000:0000:0000:00ff:fe00:0007"
	})
	u, err := k.v1.NodeUnprepareResources(context.Background(), &drav1.NodeUnprepareResourcesRequest{
		Claims: []*drav1.Claim{{Namespace: "ns", Uid: uid, Name: "s"}}})
	if err != nil || u.Claims[uid].Error != "" {
		t.Fatalf("unprepare: %v %v", u, err)
	}
	e.statusUntil("unprepared", "s", 2*time.Second, func(st map[string]map[string]interface{}) bool {
		return st[ours] == nil && st["gpu-0"] != nil
	})
}

// The port's addresses change on the host (rtnetlink): the status has
// the new address, and the GIDs read again with it, within a second, no
// poll.  In a network namespace of its own (unshare -n), where lo's
// addresses are the test's to change.
func TestClaimStatusFollowsAddresses(t *testing.T) {
	if os.Getenv("RDMAD_TEST_NETNS") == "" {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("no unshare (util-linux)")
		}
		if err := exec.Command("unshare", "-n", "true").Run(); err != nil {
			t.Skipf("no network namespace of its own for the test (unshare -n: %v)", err)
		}
		cmd := exec.Command("unshare", "-n", os.Args[0], "-test.run=^TestClaimStatusFollowsAddresses$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "RDMAD_TEST_NETNS=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a network namespace of its own: %v\n%s", err, out)
		}
		t.Logf("in a network namespace of its own:\n%s", out)
		return
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	ip("link", "set", "lo", "up")
	e := newEnv(t)
	sys := e.o.SysRoot
	roce := dev("mlx5_1", 1, "Ethernet")
	roce.Ports[0].Netdev, roce.Ports[0].NetdevUp = "lo", true
	gid := filepath.Join(sys, "class/infiniband/mlx5_1/ports/1/gids")
	writeFile(t, filepath.Join(gid, "0"), "fe80:0000:0000:0000:0000:00ff:fe00:0005")
	e.d.Set(snap(1, roce), true)
	k := e.register()
	const uid = "5f0e3c1a-7b2d-4e8f-9a6b-0000000000a1"
	const ours = "pci-0000-01-00-0"
	if err := e.api.PutClaim("ns", "a", uid, []k8sfake.Result{
		{Request: "roce", Driver: driver, Pool: node, Device: ours}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, uid, "a"); r.Error != "" {
		t.Fatal(r.Error)
	}
	e.statusUntil("prepared", "a", 3*time.Second, func(st map[string]map[string]interface{}) bool {
		return hasIP(st[ours], "127.0.0.1/8") && !hasIP(st[ours], "192.0.2.7/32")
	})
	// The kernel makes a RoCE GID of each address: as sysfs shows it.
	writeFile(t, filepath.Join(gid, "1"), "0000:0000:0000:0000:0000:ffff:c000:0207")
	start := time.Now()
	ip("addr", "add", "192.0.2.7/32", "dev", "lo")
	st := e.statusUntil("address added", "a", time.Second, func(st map[string]map[string]interface{}) bool {
		return hasIP(st[ours], "192.0.2.7/32") && len(gidsOf(st[ours])) == 2
	})
	t.Logf("address added: status has it after %v: %v", time.Since(start), ips(st[ours]))
	ip("addr", "del", "192.0.2.7/32", "dev", "lo")
	e.statusUntil("address deleted", "a", time.Second, func(st map[string]map[string]interface{}) bool {
		return hasIP(st[ours], "127.0.0.1/8") && !hasIP(st[ours], "192.0.2.7/32")
	})
}
