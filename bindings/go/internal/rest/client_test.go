// SPDX-License-Identifier: MIT

package rest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The token goes over TLS only: an http:// API server is refused before
// anything is read or sent.
func TestInClusterRefusesPlainHTTP(t *testing.T) {
	for _, u := range []string{"http://10.0.0.1:6443", "https://", "ftp://10.0.0.1"} {
		if _, err := InCluster(u, t.TempDir()); err == nil ||
			!strings.Contains(err.Error(), "plain HTTP") {
			t.Errorf("InCluster(%q): %v, want a refusal saying plain HTTP", u, err)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("not a certificate"), 0o600)
	if _, err := InCluster("https://10.0.0.1:6443", dir); err == nil ||
		!strings.Contains(err.Error(), "no certificate") {
		t.Errorf("a ca.crt without a certificate: %v", err)
	}
}

type counted struct{ got []string }

func (c *counted) Request(verb, resource string, code int) {
	c.got = append(c.got, verb+" "+resource)
}

// Every answer is counted by verb and resource as the API server names
// them (client-go's RequestResult), the status subresource included.
func TestCountByVerbAndResource(t *testing.T) {
	c := &counted{}
	a := &Client{Metrics: c}
	for _, r := range []struct{ method, path, want string }{
		{http.MethodPost, slicesPath + "?fieldValidation=Strict", "create resourceslices"},
		{http.MethodPut, slicesPath + "/n-rdmad.io-0", "update resourceslices"},
		{http.MethodDelete, slicesPath + "/n-rdmad.io-0", "delete resourceslices"},
		{http.MethodGet, slicesPath + "?fieldSelector=x", "list resourceslices"},
		{http.MethodGet, slicesPath + "?watch=true&resourceVersion=5", "watch resourceslices"},
		{http.MethodGet, "/api/v1/nodes/n", "get nodes"},
		{http.MethodGet, "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c", "get resourceclaims"},
		{http.MethodPatch, "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status?force=true", "patch resourceclaims/status"},
	} {
		c.got = nil
		a.count(r.method, r.path, nil)
		if len(c.got) != 1 || c.got[0] != r.want {
			t.Errorf("%s %s: counted %v, want %q", r.method, r.path, c.got, r.want)
		}
	}
}
