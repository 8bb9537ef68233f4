// SPDX-License-Identifier: MIT

package dra_test

// rdmad-dra against a scripted kubelet and a scripted API server: the
// environment of the tests of this package, one file of tests for each
// file of the package.  The kubelet here speaks only through the code
// generated from the published protos (plugin registration, DRA v1 and
// v1beta1, DRA health v1 and v1alpha1), chooses services from the
// registration as the kubelet's DRA plugin manager does
// (k8sfake.PickDRAService, PickHealthService), finds the registration
// socket, asks GetInfo, dials the endpoint it names, prepares and
// unprepares claims and follows the health stream; at its start it
// deletes the node's slices first, as a kubelet does.  The API server
// (internal/k8sfake) checks every ResourceSlice written against the
// published OpenAPI schema of resource.k8s.io/v1.  rdmad's states are
// given to the driver directly (Driver.Set), as rdmad.Follow would hand
// them over; tests/integration drives the same program with the real
// daemon.

import (
	"context"
	"net"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
	drav1beta1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1beta1"
	pluginregistration "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/pluginregistration/v1"
	"github.com/rdmad/rdmad/bindings/go/internal/rest"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

const (
	node    = "node-1"
	nodeUID = "5e1d9a3c-node-1"
	driver  = "rdmad.io"
)

var (
	present = rdmadpb.DeviceState_DEVICE_STATE_PRESENT
	away    = rdmadpb.DeviceState_DEVICE_STATE_AWAY
	removed = rdmadpb.DeviceState_DEVICE_STATE_REMOVED
)

// dev is a ready device at PCI function 0000:0N:00.0.
func dev(name string, n int, ll string) *rdmadpb.Device {
	pci := "0000:0" + string(rune('0'+n)) + ":00.0"
	return &rdmadpb.Device{Name: name, Identity: "pci:" + pci, PciAddress: pci,
		Uverbs: "uverbs" + string(rune('0'+n)), State: present, Ready: true,
		NumaNode: int32(n % 2), Driver: "mlx5_core", NodeGuid: "0002:c903:0000:000" + string(rune('0'+n)),
		Incarnation: 1, Ports: []*rdmadpb.Port{{Port: 1, LinkLayer: ll}}}
}

func clone(d *rdmadpb.Device) *rdmadpb.Device {
	return proto.Clone(d).(*rdmadpb.Device)
}

func snap(gen uint64, devs ...*rdmadpb.Device) *rdmad.Snapshot {
	return &rdmad.Snapshot{Generation: gen, Devices: devs}
}

// env is one driver with its scripted API server and kubelet dirs.
type env struct {
	t       *testing.T
	api     *k8sfake.Server
	o       dra.Options
	d       *dra.Driver
	cancel  func()
	stopped chan error
}

func newEnv(t *testing.T, opts ...func(*dra.Options)) *env {
	t.Helper()
	schema, err := k8sfake.LoadSchema("")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, api: k8sfake.New(schema)}
	t.Cleanup(e.api.Close)
	e.api.PutNode(node, nodeUID)
	dir := t.TempDir()
	sa := filepath.Join(dir, "sa")
	if err := e.api.ServiceAccount(sa); err != nil {
		t.Fatal(err)
	}
	api, err := rest.InCluster(e.api.URL, sa)
	if err != nil {
		t.Fatal(err)
	}
	e.o = dra.Options{NodeName: node, PluginDir: filepath.Join(dir, "plugins", driver),
		RegistryDir: filepath.Join(dir, "plugins_registry"), API: api,
		CDISpecDir: filepath.Join(dir, "cdi"),
		SysRoot:    filepath.Join(dir, "sys"), Logf: t.Logf}
	for _, f := range opts {
		f(&e.o)
	}
	e.start()
	return e
}

func (e *env) start() {
	e.t.Helper()
	d, err := dra.New(e.o)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.d, e.cancel, e.stopped = d, cancel, make(chan error, 1)
	go func() { e.stopped <- d.Serve(ctx) }()
	e.t.Cleanup(e.stop)
}

func (e *env) stop() {
	if e.cancel != nil {
		e.cancel()
		<-e.stopped
		e.cancel = nil
	}
}

// pool waits until the pool published is @want, complete.
func (e *env) pool(what string, want ...string) {
	e.t.Helper()
	if want == nil {
		want = []string{}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, complete := e.api.PoolDevices(driver, node)
		if got == nil {
			got = []string{}
		}
		if complete && reflect.DeepEqual(got, want) {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: pool %v (complete %v), want %v", what, got, complete, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := e.api.Refused(); len(r) > 0 {
		e.t.Fatalf("the API server refused writes: %v", r)
	}
}

// attrIs waits until device @dev of the pool has attribute @name @want.
func (e *env) attrIs(what, dev, name string, want interface{}) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := attr(e.api.Device(driver, node, dev), name)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: %s's %s is %v, want %v", what, dev, name, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func attr(d map[string]interface{}, name string) interface{} {
	a, _ := d["attributes"].(map[string]interface{})[name].(map[string]interface{})
	for _, v := range a {
		return v
	}
	return nil
}

// kubelet is the scripted kubelet's connection to the driver.
type kubelet struct {
	info   *pluginregistration.PluginInfo
	conn   *grpc.ClientConn
	v1     drav1.DRAPluginClient
	beta   drav1beta1.DRAPluginClient
	health string // the health service it picked ("": none)
}

func dial(t *testing.T, path string) *grpc.ClientConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := grpc.DialContext(ctx, path, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", a)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// register does what the kubelet's plugin watcher does with a socket
// that appears in plugins_registry, then dials the endpoint.
func (e *env) register() *kubelet {
	e.t.Helper()
	var sock string
	for deadline := time.Now().Add(5 * time.Second); ; {
		m, _ := filepath.Glob(filepath.Join(e.o.RegistryDir, "*.sock"))
		if len(m) == 1 {
			sock = m[0]
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no registration socket in %s: %v", e.o.RegistryDir, m)
		}
		time.Sleep(5 * time.Millisecond)
	}
	reg := pluginregistration.NewRegistrationClient(dial(e.t, sock))
	ctx := context.Background()
	info, err := reg.GetInfo(ctx, &pluginregistration.InfoRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	if info.Type != "DRAPlugin" || info.Name != driver ||
		k8sfake.PickDRAService(info.SupportedVersions) != "v1.DRAPlugin" {
		e.t.Fatalf("GetInfo: %v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &pluginregistration.RegistrationStatus{PluginRegistered: true}); err != nil {
		e.t.Fatal(err)
	}
	conn := dial(e.t, info.Endpoint)
	return &kubelet{info: info, conn: conn, v1: drav1.NewDRAPluginClient(conn),
		beta:   drav1beta1.NewDRAPluginClient(conn),
		health: k8sfake.PickHealthService(info.SupportedVersions)}
}

// kubeletStarts is what a kubelet does at its start, in its order: it
// deletes the node's ResourceSlices (wipeResourceSlices), then its
// plugin watcher registers the drivers it finds.
func (e *env) kubeletStarts() *kubelet {
	e.t.Helper()
	e.api.Wipe(node)
	return e.register()
}

func (k *kubelet) prepare(t *testing.T, uid, name string) *drav1.NodePrepareResourceResponse {
	t.Helper()
	r, err := k.v1.NodePrepareResources(context.Background(), &drav1.NodePrepareResourcesRequest{
		Claims: []*drav1.Claim{{Namespace: "ns", Uid: uid, Name: name}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Claims) != 1 || r.Claims[uid] == nil {
		t.Fatalf("prepare %s: answer %v", uid, r)
	}
	return r.Claims[uid]
}

func cdiIDs(r *drav1.NodePrepareResourceResponse) []string {
	var ids []string
	for _, d := range r.Devices {
		ids = append(ids, d.CdiDeviceIds...)
	}
	return ids
}
