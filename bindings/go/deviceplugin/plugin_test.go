// SPDX-License-Identifier: MIT

package deviceplugin

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/deviceplugin/v1beta1"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

const (
	present = rdmadpb.DeviceState_DEVICE_STATE_PRESENT
	away    = rdmadpb.DeviceState_DEVICE_STATE_AWAY
	removed = rdmadpb.DeviceState_DEVICE_STATE_REMOVED
)

func dev(name string, numa int32, ll string, ready bool) *rdmadpb.Device {
	return &rdmadpb.Device{Name: name, Identity: "pci:0000:0" + name[len(name)-1:] + ":00.0",
		Uverbs: "uverbs" + name[len(name)-1:], State: present, Ready: ready,
		NumaNode: numa, Driver: "mlx5_core",
		Ports: []*rdmadpb.Port{{Port: 1, LinkLayer: ll}}}
}

func config(t *testing.T, js string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigErrorsSayWhere(t *testing.T) {
	for js, want := range map[string]string{
		`{}`:                             "no resources",
		`{"resources":[{"name":"Hca"}]}`: `"Hca": name`,
		`{"resources":[{"name":"a","mode":"shared"}]}`:              "slots",
		`{"resources":[{"name":"a","select":"pci"}]}`:               `"pci" is not a matcher`,
		`{"resources":[{"name":"a","select":"name:[x"}]}`:           "syntax error",
		`{"resources":[{"name":"a"},{"name":"a"}]}`:                 "twice",
		`{"resources":[{"name":"a"}],"typo":1}`:                     "unknown field",
		`{"resources":[{"name":"a","mode":"lent"}]}`:                `mode "lent"`,
		`{"resources":[{"name":"a"}],"resourcePrefix":"A B"}`:       "resourcePrefix",
		`{"resources":[{"name":"a","mode":"exclusive","slots":4}]}`: "slots in exclusive",
	} {
		_, err := ParseConfig([]byte(js))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", js, err, want)
		}
	}
}

func TestInventoryHealth(t *testing.T) {
	c := config(t, `{"resources":[{"name":"hca"}]}`)
	unready := dev("mlx5_1", 0, "InfiniBand", false)
	gone := dev("mlx5_2", 0, "InfiniBand", true)
	gone.State = away
	removing := dev("mlx5_3", 0, "InfiniBand", true)
	removing.Removing = true
	dead := dev("mlx5_4", 0, "InfiniBand", true)
	dead.State = removed
	s := &rdmad.Snapshot{Devices: []*rdmadpb.Device{
		dev("mlx5_0", 1, "InfiniBand", true), unready, gone, removing, dead}}
	health := func(connected bool) map[string]string {
		m := map[string]string{}
		for _, d := range c.Resources[0].Inventory(s, connected).List {
			m[d.ID] = d.Health
		}
		return m
	}
	want := map[string]string{
		"pci_0000_00_00.0": api.Healthy, "pci_0000_01_00.0": api.Unhealthy,
		"pci_0000_02_00.0": api.Unhealthy, "pci_0000_03_00.0": api.Unhealthy,
		"pci_0000_04_00.0": api.Unhealthy}
	if got := health(true); !reflect.DeepEqual(got, want) {
		t.Fatalf("connected: %v, want %v", got, want)
	}
	for id, h := range health(false) {
		if h != api.Unhealthy {
			t.Fatalf("rdmad out of reach, yet %s is %s", id, h)
		}
	}
	inv := c.Resources[0].Inventory(s, true)
	if n := inv.List[0].GetTopology().GetNodes(); len(n) != 1 || n[0].ID != 1 {
		t.Fatalf("topology %v, want NUMA node 1", n)
	}
}

// The kubelet's device manager shows a device that the plugin no longer
// lists as Healthy in pod.status...allocatedResourcesStatus (its
// UpdateAllocatedResourcesStatus starts from Healthy and takes the
// plugin's health only for a device still listed).  So a device being
// removed is listed Unhealthy while anyone holds it: removing, then
// removed and still held (rdmad keeps such a device in its state), and
// dropped only when rdmad drops it (released).  A new life of the same
// identity beside the held one is the one listed.
func TestRemovalUnhealthyUntilReleased(t *testing.T) {
	c := config(t, `{"resources":[{"name":"hca"}]}`)
	const id = "pci_0000_00_00.0"
	list := func(devs ...*rdmadpb.Device) map[string]string {
		m := map[string]string{}
		for _, d := range c.Resources[0].Inventory(&rdmad.Snapshot{Devices: devs}, true).List {
			m[d.ID] = d.Health
		}
		return m
	}
	d := dev("mlx5_0", 0, "InfiniBand", true)
	removing := proto.Clone(d).(*rdmadpb.Device)
	removing.Removing = true
	held := proto.Clone(d).(*rdmadpb.Device)
	held.State = removed
	held.HolderCount = 1
	back := dev("mlx5_0", 0, "InfiniBand", true)
	back.Incarnation = 2
	for _, step := range []struct {
		what string
		devs []*rdmadpb.Device
		want map[string]string
	}{
		{"present", []*rdmadpb.Device{d}, map[string]string{id: api.Healthy}},
		{"removing", []*rdmadpb.Device{removing}, map[string]string{id: api.Unhealthy}},
		{"removed, still held", []*rdmadpb.Device{held}, map[string]string{id: api.Unhealthy}},
		{"back while the old life is held", []*rdmadpb.Device{held, back}, map[string]string{id: api.Healthy}},
		{"released", nil, map[string]string{}},
	} {
		if got := list(step.devs...); !reflect.DeepEqual(got, step.want) {
			t.Fatalf("%s: %v, want %v", step.what, got, step.want)
		}
	}
}

func TestDeviceIDs(t *testing.T) {
	d := &rdmadpb.Device{Name: "rxe0", Identity: "guid:0011:2233:4455:6677/netdev:dummy0"}
	if got := DeviceID(d, maxID); got != "guid_0011_2233_4455_6677_netdev_dummy0" {
		t.Fatal(got)
	}
	d.Identity = strings.Repeat("x", 80)
	if got := DeviceID(d, maxID); len(got) != maxID || !strings.HasPrefix(got, "id-") {
		t.Fatalf("long identity: %q", got)
	}
	r := Resource{Name: "s", Mode: Shared, Slots: 100}
	ids := r.unitIDs(d)
	if len(ids) != 100 || len(ids[99]) > maxID || !strings.HasSuffix(ids[99], "-99") {
		t.Fatalf("shared IDs: %d, last %q", len(ids), ids[99])
	}
}

func TestPreferredAllocationKeepsOneNUMANode(t *testing.T) {
	c := config(t, `{"resources":[{"name":"hca","mode":"shared","slots":2}]}`)
	s := &rdmad.Snapshot{Devices: []*rdmadpb.Device{
		dev("mlx5_0", 0, "InfiniBand", true), dev("mlx5_1", 1, "InfiniBand", true),
		dev("mlx5_2", 1, "InfiniBand", true), dev("mlx5_3", 0, "InfiniBand", true)}}
	p := NewPlugin(c, &c.Resources[0])
	p.Set(s, true)
	var all []string
	for _, d := range p.inv.List {
		all = append(all, d.ID)
	}
	ask := func(must []string, size int32) []string {
		r, err := p.GetPreferredAllocation(context.Background(), &api.PreferredAllocationRequest{
			ContainerRequests: []*api.ContainerPreferredAllocationRequest{{
				AvailableDeviceIDs: all, MustIncludeDeviceIDs: must, AllocationSize: size}}})
		if err != nil {
			t.Fatal(err)
		}
		return r.ContainerResponses[0].DeviceIDs
	}
	numa := func(ids []string) map[int32]bool {
		m := map[int32]bool{}
		for _, id := range ids {
			m[p.inv.numa(id)] = true
		}
		return m
	}
	// Two units: two devices of one node, not two slots of one device.
	got := ask(nil, 2)
	if len(numa(got)) != 1 || p.inv.Device(got[0]) == p.inv.Device(got[1]) {
		t.Fatalf("size 2: %v", got)
	}
	// A unit of mlx5_1 must be in: the rest from node 1.
	must := []string{"pci_0000_01_00.0-0"}
	got = ask(must, 3)
	if got[0] != must[0] || !reflect.DeepEqual(numa(got), map[int32]bool{1: true}) {
		t.Fatalf("size 3 with mlx5_1: %v", got)
	}
	// Five: no node has room; every unit of node 0 or 1 first, then more.
	if got = ask(nil, 5); len(got) != 5 {
		t.Fatalf("size 5: %v", got)
	}
	if _, err := p.GetPreferredAllocation(context.Background(), &api.PreferredAllocationRequest{
		ContainerRequests: []*api.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: all[:1], AllocationSize: 2}}}); err == nil {
		t.Fatal("more asked than available, and no error")
	}
}

// By default Allocate answers the identity-bound CDI name alone: what
// the kubelet keeps names no kernel node.
func TestAllocateNamesNoKernelNode(t *testing.T) {
	c := config(t, `{"resources":[{"name":"hca"}],"socketMount":"/run/rdmad"}`)
	p := NewPlugin(c, &c.Resources[0])
	p.Set(&rdmad.Snapshot{Devices: []*rdmadpb.Device{
		dev("mlx5_0", 0, "InfiniBand", true)}}, true)
	r, err := p.Allocate(context.Background(), &api.AllocateRequest{
		ContainerRequests: []*api.ContainerAllocateRequest{{
			DevicesIds: []string{"pci_0000_00_00.0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	cr := r.ContainerResponses[0]
	if len(cr.CdiDevices) != 1 || len(cr.Devices) != 0 || len(cr.Mounts) != 0 {
		t.Fatalf("CDI %v, device specs %v, mounts %v", cr.CdiDevices,
			cr.Devices, cr.Mounts)
	}
}

func TestAllocate(t *testing.T) {
	c := config(t, `{"resources":[{"name":"hca","mode":"shared","slots":2}],"socketMount":"/run/rdmad","deviceSpecs":true}`)
	d := dev("mlx5_0", 0, "InfiniBand", true)
	d.MadNodes = []string{"umad0", "issm0"}
	gone := dev("mlx5_1", 0, "InfiniBand", true)
	gone.State = away
	p := NewPlugin(c, &c.Resources[0])
	p.Set(&rdmad.Snapshot{Devices: []*rdmadpb.Device{d, gone}}, true)
	r, err := p.Allocate(context.Background(), &api.AllocateRequest{
		ContainerRequests: []*api.ContainerAllocateRequest{{
			DevicesIds: []string{"pci_0000_00_00.0-0", "pci_0000_00_00.0-1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	cr := r.ContainerResponses[0]
	// Named by identity: the kubelet keeps the answer, and mlx5_0 may
	// be another device's name by the time a container restarts.
	if len(cr.CdiDevices) != 1 || cr.CdiDevices[0].Name != "rdmad.io/rdma=pci:0000:00:00.0" {
		t.Fatalf("CDI devices %v", cr.CdiDevices)
	}
	var nodes []string
	for _, n := range cr.Devices {
		nodes = append(nodes, n.HostPath+":"+n.Permissions)
	}
	if len(nodes) < 3 || nodes[0] != "/dev/infiniband/uverbs0:rw" ||
		nodes[1] != "/dev/infiniband/umad0:rw" || nodes[2] != "/dev/infiniband/issm0:rw" {
		t.Fatalf("device specs %v", nodes)
	}
	if len(cr.Mounts) != 1 || !cr.Mounts[0].ReadOnly || cr.Mounts[0].HostPath != "/run/rdmad" {
		t.Fatalf("mounts %v", cr.Mounts)
	}
	if _, err := p.Allocate(context.Background(), &api.AllocateRequest{
		ContainerRequests: []*api.ContainerAllocateRequest{{
			DevicesIds: []string{"pci_0000_01_00.0-0"}}}}); err == nil ||
		!strings.Contains(err.Error(), "not present") {
		t.Fatalf("an away device was allocated: %v", err)
	}
}

// A configuration in which rdmad's socket reaches no container through
// the plugin (socketMount, but neither cdiSpecDir nor deviceSpecs) is
// warned about, saying whether rdmad-cdi's spec has the mount; the
// combinations that mount it themselves are not.
func TestSocketWarning(t *testing.T) {
	for _, c := range []struct{ conf, want string }{
		{`{"resources":[{"name":"hca"}]}`, ""},
		{`{"resources":[{"name":"hca"}],"socketMount":"/run/rdmad","cdiSpecDir":"/var/run/cdi"}`, ""},
		{`{"resources":[{"name":"hca"}],"socketMount":"/run/rdmad","deviceSpecs":true}`, ""},
		{`{"resources":[{"name":"hca"}],"socketMount":"/run/rdmad"}`, "no rdmad.io-rdma.json found"},
	} {
		if got := config(t, c.conf).SocketWarning(t.TempDir()); c.want == "" && got != "" ||
			!strings.Contains(got, c.want) {
			t.Errorf("%s: warning %q, want %q", c.conf, got, c.want)
		}
	}
	c := config(t, `{"resources":[{"name":"hca"}],"socketMount":"/run/rdmad"}`)
	dir := t.TempDir()
	spec := filepath.Join(dir, "rdmad.io-rdma.json")
	os.WriteFile(spec, []byte(`{"cdiVersion":"0.5.0","kind":"rdmad.io/rdma","devices":[]}`), 0o644)
	if w := c.SocketWarning(dir); !strings.Contains(w, "has no such mount, so no container gets the socket") {
		t.Errorf("rdmad-cdi's spec without the mount: %q", w)
	}
	os.WriteFile(spec, []byte(`{"cdiVersion":"0.5.0","kind":"rdmad.io/rdma","devices":[],
		"containerEdits":{"mounts":[{"hostPath":"/run/rdmad","containerPath":"/run/rdmad"}]}}`), 0o644)
	if w := c.SocketWarning(dir); !strings.Contains(w, "has it") {
		t.Errorf("rdmad-cdi's spec with the mount: %q", w)
	}
}
