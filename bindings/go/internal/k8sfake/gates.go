// SPDX-License-Identifier: MIT

package k8sfake

// Feature gates of the API server that change what it stores of a
// ResourceSlice: with a gate off it drops the field the gate guards
// (pkg/registry/resource/resourceslice's dropDisabledFields) and
// answers with what it stored, without an error.  And what it adds: a
// taint's timeAdded, where the writer left it out.  And the rules of
// the guarded fields that the schema states only in its descriptions.

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Gates that guard fields of a device of a ResourceSlice.
const (
	GateDeviceTaints       = "DRADeviceTaints"       // taints
	GateConsumableCapacity = "DRAConsumableCapacity" // allowMultipleAllocations, capacity's requestPolicy
)

// SetGate turns gate @name on or off (every gate is on at New).
func (s *Server) SetGate(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gatesOff == nil {
		s.gatesOff = map[string]bool{}
	}
	s.gatesOff[name] = !on
}

// stored is slice @v as the API server stores it: the fields of gates
// that are off dropped, each taint's timeAdded set where absent; s.mu
// held.
func (s *Server) stored(v map[string]interface{}, at time.Time) {
	spec, _ := v["spec"].(map[string]interface{})
	devs, _ := spec["devices"].([]interface{})
	for _, x := range devs {
		d, _ := x.(map[string]interface{})
		if s.gatesOff[GateDeviceTaints] {
			delete(d, "taints")
		}
		if s.gatesOff[GateConsumableCapacity] {
			delete(d, "allowMultipleAllocations")
			caps, _ := d["capacity"].(map[string]interface{})
			for _, c := range caps {
				delete(c.(map[string]interface{}), "requestPolicy")
			}
		}
		ts, _ := d["taints"].([]interface{})
		for _, t := range ts {
			tm := t.(map[string]interface{})
			if _, ok := tm["timeAdded"]; !ok {
				tm["timeAdded"] = at.UTC().Format(time.RFC3339)
			}
		}
	}
}

var (
	labelValue    = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
	qualifiedName = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

// deviceRules are the rules of a device's taints and capacity (the
// schema's descriptions of Device, DeviceTaint, DeviceCapacity).
func deviceRules(n string, dev map[string]interface{}) error {
	ts, _ := dev["taints"].([]interface{})
	if len(ts) > 16 {
		return fmt.Errorf("device %s: %d taints, more than 16", n, len(ts))
	}
	for _, x := range ts {
		t := x.(map[string]interface{})
		k, _ := t["key"].(string)
		name := k
		if i := strings.LastIndex(k, "/"); i >= 0 {
			if !dnsSubdomain.MatchString(k[:i]) {
				return fmt.Errorf("device %s: taint key %q: prefix not a DNS subdomain", n, k)
			}
			name = k[i+1:]
		}
		if len(name) > 63 || !qualifiedName.MatchString(name) {
			return fmt.Errorf("device %s: taint key %q: not a label name", n, k)
		}
		if v, _ := t["value"].(string); len(v) > 63 || !labelValue.MatchString(v) {
			return fmt.Errorf("device %s: taint value %q: not a label value", n, v)
		}
		switch t["effect"] {
		case "None", "NoSchedule", "NoExecute":
		default:
			return fmt.Errorf("device %s: taint effect %v: None, NoSchedule or NoExecute", n, t["effect"])
		}
	}
	caps, _ := dev["capacity"].(map[string]interface{})
	for k, x := range caps {
		c := x.(map[string]interface{})
		if _, ok := c["requestPolicy"]; ok && dev["allowMultipleAllocations"] != true {
			return fmt.Errorf("device %s: capacity %s has a requestPolicy but the device does not allow multiple allocations", n, k)
		}
	}
	return nil
}
