// SPDX-License-Identifier: MIT

package dra_test

// internal/rest, as the driver uses it: the service account's token goes over TLS only.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	"github.com/rdmad/rdmad/bindings/go/internal/rest"
)

// An http:// API server is refused with a clear error, and a driver
// given one anyway never sends it the token.  (The tests' API server,
// k8sfake, is served over TLS with its own certificate, which the
// service account's ca.crt holds, as in a pod.)
func TestTokenOverHTTPSOnly(t *testing.T) {
	var tokens, requests int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&requests, 1)
		if r.Header.Get("Authorization") != "" {
			atomic.AddInt32(&tokens, 1)
		}
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer plain.Close()
	dir := t.TempDir()
	sa := filepath.Join(dir, "sa")
	tls := k8sfake.New(nil) // a ca.crt, as a pod's service account has
	defer tls.Close()
	if err := tls.ServiceAccount(sa); err != nil {
		t.Fatal(err)
	}
	if _, err := rest.InCluster(plain.URL, sa); err == nil || !strings.Contains(err.Error(), "plain HTTP") {
		t.Fatalf("InCluster(%s): %v, want a refusal saying plain HTTP", plain.URL, err)
	}
	api := &rest.Client{URL: plain.URL, TokenFile: filepath.Join(sa, "token"), HTTP: plain.Client()}
	d, err := dra.New(dra.Options{NodeName: node, PluginDir: filepath.Join(dir, "plugin"),
		RegistryDir: filepath.Join(dir, "registry"), API: api, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	d.Set(snap(1, dev("mlx5_0", 0, "InfiniBand")), true)
	d.Serve(ctx)
	if n := atomic.LoadInt32(&tokens); n != 0 {
		t.Fatalf("the token went over plain HTTP %d times (%d requests)", n, atomic.LoadInt32(&requests))
	}
}
