// SPDX-License-Identifier: MIT

package cdi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	cdiapi "github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"

	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

const (
	present = rdmadpb.DeviceState_DEVICE_STATE_PRESENT
	away    = rdmadpb.DeviceState_DEVICE_STATE_AWAY
	removed = rdmadpb.DeviceState_DEVICE_STATE_REMOVED
)

func dev(name, uverbs string, st rdmadpb.DeviceState, aliases ...string) *rdmadpb.Device {
	return &rdmadpb.Device{Name: name, Uverbs: uverbs, State: st,
		Aliases: aliases, MadNodes: []string{"umad" + uverbs[6:], "issm" + uverbs[6:]}}
}

func noCM(string) bool     { return false }
func withCM(p string) bool { return p == "/dev/infiniband/rdma_cm" }

// names lists a spec's CDI devices by qualified name, as a runtime would
// after reading the file.
func names(t *testing.T, dir string) []string {
	t.Helper()
	c, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		t.Fatalf("the CDI library refuses %s: %v", dir, err)
	}
	return c.ListDevices()
}

func TestSpecOffersPresentDevicesByNameAndAlias(t *testing.T) {
	removing := dev("mlx5_3", "uverbs3", present)
	removing.Removing = true
	s := &rdmad.Snapshot{Generation: 7, Devices: []*rdmadpb.Device{
		dev("mlx5_0", "uverbs0", present, "storage0", "bad alias", "mlx5_1"),
		dev("mlx5_1", "uverbs1", present),
		dev("mlx5_2", "uverbs2", away, "gone0"),
		removing,
		dev("mlx5_4", "uverbs4", removed),
		{Name: "mlx5_5", State: present}, // no uverbs node (yet)
	}}
	dir := t.TempDir()
	w := NewWriter(dir)
	if wrote, err := w.Write(Spec(s, Options{Exists: withCM})); err != nil || !wrote {
		t.Fatalf("Write: %v, %v", wrote, err)
	}
	want := []string{"rdmad.io/rdma=mlx5_0", "rdmad.io/rdma=mlx5_1",
		"rdmad.io/rdma=storage0"}
	if got := names(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("devices %v, want %v", got, want)
	}
	raw, err := cdiapi.ReadSpec(w.Path(), 0)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []string{}
	for _, n := range raw.GetDevice("storage0").ContainerEdits.DeviceNodes {
		nodes = append(nodes, n.Path)
	}
	wantNodes := []string{"/dev/infiniband/uverbs0", "/dev/infiniband/umad0",
		"/dev/infiniband/issm0", "/dev/infiniband/rdma_cm"}
	if !reflect.DeepEqual(nodes, wantNodes) {
		t.Fatalf("storage0's nodes %v, want %v", nodes, wantNodes)
	}
	if raw.Version != Version || raw.Kind != Kind {
		t.Fatalf("version %q kind %q", raw.Version, raw.Kind)
	}
	if fi, _ := os.Stat(w.Path()); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644 (rootless runtimes read it)", fi.Mode())
	}
}

func TestWriterWritesOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	w := NewWriter(dir)
	s := &rdmad.Snapshot{Devices: []*rdmadpb.Device{dev("rxe0", "uverbs0", present)}}
	if wrote, err := w.Write(Spec(s, Options{Exists: noCM})); !wrote || err != nil {
		t.Fatalf("first write: %v %v", wrote, err)
	}
	if wrote, _ := w.Write(Spec(s, Options{Exists: noCM})); wrote {
		t.Fatal("an unchanged spec was written again")
	}
	s2 := &rdmad.Snapshot{Devices: []*rdmadpb.Device{dev("rxe0", "uverbs0", away)}}
	if wrote, err := w.Write(Spec(s2, Options{Exists: noCM})); !wrote || err != nil {
		t.Fatalf("the device went away: %v %v", wrote, err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("an away device is offered: %v", got)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 1 {
		t.Fatalf("temporary files left: %v", left)
	}
	var raw map[string]interface{}
	data, _ := os.ReadFile(w.Path())
	if err := json.Unmarshal(data, &raw); err != nil || raw["devices"] == nil {
		t.Fatalf("an empty spec must still list devices ([]): %s", data)
	}
}

func TestSocketMount(t *testing.T) {
	s := &rdmad.Snapshot{Devices: []*rdmadpb.Device{dev("rxe1", "uverbs1", present)}}
	spec := Spec(s, Options{SocketDir: "/run/rdmad", Exists: noCM})
	m := spec.ContainerEdits.Mounts
	if len(m) != 1 || m[0].HostPath != "/run/rdmad" || m[0].ContainerPath != "/run/rdmad" {
		t.Fatalf("mounts %+v", m)
	}
	if err := Validate(spec, filepath.Join(t.TempDir(), FileName)); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidSpecIsNotWritten(t *testing.T) {
	dir := t.TempDir()
	w := NewWriter(dir)
	spec := Spec(&rdmad.Snapshot{Devices: []*rdmadpb.Device{dev("rxe0", "uverbs0", present)}}, Options{Exists: noCM})
	spec.Devices = append(spec.Devices, spec.Devices[0]) // a name twice
	if _, err := w.Write(spec); err == nil {
		t.Fatal("a spec naming a device twice was accepted")
	}
	if _, err := os.Stat(w.Path()); !os.IsNotExist(err) {
		t.Fatalf("an invalid spec reached the disk: %v", err)
	}
}

// A device's identity is one of its names in the node-wide spec, kept
// as a CDI name allows (or hashed where it cannot be one), and a
// claim's spec lists only devices present, by the claim's UID and pool
// name.
func TestIdentityAndClaimNames(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"pci:0000:c1:00.0", "pci:0000:c1:00.0"},
		{"pci:0000:c1:00.0/0002:c903:0000:0001", "pci:0000:c1:00.0_0002:c903:0000:0001"},
		{"", ""},
		{"/x/", ""}, // checked below: hashed
	} {
		got := IdentityName(&rdmadpb.Device{Identity: tc.id})
		if tc.id == "/x/" {
			if len(got) != 35 || got[:3] != "id-" {
				t.Errorf("IdentityName(%q) = %q, want id- and 32 hex digits", tc.id, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("IdentityName(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
	a := dev("mlx5_0", "uverbs0", present, "storage0")
	a.Identity = "pci:0000:c1:00.0"
	b := dev("mlx5_1", "uverbs1", away)
	b.Identity = "pci:0000:c2:00.0"
	dir := t.TempDir()
	if _, err := NewWriter(dir).Write(Spec(&rdmad.Snapshot{Devices: []*rdmadpb.Device{a, b}}, Options{Exists: noCM})); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, dir), []string{"rdmad.io/rdma=mlx5_0", "rdmad.io/rdma=pci:0000:c1:00.0",
		"rdmad.io/rdma=storage0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("node-wide names %v, want %v", got, want)
	}
	if StableName(a) != "rdmad.io/rdma=pci:0000:c1:00.0" {
		t.Fatalf("StableName %q", StableName(a))
	}
	cdir := t.TempDir()
	spec := ClaimSpec("7c1e-uid", []ClaimDevice{{Name: "pci-0000-c1-00-0", Dev: a},
		{Name: "pci-0000-c2-00-0", Dev: b}, {Name: "pci-0000-c3-00-0"}}, Options{Exists: noCM})
	if _, err := NewFileWriter(cdir, ClaimFile("7c1e-uid")).Write(spec); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, cdir), []string{ClaimName("7c1e-uid", "pci-0000-c1-00-0")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claim names %v, want %v", got, want)
	}
}
