// SPDX-License-Identifier: MIT

package k8sfake

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Write is one ResourceSlice written (created, replaced or deleted), as
// the server stored it, with when the request came.
type Write struct {
	At     time.Time
	Method string
	Name   string
	Slice  map[string]interface{} // nil for a delete
}

// Server is the scripted API server.
type Server struct {
	URL    string
	Token  string
	Writes chan Write // every write, in order (dropped when full)

	ts     *httptest.Server
	schema *Schema
	mu     sync.Mutex
	rv     int
	slices map[string]map[string]interface{}
	claims map[string]map[string]interface{} // "ns/name"
	nodes  map[string]string                 // Node name -> UID
	fail   []int                             // status codes of the next writes
	failRd []int                             // status codes of the next reads
	errs   []string                          // writes refused, and why
}

// New starts a server over TLS whose objects are checked against @s.
func New(s *Schema) *Server {
	srv := &Server{Token: "rdmad-dra-test-token", Writes: make(chan Write, 4096),
		schema: s, slices: map[string]map[string]interface{}{},
		claims: map[string]map[string]interface{}{}, nodes: map[string]string{}}
	srv.ts = httptest.NewTLSServer(http.HandlerFunc(srv.serve))
	srv.URL = srv.ts.URL
	return srv
}

// Close stops the server.
func (s *Server) Close() { s.ts.Close() }

// ServiceAccount writes what a pod's service account holds into @dir:
// token, ca.crt (this server's certificate) and namespace.
func (s *Server) ServiceAccount(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.ts.Certificate().Raw})
	for name, data := range map[string][]byte{"token": []byte(s.Token),
		"ca.crt": ca, "namespace": []byte("rdmad")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// FailNext makes the next writes of slices answer @codes, one each.
func (s *Server) FailNext(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = append(s.fail, codes...)
}

// FailNextRead makes the next reads (a GET of slices or of a Node)
// answer @codes, one each.
func (s *Server) FailNextRead(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failRd = append(s.failRd, codes...)
}

// PutNode makes Node @name, of UID @uid, exist.
func (s *Server) PutNode(name, uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[name] = uid
}

// Wipe deletes the slices of @node, as the kubelet does at its start
// (wipeResourceSlices: a DeleteCollection of resourceslices with the
// field selector spec.nodeName); it returns how many went.
func (s *Server) Wipe(node string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleteWhere(fieldSelector{"spec.nodeName": node}, time.Now())
}

// Delete deletes slice @name, as someone else would.
func (s *Server) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteWhere(fieldSelector{"metadata.name": name}, time.Now())
}

// Refused are the writes the server refused as invalid, and why.
func (s *Server) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// Result is one device of a claim's allocation.
type Result struct{ Request, Driver, Pool, Device string }

// PutClaim stores an allocated ResourceClaim (checked against the
// schema like anything else the server holds).
func (s *Server) PutClaim(namespace, name, uid string, results []Result) error {
	var rs []interface{}
	for _, r := range results {
		rs = append(rs, map[string]interface{}{"request": r.Request,
			"driver": r.Driver, "pool": r.Pool, "device": r.Device})
	}
	c := map[string]interface{}{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
		"metadata": map[string]interface{}{"name": name, "namespace": namespace, "uid": uid},
		"spec":     map[string]interface{}{"devices": map[string]interface{}{}},
		"status": map[string]interface{}{"allocation": map[string]interface{}{
			"devices": map[string]interface{}{"results": rs}}}}
	// Through JSON, as the server would have stored it.
	b, _ := json.Marshal(c)
	var v map[string]interface{}
	json.Unmarshal(b, &v)
	if err := s.schema.Validate(v, "io.k8s.api.resource.v1.ResourceClaim"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims[namespace+"/"+name] = v
	return nil
}

// Slices are the slices stored now, by name.
func (s *Server) Slices() map[string]map[string]interface{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]map[string]interface{}{}
	for k, v := range s.slices {
		m[k] = v
	}
	return m
}

// PoolDevices are the device names that @driver's pool @pool publishes
// now, sorted, and whether the pool is complete: every slice of it at
// the highest generation, as many as its resourceSliceCount says.
func (s *Server) PoolDevices(driver, pool string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return poolDevices(s.slices, driver, pool)
}

func poolDevices(slices map[string]map[string]interface{}, driver, pool string) ([]string, bool) {
	var gen, count float64
	var at []map[string]interface{}
	for _, sl := range slices {
		spec := sl["spec"].(map[string]interface{})
		p := spec["pool"].(map[string]interface{})
		if spec["driver"] != driver || p["name"] != pool {
			continue
		}
		g := p["generation"].(float64)
		if g > gen {
			gen, at = g, nil
		}
		if g == gen {
			at = append(at, spec)
			count = p["resourceSliceCount"].(float64)
		}
	}
	var names []string
	for _, spec := range at {
		devs, _ := spec["devices"].([]interface{})
		for _, d := range devs {
			names = append(names, d.(map[string]interface{})["name"].(string))
		}
	}
	sort.Strings(names)
	return names, len(at) > 0 && float64(len(at)) == count
}

// Device is device @name of the pool as published now (nil: none).
func (s *Server) Device(driver, pool, name string) map[string]interface{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.slices {
		spec := sl["spec"].(map[string]interface{})
		if spec["driver"] != driver || spec["pool"].(map[string]interface{})["name"] != pool {
			continue
		}
		devs, _ := spec["devices"].([]interface{})
		for _, d := range devs {
			if d.(map[string]interface{})["name"] == name {
				return d.(map[string]interface{})
			}
		}
	}
	return nil
}

// status answers like the API server: a Status object.
func status(w http.ResponseWriter, code int, reason, format string, args ...interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]interface{}{"kind": "Status",
		"apiVersion": "v1", "status": "Failure", "code": code,
		"reason": reason, "message": fmt.Sprintf(format, args...)})
}

func reply(w http.ResponseWriter, code int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

const slicesPath = "/apis/resource.k8s.io/v1/resourceslices"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := r.URL.Path
	if r.Method == http.MethodGet && len(s.failRd) > 0 {
		code := s.failRd[0]
		s.failRd = s.failRd[1:]
		status(w, code, "InternalError", "failing as told")
		return
	}
	switch {
	case path == slicesPath && r.Method == http.MethodPost:
		s.write(w, r, at, "")
	case path == slicesPath && (r.Method == http.MethodGet || r.Method == http.MethodDelete):
		sel, err := parseFieldSelector(r.URL.Query().Get("fieldSelector"))
		if err != nil {
			status(w, http.StatusBadRequest, "BadRequest", "%v", err)
			return
		}
		if r.Method == http.MethodDelete {
			s.deleteWhere(sel, at)
			reply(w, http.StatusOK, map[string]interface{}{"kind": "Status", "status": "Success"})
			return
		}
		items := []interface{}{}
		for _, name := range sortedKeys(s.slices) {
			if sel.matches(s.slices[name]) {
				items = append(items, s.slices[name])
			}
		}
		reply(w, http.StatusOK, map[string]interface{}{"apiVersion": "resource.k8s.io/v1",
			"kind": "ResourceSliceList", "items": items,
			"metadata": map[string]interface{}{"resourceVersion": strconv.Itoa(s.rv)}})
	case strings.HasPrefix(path, "/api/v1/nodes/") && r.Method == http.MethodGet:
		name := strings.TrimPrefix(path, "/api/v1/nodes/")
		uid, ok := s.nodes[name]
		if !ok {
			status(w, http.StatusNotFound, "NotFound", "nodes %q not found", name)
			return
		}
		reply(w, http.StatusOK, map[string]interface{}{"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]interface{}{"name": name, "uid": uid}})
	case strings.HasPrefix(path, slicesPath+"/"):
		name := strings.TrimPrefix(path, slicesPath+"/")
		switch r.Method {
		case http.MethodGet:
			if sl, ok := s.slices[name]; ok {
				reply(w, http.StatusOK, sl)
			} else {
				status(w, http.StatusNotFound, "NotFound", "resourceslices %q not found", name)
			}
		case http.MethodPut:
			s.write(w, r, at, name)
		case http.MethodDelete:
			if _, ok := s.slices[name]; !ok {
				status(w, http.StatusNotFound, "NotFound", "resourceslices %q not found", name)
				return
			}
			delete(s.slices, name)
			s.record(Write{At: at, Method: "DELETE", Name: name})
			reply(w, http.StatusOK, map[string]interface{}{"kind": "Status", "status": "Success"})
		default:
			status(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "%s", r.Method)
		}
	case strings.HasPrefix(path, "/apis/resource.k8s.io/v1/namespaces/") && r.Method == http.MethodGet:
		parts := strings.Split(strings.TrimPrefix(path, "/apis/resource.k8s.io/v1/namespaces/"), "/")
		if len(parts) == 3 && parts[1] == "resourceclaims" {
			if c, ok := s.claims[parts[0]+"/"+parts[2]]; ok {
				reply(w, http.StatusOK, c)
				return
			}
			status(w, http.StatusNotFound, "NotFound", "resourceclaims %q not found", parts[2])
			return
		}
		status(w, http.StatusNotFound, "NotFound", "%s", path)
	default:
		status(w, http.StatusNotFound, "NotFound", "%s %s", r.Method, path)
	}
}

// fieldSelector is a parsed field selector: field -> value, all of
// which must hold (the fields the API server takes for ResourceSlices).
type fieldSelector map[string]string

var sliceFields = map[string][]string{"spec.nodeName": {"spec", "nodeName"},
	"spec.driver": {"spec", "driver"}, "spec.pool.name": {"spec", "pool", "name"},
	"metadata.name": {"metadata", "name"}}

func parseFieldSelector(q string) (fieldSelector, error) {
	sel := fieldSelector{}
	for _, term := range strings.Split(q, ",") {
		if term == "" {
			continue
		}
		k, v, ok := strings.Cut(term, "=")
		if _, known := sliceFields[k]; !ok || !known {
			return nil, fmt.Errorf("field selector %q: not supported", term)
		}
		sel[k] = v
	}
	return sel, nil
}

func (sel fieldSelector) matches(obj map[string]interface{}) bool {
	for k, want := range sel {
		var v interface{} = obj
		for _, part := range sliceFields[k] {
			m, _ := v.(map[string]interface{})
			v = m[part]
		}
		if v != want {
			return false
		}
	}
	return true
}

// deleteWhere deletes the slices @sel selects; s.mu held.
func (s *Server) deleteWhere(sel fieldSelector, at time.Time) int {
	n := 0
	for _, name := range sortedKeys(s.slices) {
		if sel.matches(s.slices[name]) {
			delete(s.slices, name)
			s.record(Write{At: at, Method: "DELETE", Name: name})
			n++
		}
	}
	return n
}

func sortedKeys(m map[string]map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s *Server) record(wr Write) {
	select {
	case s.Writes <- wr:
	default:
	}
}

// write creates (@name "") or replaces slice @name; s.mu held.
func (s *Server) write(w http.ResponseWriter, r *http.Request, at time.Time, name string) {
	if len(s.fail) > 0 {
		code := s.fail[0]
		s.fail = s.fail[1:]
		status(w, code, "InternalError", "failing as told")
		return
	}
	if r.URL.Query().Get("fieldValidation") != "Strict" {
		s.refuse(w, "fieldValidation=Strict not asked for")
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var v map[string]interface{}
	if err := json.Unmarshal(b, &v); err != nil {
		s.refuse(w, "not JSON: %v", err)
		return
	}
	if err := s.schema.Validate(v, "io.k8s.api.resource.v1.ResourceSlice"); err != nil {
		s.refuse(w, "%v", err)
		return
	}
	if v["apiVersion"] != "resource.k8s.io/v1" || v["kind"] != "ResourceSlice" {
		s.refuse(w, "apiVersion %v kind %v", v["apiVersion"], v["kind"])
		return
	}
	if err := SliceRules(v); err != nil {
		s.refuse(w, "%v", err)
		return
	}
	meta := v["metadata"].(map[string]interface{})
	n := meta["name"].(string)
	old, exists := s.slices[n]
	switch {
	case name == "" && exists:
		status(w, http.StatusConflict, "AlreadyExists", "resourceslices %q already exists", n)
		return
	case name != "" && name != n:
		s.refuse(w, "name %q in the body, %q in the path", n, name)
		return
	case name != "" && !exists:
		status(w, http.StatusNotFound, "NotFound", "resourceslices %q not found", n)
		return
	case name != "":
		om := old["metadata"].(map[string]interface{})
		if meta["resourceVersion"] != om["resourceVersion"] {
			status(w, http.StatusConflict, "Conflict", "the object has been modified")
			return
		}
		os, ns := old["spec"].(map[string]interface{}), v["spec"].(map[string]interface{})
		if os["driver"] != ns["driver"] || os["nodeName"] != ns["nodeName"] ||
			os["pool"].(map[string]interface{})["name"] != ns["pool"].(map[string]interface{})["name"] {
			s.refuse(w, "driver, nodeName and pool.name are immutable")
			return
		}
		meta["uid"] = om["uid"]
	default:
		if _, ok := meta["resourceVersion"]; ok {
			s.refuse(w, "resourceVersion set on create")
			return
		}
		meta["uid"] = "uid-" + n
	}
	s.rv++
	meta["resourceVersion"] = strconv.Itoa(s.rv)
	s.slices[n] = v
	method := "PUT"
	code := http.StatusOK
	if name == "" {
		method, code = "POST", http.StatusCreated
	}
	s.record(Write{At: at, Method: method, Name: n, Slice: v})
	reply(w, code, v)
}

// refuse answers 422 Invalid and remembers why; s.mu held.
func (s *Server) refuse(w http.ResponseWriter, format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	s.errs = append(s.errs, msg)
	status(w, http.StatusUnprocessableEntity, "Invalid", "%s", msg)
}
