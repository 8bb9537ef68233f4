// SPDX-License-Identifier: MIT

package kubeletplugin

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
	pluginregistration "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/pluginregistration/v1"
)

// The sockets' names, fixed or the pod's own in a rolling update.
func TestSocketNames(t *testing.T) {
	o := Options{DriverName: "rdmad.io", PluginDir: "/p", RegistryDir: "/r"}
	if o.DRASocket() != "/p/dra.sock" || o.RegistrationSocket() != "/r/rdmad.io-reg.sock" {
		t.Errorf("fixed: %s %s", o.DRASocket(), o.RegistrationSocket())
	}
	o.RollingUpdateUID = "u1"
	if o.DRASocket() != "/p/dra-u1.sock" || o.RegistrationSocket() != "/r/rdmad.io-u1-reg.sock" {
		t.Errorf("rolling update: %s %s", o.DRASocket(), o.RegistrationSocket())
	}
}

type plugin struct {
	drav1.UnimplementedDRAPluginServer
}

// The kubelet's plugin watcher asks GetInfo on the registration socket
// and hears the DRA socket, the name and the versions; its report of the
// registration taken reaches Options.Registered.
func TestRegistration(t *testing.T) {
	dir := t.TempDir()
	registered := make(chan struct{}, 1)
	o := Options{DriverName: "rdmad.io", PluginDir: filepath.Join(dir, "p"),
		RegistryDir: filepath.Join(dir, "r"), SupportedVersions: DRAServices,
		Registered: func() { registered <- struct{}{} }, Logf: t.Logf}
	h, err := Start(&plugin{}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, err := grpc.DialContext(ctx, o.RegistrationSocket(), grpc.WithInsecure(),
		grpc.WithBlock(), grpc.WithContextDialer(
			func(ctx context.Context, a string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", a)
			}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	reg := pluginregistration.NewRegistrationClient(cc)
	info, err := reg.GetInfo(ctx, &pluginregistration.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != PluginType || info.Name != "rdmad.io" || info.Endpoint != o.DRASocket() ||
		len(info.SupportedVersions) != 2 || info.SupportedVersions[0] != "v1.DRAPlugin" {
		t.Errorf("GetInfo: %v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx,
		&pluginregistration.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-registered:
	case <-ctx.Done():
		t.Fatal("Registered not called")
	}
}
