// SPDX-License-Identifier: MIT

package dra

// What the pool says of each device besides its attributes: how it is
// shared (Options.Slots: allowMultipleAllocations with the consumable
// capacity "slots", the device plugin's slots) and whether it is sick
// (Options.TaintEffect: a taint while no port of it is up).  And what
// the driver checks of an allocation before it prepares it: no device
// given past its slots, an exclusive device given to one claim at a
// time, an admin claim counted as neither.

import (
	"fmt"
	"regexp"
	"strconv"

	resourceapi "github.com/rdmad/rdmad/bindings/go/internal/api/resource/v1"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// CapacitySlots is the name of a shared device's consumable capacity:
// how many claims may hold it at once (the device plugin's slots).
const CapacitySlots = "slots"

// TaintPortDown is the key of the taint on a device none of whose ports
// is up: its value is why (the first port's state, "DOWN", "INIT",
// "POLLING"..., or "netdev-down" where the port is ACTIVE and its net
// device down).
const TaintPortDown = "rdmad.io/port-down"

// labelValue is a Kubernetes label value (a taint's value).
var labelValue = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$`)

// Taint effects (DeviceTaint.effect); TaintOff publishes no taint.
const (
	TaintNoSchedule = "NoSchedule"
	TaintNoExecute  = "NoExecute"
	TaintNone       = "None"
	TaintOff        = "off"
)

// ValidTaintEffect says why @e is no Options.TaintEffect, nil where it
// is one ("" is NoSchedule).
func ValidTaintEffect(e string) error {
	switch e {
	case "", TaintNoSchedule, TaintNoExecute, TaintNone, TaintOff:
		return nil
	}
	return fmt.Errorf("taint effect %q: %s, %s, %s or %s", e, TaintNoSchedule,
		TaintNoExecute, TaintNone, TaintOff)
}

// portDown is why no port of @d is up, "" where one is or where rdmad
// says it is ready (which needs a port ACTIVE with its net device, if
// any, not down), or where no port's state is known (a net device rdmad
// does not see is not down).
func portDown(d *rdmadpb.Device) string {
	ports := d.GetPorts()
	if d == nil || rdmad.Ready(d) || len(ports) == 0 {
		return ""
	}
	for _, p := range ports {
		if p.GetState() == "" || p.GetState() == "ACTIVE" && (p.GetNetdev() == "" || p.GetNetdevUp() || p.GetNetdevUnknown()) {
			return ""
		}
	}
	p := ports[0]
	if p.GetState() == "ACTIVE" {
		return "netdev-down"
	}
	if v := p.GetState(); labelValue.MatchString(v) {
		return v
	}
	return "down"
}

// shape adds to each device of @devs (the pool of state @s) its
// capacity where devices are shared and its taint where it is sick.
func (o *Options) shape(devs []resourceapi.Device, s *rdmad.Snapshot) []resourceapi.Device {
	byName := map[string]*rdmadpb.Device{}
	if s != nil {
		for _, d := range s.Devices {
			if pooled(d, o.Select) {
				byName[DeviceName(d)] = d
			}
		}
	}
	for i := range devs {
		if o.Slots > 0 {
			yes := true
			n := strconv.Itoa(o.Slots)
			devs[i].AllowMultipleAllocations = &yes
			devs[i].Capacity = map[string]resourceapi.DeviceCapacity{CapacitySlots: {Value: n,
				RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: "1",
					ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: "1", Max: n, Step: "1"}}}}
		}
		if o.TaintEffect == TaintOff {
			continue
		}
		if why := portDown(byName[devs[i].Name]); why != "" {
			devs[i].Taints = []resourceapi.DeviceTaint{{Key: TaintPortDown, Value: why,
				Effect: o.taintEffect()}}
		}
	}
	return devs
}

func (o *Options) taintEffect() string {
	if o.TaintEffect == "" {
		return TaintNoSchedule
	}
	return o.TaintEffect
}

// consumed is the number of slots result @r takes: its consumedCapacity
// "slots" (a whole number), 1 where the allocation names none (a device
// allocated by a scheduler without DRAConsumableCapacity: one claim
// shared by its pods), or why not.
func consumed(r resourceapi.DeviceRequestAllocationResult) (int64, string) {
	q, ok := r.ConsumedCapacity[CapacitySlots]
	if !ok {
		return 1, ""
	}
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil || n < 1 {
		return 0, errorf("device %s: consumed capacity %s %q is not a whole number of slots", r.Device, CapacitySlots, q)
	}
	return n, ""
}

// admitted says why device @name cannot take @want more slots for claim
// @uid beside the claims prepared, "" where it can; d.mu held.  An admin
// claim takes nothing and is always admitted; a shared device takes up
// to Options.Slots, an exclusive one a single claim.
func (d *Driver) admitted(uid, name string, want int64, admin bool) string {
	if admin {
		return ""
	}
	var held int64
	for u, pc := range d.claims {
		if u == uid {
			continue
		}
		for _, pd := range pc.Devices {
			if pd.Device == name && !pd.Admin {
				held += pd.slots()
			}
		}
	}
	if d.o.Slots == 0 {
		if held > 0 {
			return errorf("device %s is exclusive and prepared for another claim", name)
		}
		return ""
	}
	if held+want > int64(d.o.Slots) {
		return errorf("device %s has %d slots: %d held by other claims, %d asked", name, d.o.Slots, held, want)
	}
	return ""
}

// slots are the slots @pd holds (1 for a device of a driver before
// shares: a whole device).
func (pd PreparedDevice) slots() int64 {
	if pd.Slots == 0 {
		return 1
	}
	return pd.Slots
}
