// SPDX-License-Identifier: MIT

package dra_test

// health.go: the health streams, as a current kubelet and a kubelet that
// speaks only v1alpha1 take them.

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	healthv1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra-health/v1"
	healthv1alpha1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra-health/v1alpha1"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// healthMsg is one message of a health stream: health and message by
// device.
type healthMsg struct {
	health  map[string]int32
	message map[string]string
}

// watchV1 and watchV1alpha1 open a health stream of that version.
func watchV1(t *testing.T, ctx context.Context, k *kubelet) func() healthMsg {
	st, err := healthv1.NewDRAResourceHealthClient(k.conn).NodeWatchResources(ctx, &healthv1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return func() healthMsg {
		t.Helper()
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("v1 stream: %v", err)
		}
		h := healthMsg{map[string]int32{}, map[string]string{}}
		for _, d := range m.Devices {
			if d.Device.PoolName != node || d.LastUpdatedTime == 0 || d.HealthCheckTimeoutSeconds <= 0 {
				t.Fatalf("v1: %v", d)
			}
			h.health[d.Device.DeviceName] = int32(d.Health)
			h.message[d.Device.DeviceName] = d.Message
		}
		return h
	}
}

func watchV1alpha1(t *testing.T, ctx context.Context, k *kubelet) func() healthMsg {
	st, err := healthv1alpha1.NewDRAResourceHealthClient(k.conn).NodeWatchResources(ctx, &healthv1alpha1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return func() healthMsg {
		t.Helper()
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("v1alpha1 stream: %v", err)
		}
		h := healthMsg{map[string]int32{}, map[string]string{}}
		for _, d := range m.Devices {
			if d.Device.PoolName != node || d.LastUpdatedTime == 0 {
				t.Fatalf("v1alpha1: %v", d)
			}
			h.health[d.Device.DeviceName] = int32(d.Health)
			h.message[d.Device.DeviceName] = d.Message
		}
		return h
	}
}

// A current kubelet (Kubernetes PR #139477) opens a health stream only
// where the registration lists a DRAResourceHealth service, v1 where
// both are: the registration lists both, and the v1 stream says each
// change with its reason (ready; not ready; away; removing; removed
// while prepared; rdmad out of reach, Unknown).  A kubelet that speaks
// only v1alpha1 calls it unasked and gets the same.
func TestHealthAsKubeletsTakeIt(t *testing.T) {
	e := newEnv(t)
	a, b := dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "Ethernet")
	e.d.Set(snap(1, a, b), true)
	k := e.kubeletStarts()
	if k.health != k8sfake.HealthV1 {
		t.Fatalf("registration %v: a current kubelet picks health service %q, want %q (none listed: it opens no health stream)",
			k.info.SupportedVersions, k.health, k8sfake.HealthV1)
	}
	if k8sfake.PickHealthService([]string{k8sfake.HealthV1alpha1}) == "" ||
		!strings.Contains(strings.Join(k.info.SupportedVersions, " "), k8sfake.HealthV1alpha1) {
		t.Fatalf("registration %v lists no v1alpha1 health", k.info.SupportedVersions)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v1 := watchV1(t, ctx, k)
	alpha := watchV1alpha1(t, ctx, k)
	const H, U, X = 1, 2, 0
	const A, B = "pci-0000-00-00-0", "pci-0000-01-00-0"
	expect := func(what string, want map[string]int32, why map[string]string) {
		t.Helper()
		for name, recv := range map[string]func() healthMsg{"v1": v1, "v1alpha1": alpha} {
			m := recv()
			if !reflect.DeepEqual(m.health, want) {
				t.Fatalf("%s, %s: health %v, want %v", what, name, m.health, want)
			}
			for d, w := range why {
				if !strings.Contains(m.message[d], w) {
					t.Fatalf("%s, %s: %s's message %q, want it to say %q", what, name, d, m.message[d], w)
				}
			}
		}
	}
	expect("start", map[string]int32{A: H, B: H}, map[string]string{A: "ready", B: "ready"})
	unready := clone(b)
	unready.Ready = false
	e.d.Set(snap(2, a, unready), true)
	expect("unready", map[string]int32{A: H, B: U}, map[string]string{B: "not ready"})
	e.d.Set(snap(3, a, b), true)
	expect("ready", map[string]int32{A: H, B: H}, map[string]string{B: "ready"})
	if err := e.api.PutClaim("ns", "c", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: B}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c"); r.Error != "" {
		t.Fatal(r.Error)
	}
	gone := clone(b)
	gone.State = rdmadpb.DeviceState_DEVICE_STATE_AWAY
	e.d.Set(snap(4, a, gone), true)
	expect("prepared device away", map[string]int32{A: H, B: U}, map[string]string{B: "away"})
	removing := clone(b)
	removing.Removing = true
	e.d.Set(snap(5, a, removing), true)
	expect("prepared device removing", map[string]int32{A: H, B: U}, map[string]string{B: "removing"})
	e.d.Set(snap(6, a), true)
	expect("prepared device removed", map[string]int32{A: H, B: U}, map[string]string{B: "removed"})
	e.d.Set(nil, false)
	expect("rdmad gone", map[string]int32{A: X, B: X}, map[string]string{A: "rdmad out of reach", B: "rdmad out of reach"})
}
