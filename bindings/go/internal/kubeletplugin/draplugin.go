// SPDX-License-Identifier: MIT

package kubeletplugin

// The kubelet's side: the DRA service socket (DRAPlugin v1 and v1beta1,
// DRAResourceHealth v1 and v1alpha1) in the plugin directory, and
// the registration socket in plugins_registry that the kubelet's plugin
// watcher finds (inotify) and asks GetInfo, answering with
// NotifyRegistrationStatus.  The DRA socket listens before the
// registration socket appears, so the kubelet never finds an endpoint
// not yet served.  A registration socket taken away (by hand, or by a
// kubelet cleaning its directory) is made again within a second.  What
// it stands in for, and how it differs: doc.go.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
	drav1beta1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1beta1"
	pluginregistration "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/pluginregistration/v1"
)

// DRAServices are the DRA service's versions served, as the kubelet's
// plugin manager names them in the registration's supported versions
// (newest first: the kubelet takes the first it also speaks).
var DRAServices = []string{"v1.DRAPlugin", "v1beta1.DRAPlugin"}

// PluginType is the plugin watcher's type of a DRA driver.
const PluginType = "DRAPlugin"

// Options of a Helper.
type Options struct {
	DriverName  string // the plugin's name with the kubelet
	PluginDir   string // where the DRA service's socket is
	RegistryDir string // the kubelet's plugins_registry
	// RollingUpdateUID: the pod's UID, for seamless upgrades: sockets of
	// the pod's own (RollingUpdate upstream); "": fixed socket names.
	RollingUpdateUID string
	// SupportedVersions are the services the registration lists:
	// DRAServices, then others Register serves (the health service).
	SupportedVersions []string
	// Register adds the services other than DRAPlugin to the DRA
	// socket's server (nil: none).
	Register func(*grpc.Server)
	// Registered is called when the kubelet reports the registration
	// taken (nil: not called).
	Registered func()
	// Logf reports what happens; nil: nothing.
	Logf func(format string, args ...interface{})
}

func (o *Options) logf(format string, args ...interface{}) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// DRASocket and RegistrationSocket are the plugin's socket paths:
// dra.sock and DRIVER-reg.sock, or dra-UID.sock and DRIVER-UID-reg.sock
// with a RollingUpdateUID.
func (o *Options) DRASocket() string {
	return filepath.Join(o.PluginDir, "dra"+o.uidPart()+".sock")
}
func (o *Options) RegistrationSocket() string {
	return filepath.Join(o.RegistryDir, o.DriverName+o.uidPart()+"-reg.sock")
}

func (o *Options) uidPart() string {
	if o.RollingUpdateUID == "" {
		return ""
	}
	return "-" + o.RollingUpdateUID
}

// Helper serves the plugin's two sockets (Start) until Stop.
type Helper struct {
	o        Options
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

// Start serves @plugin (DRAPlugin v1, and v1beta1 converted to it) and
// what o.Register adds on the DRA socket, then the registration socket.
func Start(plugin drav1.DRAPluginServer, o Options) (*Helper, error) {
	l, err := listen(o.DRASocket())
	if err != nil {
		return nil, err
	}
	k := &Helper{o: o, dra: grpc.NewServer()}
	drav1.RegisterDRAPluginServer(k.dra, plugin)
	drav1beta1.RegisterDRAPluginServer(k.dra, &v1beta1{d: plugin})
	if o.Register != nil {
		o.Register(k.dra)
	}
	go k.dra.Serve(l)
	if err := k.register(); err != nil {
		k.dra.Stop()
		return nil, err
	}
	return k, nil
}

// register serves the registration socket anew.
func (k *Helper) register() error {
	if k.reg != nil {
		k.reg.Stop()
	}
	path := k.o.RegistrationSocket()
	l, err := listen(path)
	if err != nil {
		return err
	}
	k.reg = grpc.NewServer()
	pluginregistration.RegisterRegistrationServer(k.reg, &registration{o: &k.o})
	go k.reg.Serve(l)
	k.regInode = inode(path)
	k.o.logf("serving %s; registration at %s", k.o.DRASocket(), path)
	return nil
}

// Stop takes both sockets away, the registration first: the kubelet
// stops calling.
func (k *Helper) Stop() {
	k.reg.Stop()
	os.Remove(k.o.RegistrationSocket())
	k.dra.Stop()
	os.Remove(k.o.DRASocket())
}

// KeepRegistered makes the registration socket again when it is gone,
// until @ctx ends.
func (k *Helper) KeepRegistered(ctx context.Context) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if inode(k.o.RegistrationSocket()) != k.regInode {
				k.o.logf("registration socket gone: made again")
				if err := k.register(); err != nil {
					k.o.logf("%v", err)
				}
			}
		}
	}
}

// registration is the plugin watcher's Registration service.
type registration struct {
	pluginregistration.UnimplementedRegistrationServer
	o *Options
}

func (r *registration) GetInfo(ctx context.Context, req *pluginregistration.InfoRequest) (*pluginregistration.PluginInfo, error) {
	return &pluginregistration.PluginInfo{Type: PluginType,
		Name: r.o.DriverName, Endpoint: r.o.DRASocket(),
		SupportedVersions: r.o.SupportedVersions}, nil
}

func (r *registration) NotifyRegistrationStatus(ctx context.Context, st *pluginregistration.RegistrationStatus) (*pluginregistration.RegistrationStatusResponse, error) {
	if st.GetPluginRegistered() {
		r.o.logf("registered with the kubelet")
		if r.o.Registered != nil {
			r.o.Registered()
		}
	} else {
		r.o.logf("the kubelet refused the registration: %s", st.GetError())
	}
	return &pluginregistration.RegistrationStatusResponse{}, nil
}

// v1beta1 serves DRAPlugin v1beta1, whose messages are v1's on the wire
// (same fields, same numbers): each is converted by marshalling it.
type v1beta1 struct {
	drav1beta1.UnimplementedDRAPluginServer
	d drav1.DRAPluginServer
}

// Convert copies message @from into @to, a message of another version
// with the same fields and numbers, by marshalling it.
func Convert(from, to proto.Message) error {
	b, err := proto.Marshal(from)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, to)
}

func (v *v1beta1) NodePrepareResources(ctx context.Context, req *drav1beta1.NodePrepareResourcesRequest) (*drav1beta1.NodePrepareResourcesResponse, error) {
	in := &drav1.NodePrepareResourcesRequest{}
	if err := Convert(req, in); err != nil {
		return nil, err
	}
	out, err := v.d.NodePrepareResources(ctx, in)
	if err != nil {
		return nil, err
	}
	resp := &drav1beta1.NodePrepareResourcesResponse{}
	return resp, Convert(out, resp)
}

func (v *v1beta1) NodeUnprepareResources(ctx context.Context, req *drav1beta1.NodeUnprepareResourcesRequest) (*drav1beta1.NodeUnprepareResourcesResponse, error) {
	in := &drav1.NodeUnprepareResourcesRequest{}
	if err := Convert(req, in); err != nil {
		return nil, err
	}
	out, err := v.d.NodeUnprepareResources(ctx, in)
	if err != nil {
		return nil, err
	}
	resp := &drav1beta1.NodeUnprepareResourcesResponse{}
	return resp, Convert(out, resp)
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
