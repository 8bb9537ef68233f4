// SPDX-License-Identifier: MIT

package dra

// Device health for the kubelet (DRAResourceHealth.NodeWatchResources,
// KEP-4680), which it shows in pod.status.containerStatuses[]
// .allocatedResourcesStatus: every device the pool lists, Healthy when
// rdmad says it is ready and Unhealthy when not; every device of a
// prepared claim that the pool no longer lists (away, removing,
// removed), Unhealthy; while rdmad is out of reach, all of them Unknown.
// A stream sends the whole list at once and again at every change of it.

import (
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc"

	"github.com/rdmad/rdmad/bindings/go/dra/healthv1alpha1"
	"github.com/rdmad/rdmad/bindings/go/dra/healthv1beta1"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
)

// Health of one device: the values of both versions' HealthStatus.
type Health int32

const (
	HealthUnknown   Health = 0
	HealthHealthy   Health = 1
	HealthUnhealthy Health = 2
)

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
			if !Listed(dev) || !offered(dev, d.o.Select) || seen[n] {
				continue
			}
			seen[n] = true
			h := DeviceHealth{Pool: d.o.NodeName, Device: n, Health: HealthHealthy,
				Message: fmt.Sprintf("%s ready", dev.GetName())}
			if !rdmad.Ready(dev) {
				h.Health = HealthUnhealthy
				h.Message = fmt.Sprintf("%s present, not ready", dev.GetName())
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
				Health: HealthUnhealthy, Message: "not present (away, removing or removed)"})
		}
	}
	if !d.up {
		for i := range list {
			list[i].Health = HealthUnknown
			list[i].Message = "rdmad out of reach"
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Device < list[j].Device })
	return list, d.changed
}

// watch sends @send the health list now and at every change of it until
// the stream ends.
func (d *Driver) watchHealth(done <-chan struct{}, send func([]DeviceHealth) error) error {
	var last []DeviceHealth
	first := true
	for {
		list, changed := d.HealthList()
		if first || !equalHealth(list, last) {
			if err := send(list); err != nil {
				return err
			}
			first, last = false, list
		}
		select {
		case <-done:
			return nil
		case <-changed:
		}
	}
}

func equalHealth(a, b []DeviceHealth) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func registerHealth(s *grpc.Server, d *Driver) {
	healthv1alpha1.RegisterDRAResourceHealthServer(s, &alpha{d: d})
	healthv1beta1.RegisterDRAResourceHealthServer(s, &beta{d: d})
}

type alpha struct {
	healthv1alpha1.UnimplementedDRAResourceHealthServer
	d *Driver
}

func (a *alpha) NodeWatchResources(req *healthv1alpha1.NodeWatchResourcesRequest, st healthv1alpha1.DRAResourceHealth_NodeWatchResourcesServer) error {
	return a.d.watchHealth(st.Context().Done(), func(list []DeviceHealth) error {
		now := time.Now().Unix()
		resp := &healthv1alpha1.NodeWatchResourcesResponse{}
		for _, h := range list {
			resp.Devices = append(resp.Devices, &healthv1alpha1.DeviceHealth{
				Device: &healthv1alpha1.DeviceIdentifier{PoolName: h.Pool,
					DeviceName: h.Device},
				Health:          healthv1alpha1.HealthStatus(h.Health),
				LastUpdatedTime: now})
		}
		return st.Send(resp)
	})
}

type beta struct {
	healthv1beta1.UnimplementedDRAResourceHealthServer
	d *Driver
}

func (b *beta) NodeWatchResources(req *healthv1beta1.NodeWatchResourcesRequest, st healthv1beta1.DRAResourceHealth_NodeWatchResourcesServer) error {
	return b.d.watchHealth(st.Context().Done(), func(list []DeviceHealth) error {
		now := time.Now().Unix()
		resp := &healthv1beta1.NodeWatchResourcesResponse{}
		for _, h := range list {
			resp.Devices = append(resp.Devices, &healthv1beta1.DeviceHealth{
				Device: &healthv1beta1.DeviceIdentifier{PoolName: h.Pool,
					DeviceName: h.Device},
				Health:          healthv1beta1.HealthStatus(h.Health),
				LastUpdatedTime: now, Message: h.Message})
		}
		return st.Send(resp)
	})
}
