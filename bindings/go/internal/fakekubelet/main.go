// SPDX-License-Identifier: MIT

// Command fake-kubelet is the scripted kubelet of rdmad's tests and
// benchmarks: the kubelet's side of the device plugin API v1beta1, as the
// kubelet's device manager speaks it, on a directory of the test's.  It
// serves Registration on DIR/kubelet.sock; for each plugin that registers
// it dials the plugin's endpoint, asks GetDevicePluginOptions and follows
// ListAndWatch.  What happens is printed on stdout, one JSON object a
// line, with "t" the CLOCK_MONOTONIC nanoseconds it happened at (the
// clock of Python's time.monotonic_ns(), so a test times a device event
// against the list it caused):
//
//	{"event":"ready","socket":PATH}
//	{"event":"register","resource":R,"endpoint":E,"version":V,"preferred":B,"t":N}
//	{"event":"list","resource":R,"devices":[{"id":I,"health":H,"numa":[N]}],"t":N}
//	{"event":"allocate","resource":R,"response":{...}}  (protojson)
//	{"event":"preferred","resource":R,"ids":[...]}
//	{"event":"error","cmd":C,"error":TEXT}
//	{"event":"restarted","t":N}
//
// Commands come on stdin, one JSON object a line:
//
//	{"cmd":"allocate","resource":R,"ids":[...]}
//	{"cmd":"preferred","resource":R,"available":[...],"must":[...],"size":N}
//	{"cmd":"restart"}   as a restarting kubelet: the Registration server
//	                    stops, every socket in DIR is removed, the plugins'
//	                    streams end, and kubelet.sock is served anew
//	{"cmd":"restart","stall":S}  and the new kubelet answers each Register
//	                    S seconds late (it follows the plugin at once, as
//	                    the kubelet does)
//
//	fake-kubelet DIR
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	api "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/deviceplugin/v1beta1"
)

type kubelet struct {
	api.UnimplementedRegistrationServer
	dir string

	mu      sync.Mutex
	out     *json.Encoder
	server  *grpc.Server
	plugins map[string]*grpc.ClientConn // by resource
	epoch   int                         // restarts so far
	stall   time.Duration               // how late Register answers
}

func now() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func (k *kubelet) print(v map[string]interface{}) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.out.Encode(v)
}

func (k *kubelet) Register(_ context.Context, r *api.RegisterRequest) (*api.Empty, error) {
	k.print(map[string]interface{}{"event": "register",
		"resource": r.GetResourceName(), "endpoint": r.GetEndpoint(),
		"version":   r.GetVersion(),
		"preferred": r.GetOptions().GetGetPreferredAllocationAvailable(),
		"t":         now()})
	k.mu.Lock()
	epoch, stall := k.epoch, k.stall
	k.mu.Unlock()
	go k.follow(r.GetResourceName(), filepath.Join(k.dir, r.GetEndpoint()), epoch)
	time.Sleep(stall)
	return &api.Empty{}, nil
}

// follow dials a plugin and prints its lists until the stream ends; one
// that a restart overtook ends silently, as its registration is void.
func (k *kubelet) follow(resource, path string, epoch int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	conn, err := grpc.DialContext(ctx, path, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", a)
		}))
	cancel()
	if err != nil {
		k.fail("dial "+resource, err)
		return
	}
	k.mu.Lock()
	if k.epoch != epoch {
		k.mu.Unlock()
		conn.Close()
		return
	}
	if old := k.plugins[resource]; old != nil {
		old.Close()
	}
	k.plugins[resource] = conn
	k.mu.Unlock()
	c := api.NewDevicePluginClient(conn)
	if _, err := c.GetDevicePluginOptions(context.Background(), &api.Empty{}); err != nil {
		k.failIn(epoch, "options "+resource, err)
		return
	}
	stream, err := c.ListAndWatch(context.Background(), &api.Empty{})
	if err != nil {
		k.failIn(epoch, "watch "+resource, err)
		return
	}
	for {
		r, err := stream.Recv()
		if err != nil {
			return // the plugin or this kubelet went away
		}
		t := now()
		devs := []map[string]interface{}{}
		for _, d := range r.GetDevices() {
			numa := []int64{}
			for _, n := range d.GetTopology().GetNodes() {
				numa = append(numa, n.GetID())
			}
			devs = append(devs, map[string]interface{}{"id": d.GetID(),
				"health": d.GetHealth(), "numa": numa})
		}
		k.print(map[string]interface{}{"event": "list",
			"resource": resource, "devices": devs, "t": t})
	}
}

// failIn is fail for the work of @epoch: nothing once a restart came.
func (k *kubelet) failIn(epoch int, cmd string, err error) {
	k.mu.Lock()
	stale := k.epoch != epoch
	k.mu.Unlock()
	if !stale {
		k.fail(cmd, err)
	}
}

// fail reports an error, but not one of a connection this kubelet closed
// itself (a restart).
func (k *kubelet) fail(cmd string, err error) {
	if status.Code(err) == codes.Canceled {
		return
	}
	k.print(map[string]interface{}{"event": "error", "cmd": cmd,
		"error": err.Error()})
}

func (k *kubelet) serve() error {
	l, err := net.Listen("unix", filepath.Join(k.dir, "kubelet.sock"))
	if err != nil {
		return err
	}
	k.server = grpc.NewServer()
	api.RegisterRegistrationServer(k.server, k)
	go k.server.Serve(l)
	return nil
}

// restart is what a kubelet's restart does to the directory.
func (k *kubelet) restart(stall time.Duration) error {
	k.server.Stop()
	k.mu.Lock()
	k.epoch++
	k.stall = stall
	for r, c := range k.plugins {
		c.Close()
		delete(k.plugins, r)
	}
	k.mu.Unlock()
	names, _ := filepath.Glob(filepath.Join(k.dir, "*"))
	for _, n := range names {
		os.Remove(n)
	}
	if err := k.serve(); err != nil {
		return err
	}
	k.print(map[string]interface{}{"event": "restarted", "t": now()})
	return nil
}

type command struct {
	Cmd       string   `json:"cmd"`
	Resource  string   `json:"resource"`
	IDs       []string `json:"ids"`
	Available []string `json:"available"`
	Must      []string `json:"must"`
	Size      int32    `json:"size"`
	Stall     float64  `json:"stall"`
}

func (k *kubelet) client(resource string) api.DevicePluginClient {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.plugins[resource]; c != nil {
		return api.NewDevicePluginClient(c)
	}
	return nil
}

func (k *kubelet) do(c command) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c.Cmd == "restart" {
		if err := k.restart(time.Duration(c.Stall * float64(time.Second))); err != nil {
			k.fail(c.Cmd, err)
		}
		return
	}
	p := k.client(c.Resource)
	if p == nil {
		k.fail(c.Cmd, fmt.Errorf("no plugin registered for %q", c.Resource))
		return
	}
	switch c.Cmd {
	case "allocate":
		r, err := p.Allocate(ctx, &api.AllocateRequest{ContainerRequests: []*api.ContainerAllocateRequest{{DevicesIds: c.IDs}}})
		if err != nil {
			k.fail(c.Cmd, err)
			return
		}
		raw, _ := protojson.Marshal(r)
		k.print(map[string]interface{}{"event": "allocate",
			"resource": c.Resource, "response": json.RawMessage(raw)})
	case "preferred":
		r, err := p.GetPreferredAllocation(ctx, &api.PreferredAllocationRequest{
			ContainerRequests: []*api.ContainerPreferredAllocationRequest{{
				AvailableDeviceIDs: c.Available, MustIncludeDeviceIDs: c.Must,
				AllocationSize: c.Size}}})
		if err != nil {
			k.fail(c.Cmd, err)
			return
		}
		ids := r.GetContainerResponses()[0].GetDeviceIDs()
		if ids == nil {
			ids = []string{}
		}
		k.print(map[string]interface{}{"event": "preferred",
			"resource": c.Resource, "ids": ids})
	default:
		k.fail(c.Cmd, fmt.Errorf("unknown command"))
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fake-kubelet DIR")
		os.Exit(2)
	}
	k := &kubelet{dir: os.Args[1], out: json.NewEncoder(os.Stdout),
		plugins: map[string]*grpc.ClientConn{}}
	if err := k.serve(); err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
		os.Exit(1)
	}
	k.print(map[string]interface{}{"event": "ready",
		"socket": filepath.Join(k.dir, "kubelet.sock")})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			k.fail("parse", err)
			continue
		}
		k.do(c)
	}
}
