// SPDX-License-Identifier: MIT

// Package dra is a Kubernetes DRA driver fed by rdmad's events:
// rdmad-dra(8).  It registers with the kubelet's plugin watcher
// (pluginregistration/v1), serves the kubelet's DRA service (dra/v1 and
// v1beta1: NodePrepareResources, NodeUnprepareResources) and its device
// health service (dra-health v1 and v1alpha1: NodeWatchResources),
// and publishes the node's devices as ResourceSlices (resource.k8s.io/v1)
// through the API server's REST interface.  Every state rdmad pushes
// reaches the slices and the health streams at once; prepared claims
// are kept in a checkpoint and survive a restart of the driver.
//
// What is rdmad's own is here; the kubelet plugin's sockets and
// registration (internal/kubeletplugin), the publishing of the slices
// (internal/resourceslice), the API server's client (internal/rest), the
// backoff (internal/wait) and the API's objects (internal/api/...) are
// stand-ins for upstream's libraries, each in the shape of the one it
// stands in for.
package dra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/rdmad/rdmad/bindings/go/cdi"
	"github.com/rdmad/rdmad/bindings/go/deviceplugin"
	resourceapi "github.com/rdmad/rdmad/bindings/go/internal/api/resource/v1"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
	"github.com/rdmad/rdmad/bindings/go/internal/kubeletplugin"
	"github.com/rdmad/rdmad/bindings/go/internal/resourceslice"
	"github.com/rdmad/rdmad/bindings/go/internal/rest"
	"github.com/rdmad/rdmad/bindings/go/internal/wait"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
)

// DefaultDriverName is the driver's name: the ResourceSlices' driver,
// the attributes' domain, the plugin's name with the kubelet.
const DefaultDriverName = "rdmad.io"

// Options of a Driver.
type Options struct {
	DriverName  string       // DefaultDriverName where ""
	NodeName    string       // this node: the pool's name and the slices' node
	Socket      string       // rdmad's socket ("" as rdmad.Dial)
	PluginDir   string       // the DRA service's socket and the checkpoint
	RegistryDir string       // the kubelet's plugins_registry
	API         *rest.Client // nil: no slices published, no claims read
	CDISpecDir  string       // where the CDI spec is written ("": not)
	SocketMount string       // CDI: rdmad's socket directory for containers
	SysRoot     string       // sysfs ("" /sys), for pcieRoot
	// Select is which devices the driver offers (rdmad-device-plugin's
	// matchers; nil: every device).
	Select rdmad.Selector
	// Slots: 0, every device is exclusive (one claim at a time); N
	// (deviceplugin.ValidSlots), every device is shared by up to N
	// claims, published with allowMultipleAllocations and the capacity
	// "slots" (shares.go).
	Slots int
	// TaintEffect is the effect of the taint on a device none of whose
	// ports is up: NoSchedule where "", NoExecute, None, or TaintOff.
	TaintEffect string
	// ResyncPeriod is how often the slices are compared with the API
	// server's besides (resourceslice.DefaultResyncPeriod where 0).
	ResyncPeriod time.Duration
	// RollingUpdateUID: the pod's UID, for seamless upgrades
	// (rolling.go): sockets of the pod's own, and the plugin
	// directory's state shared under a lock; "": fixed socket names.
	RollingUpdateUID string
	// MetricsAddress: where the metrics are served over HTTP, at
	// /metrics (host:port; "": not served).
	MetricsAddress string
	// Logf reports what happens; nil: nothing.
	Logf func(format string, args ...interface{})
}

func (o *Options) logf(format string, args ...interface{}) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Driver is the state shared by the kubelet's services, the publisher of
// slices and the feed from rdmad.
type Driver struct {
	drav1.UnimplementedDRAPluginServer
	o Options

	mu      sync.Mutex
	snap    *rdmad.Snapshot // nil until rdmad's first state
	up      bool            // rdmad reachable
	claims  map[string]PreparedClaim
	changed chan struct{}        // closed and replaced at every change
	pool    []resourceapi.Device // what the slices should list
	poolSet bool                 // pool is worth publishing (rdmad was heard)
	// slices publishes the pool (nil: no API server).
	slices *resourceslice.Controller
	spec   *cdi.Writer
	// claimSpecs are the prepared claims' own spec files, by UID, and
	// resolved what each claim's device resolved to when last written.
	claimSpecs map[string]*cdi.Writer
	resolved   map[string]string
	// backoff paces the requests to the API server after failures.
	backoff *wait.ExponentialBackoffManager
	// metrics: what metrics.go serves; metricsAddr where, once served.
	metrics     *Metrics
	metricsAddr net.Addr
	// The status worker's (claimstatus.go): statusWake wakes it,
	// statusApplied is what it last applied to each claim (JSON),
	// statusGone the claims unprepared whose entries are still to go.
	statusWake    chan struct{}
	statusApplied map[string]string
	statusGone    map[string]statusRef
}

// New makes a Driver, reading the checkpoint of prepared claims in
// o.PluginDir (a bad one is set aside and reported; the driver starts
// without it).
func New(o Options) (*Driver, error) {
	if o.DriverName == "" {
		o.DriverName = DefaultDriverName
	}
	if o.SysRoot == "" {
		o.SysRoot = "/sys"
	}
	if o.NodeName == "" {
		return nil, errors.New("no node name (--node-name, or NODE_NAME from the pod's spec.nodeName)")
	}
	if o.Slots != 0 {
		if err := deviceplugin.ValidSlots(o.Slots); err != nil {
			return nil, err
		}
	}
	if err := ValidTaintEffect(o.TaintEffect); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.PluginDir, 0o750); err != nil {
		return nil, err
	}
	d := &Driver{o: o, changed: make(chan struct{}),
		claimSpecs: map[string]*cdi.Writer{}, resolved: map[string]string{},
		backoff: &wait.ExponentialBackoffManager{}, statusWake: make(chan struct{}, 1),
		statusApplied: map[string]string{}, statusGone: map[string]statusRef{},
		metrics: NewMetrics()}
	if o.API != nil {
		o.API.Metrics = d.metrics
		d.slices = resourceslice.New(resourceslice.Options{
			DriverName: o.DriverName, NodeName: o.NodeName, Client: o.API,
			ResyncPeriod: o.ResyncPeriod, Backoff: d.backoff,
			Metrics: d.metrics, Logf: o.Logf})
	}
	if o.RollingUpdateUID != "" {
		if !uidPattern.MatchString(o.RollingUpdateUID) {
			return nil, fmt.Errorf("--rolling-update-uid %q: not a pod UID (it names sockets)", o.RollingUpdateUID)
		}
	}
	unlock := d.shared()
	defer unlock()
	claims, err := LoadCheckpoint(d.checkpointPath())
	if err != nil {
		o.logf("%v", err)
	}
	d.claims = claims
	d.metrics.Prepared(len(claims))
	changed := rebind(d.claims, o.logf)
	if d.reconcileSpecs() {
		changed = true
	}
	// Every claim's spec resolves to nothing until rdmad's first state
	// says which device has each identity now.
	d.writeClaimSpecs()
	if changed {
		if err := SaveCheckpoint(d.checkpointPath(), d.claims); err != nil {
			o.logf("saving the checkpoint: %v", err)
		}
	}
	if o.CDISpecDir != "" {
		d.spec = cdi.NewWriter(o.CDISpecDir)
	}
	return d, nil
}

func (d *Driver) checkpointPath() string {
	return filepath.Join(d.o.PluginDir, "checkpoint.json")
}

// Set takes a state from rdmad (@up false: rdmad out of reach, @s the
// last state known): the slices, the health streams and the CDI spec
// follow it.
func (d *Driver) Set(s *rdmad.Snapshot, up bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if up && !d.up {
		d.o.logf("rdmad connected at generation %d", s.Generation)
	} else if !up && d.up {
		d.o.logf("rdmad lost: every device's health Unknown until it is back; the slices stay")
	}
	if up {
		d.snap = s
	}
	d.up = up
	d.notify()
	if !up {
		return
	}
	pool := d.o.shape(Pool(d.snap, d.o.Select, d.o.SysRoot), d.snap)
	if !d.poolSet || !reflect.DeepEqual(pool, d.pool) {
		d.pool, d.poolSet = pool, true
		if d.slices != nil {
			d.slices.Update(pool)
		}
	}
	if d.spec != nil {
		if _, err := d.spec.Write(cdi.Spec(d.snap,
			cdi.Options{SocketDir: d.o.SocketMount})); err != nil {
			d.o.logf("CDI spec %s: %v", d.spec.Path(), err)
		}
	}
	unlock := d.shared()
	d.writeClaimSpecs()
	unlock()
	d.wakeStatus()
}

// Resync has the publisher compare the slices with the API server's and
// repair them (the kubelet registered the driver: it may have deleted
// them at its start).
func (d *Driver) Resync() {
	if d.slices != nil {
		d.slices.Resync()
	}
}

// notify wakes every health stream; d.mu held.
func (d *Driver) notify() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// Run serves the kubelet and publishes slices until @ctx ends, fed by
// rdmad at o.Socket.
func (d *Driver) Run(ctx context.Context) error {
	go rdmad.Follow(ctx, d.o.Socket, func(s *rdmad.Snapshot, err error) {
		d.Set(s, err == nil)
	}, rdmad.WithClientName("rdmad-dra"))
	return d.Serve(ctx)
}

// Serve serves the kubelet and publishes what Set is given until @ctx
// ends, then takes the sockets away (the slices and the checkpoint stay
// for the next run).
func (d *Driver) Serve(ctx context.Context) error {
	if d.o.MetricsAddress != "" {
		stop := make(chan struct{})
		defer close(stop)
		addr, err := d.metrics.serve(d.o.MetricsAddress, stop)
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.metricsAddr = addr
		d.mu.Unlock()
		d.o.logf("metrics at http://%s/metrics", addr)
	}
	k, err := kubeletplugin.Start(d, d.pluginOptions())
	if err != nil {
		return err
	}
	defer k.Stop()
	if d.o.API != nil {
		go func() {
			if !d.publishLock(ctx) {
				return
			}
			go d.slices.Run(ctx)
			net := make(chan struct{}, 1)
			go func() {
				if err := watchLinks(ctx, net); err != nil {
					d.o.logf("rtnetlink: %v: claims' status follows rdmad's states only", err)
				}
			}()
			d.statusWorker(ctx, net)
		}()
	} else {
		d.o.logf("no API server: no ResourceSlices are published")
	}
	return k.KeepRegistered(ctx)
}

// Services this driver offers, as the kubelet's plugin manager names
// them in the registration's supported versions: the DRA service (newest
// first: the kubelet takes the first it also speaks), then the health
// service (HealthServices: a kubelet opens a health stream only to a
// plugin that lists one, and takes v1 where both are).
var Services = append(append([]string{}, kubeletplugin.DRAServices...), HealthServices...)

// pluginOptions are the kubelet plugin's: the sockets, the services
// listed and served besides DRAPlugin (health.go), and a resync of the
// slices at every registration (the kubelet deletes them at its start).
func (d *Driver) pluginOptions() kubeletplugin.Options {
	return kubeletplugin.Options{DriverName: d.o.DriverName,
		PluginDir: d.o.PluginDir, RegistryDir: d.o.RegistryDir,
		RollingUpdateUID: d.o.RollingUpdateUID, SupportedVersions: Services,
		Register:   func(s *grpc.Server) { registerHealth(s, d) },
		Registered: d.Resync, Logf: d.o.Logf}
}

// DRASocket and RegistrationSocket are the driver's socket paths:
// dra.sock and DRIVER-reg.sock, or dra-UID.sock and DRIVER-UID-reg.sock
// with Options.RollingUpdateUID (rolling.go).
func (d *Driver) DRASocket() string {
	o := d.pluginOptions()
	return o.DRASocket()
}

func (d *Driver) RegistrationSocket() string {
	o := d.pluginOptions()
	return o.RegistrationSocket()
}

// Metrics are the driver's metrics.
func (d *Driver) Metrics() *Metrics { return d.metrics }

// MetricsAddr is where the metrics are served, nil until they are.
func (d *Driver) MetricsAddr() net.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.metricsAddr
}

// errorf is a refusal of a claim, in the words the kubelet shows.
func errorf(format string, args ...interface{}) string {
	return fmt.Sprintf("rdmad-dra: "+format, args...)
}
