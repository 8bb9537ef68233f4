// SPDX-License-Identifier: MIT

package deviceplugin

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rdmad/rdmad/bindings/go/cdi"
	api "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/deviceplugin/v1beta1"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
)

// Plugin serves one resource's DevicePlugin service.  Set gives it each
// new state of rdmad; every ListAndWatch stream sends the new list at
// once when it differs from the last one sent.
type Plugin struct {
	api.UnimplementedDevicePluginServer
	cfg *Config
	res *Resource

	mu      sync.Mutex
	inv     *Inventory
	changed chan struct{} // closed, and replaced, on every new list
}

// NewPlugin serves res of cfg; it offers nothing until the first Set.
func NewPlugin(cfg *Config, res *Resource) *Plugin {
	return &Plugin{cfg: cfg, res: res, inv: res.Inventory(nil, false),
		changed: make(chan struct{})}
}

// ResourceName is the resource's full name.
func (p *Plugin) ResourceName() string {
	return p.cfg.FullName(p.res)
}

// Set takes rdmad's state s; connected false marks every unit unhealthy
// (rdmad out of reach) while keeping the list.
func (p *Plugin) Set(s *rdmad.Snapshot, connected bool) {
	inv := p.res.Inventory(s, connected)
	p.mu.Lock()
	defer p.mu.Unlock()
	if sameList(inv.List, p.inv.List) {
		p.inv = inv
		return
	}
	p.inv = inv
	close(p.changed)
	p.changed = make(chan struct{})
}

func sameList(a, b []*api.Device) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Health != b[i].Health ||
			numaOf(a[i]) != numaOf(b[i]) {
			return false
		}
	}
	return true
}

func numaOf(d *api.Device) int64 {
	if n := d.GetTopology().GetNodes(); len(n) > 0 {
		return n[0].GetID()
	}
	return -1
}

func (p *Plugin) current() (*Inventory, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inv, p.changed
}

// GetDevicePluginOptions: GetPreferredAllocation is there, no PreStart.
func (p *Plugin) GetDevicePluginOptions(context.Context, *api.Empty) (*api.DevicePluginOptions, error) {
	return &api.DevicePluginOptions{GetPreferredAllocationAvailable: true}, nil
}

// ListAndWatch sends the list now and each new one, until the kubelet
// hangs up or the plugin stops.
func (p *Plugin) ListAndWatch(_ *api.Empty, stream api.DevicePlugin_ListAndWatchServer) error {
	for {
		inv, changed := p.current()
		err := stream.Send(&api.ListAndWatchResponse{Devices: inv.List})
		if err != nil {
			return err
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// Allocate answers, for each container, with the CDI names of the devices
// behind the units asked for (each device's identity's name,
// rdmad.io/rdma=pci:0000:c1:00.0: the kubelet keeps the answer for the
// pod's life, and a kernel name may by then be another device's) and, unless configured off, their nodes as
// device specs and rdmad's socket as a mount.  A unit whose device is not
// present now (away, removed, unknown) fails the whole request, as the
// API asks, with the list already telling the kubelet.
func (p *Plugin) Allocate(_ context.Context, req *api.AllocateRequest) (*api.AllocateResponse, error) {
	inv, _ := p.current()
	resp := &api.AllocateResponse{}
	for _, creq := range req.GetContainerRequests() {
		cresp, err := p.allocateOne(inv, creq.GetDevicesIds())
		if err != nil {
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, cresp)
	}
	return resp, nil
}

func (p *Plugin) allocateOne(inv *Inventory, ids []string) (*api.ContainerAllocateResponse, error) {
	r := &api.ContainerAllocateResponse{}
	seen := map[string]bool{}
	nodes := map[string]bool{}
	for _, id := range ids {
		d := inv.Device(id)
		if d == nil || !cdi.Offered(d) {
			return nil, status.Errorf(codes.Unavailable,
				"%s: device %q is not present", p.ResourceName(), id)
		}
		if seen[d.GetName()] {
			continue
		}
		seen[d.GetName()] = true
		r.CdiDevices = append(r.CdiDevices,
			&api.CDIDevice{Name: cdi.StableName(d)})
		if !p.cfg.WantDeviceSpecs() {
			continue
		}
		for _, n := range cdi.Nodes(d, cdi.Options{}) {
			if !nodes[n] {
				nodes[n] = true
				r.Devices = append(r.Devices, &api.DeviceSpec{
					ContainerPath: n, HostPath: n,
					Permissions: "rw"})
			}
		}
	}
	if p.cfg.WantDeviceSpecs() && p.cfg.SocketMount != "" {
		r.Mounts = []*api.Mount{{ContainerPath: p.cfg.SocketMount,
			HostPath: p.cfg.SocketMount, ReadOnly: true}}
	}
	return r, nil
}

// GetPreferredAllocation prefers units of devices on one NUMA node: the
// node that holds the most of what must be included and has room for the
// rest, and there distinct devices before second slots of one device.
// Where no single node has room it takes what must be included, then the
// nodes with the most units first.
func (p *Plugin) GetPreferredAllocation(_ context.Context, req *api.PreferredAllocationRequest) (*api.PreferredAllocationResponse, error) {
	inv, _ := p.current()
	resp := &api.PreferredAllocationResponse{}
	for _, c := range req.GetContainerRequests() {
		ids, err := prefer(inv, c.GetAvailableDeviceIDs(),
			c.GetMustIncludeDeviceIDs(), int(c.GetAllocationSize()))
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		resp.ContainerResponses = append(resp.ContainerResponses,
			&api.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

func prefer(inv *Inventory, avail, must []string, size int) ([]string, error) {
	if size < len(must) || size > len(avail) {
		return nil, fmt.Errorf("allocation size %d: %d must be included, %d available",
			size, len(must), len(avail))
	}
	byNode := map[int32][]string{}
	mustOn := map[int32]int{}
	in := map[string]bool{}
	for _, id := range must {
		in[id] = true
		mustOn[inv.numa(id)]++
	}
	for _, id := range avail {
		if !in[id] {
			byNode[inv.numa(id)] = append(byNode[inv.numa(id)], id)
		}
	}
	nodes := make([]int32, 0, len(byNode)+len(mustOn))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	for n := range mustOn {
		if _, ok := byNode[n]; !ok {
			nodes = append(nodes, n)
		}
	}
	// One node with room for all: the one with the most of must, then
	// the most units, then the lowest number.  Else the biggest first.
	sort.Slice(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if mustOn[a] != mustOn[b] {
			return mustOn[a] > mustOn[b]
		}
		if len(byNode[a]) != len(byNode[b]) {
			return len(byNode[a]) > len(byNode[b])
		}
		return a < b
	})
	out := append([]string{}, must...)
	need := size - len(must)
	if len(mustOn) <= 1 {
		for _, n := range nodes {
			if len(byNode[n]) >= need && (len(mustOn) == 0 || mustOn[n] > 0) {
				return append(out, spread(inv, byNode[n], need)...), nil
			}
		}
	}
	for _, n := range nodes {
		take := need
		if take > len(byNode[n]) {
			take = len(byNode[n])
		}
		out = append(out, spread(inv, byNode[n], take)...)
		if need -= take; need == 0 {
			break
		}
	}
	return out, nil
}

// spread picks n of ids, one unit of each device before a second one.
func spread(inv *Inventory, ids []string, n int) []string {
	sorted := append([]string{}, ids...)
	sort.Strings(sorted)
	var out []string
	used := map[string]int{}
	for round := 0; len(out) < n; round++ {
		for _, id := range sorted {
			dev := inv.Device(id).GetName()
			if len(out) < n && used[dev] == round && !contains(out, id) {
				used[dev]++
				out = append(out, id)
			}
		}
	}
	return out
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
