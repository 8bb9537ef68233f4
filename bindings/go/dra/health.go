// SPDX-License-Identifier: MIT

package dra

// Device health for the kubelet (DRAResourceHealth.NodeWatchResources,
// KEP-4680), which it shows in pod.status.containerStatuses[]
// .allocatedResourcesStatus: every device the pool lists, Healthy when
// rdmad says it is ready and Unhealthy when not; every device of a
// prepared claim that the pool no longer lists (away, removing,
// removed), Unhealthy; while rdmad is out of reach, all of them Unknown.
// Each comes with its reason in the message.  A stream sends the whole
// list at once, again at every change of it, and every HealthRefresh
// besides (the kubelet takes a device whose health is older than its
// timeout, HealthTimeoutSeconds here, for Unknown).
//
// The released versions are served, v1 and v1alpha1 (same messages, same
// numbers): a kubelet since Kubernetes PR #139477 opens a stream only to a
// plugin whose registration lists a DRAResourceHealth service, and takes
// v1 where both are listed; an older one calls v1alpha1 unasked.

import (
	"fmt"
	"reflect"
	"sort"
	"time"

	"google.golang.org/grpc"

	healthv1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra-health/v1"
	healthv1alpha1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra-health/v1alpha1"
	"github.com/rdmad/rdmad/bindings/go/internal/kubeletplugin"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// HealthServices are the health services as the registration lists them
// ("<proto package>.<service>", the kubelet's names).
var HealthServices = []string{"v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"}

// Health of one device: the values of both versions' HealthStatus.
type Health int32

const (
	HealthUnknown   Health = 0
	HealthHealthy   Health = 1
	HealthUnhealthy Health = 2
)

// HealthTimeoutSeconds is the timeout each device's health is sent with;
// HealthRefresh, how often the whole list is sent again unchanged.
const (
	HealthTimeoutSeconds = 30
	HealthRefresh        = 10 * time.Second
)

// maxHealthMessage is the kubelet's limit on a message (it cuts longer).
const maxHealthMessage = 1024

// DeviceHealth is one device's health and why.
type DeviceHealth struct {
	Pool, Device string
	Health       Health
	Message      string
}

// HealthList is the health of every device the kubelet may ask about,
// sorted by device name; the channel is closed at the next change.
func (d *Driver) HealthList() ([]DeviceHealth, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var list []DeviceHealth
	seen := map[string]bool{}
	if d.snap != nil {
		for _, dev := range d.snap.Devices {
			n := DeviceName(dev)
			if !pooled(dev, d.o.Select) || seen[n] {
				continue
			}
			seen[n] = true
			h := DeviceHealth{Pool: d.o.NodeName, Device: n, Health: HealthHealthy,
				Message: fmt.Sprintf("%s: ready", dev.GetName())}
			if !rdmad.Ready(dev) {
				h.Health = HealthUnhealthy
				h.Message = fmt.Sprintf("%s: present, not ready (no ACTIVE port with a GID, or its netdev down)", dev.GetName())
			}
			list = append(list, h)
		}
	}
	for _, uid := range uids(d.claims) {
		for _, pd := range d.claims[uid].Devices {
			if seen[pd.Device] || pd.Pool != d.o.NodeName {
				continue
			}
			seen[pd.Device] = true
			list = append(list, DeviceHealth{Pool: pd.Pool, Device: pd.Device,
				Health: HealthUnhealthy, Message: d.absent(pd.Device)})
		}
	}
	if !d.up {
		for i := range list {
			list[i].Health = HealthUnknown
			list[i].Message = "rdmad out of reach: health unknown until it is back"
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Device < list[j].Device })
	return list, d.changed
}

// absent is why pool device @name, which a claim holds, is not in the
// pool: away, removing, removed; d.mu held.
func (d *Driver) absent(name string) string {
	var life *rdmadpb.Device
	if d.snap != nil {
		for _, dev := range d.snap.Devices {
			if DeviceName(dev) == name && (life == nil || rdmad.StateRank(dev) < rdmad.StateRank(life)) {
				life = dev
			}
		}
	}
	switch {
	case life == nil:
		return "removed (rdmad no longer lists it)"
	case rdmad.Away(life):
		return fmt.Sprintf("%s: away (unplugged, expected back)", life.GetName())
	case rdmad.Removing(life):
		return fmt.Sprintf("%s: removing (the kernel is unregistering it)", life.GetName())
	case rdmad.Present(life):
		return fmt.Sprintf("%s: not offered by this driver (--select)", life.GetName())
	}
	return fmt.Sprintf("%s: removed (still held)", life.GetName())
}

// watchHealth sends @send the health list now, at every change of it and
// every HealthRefresh, until the stream ends.
func (d *Driver) watchHealth(done <-chan struct{}, send func([]DeviceHealth) error) error {
	d.metrics.Streams(1)
	defer d.metrics.Streams(-1)
	tick := time.NewTicker(HealthRefresh)
	defer tick.Stop()
	var last []DeviceHealth
	again := true
	for {
		list, changed := d.HealthList()
		if again || !reflect.DeepEqual(list, last) {
			if err := send(list); err != nil {
				return err
			}
			last = list
		}
		again = false
		select {
		case <-done:
			return nil
		case <-changed:
		case <-tick.C:
			again = true
		}
	}
}

func registerHealth(s *grpc.Server, d *Driver) {
	healthv1.RegisterDRAResourceHealthServer(s, &healthV1{d: d})
	healthv1alpha1.RegisterDRAResourceHealthServer(s, &healthV1alpha1{d: d})
}

func message(h DeviceHealth) string {
	if len(h.Message) > maxHealthMessage {
		return h.Message[:maxHealthMessage-3] + "..."
	}
	return h.Message
}

// healthResponse is @list as dra-health v1 sends it.
func healthResponse(list []DeviceHealth) *healthv1.NodeWatchResourcesResponse {
	now := time.Now().Unix()
	resp := &healthv1.NodeWatchResourcesResponse{}
	for _, h := range list {
		resp.Devices = append(resp.Devices, &healthv1.DeviceHealth{
			Device: &healthv1.DeviceIdentifier{PoolName: h.Pool,
				DeviceName: h.Device},
			Health: healthv1.HealthStatus(h.Health), LastUpdatedTime: now,
			HealthCheckTimeoutSeconds: HealthTimeoutSeconds,
			Message:                   message(h)})
	}
	return resp
}

type healthV1 struct {
	healthv1.UnimplementedDRAResourceHealthServer
	d *Driver
}

func (v *healthV1) NodeWatchResources(req *healthv1.NodeWatchResourcesRequest, st healthv1.DRAResourceHealth_NodeWatchResourcesServer) error {
	return v.d.watchHealth(st.Context().Done(), func(list []DeviceHealth) error {
		return st.Send(healthResponse(list))
	})
}

// healthV1alpha1 serves v1alpha1, whose messages are v1's on the wire:
// each is converted by marshalling it.
type healthV1alpha1 struct {
	healthv1alpha1.UnimplementedDRAResourceHealthServer
	d *Driver
}

func (v *healthV1alpha1) NodeWatchResources(req *healthv1alpha1.NodeWatchResourcesRequest, st healthv1alpha1.DRAResourceHealth_NodeWatchResourcesServer) error {
	return v.d.watchHealth(st.Context().Done(), func(list []DeviceHealth) error {
		resp := &healthv1alpha1.NodeWatchResourcesResponse{}
		if err := kubeletplugin.Convert(healthResponse(list), resp); err != nil {
			return err
		}
		return st.Send(resp)
	})
}
