// SPDX-License-Identifier: MIT

package dra

// The kubelet's side: the DRA service socket (DRAPlugin v1 and v1beta1,
// DRAResourceHealth v1 and v1alpha1) in the plugin directory, and
// the registration socket in plugins_registry that the kubelet's plugin
// watcher finds (inotify) and asks GetInfo, answering with
// NotifyRegistrationStatus.  The DRA socket listens before the
// registration socket appears, so the kubelet never finds an endpoint
// not yet served.  A registration socket taken away (by hand, or by a
// kubelet cleaning its directory) is made again within a second.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/rdmad/rdmad/bindings/go/dra/drav1"
	"github.com/rdmad/rdmad/bindings/go/dra/drav1beta1"
	"github.com/rdmad/rdmad/bindings/go/dra/pluginregistration"
)

// Services this driver offers, as the kubelet's plugin manager names
// them in the registration's supported versions: the DRA service (newest
// first: the kubelet takes the first it also speaks), then the health
// service (HealthServices: a kubelet opens a health stream only to a
// plugin that lists one, and takes v1 where both are).
var Services = append([]string{"v1.DRAPlugin", "v1beta1.DRAPlugin"}, HealthServices...)

// PluginType is the plugin watcher's type of a DRA driver.
const PluginType = "DRAPlugin"

// DRASocket and RegistrationSocket are the driver's socket paths:
// dra.sock and DRIVER-reg.sock, or dra-UID.sock and DRIVER-UID-reg.sock
// with Options.RollingUpdateUID (rolling.go).
func (d *Driver) DRASocket() string {
	return filepath.Join(d.o.PluginDir, "dra"+d.uidPart()+".sock")
}
func (d *Driver) RegistrationSocket() string {
	return filepath.Join(d.o.RegistryDir, d.o.DriverName+d.uidPart()+"-reg.sock")
}

func (d *Driver) uidPart() string {
	if d.o.RollingUpdateUID == "" {
		return ""
	}
	return "-" + d.o.RollingUpdateUID
}

type kubelet struct {
	d        *Driver
	dra      *grpc.Server
	reg      *grpc.Server
	regInode uint64
}

// listen removes what is at @path and listens there.
func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return net.Listen("unix", path)
}

func (d *Driver) serveKubelet() (*kubelet, error) {
	l, err := listen(d.DRASocket())
	if err != nil {
		return nil, err
	}
	k := &kubelet{d: d, dra: grpc.NewServer()}
	drav1.RegisterDRAPluginServer(k.dra, d)
	drav1beta1.RegisterDRAPluginServer(k.dra, &v1beta1{d: d})
	registerHealth(k.dra, d)
	go k.dra.Serve(l)
	if err := k.register(); err != nil {
		k.dra.Stop()
		return nil, err
	}
	return k, nil
}

// register serves the registration socket anew.
func (k *kubelet) register() error {
	if k.reg != nil {
		k.reg.Stop()
	}
	path := k.d.RegistrationSocket()
	l, err := listen(path)
	if err != nil {
		return err
	}
	k.reg = grpc.NewServer()
	pluginregistration.RegisterRegistrationServer(k.reg, &registration{d: k.d})
	go k.reg.Serve(l)
	k.regInode = inode(path)
	k.d.o.logf("serving %s; registration at %s", k.d.DRASocket(), path)
	return nil
}

func (k *kubelet) stop() {
	// The registration first: the kubelet stops calling.
	k.reg.Stop()
	os.Remove(k.d.RegistrationSocket())
	k.dra.Stop()
	os.Remove(k.d.DRASocket())
}

// watch makes the registration socket again when it is gone, until
// @ctx ends.
func (k *kubelet) watch(ctx context.Context) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if inode(k.d.RegistrationSocket()) != k.regInode {
				k.d.o.logf("registration socket gone: made again")
				if err := k.register(); err != nil {
					k.d.o.logf("%v", err)
				}
			}
		}
	}
}

// registration is the plugin watcher's Registration service.
type registration struct {
	pluginregistration.UnimplementedRegistrationServer
	d *Driver
}

func (r *registration) GetInfo(ctx context.Context, req *pluginregistration.InfoRequest) (*pluginregistration.PluginInfo, error) {
	return &pluginregistration.PluginInfo{Type: PluginType,
		Name: r.d.o.DriverName, Endpoint: r.d.DRASocket(),
		SupportedVersions: Services}, nil
}

func (r *registration) NotifyRegistrationStatus(ctx context.Context, st *pluginregistration.RegistrationStatus) (*pluginregistration.RegistrationStatusResponse, error) {
	if st.GetPluginRegistered() {
		r.d.o.logf("registered with the kubelet")
		r.d.Resync()
	} else {
		r.d.o.logf("the kubelet refused the registration: %s", st.GetError())
	}
	return &pluginregistration.RegistrationStatusResponse{}, nil
}

// v1beta1 serves DRAPlugin v1beta1, whose messages are v1's on the wire
// (same fields, same numbers): each is converted by marshalling it.
type v1beta1 struct {
	drav1beta1.UnimplementedDRAPluginServer
	d *Driver
}

func convert(from, to proto.Message) error {
	b, err := proto.Marshal(from)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, to)
}

func (v *v1beta1) NodePrepareResources(ctx context.Context, req *drav1beta1.NodePrepareResourcesRequest) (*drav1beta1.NodePrepareResourcesResponse, error) {
	in := &drav1.NodePrepareResourcesRequest{}
	if err := convert(req, in); err != nil {
		return nil, err
	}
	out, err := v.d.NodePrepareResources(ctx, in)
	if err != nil {
		return nil, err
	}
	resp := &drav1beta1.NodePrepareResourcesResponse{}
	return resp, convert(out, resp)
}

func (v *v1beta1) NodeUnprepareResources(ctx context.Context, req *drav1beta1.NodeUnprepareResourcesRequest) (*drav1beta1.NodeUnprepareResourcesResponse, error) {
	in := &drav1.NodeUnprepareResourcesRequest{}
	if err := convert(req, in); err != nil {
		return nil, err
	}
	out, err := v.d.NodeUnprepareResources(ctx, in)
	if err != nil {
		return nil, err
	}
	resp := &drav1beta1.NodeUnprepareResourcesResponse{}
	return resp, convert(out, resp)
}

// inode is the inode number of @path, 0 where there is nothing.
func inode(path string) uint64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
