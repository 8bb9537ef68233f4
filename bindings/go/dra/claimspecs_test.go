// SPDX-License-Identifier: MIT

package dra_test

// claimspecs.go: a claim's CDI names resolve, as a container runtime
// resolves them (the CDI library's registry), to the device that has
// the prepared identity, to nothing once none has it, and not at all
// after unprepare; a restarted driver binds an old checkpoint's kernel
// names to identities.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	cdiapi "github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"
	oci "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
)

// resolve is what a runtime makes of CDI name @name with the specs of
// @dir: the device's nodes, or the registry's error.
func resolve(t *testing.T, dir, name string) ([]string, error) {
	t.Helper()
	reg := cdiapi.GetRegistry(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	if err := reg.Refresh(); err != nil {
		t.Fatalf("the CDI registry refuses %s: %v", dir, err)
	}
	d := reg.DeviceDB().GetDevice(name)
	if d == nil {
		_, err := reg.InjectDevices(&oci.Spec{}, name)
		return nil, err
	}
	var nodes []string
	for _, n := range d.ContainerEdits.DeviceNodes {
		nodes = append(nodes, n.Path)
	}
	return nodes, nil
}

func TestClaimNamesFollowIdentity(t *testing.T) {
	e := newEnv(t)
	a, b := dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "InfiniBand")
	e.d.Set(snap(1, a, b), true)
	k := e.register()
	if err := e.api.PutClaim("ns", "c", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c")
	name := "rdmad.io/claim=5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102-pci-0000-00-00-0"
	if r.Error != "" || !reflect.DeepEqual(cdiIDs(r), []string{name}) {
		t.Fatalf("prepare: %v", r)
	}
	dir := e.o.CDISpecDir
	want := func(what string, nodes ...string) {
		t.Helper()
		got, err := resolve(t, dir, name)
		if err != nil || !reflect.DeepEqual(got, nodes) {
			t.Fatalf("%s: %s resolves to %v (%v), want %v", what, name, got, err, nodes)
		}
	}
	unresolvable := func(what string) {
		t.Helper()
		got, err := resolve(t, dir, name)
		if err == nil || !strings.Contains(err.Error(), "unresolvable CDI devices") {
			t.Fatalf("%s: %s resolves to %v (%v), want unresolvable", what, name, got, err)
		}
	}
	want("prepared", "/dev/infiniband/uverbs0")
	// Both unplugged and plugged back at the same PCI functions with
	// their kernel names and uverbs numbers swapped: the claim's name
	// follows PCI function 0000:00:00.0, now mlx5_1 on uverbs1.
	a2, b2 := clone(a), clone(b)
	a2.Name, a2.Uverbs, a2.Incarnation = "mlx5_1", "uverbs1", 2
	b2.Name, b2.Uverbs, b2.Incarnation = "mlx5_0", "uverbs0", 2
	e.d.Set(snap(5, b2, a2), true)
	want("kernel names swapped", "/dev/infiniband/uverbs1")
	if again := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c"); !reflect.DeepEqual(cdiIDs(again), []string{name}) {
		t.Fatalf("prepare again after the swap: %v", again)
	}
	// Away, and its PCI function empty while another device keeps
	// mlx5_1's old number: nothing, never another device.
	gone := clone(a2)
	gone.State = away
	b3 := clone(b2)
	b3.Uverbs = "uverbs1"
	e.d.Set(snap(6, b3, gone), true)
	unresolvable("away")
	e.d.Set(snap(7, b3), true)
	unresolvable("removed")
	// Back, under yet another name: the claim's device again.
	a4 := clone(a)
	a4.Name, a4.Uverbs, a4.Incarnation = "mlx5_7", "uverbs7", 3
	e.d.Set(snap(8, b3, a4), true)
	want("back", "/dev/infiniband/uverbs7")
	u, err := k.v1.NodeUnprepareResources(context.Background(), &drav1.NodeUnprepareResourcesRequest{
		Claims: []*drav1.Claim{{Namespace: "ns", Uid: "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", Name: "c"}}})
	if err != nil || u.Claims["5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102"].Error != "" {
		t.Fatalf("unprepare: %v %v", u, err)
	}
	unresolvable("unprepared")
	if m, _ := filepath.Glob(filepath.Join(dir, "rdmad.io-claim_*")); len(m) != 0 {
		t.Fatalf("claim specs left after unprepare: %v", m)
	}
}

// A checkpoint that names kernel names (as drivers before identity-bound
// names wrote it) is bound to identities at start, and the claim's spec
// is written from rdmad's first state: the kernel name the checkpoint
// says is another device's by then, and the spec gives the identity's.
func TestRestartRebindsCheckpoint(t *testing.T) {
	e := newEnv(t)
	a, b := dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "InfiniBand")
	e.d.Set(snap(1, a, b), true)
	k := e.register()
	if err := e.api.PutClaim("ns", "c", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c"); r.Error != "" {
		t.Fatal(r.Error)
	}
	e.stop()
	// The checkpoint as an older driver wrote it: kernel names.
	path := filepath.Join(e.o.PluginDir, "checkpoint.json")
	claims, err := dra.LoadCheckpoint(path)
	if err != nil || len(claims["5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102"].Devices) != 1 {
		t.Fatalf("checkpoint: %v %v", claims, err)
	}
	claims["5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102"].Devices[0].CDI = []string{"rdmad.io/rdma=mlx5_0"}
	if err := dra.SaveCheckpoint(path, claims); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(e.o.CDISpecDir)
	e.start()
	a2, b2 := clone(a), clone(b)
	a2.Name, a2.Uverbs, a2.Incarnation = "mlx5_1", "uverbs1", 2
	b2.Name, b2.Uverbs, b2.Incarnation = "mlx5_0", "uverbs0", 2
	e.d.Set(snap(5, b2, a2), true)
	k = e.register()
	name := "rdmad.io/claim=5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102-pci-0000-00-00-0"
	if r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c"); r.Error != "" || !reflect.DeepEqual(cdiIDs(r), []string{name}) {
		t.Fatalf("after restart: %v", r)
	}
	if got, err := resolve(t, e.o.CDISpecDir, name); err != nil ||
		!reflect.DeepEqual(got, []string{"/dev/infiniband/uverbs1"}) {
		t.Fatalf("after restart %s resolves to %v (%v)", name, got, err)
	}
}

// Subrequests (a firstAvailable request's alternatives) are answered by
// their request's name, as the kubelet matches containers' claims.
func TestSubrequestNamesStripped(t *testing.T) {
	e := newEnv(t)
	e.d.Set(snap(1, dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "Ethernet")), true)
	k := e.register()
	if err := e.api.PutClaim("ns", "c", "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", []k8sfake.Result{
		{Request: "rdma/ib", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"},
		{Request: "roce", Driver: driver, Pool: node, Device: "pci-0000-01-00-0"}}); err != nil {
		t.Fatal(err)
	}
	r := k.prepare(t, "5f0e3c1a-7b2d-4e8f-9a6b-000000c1a102", "c")
	if r.Error != "" || len(r.Devices) != 2 ||
		!reflect.DeepEqual(r.Devices[0].RequestNames, []string{"rdma"}) ||
		!reflect.DeepEqual(r.Devices[1].RequestNames, []string{"roce"}) {
		t.Fatalf("prepare: %v", r)
	}
}

// A claim's spec stays bound to the hardware it was made for across a
// restart of the driver whatever became of the checkpoint (lost, torn,
// tampered with a valid checksum) or of the spec's record (an older
// driver's spec records none): it resolves to that hardware or to
// nothing, never to the kernel nodes it named before, which the kernel
// gives to the next device that registers.
func TestSpecBoundAfterLoss(t *testing.T) {
	const uid = "5f0e3c1a-7b2d-4e8f-9a6b-00000000c0de"
	name := "rdmad.io/claim=" + uid + "-pci-0000-03-00-0"
	for _, c := range []struct {
		what   string
		damage func(t *testing.T, e *env, checkpoint string)
		back   []string // what the claim resolves to once A is back
	}{
		{"lost", func(t *testing.T, e *env, path string) {
			os.Remove(path)
		}, []string{"/dev/infiniband/uverbs5"}},
		{"torn", func(t *testing.T, e *env, path string) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)/2], 0o600)
		}, []string{"/dev/infiniband/uverbs5"}},
		{"tampered", func(t *testing.T, e *env, path string) {
			claims, err := dra.LoadCheckpoint(path)
			if err != nil {
				t.Fatal(err)
			}
			claims[uid].Devices[0].Identity = "pci:0000:04:00.0" // B's
			claims[uid].Devices[0].Device = "pci-0000-04-00-0"
			if err := dra.SaveCheckpoint(path, claims); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"norecord", func(t *testing.T, e *env, path string) {
			os.Remove(path)
			spec := filepath.Join(e.o.CDISpecDir, "rdmad.io-claim_"+uid+".json")
			b, _ := os.ReadFile(spec)
			var v map[string]interface{}
			json.Unmarshal(b, &v)
			delete(v["containerEdits"].(map[string]interface{}), "env")
			b, _ = json.Marshal(v)
			os.WriteFile(spec, b, 0o644)
		}, nil},
	} {
		t.Run(c.what, func(t *testing.T) {
			e := newEnv(t)
			a, b := dev("mlx5_0", 3, "InfiniBand"), dev("mlx5_1", 4, "InfiniBand")
			e.d.Set(snap(1, a, b), true)
			k := e.register()
			if err := e.api.PutClaim("ns", "c", uid, []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-03-00-0"}}); err != nil {
				t.Fatal(err)
			}
			if r := k.prepare(t, uid, "c"); r.Error != "" || !reflect.DeepEqual(cdiIDs(r), []string{name}) {
				t.Fatalf("prepare: %v", r)
			}
			resolvesTo := func(what string, nodes []string) {
				t.Helper()
				got, err := resolve(t, e.o.CDISpecDir, name)
				if nodes == nil {
					if err == nil || !strings.Contains(err.Error(), "unresolvable CDI devices") {
						t.Fatalf("%s: %s resolves to %v (%v), want nothing", what, name, got, err)
					}
					return
				}
				if err != nil || !reflect.DeepEqual(got, nodes) {
					t.Fatalf("%s: %s resolves to %v (%v), want %v", what, name, got, err, nodes)
				}
			}
			resolvesTo("prepared", []string{"/dev/infiniband/uverbs3"})
			e.stop()
			c.damage(t, e, filepath.Join(e.o.PluginDir, "checkpoint.json"))
			e.start()
			// Before rdmad's first state the driver cannot know which
			// device has uverbs3 now.
			resolvesTo("restarted, rdmad not heard yet", nil)
			// A unplugged: the kernel gives its freed minor to B.
			gone := clone(a)
			gone.State = away
			b2 := clone(b)
			b2.Uverbs, b2.Incarnation = "uverbs3", 2
			e.d.Set(snap(2, gone, b2), true)
			resolvesTo("A away, B on uverbs3", nil)
			// A back under a new minor.
			a2 := clone(a)
			a2.Uverbs, a2.Incarnation = "uverbs5", 2
			e.d.Set(snap(3, a2, b2), true)
			resolvesTo("A back on uverbs5", c.back)
			if c.back == nil {
				return
			}
			if pc, ok := e.d.Prepared()[uid]; !ok || pc.Name != "c" || pc.Namespace != "ns" {
				t.Fatalf("the claim is not known again: %v", e.d.Prepared())
			}
			k = e.register()
			u, err := k.v1.NodeUnprepareResources(context.Background(), &drav1.NodeUnprepareResourcesRequest{
				Claims: []*drav1.Claim{{Namespace: "ns", Uid: uid, Name: "c"}}})
			if err != nil || u.Claims[uid].Error != "" {
				t.Fatalf("unprepare: %v %v", u, err)
			}
			if m, _ := filepath.Glob(filepath.Join(e.o.CDISpecDir, "rdmad.io-claim_*")); len(m) != 0 {
				t.Fatalf("claim specs left after unprepare: %v", m)
			}
		})
	}
}
