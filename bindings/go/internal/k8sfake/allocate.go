// SPDX-License-Identifier: MIT

package k8sfake

// A scheduler's allocator, cut to what rdmad-dra's tests ask of it: a
// claim's devices are named, and each is allocated from the slices the
// server holds as kube-scheduler's structured allocator would
// (k8s.io/dynamic-resource-allocation/structured): a device tainted
// NoSchedule or NoExecute is refused (tolerations are not modelled);
// an admin request (adminAccess) gets any device and takes nothing of
// it; a device that allows multiple allocations gives each request a
// share (a shareID) consuming its capacity's requestPolicy default, or
// what is asked, and is refused past its capacity's value; any other
// device goes to one claim.

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Ask is one device a claim asks for: Capacity, the amount of each
// capacity asked (none: the requestPolicy's default).
type Ask struct {
	Request, Driver, Pool, Device string
	Admin                         bool
	Capacity                      map[string]int64
}

// Allocate allocates @asks to claim @namespace/@name (UID @uid) and
// stores the claim with that allocation, or says why not (nothing
// stored).
func (s *Server) Allocate(namespace, name, uid string, asks []Ask) error {
	s.mu.Lock()
	var rs []Result
	for _, a := range asks {
		r, err := s.allocate(a, rs)
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("%s/%s/%s: %v", a.Driver, a.Pool, a.Device, err)
		}
		rs = append(rs, r)
	}
	s.mu.Unlock()
	return s.PutClaim(namespace, name, uid, rs)
}

// DeleteClaim deletes claim @namespace/@name (its allocation freed).
func (s *Server) DeleteClaim(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.claims, namespace+"/"+name)
}

// allocate is one device for @a beside @more, results of the same
// claim not yet stored; s.mu held.
func (s *Server) allocate(a Ask, more []Result) (Result, error) {
	r := Result{Request: a.Request, Driver: a.Driver, Pool: a.Pool, Device: a.Device}
	dev := s.device(a.Driver, a.Pool, a.Device)
	if dev == nil {
		return r, fmt.Errorf("no such device in the pool")
	}
	if a.Admin {
		r.Admin = true
		return r, nil
	}
	ts, _ := dev["taints"].([]interface{})
	for _, t := range ts {
		tm := t.(map[string]interface{})
		if e := tm["effect"]; e == "NoSchedule" || e == "NoExecute" {
			return r, fmt.Errorf("tainted %v=%v:%v, not tolerated", tm["key"], tm["value"], e)
		}
	}
	held := s.held(a.Driver, a.Pool, a.Device, more)
	if dev["allowMultipleAllocations"] != true {
		if len(held) > 0 {
			return r, fmt.Errorf("allocated to another request already")
		}
		return r, nil
	}
	r.Consumed = map[string]string{}
	caps, _ := dev["capacity"].(map[string]interface{})
	for k, x := range caps {
		c := x.(map[string]interface{})
		total, _ := strconv.ParseInt(fmt.Sprint(c["value"]), 10, 64)
		want, ok := a.Capacity[k]
		if !ok {
			pol, _ := c["requestPolicy"].(map[string]interface{})
			want = total
			if d, ok := pol["default"]; ok {
				want, _ = strconv.ParseInt(fmt.Sprint(d), 10, 64)
			}
		}
		var used int64
		for _, h := range held {
			n, _ := strconv.ParseInt(h.Consumed[k], 10, 64)
			used += n
		}
		if used+want > total {
			return r, fmt.Errorf("capacity %s: %d of %d consumed, %d asked", k, used, total, want)
		}
		r.Consumed[k] = strconv.FormatInt(want, 10)
	}
	s.shares++
	r.ShareID = fmt.Sprintf("5a4e0000-0000-4000-8000-%012x", s.shares)
	return r, nil
}

// device is device @name of @driver's pool @pool at its highest
// generation, nil where none; s.mu held.
func (s *Server) device(driver, pool, name string) map[string]interface{} {
	var best map[string]interface{}
	var gen float64 = -1
	for _, sl := range s.slices {
		spec := sl["spec"].(map[string]interface{})
		p := spec["pool"].(map[string]interface{})
		if spec["driver"] != driver || p["name"] != pool {
			continue
		}
		g, _ := p["generation"].(float64)
		devs, _ := spec["devices"].([]interface{})
		for _, x := range devs {
			d := x.(map[string]interface{})
			if d["name"] == name && g > gen {
				best, gen = d, g
			}
		}
	}
	return best
}

// held are the results, not admin, that give device @name to a claim
// (those stored and @more); s.mu held.
func (s *Server) held(driver, pool, name string, more []Result) []Result {
	var out []Result
	for _, r := range more {
		if !r.Admin && r.Driver == driver && r.Pool == pool && r.Device == name {
			out = append(out, r)
		}
	}
	for _, c := range s.claims {
		b, _ := json.Marshal(c)
		var v struct {
			Status struct {
				Allocation struct {
					Devices struct {
						Results []struct {
							Driver, Pool, Device string
							AdminAccess          bool
							ConsumedCapacity     map[string]string
						}
					}
				}
			}
		}
		json.Unmarshal(b, &v)
		for _, r := range v.Status.Allocation.Devices.Results {
			if !r.AdminAccess && r.Driver == driver && r.Pool == pool && r.Device == name {
				out = append(out, Result{Driver: driver, Pool: pool, Device: name,
					Consumed: r.ConsumedCapacity})
			}
		}
	}
	return out
}
