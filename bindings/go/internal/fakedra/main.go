// SPDX-License-Identifier: MIT

// Command fake-dra is the scripted Kubernetes of rdmad-dra's integration
// tests and benchmark: the API server of internal/k8sfake (ResourceSlices
// checked against the published schema of resource.k8s.io/v1) and the
// kubelet's side of a DRA driver, speaking only through the code
// generated from the published protos: its plugin watcher finds the
// driver's registration socket in DIR/plugins_registry (inotify), asks GetInfo,
// answers NotifyRegistrationStatus, dials the endpoint and follows the
// health stream the registration offers, as the kubelet picks it (v1
// where listed, else v1alpha1, else none: k8sfake.PickHealthService).  At
// its start, as a kubelet, it deletes the node's ResourceSlices before it
// registers any plugin (and again at "restart-kubelet").  What happens is
// printed on stdout, one JSON object a line, "t" the CLOCK_MONOTONIC
// nanoseconds it happened at (a slice: when its write reached the server):
//
//	{"event":"ready","apiserver":URL,"serviceaccount":DIR,"registry":DIR}
//	{"event":"registered","info":{...},"t":N}
//	{"event":"pool","complete":B,"devices":{DEV:{"name":N,"ready":B,...}},"t":N,
//	 "method":"POST"|"PUT"|"DELETE","name":SLICE,"admin":B}   after each write
//	                     of a slice (admin: the test's, not the driver's)
//	{"event":"refused","why":TEXT}        a write the API server refused
//	{"event":"health","service":S,"devices":{DEV:"HEALTHY"|"UNHEALTHY"|"UNKNOWN"},
//	 "messages":{DEV:TEXT},"t":N}
//	{"event":"wiped","slices":N,"t":N}   the kubelet's start: the node's slices deleted
//	{"event":"prepare","uid":U,"error":E,"cdi":[...],
//	 "devices":[{"device":D,"pool":P,"requests":[R...],"cdi":[...]}]}
//	{"event":"unprepare","uid":U,"error":E}
//	{"event":"claim-status","namespace":NS,"name":N,"manager":M,
//	 "devices":[...],"t":N}   a claim's status.devices after an apply
//	                     the API server took (checked against the schema)
//	{"event":"error","cmd":C,"error":TEXT}
//
// Commands come on stdin, one JSON object a line:
//
//	{"cmd":"prepare","uid":U,"name":N,"devices":[DEV...],"requests":[R...]}
//	                     the claim, allocated those devices of this node's
//	                     pool (for requests R, "rdma" where not given; a
//	                     firstAvailable request's result is "req/sub"), is
//	                     stored in the API server, then prepared
//	{"cmd":"unprepare","uid":U,"name":N}
//	{"cmd":"restart-kubelet"}   as a kubelet that starts: wipe the node's
//	                     slices, then register every plugin found
//	{"cmd":"delete-slice","name":N}   as an admin: kubectl delete
//	{"cmd":"edit-slice","name":N}     as an admin: the slice's devices
//	                     emptied (kubectl edit)
//
//	fake-dra DIR NODE DRIVER
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	healthv1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra-health/v1"
	healthv1alpha1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra-health/v1alpha1"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
	pluginregistration "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/pluginregistration/v1"
)

func now() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// mono is @t on CLOCK_MONOTONIC: now, less the time since @t.
func mono(t time.Time) int64 {
	return now() - int64(time.Since(t))
}

type fake struct {
	api            *k8sfake.Server
	dir            string
	node, driver   string
	mu             sync.Mutex
	out            *json.Encoder
	plugin         drav1.DRAPluginClient
	conn           *grpc.ClientConn
	cancelWatching func()
}

func (f *fake) print(v map[string]interface{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Encode(v)
}

func (f *fake) fail(cmd string, err error) {
	f.print(map[string]interface{}{"event": "error", "cmd": cmd, "error": err.Error()})
}

// slices prints the pool after each write of a slice.
func (f *fake) slices() {
	refused := 0
	for w := range f.api.Writes {
		names, complete := f.api.PoolDevices(f.driver, f.node)
		devs := map[string]interface{}{}
		for _, n := range names {
			attrs := map[string]interface{}{}
			d := f.api.Device(f.driver, f.node, n)
			a, _ := d["attributes"].(map[string]interface{})
			for k, v := range a {
				for _, x := range v.(map[string]interface{}) {
					attrs[k] = x
				}
			}
			// Its taints, "KEY=VALUE:EFFECT" each (a key no
			// attribute has).
			if ts, _ := d["taints"].([]interface{}); len(ts) > 0 {
				var l []string
				for _, t := range ts {
					tm := t.(map[string]interface{})
					l = append(l, fmt.Sprintf("%v=%v:%v", tm["key"], tm["value"], tm["effect"]))
				}
				attrs["taints"] = l
			}
			devs[n] = attrs
		}
		f.print(map[string]interface{}{"event": "pool", "complete": complete,
			"devices": devs, "t": mono(w.At), "method": w.Method,
			"name": w.Name, "admin": w.Admin})
		if r := f.api.Refused(); len(r) > refused {
			for _, why := range r[refused:] {
				f.print(map[string]interface{}{"event": "refused", "why": why})
			}
			refused = len(r)
		}
	}
}

// statuses prints each apply of a claim's status the server stored.
func (f *fake) statuses() {
	for w := range f.api.StatusWrites {
		f.print(map[string]interface{}{"event": "claim-status", "namespace": w.Namespace,
			"name": w.Name, "manager": w.Manager, "devices": w.Devices, "t": mono(w.At)})
	}
}

func dial(path string) (*grpc.ClientConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return grpc.DialContext(ctx, path, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", a)
		}))
}

// watch is the plugin watcher: as the kubelet's (pluginwatcher, on
// inotify), each socket created in plugins_registry is registered, and
// those there at start.
func (f *fake) watch(w *fsnotify.Watcher) {
	f.start()
	for ev := range w.Events {
		if ev.Op&fsnotify.Create != 0 && strings.HasSuffix(ev.Name, ".sock") {
			go f.registerLogged(ev.Name)
		}
	}
}

func (f *fake) registerLogged(sock string) {
	if err := f.register(sock); err != nil {
		f.fail("register", err)
	}
}

func (f *fake) register(sock string) error {
	c, err := dial(sock)
	if err != nil {
		return err
	}
	defer c.Close()
	reg := pluginregistration.NewRegistrationClient(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := reg.GetInfo(ctx, &pluginregistration.InfoRequest{})
	if err != nil {
		return err
	}
	ok := info.Type == "DRAPlugin" && info.Name == f.driver
	var why string
	if !ok {
		why = fmt.Sprintf("type %q name %q", info.Type, info.Name)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &pluginregistration.RegistrationStatus{
		PluginRegistered: ok, Error: why}); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("refused: %s", why)
	}
	conn, err := dial(info.Endpoint)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if f.conn != nil {
		f.conn.Close()
		f.cancelWatching()
	}
	f.conn, f.plugin = conn, drav1.NewDRAPluginClient(conn)
	hctx, hcancel := context.WithCancel(context.Background())
	f.cancelWatching = hcancel
	f.mu.Unlock()
	f.print(map[string]interface{}{"event": "registered", "t": now(),
		"info": map[string]interface{}{"type": info.Type, "name": info.Name,
			"endpoint": info.Endpoint, "versions": info.SupportedVersions}})
	go f.health(hctx, conn, k8sfake.PickHealthService(info.SupportedVersions))
	return nil
}

// health follows the driver's health stream of @service, again while
// it ends (a driver restarting ends it), as the kubelet does; none where
// @service is "" (the kubelet opens none).
func (f *fake) health(ctx context.Context, conn *grpc.ClientConn, service string) {
	for service != "" && ctx.Err() == nil {
		f.watchHealth(ctx, conn, service)
		time.Sleep(100 * time.Millisecond)
	}
}

// watchHealth prints each message of one health stream until it ends;
// v1alpha1's messages are v1's on the wire.
func (f *fake) watchHealth(ctx context.Context, conn *grpc.ClientConn, service string) error {
	var recv func() (*healthv1.NodeWatchResourcesResponse, error)
	if service == k8sfake.HealthV1 {
		st, err := healthv1.NewDRAResourceHealthClient(conn).NodeWatchResources(ctx, &healthv1.NodeWatchResourcesRequest{})
		if err != nil {
			return err
		}
		recv = st.Recv
	} else {
		st, err := healthv1alpha1.NewDRAResourceHealthClient(conn).NodeWatchResources(ctx, &healthv1alpha1.NodeWatchResourcesRequest{})
		if err != nil {
			return err
		}
		recv = func() (*healthv1.NodeWatchResourcesResponse, error) {
			m, err := st.Recv()
			if err != nil {
				return nil, err
			}
			b, err := proto.Marshal(m)
			if err != nil {
				return nil, err
			}
			out := &healthv1.NodeWatchResourcesResponse{}
			return out, proto.Unmarshal(b, out)
		}
	}
	for {
		m, err := recv()
		if err != nil {
			return err
		}
		devs, msgs := map[string]string{}, map[string]string{}
		for _, d := range m.Devices {
			devs[d.Device.DeviceName] = d.Health.String()
			msgs[d.Device.DeviceName] = d.Message
		}
		f.print(map[string]interface{}{"event": "health", "service": service,
			"devices": devs, "messages": msgs, "t": now()})
	}
}

// start is a kubelet's start: the node's slices deleted
// (wipeResourceSlices), then every plugin in the registry registered.
func (f *fake) start() {
	n := f.api.Wipe(f.node)
	f.print(map[string]interface{}{"event": "wiped", "slices": n, "t": now()})
	socks, _ := filepath.Glob(filepath.Join(f.dir, "plugins_registry", "*.sock"))
	for _, s := range socks {
		go f.registerLogged(s)
	}
}

type command struct {
	Cmd      string   `json:"cmd"`
	UID      string   `json:"uid"`
	Name     string   `json:"name"`
	Devices  []string `json:"devices"`
	Requests []string `json:"requests"`
}

func (f *fake) do(c command) {
	switch c.Cmd {
	case "restart-kubelet":
		f.start()
		return
	case "delete-slice":
		if !f.api.Delete(c.Name) {
			f.fail(c.Cmd, fmt.Errorf("no slice %q", c.Name))
		}
		return
	case "edit-slice":
		ok, err := f.api.Edit(c.Name, func(spec map[string]interface{}) {
			spec["devices"] = []interface{}{}
		})
		if !ok {
			err = fmt.Errorf("no slice %q", c.Name)
		}
		if err != nil {
			f.fail(c.Cmd, err)
		}
		return
	}
	f.mu.Lock()
	p := f.plugin
	f.mu.Unlock()
	if p == nil {
		f.fail(c.Cmd, fmt.Errorf("no driver registered"))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	claim := []*drav1.Claim{{Namespace: "default", Uid: c.UID, Name: c.Name}}
	switch c.Cmd {
	case "prepare":
		var rs []k8sfake.Result
		for i, d := range c.Devices {
			req := "rdma"
			if i < len(c.Requests) {
				req = c.Requests[i]
			}
			rs = append(rs, k8sfake.Result{Request: req, Driver: f.driver, Pool: f.node, Device: d})
		}
		if err := f.api.PutClaim("default", c.Name, c.UID, rs); err != nil {
			f.fail(c.Cmd, err)
			return
		}
		r, err := p.NodePrepareResources(ctx, &drav1.NodePrepareResourcesRequest{Claims: claim})
		if err != nil {
			f.fail(c.Cmd, err)
			return
		}
		cr := r.Claims[c.UID]
		cdi := []string{}
		devs := []interface{}{}
		for _, d := range cr.GetDevices() {
			cdi = append(cdi, d.CdiDeviceIds...)
			devs = append(devs, map[string]interface{}{"device": d.DeviceName,
				"pool": d.PoolName, "requests": d.RequestNames, "cdi": d.CdiDeviceIds})
		}
		f.print(map[string]interface{}{"event": "prepare", "uid": c.UID,
			"error": cr.GetError(), "cdi": cdi, "devices": devs})
	case "unprepare":
		r, err := p.NodeUnprepareResources(ctx, &drav1.NodeUnprepareResourcesRequest{Claims: claim})
		if err != nil {
			f.fail(c.Cmd, err)
			return
		}
		f.print(map[string]interface{}{"event": "unprepare", "uid": c.UID,
			"error": r.Claims[c.UID].GetError()})
	default:
		f.fail(c.Cmd, fmt.Errorf("unknown command"))
	}
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: fake-dra DIR NODE DRIVER")
		os.Exit(2)
	}
	schema, err := k8sfake.LoadSchema("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-dra:", err)
		os.Exit(1)
	}
	f := &fake{api: k8sfake.New(schema), dir: os.Args[1], node: os.Args[2],
		driver: os.Args[3], out: json.NewEncoder(os.Stdout)}
	f.api.PutNode(f.node, "uid-"+f.node)
	sa := filepath.Join(f.dir, "serviceaccount")
	reg := filepath.Join(f.dir, "plugins_registry")
	if err := f.api.ServiceAccount(sa); err == nil {
		err = os.MkdirAll(reg, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-dra:", err)
		os.Exit(1)
	}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(reg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-dra:", err)
		os.Exit(1)
	}
	go f.slices()
	go f.statuses()
	go f.watch(w)
	f.print(map[string]interface{}{"event": "ready", "apiserver": f.api.URL,
		"serviceaccount": sa, "registry": reg})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			f.fail("parse", err)
			continue
		}
		f.do(c)
	}
}
