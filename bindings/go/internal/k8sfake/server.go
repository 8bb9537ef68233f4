// SPDX-License-Identifier: MIT

package k8sfake

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
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
	Admin  bool                   // made by the test (Delete, Wipe, Edit), not through the API
}

// Server is the scripted API server.
type Server struct {
	URL    string
	Token  string
	Writes chan Write // every write, in order (dropped when full)
	// StatusWrites: every apply of a claim's status stored, in order.
	StatusWrites chan StatusWrite

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
	// The watch's history of ResourceSlices: the last maxHistory events,
	// and wake, closed and made anew at each one.
	history []watchEvent
	wake    chan struct{}
	watches int
	admin   bool // the change under way is the test's (Write.Admin)
	// endWatch, closed, ends every watch open (EndWatches); lists
	// counts the lists of ResourceSlices answered.
	endWatch chan struct{}
	lists    int
	// failSt: status codes of the next applies of a claim's status;
	// owners: the field manager of each entry of a claim's
	// status.devices ("ns/name" \x01 entry key).
	failSt []int
	owners map[string]string
	// watchMode: how watches are answered (SetWatchFailure); failAll:
	// the code every request is answered (FailAll, 0: none); reqs: when
	// each request came (reqMu).
	watchMode int
	failAll   int
	reqMu     sync.Mutex
	reqs      []time.Time
	// gatesOff: the feature gates turned off (SetGate, gates.go).
	gatesOff map[string]bool
	// shares: the share IDs Allocate gave (allocate.go).
	shares int
}

// watchEvent is one event of the watch of ResourceSlices.
type watchEvent struct {
	rv   int
	typ  string
	obj  map[string]interface{}
	name string
}

// maxHistory is how many events a watch may resume from; an older
// resourceVersion is answered 410 Gone, as etcd's compaction makes the
// API server answer.
const maxHistory = 1000

// New starts a server over TLS whose objects are checked against @s.
func New(s *Schema) *Server {
	// resourceVersions are etcd's revisions, which start at 1: a list
	// never answers "0", which a watch takes for "from anywhere".
	srv := &Server{Token: "rdmad-dra-test-token", Writes: make(chan Write, 4096), rv: 1,
		schema: s, slices: map[string]map[string]interface{}{},
		claims: map[string]map[string]interface{}{}, nodes: map[string]string{},
		wake: make(chan struct{}), endWatch: make(chan struct{}),
		StatusWrites: make(chan StatusWrite, 1024), owners: map[string]string{}}
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
	s.admin = true
	defer func() { s.admin = false }()
	return s.deleteWhere(fieldSelector{"spec.nodeName": node}, time.Now())
}

// Delete deletes slice @name, as someone else would; it says whether
// there was one.
func (s *Server) Delete(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admin = true
	defer func() { s.admin = false }()
	return s.deleteWhere(fieldSelector{"metadata.name": name}, time.Now()) > 0
}

// Edit changes slice @name as someone else would (kubectl edit): @f
// changes its spec, a copy, which the schema must still take; it says
// whether there was such a slice.
func (s *Server) Edit(name string, f func(spec map[string]interface{})) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.slices[name]
	if !ok {
		return false, nil
	}
	b, _ := json.Marshal(old)
	var v map[string]interface{}
	json.Unmarshal(b, &v)
	f(v["spec"].(map[string]interface{}))
	if err := s.schema.Validate(v, "io.k8s.api.resource.v1.ResourceSlice"); err != nil {
		return true, err
	}
	s.rv++
	v["metadata"].(map[string]interface{})["resourceVersion"] = strconv.Itoa(s.rv)
	s.slices[name] = v
	s.event("MODIFIED", name, v)
	s.record(Write{At: time.Now(), Method: "PUT", Name: name, Slice: v, Admin: true})
	return true, nil
}

// Refused are the writes the server refused as invalid, and why.
func (s *Server) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// Result is one device of a claim's allocation: for administrative
// access (Admin), or a share of a device (ShareID, Consumed: its
// consumedCapacity).
type Result struct {
	Request, Driver, Pool, Device string
	Admin                         bool
	ShareID                       string
	Consumed                      map[string]string
}

// PutClaim stores an allocated ResourceClaim (checked against the
// schema like anything else the server holds).
func (s *Server) PutClaim(namespace, name, uid string, results []Result) error {
	var rs []interface{}
	for _, r := range results {
		m := map[string]interface{}{"request": r.Request,
			"driver": r.Driver, "pool": r.Pool, "device": r.Device}
		if r.Admin {
			m["adminAccess"] = true
		}
		if r.ShareID != "" {
			m["shareID"] = r.ShareID
		}
		if len(r.Consumed) > 0 {
			m["consumedCapacity"] = r.Consumed
		}
		rs = append(rs, m)
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

// CompletePools are the pools of @driver that are complete now (every
// slice at the highest generation, as many as resourceSliceCount), each
// with its device names, sorted: one pass for a cluster's pools.
func (s *Server) CompletePools(driver string) map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	byPool := map[string]map[string]map[string]interface{}{}
	for name, sl := range s.slices {
		spec := sl["spec"].(map[string]interface{})
		if spec["driver"] != driver {
			continue
		}
		pool := spec["pool"].(map[string]interface{})["name"].(string)
		if byPool[pool] == nil {
			byPool[pool] = map[string]map[string]interface{}{}
		}
		byPool[pool][name] = sl
	}
	out := map[string][]string{}
	for pool, slices := range byPool {
		if names, complete := poolDevices(slices, driver, pool); complete {
			out[pool] = names
		}
	}
	return out
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
	s.counted(at)
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	s.mu.Lock()
	code := s.failAll
	s.mu.Unlock()
	if code != 0 {
		status(w, code, "InternalError", "failing as told")
		return
	}
	path := r.URL.Path
	if path == slicesPath && r.Method == http.MethodGet &&
		(r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1") {
		s.serveWatch(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
		s.lists++
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
			s.deleteSlice(name, at)
			reply(w, http.StatusOK, map[string]interface{}{"kind": "Status", "status": "Success"})
		default:
			status(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "%s", r.Method)
		}
	case strings.HasPrefix(path, "/apis/resource.k8s.io/v1/namespaces/") && r.Method == http.MethodPatch:
		parts := strings.Split(strings.TrimPrefix(path, "/apis/resource.k8s.io/v1/namespaces/"), "/")
		if len(parts) == 4 && parts[1] == "resourceclaims" && parts[3] == "status" {
			s.applyStatus(w, r, at, parts[0], parts[2])
			return
		}
		status(w, http.StatusNotFound, "NotFound", "%s", path)
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
			s.deleteSlice(name, at)
			n++
		}
	}
	return n
}

// deleteSlice deletes slice @name, a new resourceVersion; s.mu held.
func (s *Server) deleteSlice(name string, at time.Time) {
	old := s.slices[name]
	delete(s.slices, name)
	s.rv++
	// The DELETED event carries the object with the deletion's
	// resourceVersion, as the API server's watch cache sends it.
	obj := map[string]interface{}{}
	for k, v := range old {
		obj[k] = v
	}
	meta := map[string]interface{}{}
	for k, v := range old["metadata"].(map[string]interface{}) {
		meta[k] = v
	}
	meta["resourceVersion"] = strconv.Itoa(s.rv)
	obj["metadata"] = meta
	s.event("DELETED", name, obj)
	s.record(Write{At: at, Method: "DELETE", Name: name, Admin: s.admin})
}

// event adds one event to the watch's history; s.mu held.
func (s *Server) event(typ, name string, obj map[string]interface{}) {
	s.history = append(s.history, watchEvent{rv: s.rv, typ: typ, obj: obj, name: name})
	if len(s.history) > maxHistory {
		s.history = s.history[len(s.history)-maxHistory:]
	}
	close(s.wake)
	s.wake = make(chan struct{})
}

// serveWatch answers a watch of ResourceSlices (?watch=true) as the API
// server does: from the resourceVersion asked for (410 Gone in an ERROR
// event where the history no longer reaches back to it), one JSON
// object a line, {"type":T,"object":O}, flushed at once, for the slices
// the field selector takes, until timeoutSeconds or the client goes.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := parseFieldSelector(q.Get("fieldSelector"))
	if err != nil {
		status(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	s.mu.Lock()
	from := s.rv
	if v := q.Get("resourceVersion"); v != "" && v != "0" {
		if from, err = strconv.Atoi(v); err != nil {
			s.mu.Unlock()
			status(w, http.StatusBadRequest, "BadRequest", "resourceVersion %q", v)
			return
		}
	}
	s.watches++
	endWatch, mode := s.endWatch, s.watchMode
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.watches--
		s.mu.Unlock()
	}()
	switch mode {
	case WatchGoneHTTP:
		status(w, http.StatusGone, "Expired", "too old resource version: %d", from)
		return
	case WatchEmpty:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return
	case WatchGoneInStream:
		from = -1
	}
	timeout := time.Hour
	if t, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && t > 0 {
		timeout = time.Duration(t) * time.Second
	}
	end := time.NewTimer(timeout)
	defer end.Stop()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	for {
		s.mu.Lock()
		var out []watchEvent
		gone := from < 0 || len(s.history) > 0 && from < s.history[0].rv-1 ||
			len(s.history) == 0 && from < s.rv
		if !gone {
			// The history is in resourceVersion order: only what is
			// new is looked at (a cluster's watches wake at each event).
			i := sort.Search(len(s.history), func(i int) bool { return s.history[i].rv > from })
			for _, ev := range s.history[i:] {
				if sel.matches(ev.obj) {
					out = append(out, ev)
				}
			}
			if len(s.history) > 0 && s.history[len(s.history)-1].rv > from {
				from = s.history[len(s.history)-1].rv
			}
		}
		wake := s.wake
		s.mu.Unlock()
		if gone {
			enc.Encode(map[string]interface{}{"type": "ERROR", "object": map[string]interface{}{
				"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
				"reason": "Expired", "message": fmt.Sprintf("too old resource version: %d", from)}})
			return
		}
		for _, ev := range out {
			if enc.Encode(map[string]interface{}{"type": ev.typ, "object": ev.obj}) != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-wake:
		case <-end.C:
			return
		case <-endWatch:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// EndWatches ends every watch open, as an API server's timeout does.
func (s *Server) EndWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.endWatch)
	s.endWatch = make(chan struct{})
}

// Compact ends every watch open and forgets the watch's history after
// a change elsewhere (resourceVersions are etcd's, shared by every
// object), as etcd's compaction and an API server's restart do: a watch
// resumed from an earlier resourceVersion is answered 410 Gone.
func (s *Server) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	s.history = nil
	close(s.endWatch)
	s.endWatch = make(chan struct{})
}

// Lists is how many lists of ResourceSlices the server has answered.
func (s *Server) Lists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// Watches is how many watches of ResourceSlices are open now.
func (s *Server) Watches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches
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
	v, ok := s.readJSON(w, r)
	if !ok {
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
	s.stored(v, at)
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
	typ := map[string]string{"PUT": "MODIFIED", "POST": "ADDED"}[method]
	s.event(typ, n, v)
	s.record(Write{At: at, Method: method, Name: n, Slice: v})
	reply(w, code, v)
}

// refuse answers 422 Invalid and remembers why; s.mu held.
// readJSON is the request's body as a JSON object; false (answered, or
// the connection gone) when it is none.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request) (map[string]interface{}, bool) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, false
	}
	var v map[string]interface{}
	if err := json.Unmarshal(b, &v); err != nil {
		s.refuse(w, "not JSON: %v", err)
		return nil, false
	}
	return v, true
}

func (s *Server) refuse(w http.ResponseWriter, format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	s.errs = append(s.errs, msg)
	status(w, http.StatusUnprocessableEntity, "Invalid", "%s", msg)
}

// Watch failure modes (SetWatchFailure): how every watch of
// ResourceSlices is answered.
const (
	WatchServe        = iota // as the API server does
	WatchGoneInStream        // 200, then an ERROR event 410 Expired (a compacted history)
	WatchGoneHTTP            // a plain 410 Gone answer
	WatchEmpty               // 200 and an empty body at once (a proxy cutting long requests)
)

// SetWatchFailure makes every watch answered as @mode says.
func (s *Server) SetWatchFailure(mode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchMode = mode
}

// FailAll makes every request answered @code (0: none), as an API
// server that is up but failing (500, 503) answers.
func (s *Server) FailAll(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failAll = code
}

// Requests are the times at which requests came, every one (lists,
// watches, reads, writes, failed or not), in order.
func (s *Server) Requests() []time.Time {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	return append([]time.Time(nil), s.reqs...)
}

// CountRequests is how many requests came since @since.
func (s *Server) CountRequests(since time.Time) int {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	n := 0
	for i := len(s.reqs) - 1; i >= 0 && !s.reqs[i].Before(since); i-- {
		n++
	}
	return n
}

// Stop takes the server off its address: connections are cut and new
// ones refused (an API server down) until Start.
func (s *Server) Stop() {
	s.ts.Listener.Close()
	s.ts.CloseClientConnections()
}

// Start serves again at the same address after Stop, as an API server
// restarted: its watch cache is new (Compact), so a watch resumed from
// a resourceVersion before it is answered 410 Gone.
func (s *Server) Start() error {
	l, err := net.Listen("tcp", s.ts.Listener.Addr().String())
	if err != nil {
		return err
	}
	s.Compact()
	s.ts.Listener = tls.NewListener(l, s.ts.TLS)
	go s.ts.Config.Serve(s.ts.Listener)
	return nil
}

// counted records a request's time.
func (s *Server) counted(at time.Time) {
	s.reqMu.Lock()
	s.reqs = append(s.reqs, at)
	s.reqMu.Unlock()
}
