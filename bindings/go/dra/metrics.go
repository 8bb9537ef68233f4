// SPDX-License-Identifier: MIT

package dra

// The driver's metrics, served in Prometheus' text format (0.0.4) at
// /metrics of Options.MetricsAddress (rdmad-dra(8) lists them):
// prepare and unprepare latency and errors, per claim; the API server's
// answers by verb, resource and code; the watch's restarts by reason;
// the slices and devices published and the pool's generation; the
// health streams open; the claims prepared.  No client library: the
// format is a few lines (client_golang is not packaged in Debian 12).

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// latencyBuckets are the upper bounds of the latency histograms, in
// seconds.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

type histogram struct {
	counts []uint64 // per bucket, not cumulative
	sum    float64
	n      uint64
}

// Metrics is the driver's set of metrics; the zero value is empty and
// every method is safe on a nil *Metrics (nothing counted).
type Metrics struct {
	mu        sync.Mutex
	latency   map[string]*histogram // operation -> histogram
	errors    map[string]uint64     // operation -> count
	requests  map[[3]string]uint64  // verb, resource, code
	restarts  map[string]uint64     // reason
	slices    int
	devices   int
	gen       int64
	streams   int
	prepared  int
	published uint64    // pools written whole
	lastPub   time.Time // when last
}

// NewMetrics is an empty set.
func NewMetrics() *Metrics {
	return &Metrics{latency: map[string]*histogram{}, errors: map[string]uint64{},
		requests: map[[3]string]uint64{}, restarts: map[string]uint64{}}
}

// Operation records one claim's @op ("prepare", "unprepare") that took
// @d, failed where @failed.
func (m *Metrics) Operation(op string, d time.Duration, failed bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.latency[op]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		m.latency[op] = h
	}
	s := d.Seconds()
	i := sort.SearchFloat64s(latencyBuckets, s)
	h.counts[i]++
	h.sum += s
	h.n++
	if failed {
		m.errors[op]++
	}
}

// Request records one answer of the API server: @code, 0 where none
// came (the connection failed).
func (m *Metrics) Request(verb, resource string, code int) {
	if m == nil {
		return
	}
	c := "none"
	if code != 0 {
		c = fmt.Sprint(code)
	}
	m.mu.Lock()
	m.requests[[3]string{verb, resource, c}]++
	m.mu.Unlock()
}

// WatchRestart records a watch of the slices made again after @reason
// ("gone": 410, "error", "short": ended at once with nothing).
func (m *Metrics) WatchRestart(reason string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.restarts[reason]++
	m.mu.Unlock()
}

// Published records the pool written whole: @slices slices of @devices
// devices at generation @gen.
func (m *Metrics) Published(slices, devices int, gen int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.slices, m.devices, m.gen = slices, devices, gen
	m.published++
	m.lastPub = time.Now()
	m.mu.Unlock()
}

// Streams adds @n to the health streams open.
func (m *Metrics) Streams(n int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.streams += n
	m.mu.Unlock()
}

// Prepared records the number of claims prepared now.
func (m *Metrics) Prepared(n int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.prepared = n
	m.mu.Unlock()
}

// family writes a metric family's HELP and TYPE lines.
func family(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func label(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}

func float(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return fmt.Sprint(f)
}

// WriteTo writes every metric in the text format.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	m.mu.Lock()
	defer m.mu.Unlock()
	ops := []string{"prepare", "unprepare"}
	family(&b, "rdmad_dra_operation_duration_seconds", "histogram",
		"Time to prepare or unprepare one claim (the kubelet's NodePrepareResources, NodeUnprepareResources).")
	for _, op := range ops {
		h := m.latency[op]
		if h == nil {
			h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		}
		var cum uint64
		for i, le := range append(latencyBuckets, math.Inf(1)) {
			cum += h.counts[i]
			fmt.Fprintf(&b, "rdmad_dra_operation_duration_seconds_bucket{operation=%s,le=%s} %d\n", label(op), label(float(le)), cum)
		}
		fmt.Fprintf(&b, "rdmad_dra_operation_duration_seconds_sum{operation=%s} %s\n", label(op), float(h.sum))
		fmt.Fprintf(&b, "rdmad_dra_operation_duration_seconds_count{operation=%s} %d\n", label(op), h.n)
	}
	family(&b, "rdmad_dra_operation_errors_total", "counter",
		"Claims whose preparation or unpreparation failed (the error the kubelet got).")
	for _, op := range ops {
		fmt.Fprintf(&b, "rdmad_dra_operation_errors_total{operation=%s} %d\n", label(op), m.errors[op])
	}
	family(&b, "rdmad_dra_api_requests_total", "counter",
		"Requests to the API server by verb, resource and the status code answered (none: no answer).")
	var keys [][3]string
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return strings.Join(keys[i][:], "\x00") < strings.Join(keys[j][:], "\x00")
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "rdmad_dra_api_requests_total{verb=%s,resource=%s,code=%s} %d\n",
			label(k[0]), label(k[1]), label(k[2]), m.requests[k])
	}
	family(&b, "rdmad_dra_watch_restarts_total", "counter",
		"Watches of the ResourceSlices made again after a failure, by reason (gone: 410, error, short: ended at once with nothing).")
	for _, r := range []string{"error", "gone", "short"} {
		fmt.Fprintf(&b, "rdmad_dra_watch_restarts_total{reason=%s} %d\n", label(r), m.restarts[r])
	}
	family(&b, "rdmad_dra_resourceslices", "gauge", "ResourceSlices of the pool as last written whole.")
	fmt.Fprintf(&b, "rdmad_dra_resourceslices %d\n", m.slices)
	family(&b, "rdmad_dra_pool_devices", "gauge", "Devices of the pool as last written whole.")
	fmt.Fprintf(&b, "rdmad_dra_pool_devices %d\n", m.devices)
	family(&b, "rdmad_dra_pool_generation", "gauge", "The pool's generation as last written whole.")
	fmt.Fprintf(&b, "rdmad_dra_pool_generation %d\n", m.gen)
	family(&b, "rdmad_dra_pool_publications_total", "counter", "Times the pool was written whole (a new generation).")
	fmt.Fprintf(&b, "rdmad_dra_pool_publications_total %d\n", m.published)
	family(&b, "rdmad_dra_pool_last_published_time_seconds", "gauge", "When the pool was last written whole (Unix time; 0: never).")
	var last float64
	if !m.lastPub.IsZero() {
		last = float64(m.lastPub.UnixNano()) / 1e9
	}
	fmt.Fprintf(&b, "rdmad_dra_pool_last_published_time_seconds %s\n", float(last))
	family(&b, "rdmad_dra_health_streams", "gauge", "Health streams (NodeWatchResources) open to the kubelet.")
	fmt.Fprintf(&b, "rdmad_dra_health_streams %d\n", m.streams)
	family(&b, "rdmad_dra_claims_prepared", "gauge", "Claims prepared on this node (the checkpoint's).")
	fmt.Fprintf(&b, "rdmad_dra_claims_prepared %d\n", m.prepared)
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// ServeHTTP serves the metrics at any path (the server routes /metrics).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.WriteTo(w)
}

// serveMetrics serves the metrics at http://@addr/metrics until @stop
// is closed; the listener is made at once, so a bad address is an
// error at start.
func (m *Metrics) serve(addr string, stop <-chan struct{}) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	go func() {
		<-stop
		srv.Close()
	}()
	return l.Addr(), nil
}
