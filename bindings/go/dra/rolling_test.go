// SPDX-License-Identifier: MIT

package dra_test

// rolling.go: a rolling update of the driver's DaemonSet (maxSurge 1):
// the new pod starts beside the old one on the same directories, both
// answer the kubelet from sockets of their own, the old one stops; a
// kubelet preparing and unpreparing claims all along, through whichever
// is registered (alternately while both are), gets every answer, and
// what the two share (the checkpoint, the claims' CDI specs, the slices)
// is whole and consistent at the end.

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
	pluginregistration "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/pluginregistration/v1"
)

const (
	podOld = "0d1e0000-0000-4000-8000-00000000001d"
	podNew = "0d1e0000-0000-4000-8000-00000000002e"
)

// endpoint is one registered driver pod, as the kubelet holds it.
type endpoint struct {
	reg string
	v1  drav1.DRAPluginClient
}

// registerAt does what the kubelet's plugin watcher does with
// registration socket @reg: GetInfo, then dial the endpoint it names.
func registerAt(t *testing.T, reg string) endpoint {
	t.Helper()
	info, err := pluginregistration.NewRegistrationClient(dial(t, reg)).GetInfo(context.Background(), &pluginregistration.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != driver || k8sfake.PickDRAService(info.SupportedVersions) != "v1.DRAPlugin" {
		t.Fatalf("GetInfo: %v", info)
	}
	return endpoint{reg: reg, v1: drav1.NewDRAPluginClient(dial(t, info.Endpoint))}
}

func TestRollingUpdate(t *testing.T) {
	// Socket paths with a pod UID are 36 characters longer: a short
	// directory keeps them within sun_path's 108 bytes.
	short, err := os.MkdirTemp("", "ru")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	e := newEnv(t, slots(1000), func(o *dra.Options) {
		o.RollingUpdateUID = podOld
		o.PluginDir, o.RegistryDir = filepath.Join(short, "p"), filepath.Join(short, "r")
	})
	state := snap(1, dev("mlx5_0", 0, "Ethernet"))
	e.d.Set(state, true)
	e.pool("old pod", "pci-0000-00-00-0")
	regOld := filepath.Join(e.o.RegistryDir, driver+"-"+podOld+"-reg.sock")
	if _, err := os.Stat(filepath.Join(e.o.PluginDir, "dra-"+podOld+".sock")); err != nil {
		t.Fatalf("the old pod's DRA socket: %v", err)
	}
	var mu sync.Mutex
	eps := []endpoint{registerAt(t, regOld)}
	// The kubelet's side: a prepare of a new claim, and an unprepare of
	// the claim before it, every 2 ms, through the endpoint chosen (the
	// newest, or alternately while two are registered), falling back
	// to the other where one does not answer.
	stop := make(chan struct{})
	done := make(chan struct{})
	var failures []string
	prepared := map[string]bool{}
	n := 0
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			uid := claimUID(1000 + i)
			if err := e.api.PutClaim("ns", uid, uid, []k8sfake.Result{{Request: "r", Driver: driver,
				Pool: node, Device: "pci-0000-00-00-0", ShareID: "5a4e0000-0000-4000-8000-" + uid[24:],
				Consumed: map[string]string{dra.CapacitySlots: "1"}}}); err != nil {
				failures = append(failures, err.Error())
				return
			}
			call := func(f func(ep endpoint) (string, error)) {
				mu.Lock()
				order := append([]endpoint(nil), eps...)
				mu.Unlock()
				first := len(order) - 1
				if len(order) == 2 && i%2 == 0 {
					first = 0
				}
				for k := 0; k < len(order); k++ {
					ep := order[(first+k)%len(order)]
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					why, err := f(ep)
					cancel()
					_ = ctx
					if err == nil && why == "" {
						return
					}
					if err == nil {
						failures = append(failures, why)
						return
					}
				}
				failures = append(failures, "no driver pod answered")
			}
			call(func(ep endpoint) (string, error) {
				r, err := ep.v1.NodePrepareResources(context.Background(), &drav1.NodePrepareResourcesRequest{
					Claims: []*drav1.Claim{{Namespace: "ns", Uid: uid, Name: uid}}})
				if err != nil {
					return "", err
				}
				return r.Claims[uid].GetError(), nil
			})
			prepared[uid] = true
			n++
			if i%2 == 1 {
				old := claimUID(1000 + i - 1)
				call(func(ep endpoint) (string, error) {
					r, err := ep.v1.NodeUnprepareResources(context.Background(), &drav1.NodeUnprepareResourcesRequest{
						Claims: []*drav1.Claim{{Namespace: "ns", Uid: old, Name: old}}})
					if err != nil {
						return "", err
					}
					return r.Claims[old].GetError(), nil
				})
				delete(prepared, old)
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	// The new pod starts beside the old one.
	o := e.o
	o.RollingUpdateUID = podNew
	dNew, err := dra.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	newDone := make(chan error, 1)
	go func() { newDone <- dNew.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-newDone })
	dNew.Set(state, true)
	regNew := filepath.Join(e.o.RegistryDir, driver+"-"+podNew+"-reg.sock")
	waitFor(t, "the new pod's registration socket", func() bool { _, err := os.Stat(regNew); return err == nil })
	if _, err := os.Stat(regOld); err != nil {
		t.Fatalf("the new pod took the old one's socket away: %v", err)
	}
	ep := registerAt(t, regNew)
	mu.Lock()
	eps = append(eps, ep)
	mu.Unlock()
	time.Sleep(200 * time.Millisecond) // both answer, alternately
	// The old pod stops: its sockets go, the new one's stay, and the
	// kubelet drops it.
	e.stop()
	if _, err := os.Stat(regOld); !os.IsNotExist(err) {
		t.Fatalf("the old pod's registration socket stayed: %v", err)
	}
	if _, err := os.Stat(regNew); err != nil {
		t.Fatalf("the old pod took the new one's socket away: %v", err)
	}
	mu.Lock()
	eps = eps[1:]
	mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	close(stop)
	<-done
	if len(failures) > 0 {
		t.Fatalf("%d claims prepared; failures: %v", n, failures)
	}
	t.Logf("%d claims prepared through the update, every one answered", n)
	// What the two shared: the checkpoint holds exactly the claims
	// still prepared, each with its spec, and no other spec is left.
	cp, err := dra.LoadCheckpoint(filepath.Join(e.o.PluginDir, "checkpoint.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got, specs []string
	for uid := range prepared {
		want = append(want, uid)
	}
	for uid := range cp {
		got = append(got, uid)
	}
	sort.Strings(want)
	sort.Strings(got)
	if len(want) != len(got) || len(got) == 0 {
		t.Fatalf("checkpoint holds %d claims, %d prepared", len(got), len(want))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("checkpoint %v, prepared %v", got, want)
		}
	}
	m, _ := filepath.Glob(filepath.Join(e.o.CDISpecDir, "rdmad.io-claim_*.json"))
	for _, p := range m {
		specs = append(specs, p)
	}
	if len(specs) != len(want) {
		t.Fatalf("%d claim specs for %d claims prepared", len(specs), len(want))
	}
	// The new pod publishes once the old one is gone.
	e.api.Wipe(node)
	waitFor(t, "the new pod's slices", func() bool {
		devs, complete := e.api.PoolDevices(driver, node)
		return complete && len(devs) == 1
	})
	if r := e.api.Refused(); len(r) > 0 {
		t.Fatalf("refused: %v", r)
	}
}
