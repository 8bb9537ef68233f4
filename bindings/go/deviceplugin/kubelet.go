// SPDX-License-Identifier: MIT

package deviceplugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	api "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/deviceplugin/v1beta1"
)

// dialBackoff is how soon a refused dial is tried again.  A kubelet binds
// its socket (which inotify reports) a moment before it listens, so the
// first dial may be refused; grpc's default waits 1 s before the second.
var dialBackoff = backoff.Config{BaseDelay: 10 * time.Millisecond,
	Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

// dialUnix dials a Unix socket path with grpc (whose own "unix:" scheme
// came after Debian 12's grpc 1.33).
func dialUnix(ctx context.Context, path string) (*grpc.ClientConn, error) {
	return grpc.DialContext(ctx, path, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: dialBackoff,
			MinConnectTimeout: time.Second}),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
}

// Endpoint is a plugin's socket name in the kubelet's directory:
// "rdmad-" and the resource's name with '/' made '_'.
func Endpoint(resourceName string) string {
	return "rdmad-" + strings.ReplaceAll(resourceName, "/", "_") + ".sock"
}

// serving is one plugin's gRPC server on its socket.
type serving struct {
	plugin *Plugin
	path   string
	server *grpc.Server
}

// serve listens on dir/Endpoint (taking away a stale socket of that name)
// and serves p there.
func serve(p *Plugin, dir string) (*serving, error) {
	path := filepath.Join(dir, Endpoint(p.ResourceName()))
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	s := &serving{plugin: p, path: path, server: grpc.NewServer()}
	api.RegisterDevicePluginServer(s.server, p)
	go s.server.Serve(l)
	return s, nil
}

// stop ends the server, its streams, and takes its socket away.
func (s *serving) stop() {
	s.server.Stop()
	os.Remove(s.path)
}

// alive reports whether the socket file is still the one listened on
// (the kubelet removes every plugin's socket when it starts).
func (s *serving) alive() bool {
	_, err := os.Stat(s.path)
	return err == nil
}

// register tells the kubelet at dir/kubelet.sock about s.
func (s *serving) register(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := dialUnix(ctx, filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	defer conn.Close()
	_, err = api.NewRegistrationClient(conn).Register(ctx,
		&api.RegisterRequest{
			Version:      api.Version,
			Endpoint:     filepath.Base(s.path),
			ResourceName: s.plugin.ResourceName(),
			Options: &api.DevicePluginOptions{
				GetPreferredAllocationAvailable: true},
		})
	if err != nil {
		return fmt.Errorf("registering %s: %w",
			s.plugin.ResourceName(), err)
	}
	return nil
}
