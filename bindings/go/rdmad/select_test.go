// SPDX-License-Identifier: MIT

package rdmad

import (
	"reflect"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

func selDev(name string, numa int32, ll string) *rdmadpb.Device {
	pci := "0000:0" + string(rune('0'+numa)) + ":00.0"
	return &rdmadpb.Device{Name: name, Identity: "pci:" + pci, PciAddress: pci,
		Driver: "mlx5_core", State: rdmadpb.DeviceState_DEVICE_STATE_PRESENT,
		Ready: true, Ports: []*rdmadpb.Port{{Port: 1, LinkLayer: ll}}}
}

// A select expression takes what rdmad.conf's [alias] matchers take, plus
// alias: and name: patterns; "" takes every device; a word that is no
// matcher is refused.
func TestSelectMatchesLikeAliases(t *testing.T) {
	vf := selDev("mlx5_2", 0, "Ethernet")
	vf.SriovPf = "0000:01:00.0"
	vf.Aliases = []string{"roce0"}
	devs := []*rdmadpb.Device{selDev("mlx5_0", 0, "InfiniBand"),
		selDev("mlx5_1", 1, "Ethernet"), vf}
	for sel, want := range map[string][]string{
		"":                                {"mlx5_0", "mlx5_1", "mlx5_2"},
		"link_layer:Ethernet":             {"mlx5_1", "mlx5_2"},
		"link_layer:Ethernet pf":          {"mlx5_1"},
		"vf":                              {"mlx5_2"},
		"alias:roce*":                     {"mlx5_2"},
		"name:mlx5_[01] driver:mlx5_core": {"mlx5_0", "mlx5_1"},
		"pci:0000:00:00.0":                {"mlx5_0", "mlx5_2"},
		"id:pci:0000:01:00.0":             {"mlx5_1"},
	} {
		s, err := ParseSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, d := range devs {
			if s.Matches(d) {
				got = append(got, d.Name)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("select %q: %v, want %v", sel, got, want)
		}
	}
	for _, bad := range []string{"pci", "speed:100", "name:[x"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("select %q taken", bad)
		}
	}
}

// The two rules of what a Kubernetes program offers, one row a state:
// Allocatable (rdmad-dra's pool, a new claim or container) and Tracked
// (rdmad-device-plugin's list: what a holder may still have in hand).
func TestAllocatableAndTracked(t *testing.T) {
	const (
		present = rdmadpb.DeviceState_DEVICE_STATE_PRESENT
		away    = rdmadpb.DeviceState_DEVICE_STATE_AWAY
		removed = rdmadpb.DeviceState_DEVICE_STATE_REMOVED
	)
	for _, row := range []struct {
		what                 string
		state                rdmadpb.DeviceState
		ready, removing      bool
		allocatable, tracked bool
	}{
		{"present, ready", present, true, false, true, true},
		{"present, not ready", present, false, false, true, true},
		{"removing", present, false, true, false, true},
		{"away", away, false, false, false, true},
		{"removed, still held", removed, false, false, false, true},
		{"a state unknown here", rdmadpb.DeviceState(99), false, false, false, false},
	} {
		d := &rdmadpb.Device{State: row.state, Ready: row.ready, Removing: row.removing}
		if Allocatable(d) != row.allocatable || Tracked(d) != row.tracked {
			t.Errorf("%s: Allocatable %v Tracked %v, want %v %v", row.what,
				Allocatable(d), Tracked(d), row.allocatable, row.tracked)
		}
	}
}
