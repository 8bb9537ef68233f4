// SPDX-License-Identifier: MIT

package dra_test

// claims.go: prepare, unprepare, and prepared claims kept over a restart.

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/dra/drav1"
	"github.com/rdmad/rdmad/bindings/go/dra/drav1beta1"
	"github.com/rdmad/rdmad/bindings/go/dra/healthv1"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
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
	must(e.api.PutClaim("ns", "two", "uid-two", append(res("pci-0000-00-00-0", "pci-0000-01-00-0"),
		k8sfake.Result{Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: "gpu-0"})))
	r := k.prepare(t, "uid-two", "two")
	if r.Error != "" || !reflect.DeepEqual(cdiIDs(r), []string{"rdmad.io/claim=uid-two-pci-0000-00-00-0", "rdmad.io/claim=uid-two-pci-0000-01-00-0"}) {
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
		Claims: []*drav1beta1.Claim{{Namespace: "ns", Uid: "uid-two", Name: "two"}}})
	if err != nil || rb.Claims["uid-two"].Error != "" ||
		!reflect.DeepEqual(rb.Claims["uid-two"].Devices[0].CdiDeviceIds, []string{"rdmad.io/claim=uid-two-pci-0000-00-00-0"}) {
		t.Fatalf("prepare again (v1beta1): %v %v", rb, err)
	}
	for _, tc := range []struct{ uid, dev, want string }{
		{"uid-unready", "pci-0000-02-00-0", "not ready"},
		{"uid-missing", "pci-0000-07-00-0", "not present"},
	} {
		must(e.api.PutClaim("ns", tc.uid, tc.uid, res(tc.dev)))
		if r := k.prepare(t, tc.uid, tc.uid); !strings.Contains(r.Error, tc.want) || len(r.Devices) != 0 {
			t.Errorf("%s: %v, want an error saying %q", tc.uid, r, tc.want)
		}
	}
	gone := clone(b)
	gone.State = away
	e.d.Set(snap(3, renamed, gone, unready), true)
	must(e.api.PutClaim("ns", "away", "uid-away", res("pci-0000-01-00-0")))
	if r := k.prepare(t, "uid-away", "away"); !strings.Contains(r.Error, "away") {
		t.Errorf("away device: %v", r)
	}
	must(e.api.PutClaim("ns", "anew", "uid-new", res("pci-0000-00-00-0")))
	if r := k.prepare(t, "uid-old", "anew"); !strings.Contains(r.Error, "UID") {
		t.Errorf("UID not the claim's: %v", r)
	}
	if r := k.prepare(t, "uid-x", "nosuch"); !strings.Contains(r.Error, "not found") {
		t.Errorf("no such claim: %v", r)
	}
	u, err := k.v1.NodeUnprepareResources(context.Background(), &drav1.NodeUnprepareResourcesRequest{
		Claims: []*drav1.Claim{{Namespace: "ns", Uid: "uid-two", Name: "two"},
			{Namespace: "ns", Uid: "uid-never", Name: "never"}}})
	if err != nil || len(u.Claims) != 2 || u.Claims["uid-two"].Error != "" || u.Claims["uid-never"].Error != "" {
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
	if err := e.api.PutClaim("ns", "c", "uid-c", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	first := k.prepare(t, "uid-c", "c")
	if first.Error != "" {
		t.Fatal(first.Error)
	}
	e.stop()
	e.start()
	e.d.Set(snap(2), true) // mlx5_0 unplugged while the driver was down
	k = e.register()
	again := k.prepare(t, "uid-c", "c")
	if again.Error != "" || !reflect.DeepEqual(cdiIDs(again), cdiIDs(first)) {
		t.Fatalf("after restart: %v, before %v", again, first)
	}
	if err := e.api.PutClaim("ns", "d", "uid-d", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "uid-d", "d"); !strings.Contains(r.Error, "not present") {
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
