// SPDX-License-Identifier: MIT

package dra_test

// rdmad-dra against a scripted kubelet and a scripted API server.  The
// kubelet here speaks only through the code generated from the
// published protos (plugin registration, DRA v1 and v1beta1, DRA health
// v1alpha1 and v1beta1): it finds the registration socket, asks GetInfo,
// dials the endpoint it names, prepares and unprepares claims and follows
// the health stream.  The API server (internal/k8sfake) checks every
// ResourceSlice written against the published OpenAPI schema of
// resource.k8s.io/v1.  rdmad's states are given to the driver directly
// (Driver.Set), as rdmad.Follow would hand them over; tests/integration
// drives the same program with the real daemon.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/deviceplugin"
	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/dra/drav1"
	"github.com/rdmad/rdmad/bindings/go/dra/drav1beta1"
	"github.com/rdmad/rdmad/bindings/go/dra/healthv1alpha1"
	"github.com/rdmad/rdmad/bindings/go/dra/healthv1beta1"
	"github.com/rdmad/rdmad/bindings/go/dra/pluginregistration"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

const (
	node   = "node-1"
	driver = "rdmad.io"
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
	dir := t.TempDir()
	sa := filepath.Join(dir, "sa")
	if err := e.api.ServiceAccount(sa); err != nil {
		t.Fatal(err)
	}
	api, err := dra.InCluster(e.api.URL, sa)
	if err != nil {
		t.Fatal(err)
	}
	e.o = dra.Options{NodeName: node, PluginDir: filepath.Join(dir, "plugins", driver),
		RegistryDir: filepath.Join(dir, "plugins_registry"), API: api,
		SysRoot: filepath.Join(dir, "sys"), Logf: t.Logf}
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
	info *pluginregistration.PluginInfo
	conn *grpc.ClientConn
	v1   drav1.DRAPluginClient
	beta drav1beta1.DRAPluginClient
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
		!reflect.DeepEqual(info.SupportedVersions, []string{"v1.DRAPlugin", "v1beta1.DRAPlugin"}) {
		e.t.Fatalf("GetInfo: %v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &pluginregistration.RegistrationStatus{PluginRegistered: true}); err != nil {
		e.t.Fatal(err)
	}
	conn := dial(e.t, info.Endpoint)
	return &kubelet{info: info, conn: conn, v1: drav1.NewDRAPluginClient(conn),
		beta: drav1beta1.NewDRAPluginClient(conn)}
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

// The slices follow every event of a device's life: plug, unready,
// ready, away, return, rename, unplug, removed while held; every write
// matches the published schema; attributes say what a claim selects by.
func TestSlicesFollowDevices(t *testing.T) {
	e := newEnv(t)
	a, b := dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "Ethernet")
	b.Aliases = []string{"roce0", "east"}
	e.d.Set(snap(1), true)
	e.pool("no device")
	e.d.Set(snap(2, a), true)
	e.pool("plug", "pci-0000-00-00-0")
	e.d.Set(snap(3, a, b), true)
	e.pool("second plug", "pci-0000-00-00-0", "pci-0000-01-00-0")
	pd := e.api.Device(driver, node, "pci-0000-01-00-0")
	for k, want := range map[string]interface{}{"name": "mlx5_1", "linkLayer": "Ethernet",
		"numaNode": 1.0, "ready": true, "alias": "roce0", "aliases": "roce0,east",
		"pciAddress": "0000:01:00.0", "identity": "pci:0000:01:00.0", "driver": "mlx5_core",
		"nodeGUID": "0002:c903:0000:0001"} {
		if got := attr(pd, k); got != want {
			t.Errorf("attribute %s: %v, want %v", k, got, want)
		}
	}
	unready := clone(b)
	unready.Ready = false
	e.d.Set(snap(4, a, unready), true)
	e.pool("unready stays", "pci-0000-00-00-0", "pci-0000-01-00-0")
	e.attrIs("unready", "pci-0000-01-00-0", "ready", false)
	gone := clone(b)
	gone.State = away
	e.d.Set(snap(5, a, gone), true)
	e.pool("away leaves", "pci-0000-00-00-0")
	back := clone(b)
	back.Incarnation = 2
	e.d.Set(snap(6, a, back), true)
	e.pool("return", "pci-0000-00-00-0", "pci-0000-01-00-0")
	e.attrIs("return", "pci-0000-01-00-0", "ready", true)
	renamed := back
	renamed.Name = "roce_b"
	e.d.Set(snap(7, a, renamed), true)
	e.pool("rename keeps the device's name", "pci-0000-00-00-0", "pci-0000-01-00-0")
	e.attrIs("renamed", "pci-0000-01-00-0", "name", "roce_b")
	removing := renamed
	removing.Removing = true
	e.d.Set(snap(8, a, removing), true)
	e.pool("removing leaves", "pci-0000-00-00-0")
	held := clone(a)
	held.State = removed
	e.d.Set(snap(9, held), true)
	e.pool("removed (still held) leaves")
	// rdmad out of reach: the slices stay as they were.
	e.d.Set(snap(10, a), true)
	e.pool("back", "pci-0000-00-00-0")
	e.d.Set(nil, false)
	time.Sleep(50 * time.Millisecond)
	e.pool("rdmad gone", "pci-0000-00-00-0")
}

// More than 128 devices take two slices of one pool generation; fewer
// again, and the second slice goes.  A failed write is tried again.
func TestSlicesSplitAndRetry(t *testing.T) {
	e := newEnv(t)
	var devs []*rdmadpb.Device
	var names []string
	for i := 0; i < 130; i++ {
		id := "guid:vf" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i)
		devs = append(devs, &rdmadpb.Device{Name: "mlx5_" + itoa(i), Identity: id,
			State: present, Ready: true, NumaNode: -1})
		names = append(names, dra.DeviceName(devs[i]))
	}
	e.api.FailNext(500)
	e.d.Set(snap(1, devs...), true)
	e.pool("130 devices", names...)
	if n := len(e.api.Slices()); n != 2 {
		t.Fatalf("%d slices for 130 devices", n)
	}
	e.d.Set(snap(2, devs[:3]...), true)
	e.pool("3 devices", names[:3]...)
	if n := len(e.api.Slices()); n != 1 {
		t.Fatalf("%d slices for 3 devices", n)
	}
	// A restarted driver goes on from the generation it finds.
	gen := func() float64 {
		sl := e.api.Slices()[dra.SliceName(node, driver, 0)]
		return sl["spec"].(map[string]interface{})["pool"].(map[string]interface{})["generation"].(float64)
	}
	before := gen()
	e.stop()
	e.start()
	e.d.Set(snap(3, devs[:2]...), true)
	e.pool("after restart", names[:2]...)
	if after := gen(); after <= before {
		t.Fatalf("generation %v after a restart, %v before", after, before)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

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
	if r.Error != "" || !reflect.DeepEqual(cdiIDs(r), []string{"rdmad.io/rdma=mlx5_0", "rdmad.io/rdma=mlx5_1"}) {
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
		!reflect.DeepEqual(rb.Claims["uid-two"].Devices[0].CdiDeviceIds, []string{"rdmad.io/rdma=mlx5_0"}) {
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
	st, err := healthv1alpha1.NewDRAResourceHealthClient(k.conn).NodeWatchResources(context.Background(), &healthv1alpha1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Devices) != 1 || m.Devices[0].Device.DeviceName != "pci-0000-00-00-0" ||
		m.Devices[0].Health != healthv1alpha1.HealthStatus_UNHEALTHY {
		t.Fatalf("health after restart: %v", m)
	}
	// A checkpoint that is not ours is set aside, not used.
	e.stop()
	path := filepath.Join(e.o.PluginDir, "checkpoint.json")
	os.WriteFile(path, []byte(`{"version":1,"claims":{"x":{}},"checksum":1}`), 0o600)
	e.start()
	if len(e.d.Prepared()) != 0 {
		t.Fatal("a bad checkpoint was used")
	}
	if _, err := os.Stat(path + ".bad"); err != nil {
		t.Fatal(err)
	}
}

// The health stream (both versions) says each change: unready, ready,
// removed while prepared, rdmad gone (Unknown).
func TestHealthEvents(t *testing.T) {
	e := newEnv(t)
	a, b := dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "Ethernet")
	e.d.Set(snap(1, a, b), true)
	k := e.register()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alpha, err := healthv1alpha1.NewDRAResourceHealthClient(k.conn).NodeWatchResources(ctx, &healthv1alpha1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	beta, err := healthv1beta1.NewDRAResourceHealthClient(k.conn).NodeWatchResources(ctx, &healthv1beta1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what string, want map[string]int32) {
		t.Helper()
		ma, err := alpha.Recv()
		if err != nil {
			t.Fatal(err)
		}
		mb, err := beta.Recv()
		if err != nil {
			t.Fatal(err)
		}
		ga, gb := map[string]int32{}, map[string]int32{}
		for _, d := range ma.Devices {
			if d.Device.PoolName != node || d.LastUpdatedTime == 0 {
				t.Fatalf("%s: %v", what, d)
			}
			ga[d.Device.DeviceName] = int32(d.Health)
		}
		for _, d := range mb.Devices {
			gb[d.Device.DeviceName] = int32(d.Health)
		}
		if !reflect.DeepEqual(ga, want) || !reflect.DeepEqual(gb, want) {
			t.Fatalf("%s: v1alpha1 %v, v1beta1 %v, want %v", what, ga, gb, want)
		}
	}
	const H, U, X = 1, 2, 0
	expect("start", map[string]int32{"pci-0000-00-00-0": H, "pci-0000-01-00-0": H})
	unready := clone(b)
	unready.Ready = false
	e.d.Set(snap(2, a, unready), true)
	expect("unready", map[string]int32{"pci-0000-00-00-0": H, "pci-0000-01-00-0": U})
	e.d.Set(snap(3, a, b), true)
	expect("ready", map[string]int32{"pci-0000-00-00-0": H, "pci-0000-01-00-0": H})
	if err := e.api.PutClaim("ns", "c", "uid-c", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-01-00-0"}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "uid-c", "c"); r.Error != "" {
		t.Fatal(r.Error)
	}
	e.d.Set(snap(4, a), true)
	expect("prepared device unplugged", map[string]int32{"pci-0000-00-00-0": H, "pci-0000-01-00-0": U})
	e.d.Set(nil, false)
	expect("rdmad gone", map[string]int32{"pci-0000-00-00-0": X, "pci-0000-01-00-0": X})
}

// The registration socket, taken away, is made again.
func TestRegistrationSocketComesBack(t *testing.T) {
	e := newEnv(t)
	k := e.register()
	os.Remove(filepath.Join(e.o.RegistryDir, driver+"-reg.sock"))
	time.Sleep(1500 * time.Millisecond)
	if k2 := e.register(); k2.info.Endpoint != k.info.Endpoint {
		t.Fatalf("endpoint %s, was %s", k2.info.Endpoint, k.info.Endpoint)
	}
}

// --select (rdmad-device-plugin's matchers) limits what the driver offers:
// the pool, the health list, and what a claim may be prepared with.
func TestSelectLimitsWhatIsOffered(t *testing.T) {
	sel, err := deviceplugin.ParseSelector("link_layer:Ethernet")
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
	if err := e.api.PutClaim("ns", "ib", "uid-ib", []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}}); err != nil {
		t.Fatal(err)
	}
	if r := k.prepare(t, "uid-ib", "ib"); !strings.Contains(r.Error, "not offered") {
		t.Fatalf("a device not selected: %v", r)
	}
	if _, err := deviceplugin.ParseSelector("speed:100"); err == nil {
		t.Fatal("a bad --select taken")
	}
}
