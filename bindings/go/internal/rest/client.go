// SPDX-License-Identifier: MIT

package rest

// The API server's REST interface, reached with the pod's service
// account (doc.go).  The token goes over TLS only.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "github.com/rdmad/rdmad/bindings/go/internal/api/core/v1"
	resourceapi "github.com/rdmad/rdmad/bindings/go/internal/api/resource/v1"
	metav1 "github.com/rdmad/rdmad/bindings/go/internal/apimachinery/meta/v1"
	"github.com/rdmad/rdmad/bindings/go/internal/wait"
)

// ServiceAccountDir is where a pod finds its service account's token,
// CA certificate and namespace.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Client is a client of the API server's REST interface.
type Client struct {
	URL       string // https://host:port: the token goes over TLS only
	TokenFile string // read at every request: the kubelet rotates it
	HTTP      *http.Client
	// Metrics counts every answer (nil: not counted).
	Metrics RequestCounter
}

// RequestCounter counts the API server's answers, by verb and resource
// as the API server names them, and HTTP status (0: no answer), as
// client-go's tools/metrics RequestResult does.
type RequestCounter interface {
	Request(verb, resource string, code int)
}

// errPlainHTTP refuses to send the service account's token in clear.
var errPlainHTTP = errors.New("refusing to send the service account's token over plain HTTP: --apiserver must be an https:// URL")

// checkURL says why @u cannot carry the token, nil where it can.
func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("--apiserver %q: %v", u, err)
	}
	if p.Scheme != "https" || p.Host == "" {
		return fmt.Errorf("--apiserver %q: %w", u, errPlainHTTP)
	}
	return nil
}

// InCluster is the API server of the cluster the pod runs in: the
// address from $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT
// unless @server is set, trusting the service account's ca.crt in @saDir
// ("" for ServiceAccountDir) and authenticating with its token.
func InCluster(server, saDir string) (*Client, error) {
	if saDir == "" {
		saDir = ServiceAccountDir
	}
	if server == "" {
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, errors.New("not in a cluster: no KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (or give --apiserver)")
		}
		server = "https://" + net.JoinHostPort(host, port)
	}
	if err := checkURL(server); err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", filepath.Join(saDir, "ca.crt"))
	}
	return &Client{URL: strings.TrimSuffix(server, "/"),
		TokenFile: filepath.Join(saDir, "token"),
		HTTP: &http.Client{Timeout: 10 * time.Second,
			Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: pool,
					MinVersion: tls.VersionTLS12},
				MaxIdleConnsPerHost: 2,
				IdleConnTimeout:     90 * time.Second}}}, nil
}

// StatusError is an answer of the API server other than success.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("API server: %d %s", e.Code, e.Message)
}

// IsStatus reports whether err is the API server answering @code.
func IsStatus(err error, code int) bool {
	var s *StatusError
	return errors.As(err, &s) && s.Code == code
}

// do sends @in (nil: no body) with @method to @path and decodes the
// answer into @out (nil: drop it).
func (a *Client) do(ctx context.Context, method, path string, in, out interface{}) error {
	return a.doAs(ctx, method, path, "application/json", in, out)
}

// newRequest is a request of @method for @pathQuery on the API
// server, with its token and an Accept of JSON.
func (a *Client) newRequest(ctx context.Context, method, pathQuery string, body io.Reader) (*http.Request, error) {
	if err := checkURL(a.URL); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, a.URL+pathQuery, body)
	if err != nil {
		return nil, err
	}
	tok, err := os.ReadFile(a.TokenFile)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// doAs is do with the body's content type @ctype.
func (a *Client) doAs(ctx context.Context, method, path, ctype string, in, out interface{}) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := a.newRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := a.HTTP.Do(req)
	a.count(method, path, resp)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &st) != nil || st.Message == "" {
			st.Message = strings.TrimSpace(string(b))
		}
		return &StatusError{Code: resp.StatusCode, Message: st.Message}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

const slicesPath = "/apis/resource.k8s.io/v1/resourceslices"

// count records the answer @resp (nil: none) to @method on @pathQuery
// in a.Metrics, by verb and resource as the API server names them.
func (a *Client) count(method, pathQuery string, resp *http.Response) {
	if a.Metrics == nil {
		return
	}
	path, query, _ := strings.Cut(pathQuery, "?")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/R[/NAME[/SUB]], /apis/G/V/[namespaces/NS/]R[/NAME[/SUB]]
	if len(parts) > 0 && parts[0] == "apis" && len(parts) > 1 {
		parts = parts[1:]
	}
	if len(parts) > 2 {
		parts = parts[2:]
	}
	if len(parts) > 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource := parts[0]
	if len(parts) > 2 {
		resource += "/" + parts[2]
	}
	verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update",
		http.MethodDelete: "delete", http.MethodPatch: "patch"}[method]
	switch {
	case verb != "":
	case strings.Contains(query, "watch=true"):
		verb = "watch"
	case len(parts) == 1:
		verb = "list"
	default:
		verb = "get"
	}
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	a.Metrics.Request(verb, resource, code)
}

// CreateSlice creates @s; the answer has its resourceVersion.
func (a *Client) CreateSlice(ctx context.Context, s *resourceapi.ResourceSlice) (*resourceapi.ResourceSlice, error) {
	out := &resourceapi.ResourceSlice{}
	return out, a.do(ctx, http.MethodPost, slicesPath+"?fieldValidation=Strict", s, out)
}

// UpdateSlice replaces @s (its resourceVersion that of the one replaced).
func (a *Client) UpdateSlice(ctx context.Context, s *resourceapi.ResourceSlice) (*resourceapi.ResourceSlice, error) {
	out := &resourceapi.ResourceSlice{}
	return out, a.do(ctx, http.MethodPut, slicesPath+"/"+url.PathEscape(s.Metadata.Name)+"?fieldValidation=Strict", s, out)
}

// DeleteSlice deletes the ResourceSlice @name; one already gone is no error.
func (a *Client) DeleteSlice(ctx context.Context, name string) error {
	err := a.do(ctx, http.MethodDelete, slicesPath+"/"+url.PathEscape(name), nil, nil)
	if IsStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// sliceSelector selects the ResourceSlices of @driver on node @node (the
// field selectors the API server takes for ResourceSlices, as the
// kubelet's wipe uses them).
func sliceSelector(node, driver string) string {
	return url.QueryEscape("spec.nodeName=" + node + ",spec.driver=" + driver)
}

// ListSlices reads every ResourceSlice of @driver on node @node, and
// the list's resourceVersion.
func (a *Client) ListSlices(ctx context.Context, node, driver string) (*resourceapi.ResourceSliceList, error) {
	l := &resourceapi.ResourceSliceList{}
	if err := a.do(ctx, http.MethodGet, slicesPath+"?fieldSelector="+sliceSelector(node, driver), nil, l); err != nil {
		return nil, err
	}
	return l, nil
}

// watchTimeout is the least a watch request lasts before the driver
// makes the next, from where it ended: each asks for between it and
// twice it (watchTimeoutFor), as client-go's reflector does.  The
// request itself is given up watchGrace after that, should the server
// never end it (a connection gone dead without a reset).
const (
	watchTimeout = 5 * time.Minute
	watchGrace   = 30 * time.Second
)

// watchTimeoutFor is the timeout a watch request asks for: between
// watchTimeout and twice it, at random, as client-go's reflector asks
// (its minWatchTimeout times 1 + rand), so that the watches of a
// cluster's drivers do not all end and come back together.
func watchTimeoutFor() time.Duration {
	return wait.Jitter(watchTimeout, 1.0)
}

// WatchSlices follows the changes of the ResourceSlices of @driver on
// node @node after resourceVersion @rv, handing each event to @fn (a
// bookmark with only the object's resourceVersion), until the API server
// ends the watch (nil: the stream ended; the caller decides when to make
// the next), the connection breaks, or @ctx ends.  A resourceVersion the server no
// longer has is a StatusError 410 Gone: list again, then watch from the
// list's.
func (a *Client) WatchSlices(ctx context.Context, node, driver, rv string, fn func(typ string, s *resourceapi.ResourceSlice)) error {
	timeout := watchTimeoutFor()
	q := "?watch=true&allowWatchBookmarks=true&fieldSelector=" + sliceSelector(node, driver) +
		"&resourceVersion=" + url.QueryEscape(rv) +
		fmt.Sprintf("&timeoutSeconds=%d", int(timeout/time.Second))
	ctx, cancel := context.WithTimeout(ctx, timeout+watchGrace)
	defer cancel()
	req, err := a.newRequest(ctx, http.MethodGet, slicesPath+q, nil)
	if err != nil {
		return err
	}
	// The stream outlives a.HTTP's timeout for one request.
	resp, err := (&http.Client{Transport: a.HTTP.Transport}).Do(req)
	a.count(http.MethodGet, slicesPath+q, resp)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &st) != nil || st.Message == "" {
			st.Message = strings.TrimSpace(string(b))
		}
		return &StatusError{Code: resp.StatusCode, Message: st.Message}
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if ev.Type == metav1.WatchError {
			var st struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			json.Unmarshal(ev.Object, &st)
			return &StatusError{Code: st.Code, Message: st.Message}
		}
		s := &resourceapi.ResourceSlice{}
		if err := json.Unmarshal(ev.Object, s); err != nil {
			return err
		}
		fn(ev.Type, s)
	}
}

// GetNode reads the Node @name.
func (a *Client) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	return n, a.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(name), nil, n)
}

// ApplyClaimStatus applies @st to the status of claim @namespace/@name
// (st.Metadata.UID set: that claim and no other of the name) as field
// manager @manager, server-side apply with force: the API server keeps
// what other managers (other drivers) own of status.devices, and drops
// the entries @manager applied before and no longer does.
func (a *Client) ApplyClaimStatus(ctx context.Context, manager string, st *resourceapi.ClaimStatusApply) error {
	path := "/apis/resource.k8s.io/v1/namespaces/" + url.PathEscape(st.Metadata.Namespace) +
		"/resourceclaims/" + url.PathEscape(st.Metadata.Name) + "/status?fieldManager=" +
		url.QueryEscape(manager) + "&force=true&fieldValidation=Strict"
	return a.doAs(ctx, http.MethodPatch, path, "application/apply-patch+yaml", st, nil)
}

// GetClaim reads the ResourceClaim @namespace/@name.
func (a *Client) GetClaim(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error) {
	c := &resourceapi.ResourceClaim{}
	return c, a.do(ctx, http.MethodGet, "/apis/resource.k8s.io/v1/namespaces/"+
		url.PathEscape(namespace)+"/resourceclaims/"+url.PathEscape(name), nil, c)
}
