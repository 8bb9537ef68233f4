// SPDX-License-Identifier: MIT

package k8sfake

// A claim's status written by server-side apply, as the API server takes
// it from a DRA driver: PATCH of resourceclaims/NAME/status with
// Content-Type application/apply-patch+yaml and a fieldManager; the
// entries of status.devices (a map list keyed by driver, device, pool and
// shareID) that the manager applied before and not now are dropped,
// other managers' kept (force: their entries the manager names become
// its own); the merged claim is checked against the published schema of
// resource.k8s.io/v1 and the rules its descriptions state for
// AllocatedDeviceStatus and NetworkDeviceData, and each entry must name
// a device of the claim's allocation.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StatusWrite is one apply of a claim's status, as stored.
type StatusWrite struct {
	At        time.Time
	Namespace string
	Name      string
	Manager   string
	Devices   []interface{} // status.devices after the apply
}

// FailNextStatus makes the next applies of a claim's status answer
// @codes, one each (403: a role without resourceclaims/status).
func (s *Server) FailNextStatus(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failSt = append(s.failSt, codes...)
}

// ClaimStatus is claim @namespace/@name's status.devices now.
func (s *Server) ClaimStatus(namespace, name string) []interface{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.claims[namespace+"/"+name]
	if c == nil {
		return nil
	}
	st, _ := c["status"].(map[string]interface{})
	devs, _ := st["devices"].([]interface{})
	return devs
}

func deviceKey(e map[string]interface{}) string {
	str := func(k string) string { v, _ := e[k].(string); return v }
	return str("driver") + "\x00" + str("device") + "\x00" + str("pool") + "\x00" + str("shareID")
}

// applyStatus answers an apply of claim @ns/@name's status; s.mu held.
func (s *Server) applyStatus(w http.ResponseWriter, r *http.Request, at time.Time, ns, name string) {
	if len(s.failSt) > 0 {
		code := s.failSt[0]
		s.failSt = s.failSt[1:]
		status(w, code, "Forbidden", "failing as told")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/apply-patch+yaml" {
		status(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "content type %q", ct)
		return
	}
	q := r.URL.Query()
	manager := q.Get("fieldManager")
	if manager == "" {
		s.refuse(w, "fieldManager is required for apply requests")
		return
	}
	c := s.claims[ns+"/"+name]
	if c == nil {
		status(w, http.StatusNotFound, "NotFound", "resourceclaims %q not found", name)
		return
	}
	v, ok := s.readJSON(w, r)
	if !ok {
		return
	}
	meta, _ := v["metadata"].(map[string]interface{})
	cmeta := c["metadata"].(map[string]interface{})
	switch {
	case v["apiVersion"] != "resource.k8s.io/v1" || v["kind"] != "ResourceClaim":
		s.refuse(w, "apiVersion %v kind %v", v["apiVersion"], v["kind"])
		return
	case meta["name"] != name || meta["namespace"] != nil && meta["namespace"] != ns:
		s.refuse(w, "metadata names %v/%v, the path %s/%s", meta["namespace"], meta["name"], ns, name)
		return
	case meta["uid"] != nil && meta["uid"] != cmeta["uid"]:
		status(w, http.StatusConflict, "Conflict", "Precondition failed: UID in precondition: %v, UID in object meta: %v", meta["uid"], cmeta["uid"])
		return
	}
	st, _ := v["status"].(map[string]interface{})
	for k := range st {
		if k != "devices" {
			s.refuse(w, "status.%s: not the driver's to apply", k)
			return
		}
	}
	for k := range v {
		if k != "apiVersion" && k != "kind" && k != "metadata" && k != "status" {
			s.refuse(w, "%s: not the driver's to apply", k)
			return
		}
	}
	applied, _ := st["devices"].([]interface{})
	if err := s.checkDeviceStatus(c, applied); err != nil {
		s.refuse(w, "%v", err)
		return
	}
	merged, err := s.merge(ns+"/"+name, c, manager, applied, q.Get("force") == "true")
	if err != nil {
		status(w, http.StatusConflict, "Conflict", "Apply failed with 1 conflict: %v", err)
		return
	}
	// The claim as it would be stored, checked whole.
	nb, _ := json.Marshal(c)
	var next map[string]interface{}
	json.Unmarshal(nb, &next)
	nst, _ := next["status"].(map[string]interface{})
	if nst == nil {
		nst = map[string]interface{}{}
		next["status"] = nst
	}
	nst["devices"] = merged
	if err := s.schema.Validate(next, "io.k8s.api.resource.v1.ResourceClaim"); err != nil {
		s.refuse(w, "%v", err)
		return
	}
	for _, e := range applied {
		s.owners[ns+"/"+name+"\x01"+deviceKey(e.(map[string]interface{}))] = manager
	}
	s.rv++
	next["metadata"].(map[string]interface{})["resourceVersion"] = strconv.Itoa(s.rv)
	s.claims[ns+"/"+name] = next
	select {
	case s.StatusWrites <- StatusWrite{At: at, Namespace: ns, Name: name, Manager: manager, Devices: merged}:
	default:
	}
	reply(w, http.StatusOK, next)
}

// merge is claim @c's status.devices with @manager's entries replaced by
// @applied; an entry another manager owns is a conflict without @force.
func (s *Server) merge(claim string, c map[string]interface{}, manager string, applied []interface{}, force bool) ([]interface{}, error) {
	mine := map[string]bool{}
	for _, e := range applied {
		k := deviceKey(e.(map[string]interface{}))
		if o := s.owners[claim+"\x01"+k]; o != "" && o != manager && !force {
			return nil, fmt.Errorf(".status.devices[%q]: owned by %q", k, o)
		}
		mine[k] = true
	}
	st, _ := c["status"].(map[string]interface{})
	old, _ := st["devices"].([]interface{})
	var out []interface{}
	for _, e := range old {
		k := deviceKey(e.(map[string]interface{}))
		if mine[k] || s.owners[claim+"\x01"+k] == manager {
			delete(s.owners, claim+"\x01"+k)
			continue
		}
		out = append(out, e)
	}
	return append(out, applied...), nil
}

// checkDeviceStatus holds @devs to what the API server's validation of
// ResourceClaimStatus says: each entry a device of the allocation, unique,
// networkData's limits, data's size.
func (s *Server) checkDeviceStatus(c map[string]interface{}, devs []interface{}) error {
	allocated := map[string]bool{}
	st, _ := c["status"].(map[string]interface{})
	alloc, _ := st["allocation"].(map[string]interface{})
	ad, _ := alloc["devices"].(map[string]interface{})
	results, _ := ad["results"].([]interface{})
	for _, r := range results {
		allocated[deviceKey(r.(map[string]interface{}))] = true
	}
	seen := map[string]bool{}
	for i, d := range devs {
		e, ok := d.(map[string]interface{})
		if !ok {
			return fmt.Errorf("status.devices[%d]: not an object", i)
		}
		k := deviceKey(e)
		if !allocated[k] {
			return fmt.Errorf("status.devices[%d]: %q is not a device of the allocation", i, strings.ReplaceAll(k, "\x00", "/"))
		}
		if seen[k] {
			return fmt.Errorf("status.devices[%d]: duplicate", i)
		}
		seen[k] = true
		if raw, ok := e["data"]; ok {
			if b, _ := json.Marshal(raw); len(b) > 10*1024 {
				return fmt.Errorf("status.devices[%d].data: %d bytes, more than 10 KiB", i, len(b))
			}
		}
		nd, _ := e["networkData"].(map[string]interface{})
		if n, _ := nd["interfaceName"].(string); len(n) > 256 {
			return fmt.Errorf("status.devices[%d].networkData.interfaceName: longer than 256", i)
		}
		if a, _ := nd["hardwareAddress"].(string); len(a) > 128 {
			return fmt.Errorf("status.devices[%d].networkData.hardwareAddress: longer than 128", i)
		}
		ips, _ := nd["ips"].([]interface{})
		if len(ips) > 16 {
			return fmt.Errorf("status.devices[%d].networkData.ips: more than 16", i)
		}
		ipSeen := map[string]bool{}
		for j, ip := range ips {
			str, _ := ip.(string)
			if _, _, err := net.ParseCIDR(str); err != nil {
				return fmt.Errorf("status.devices[%d].networkData.ips[%d]: %q is not in CIDR notation", i, j, str)
			}
			if ipSeen[str] {
				return fmt.Errorf("status.devices[%d].networkData.ips[%d]: duplicate", i, j)
			}
			ipSeen[str] = true
		}
	}
	return nil
}
