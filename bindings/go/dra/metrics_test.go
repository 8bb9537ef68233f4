// SPDX-License-Identifier: MIT

package dra_test

// metrics.go: scraped over HTTP after prepares (one refused), an
// unprepare, a write the API server failed, a watch ended with 410 Gone
// and a health stream open; checked by promtool where it is installed
// (Debian's prometheus) and read back by the test.

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	healthv1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra-health/v1"
)

// sample is the value of the sample @series ("name{labels}") in
// @text, -1 where there is none.
func sample(text, series string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, func(o *dra.Options) { o.MetricsAddress = "127.0.0.1:0" })
	e.d.Set(snap(1, dev("mlx5_0", 0, "InfiniBand")), true)
	e.pool("one", "pci-0000-00-00-0")
	k := e.register()
	st, err := healthv1.NewDRAResourceHealthClient(k.conn).NodeWatchResources(context.Background(), &healthv1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	e.api.PutClaim("ns", "c", claimUID(0), []k8sfake.Result{{Request: "r", Driver: driver, Pool: node, Device: "pci-0000-00-00-0"}})
	if r := k.prepare(t, claimUID(0), "c"); r.Error != "" {
		t.Fatal(r)
	}
	if r := k.prepare(t, claimUID(1), "none"); r.Error == "" {
		t.Fatal("a claim that is not there prepared")
	}
	unprepare(t, k, claimUID(0), "c")
	// A write failed with 500, then a watch ended by 410 Gone.
	e.api.FailNext(500)
	e.d.Set(snap(2, dev("mlx5_0", 0, "InfiniBand"), dev("mlx5_1", 1, "InfiniBand")), true)
	e.pool("two", "pci-0000-00-00-0", "pci-0000-01-00-0")
	e.api.SetWatchFailure(k8sfake.WatchGoneInStream)
	e.api.Compact()
	e.api.EndWatches()
	var text string
	waitFor(t, "the watch's restart counted", func() bool {
		text = scrapeMetrics(t, e.d)
		return sample(text, `rdmad_dra_watch_restarts_total{reason="gone"}`) >= 1
	})
	e.api.SetWatchFailure(k8sfake.WatchServe)
	for series, want := range map[string]float64{
		`rdmad_dra_operation_duration_seconds_count{operation="prepare"}`:   2,
		`rdmad_dra_operation_errors_total{operation="prepare"}`:             1,
		`rdmad_dra_operation_duration_seconds_count{operation="unprepare"}`: 1,
		`rdmad_dra_operation_errors_total{operation="unprepare"}`:           0,
		`rdmad_dra_resourceslices`:                                          1,
		`rdmad_dra_pool_devices`:                                            2,
		`rdmad_dra_health_streams`:                                          1,
		`rdmad_dra_claims_prepared`:                                         0,
	} {
		if got := sample(text, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, series := range []string{
		`rdmad_dra_api_requests_total{verb="update",resource="resourceslices",code="500"}`,
		`rdmad_dra_api_requests_total{verb="create",resource="resourceslices",code="201"}`,
		`rdmad_dra_api_requests_total{verb="get",resource="resourceclaims",code="200"}`,
		`rdmad_dra_api_requests_total{verb="get",resource="resourceclaims",code="404"}`,
		`rdmad_dra_api_requests_total{verb="list",resource="resourceslices",code="200"}`,
		`rdmad_dra_api_requests_total{verb="watch",resource="resourceslices",code="200"}`,
		`rdmad_dra_api_requests_total{verb="get",resource="nodes",code="200"}`,
	} {
		if sample(text, series) < 1 {
			t.Errorf("no %s in\n%s", series, text)
		}
	}
	if t0 := sample(text, `rdmad_dra_pool_last_published_time_seconds`); t0 < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last published at %v", t0)
	}
	if sample(text, `rdmad_dra_pool_generation`) < 2 {
		t.Errorf("pool generation %v", sample(text, `rdmad_dra_pool_generation`))
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skipf("no promtool (Debian: prometheus) to check the format with")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n%s", err, out, text)
	}
}

func scrapeMetrics(t *testing.T, d *dra.Driver) string {
	t.Helper()
	var addr string
	for deadline := time.Now().Add(5 * time.Second); d.MetricsAddr() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("metrics not served")
		}
	}
	addr = d.MetricsAddr().String()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q", ct)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
