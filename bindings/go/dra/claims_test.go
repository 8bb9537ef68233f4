// SPDX-License-Identifier: MIT

package dra_test

// claims.go: prepare, unprepare, and prepared claims kept over a restart.

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	healthv1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra-health/v1"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
	drav1beta1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1beta1"
)

// Prepare answers CDI names, the same again when asked again, refuses a
// device that is not present or not ready, and a claim whose UID is not
// the claim's; unprepare undoes it and a claim unknown is no error.
func TestPrepareUnprepare(t *testing.T) {
	e := newEnv(t)
	a, b, c := dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "Ethernet"), dev("mlx5_2", 2, "Ethernet")
	unready := clone(c)
	unready.Ready = false
	e.d.Set(snap(1, a, b, unready), true)
	k := e.register()
	res := func(devs ...string) []k8sfake.Result {
		var r []k8sfake.Result
		for _, d := range devs {
			r = append(r, k8sfake.Result{Request: "rdma", Driver: driver, Pool: node, Device: d})
		}
		return r
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.api.PutClaim("ns", "two", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b", append(res("pci-0000-00-00-0", "pci-0000-01-00-0"),
		k8sfake.Result{Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: "gpu-0"})))
	r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b", "two")
	if r.Error != "" || !reflect.DeepEqual(cdiIDs(r), []string{"rdmad.io/claim=5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b-pci-0000-00-00-0", "rdmad.io/claim=5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b-pci-0000-01-00-0"}) {
		t.Fatalf("prepare: %v", r)
	}
	if r.Devices[0].PoolName != node || r.Devices[0].DeviceName != "pci-0000-00-00-0" ||
		!reflect.DeepEqual(r.Devices[0].RequestNames, []string{"rdma"}) {
		t.Fatalf("prepare: device %v", r.Devices[0])
	}
	// Again, through v1beta1, with the device since renamed: the same.
	renamed := clone(a)
	renamed.Name = "ib_a"
	e.d.Set(snap(2, renamed, b, unready), true)
	rb, err := k.beta.NodePrepareResources(context.Background(), &drav1beta1.NodePrepareResourcesRequest{
		Claims: []*drav1beta1.Claim{{Namespace: "ns", Uid: "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b", Name: "two"}}})
	if err != nil || rb.Claims["5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b"].Error != "" ||
		!reflect.DeepEqual(rb.Claims["5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b"].Devices[0].CdiDeviceIds, []string{"rdmad.io/claim=5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b-pci-0000-00-00-0"}) {
		t.Fatalf("prepare again (v1beta1): %v %v", rb, err)
	}
	for _, tc := range []struct{ uid, dev, want string }{
		{"5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10c", "pci-0000-02-00-0", "not ready"},
		{"5f0e3c1a-7b2d-4e8f-9a6b-000000c1a107", "pci-0000-07-00-0", "not present"},
	} {
		must(e.api.PutClaim("ns", tc.uid, tc.uid, res(tc.dev)))
		if r := k.prepare(t, tc.uid, tc.uid); !strings.Contains(r.Error, tc.want) || len(r.Devices) != 0 {
			t.Errorf("%s: %v, want an error saying %q", tc.uid, r, tc.want)
		}
	}
	gone := clone(b)
	gone.State = away
	e.d.Set(snap(3, renamed, gone, unready), true)
	must(e.api.PutClaim("ns", "away", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a101", res("pci-0000-01-00-0")))
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a101", "away"); !strings.Contains(r.Error, "away") {
		t.Errorf("away device: %v", r)
	}
	must(e.api.PutClaim("ns", "anew", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a109", res("pci-0000-00-00-0")))
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10a", "anew"); !strings.Contains(r.Error, "UID") {
		t.Errorf("UID not the claim's: %v", r)
	}
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10d", "nosuch"); !strings.Contains(r.Error, "not found") {
		t.Errorf("no such claim: %v", r)
	}
	u, err := k.v1.NodeUnprepareResources(context.Background(), &drav1.NodeUnprepareResourcesRequest{
		Claims: []*drav1.Claim{{Namespace: "ns", Uid: "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b", Name: "two"},
			{Namespace: "ns", Uid: "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a108", Name: "never"}}})
	if err != nil || len(u.Claims) != 2 || u.Claims["5f0e3c1a-7b2d-4e8f-9a6b-000000c1a10b"].Error != "" || u.Claims["5f0e3c1a-7b2d-4e8f-9a6b-000000c1a108"].Error != "" {
		t.Fatalf("unprepare: %v %v", u, err)
	}
	if p := e.d.Prepared(); len(p) != 0 {
		t.Fatalf("after unprepare: %v", p)
	}
}

// Claims prepared survive a restart of the driver: the new one answers
// them from its checkpoint (though the device is since removed, which a
// new claim is refused for) and reports the removed device Unhealthy.
func TestRestartKeepsPreparedClaims(t *testing.T) {
	e := newEnv(t)
	a := dev("mlx5_0", 0, "InfiniBand")
	e.d.Set(snap(1, a), true)
	k := e.register()
	if err := e.api.PutClaim("ns", "c", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	first := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c")
	if first.Error != "" {
		t.Fatal(first.Error)
	}
	e.stop()
	e.start()
	e.d.Set(snap(2), true) // mlx5_0 unplugged while the driver was down
	k = e.register()
	again := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c")
	if again.Error != "" || !reflect.DeepEqual(cdiIDs(again), cdiIDs(first)) {
		t.Fatalf("after restart: %v, before %v", again, first)
	}
	if err := e.api.PutClaim("ns", "d", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a103", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a103", "d"); !strings.Contains(r.Error, "not present") {
		t.Fatalf("a new claim on the removed device: %v", r)
	}
	st, err := healthv1.NewDRAResourceHealthClient(k.conn).NodeWatchResources(context.Background(), &healthv1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Devices) != 1 || m.Devices[0].Device.DeviceName != "pci-0000-00-00-0" ||
		m.Devices[0].Health != healthv1.HealthStatus_UNHEALTHY ||
		!strings.Contains(m.Devices[0].Message, "removed") {
		t.Fatalf("health after restart: %v", m)
	}
}

// Unprepare and prepare act only on claims this driver prepared, named
// by UIDs, and no file outside the CDI directory is ever touched: a
// UID "x/../../victim" would name victim.json one directory above it.
func TestOnlyOwnClaimsOnlyOwnDir(t *testing.T) {
	e := newEnv(t)
	e.d.Set(snap(1, dev("mlx5_0", 0, "InfiniBand")), true)
	k := e.register()
	cdiDir := e.o.CDISpecDir
	victim := filepath.Join(filepath.Dir(cdiDir), "victim.json")
	writeFile(t, victim, `{"mine": true}`)
	// Another's spec in the CDI directory, named as a claim's would be,
	// for a claim this driver never prepared.
	other := "0b5e2c7d-1f3a-4c9e-8d6b-2a4f6e8c0d1e"
	othersSpec := filepath.Join(cdiDir, "rdmad.io-claim_"+other+".json")
	writeFile(t, othersSpec, `{"cdiVersion":"0.5.0","kind":"rdmad.io/claim","devices":[]}`)
	unprepare := func(uid string) string {
		t.Helper()
		u, err := k.v1.NodeUnprepareResources(context.Background(), &drav1.NodeUnprepareResourcesRequest{
			Claims: []*drav1.Claim{{Namespace: "ns", Uid: uid, Name: "c"}}})
		if err != nil || u.Claims[uid] == nil {
			t.Fatalf("unprepare %q: %v %v", uid, u, err)
		}
		return u.Claims[uid].Error
	}
	untouched := func(what string) {
		t.Helper()
		for _, f := range []string{victim, othersSpec} {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("%s: %s: %v", what, f, err)
			}
		}
	}
	for _, uid := range []string{"x/../../victim", "../victim", ".."} {
		why := unprepare(uid)
		untouched("unprepare " + uid)
		if !strings.Contains(why, "not a UID") {
			t.Fatalf("unprepare %q: error %q, want \"not a UID\"", uid, why)
		}
		if err := e.api.PutClaim("ns", "c", "5f0e3c1a-7b2d-4e8f-9a6b-000000000001",
			[]k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
			t.Fatal(err)
		}
		if r := k.prepare(t, uid, "c"); !strings.Contains(r.Error, "not a UID") {
			t.Fatalf("prepare %q: %v, want \"not a UID\"", uid, r)
		}
		untouched("prepare " + uid)
	}
	if why := unprepare(other); why != "" {
		t.Fatalf("unprepare of a claim never prepared: %q, want no error", why)
	}
	untouched("unprepare of a claim never prepared")
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(cdiDir), "*")); len(m) != 5 {
		t.Fatalf("beside the CDI directory: %v", m)
	}
}
