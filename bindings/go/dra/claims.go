// SPDX-License-Identifier: MIT

package dra

// Preparing and unpreparing claims (the kubelet's NodePrepareResources
// and NodeUnprepareResources): a claim's devices are read from its
// allocation in the API server, each must be a device of this pool that
// rdmad has present and ready now (present is enough for an admin
// request) and that the claims prepared leave room for (shares.go: an
// exclusive device held by no other claim, a shared one with the slots
// asked still free), and the answer is each device's CDI
// name in a spec of the claim's own (rdmad.io/claim=UID-DEVICE, DEVICE
// the pool's name of the device, made from its identity), written before
// the answer and removed at unprepare.  The kubelet keeps these names
// for the pod's life; what they resolve to follows the identity
// (claimspecs.go), never a kernel name.  A claim prepared is answered
// again from the checkpoint, unchanged, however often the kubelet asks
// (it asks again after restarts).

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/rdmad/rdmad/bindings/go/cdi"
	resourceapi "github.com/rdmad/rdmad/bindings/go/internal/api/resource/v1"
	drav1 "github.com/rdmad/rdmad/bindings/go/internal/kubeletapi/dra/v1"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// NodePrepareResources implements drav1.DRAPluginServer.
func (d *Driver) NodePrepareResources(ctx context.Context, req *drav1.NodePrepareResourcesRequest) (*drav1.NodePrepareResourcesResponse, error) {
	resp := &drav1.NodePrepareResourcesResponse{Claims: map[string]*drav1.NodePrepareResourceResponse{}}
	for _, c := range req.GetClaims() {
		start := time.Now()
		devs, err := d.prepare(ctx, c)
		d.metrics.Operation("prepare", time.Since(start), err != "")
		r := &drav1.NodePrepareResourceResponse{}
		if err != "" {
			r.Error = err
			d.o.logf("claim %s/%s (%s) not prepared: %s", c.GetNamespace(), c.GetName(), c.GetUid(), err)
		} else {
			for _, pd := range devs {
				r.Devices = append(r.Devices, &drav1.Device{
					RequestNames: stripSubrequestNames(pd.Requests), PoolName: pd.Pool,
					DeviceName: pd.Device, CdiDeviceIds: pd.CDI})
			}
		}
		resp.Claims[c.GetUid()] = r
	}
	return resp, nil
}

// stripSubrequestNames are @names as the kubelet takes them: the
// allocation of a prioritized list (firstAvailable) names the subrequest
// that was met, "req/sub", and a container asks for "req" (as
// k8s.io/dynamic-resource-allocation's kubelet plugin helper answers).
func stripSubrequestNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i], _, _ = strings.Cut(n, "/")
	}
	return out
}

// uidPattern is a UID as the API server makes them (RFC 4122's text:
// 8-4-4-4-12 hexadecimal digits), the only kind a claim has.
var uidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ValidUID says why @uid is no claim's UID, "" where it could be one.
// A claim's UID names its spec file: one that is not a UID is refused
// before it reaches a path.
func ValidUID(uid string) string {
	if !uidPattern.MatchString(uid) {
		return errorf("claim UID %q is not a UID", uid)
	}
	return ""
}

// prepare is one claim's devices, or why not.
func (d *Driver) prepare(ctx context.Context, c *drav1.Claim) ([]PreparedDevice, string) {
	if why := ValidUID(c.GetUid()); why != "" {
		return nil, why
	}
	d.mu.Lock()
	unlock := d.shared()
	pc, done := d.claims[c.GetUid()]
	unlock()
	d.mu.Unlock()
	if done {
		return pc.Devices, ""
	}
	if d.o.API == nil {
		return nil, errorf("no API server to read claim %s/%s from", c.GetNamespace(), c.GetName())
	}
	rc, err := d.o.API.GetClaim(ctx, c.GetNamespace(), c.GetName())
	if err != nil {
		return nil, errorf("reading claim %s/%s: %v", c.GetNamespace(), c.GetName(), err)
	}
	if rc.Metadata.UID != c.GetUid() {
		return nil, errorf("claim %s/%s has UID %s, not %s (made anew)", c.GetNamespace(), c.GetName(), rc.Metadata.UID, c.GetUid())
	}
	if d.o.CDISpecDir == "" {
		return nil, errorf("no CDI spec directory (--cdi-dir): claim %s/%s's devices cannot be named to the runtime", c.GetNamespace(), c.GetName())
	}
	if rc.Status.Allocation == nil {
		return nil, errorf("claim %s/%s is not allocated", c.GetNamespace(), c.GetName())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.shared()()
	if pc, done := d.claims[c.GetUid()]; done {
		return pc.Devices, "" // prepared meanwhile by a call beside this one
	}
	devs, why := d.allocated(c.GetUid(), rc.Status.Allocation.Devices.Results)
	if why != "" {
		return nil, why
	}
	pc = PreparedClaim{Namespace: c.GetNamespace(), Name: c.GetName(), Devices: devs}
	if err := d.writeClaimSpec(c.GetUid(), pc); err != nil {
		d.removeClaimSpec(c.GetUid())
		return nil, errorf("writing claim %s/%s's CDI spec: %v", c.GetNamespace(), c.GetName(), err)
	}
	d.claims[c.GetUid()] = pc
	if err := SaveCheckpoint(d.checkpointPath(), d.claims); err != nil {
		delete(d.claims, c.GetUid())
		d.removeClaimSpec(c.GetUid())
		return nil, errorf("saving the checkpoint: %v", err)
	}
	d.metrics.Prepared(len(d.claims))
	d.notify() // the health streams now cover its devices
	delete(d.statusGone, c.GetUid())
	d.wakeStatus()
	return devs, ""
}

// allocated are the devices of this driver and node in allocation
// @results of claim @uid, each usable now and within its slots, or why
// not; d.mu held.  A device met twice (two requests, or two shares) is
// one device with every request and the sum of the slots.
func (d *Driver) allocated(uid string, results []resourceapi.DeviceRequestAllocationResult) ([]PreparedDevice, string) {
	var devs []PreparedDevice
	at := map[string]int{}
	for _, r := range results {
		if r.Driver != d.o.DriverName || r.Pool != d.o.NodeName {
			continue
		}
		admin := r.AdminAccess != nil && *r.AdminAccess
		n, why := consumed(r)
		if why != "" {
			return nil, why
		}
		if admin {
			n = 0
		}
		i, ok := at[r.Device]
		if !ok {
			dev, why := d.usable(r.Device, admin)
			if why != "" {
				return nil, why
			}
			i = len(devs)
			at[r.Device] = i
			devs = append(devs, PreparedDevice{Pool: r.Pool, Device: r.Device,
				Identity: dev.GetIdentity(), Admin: admin,
				CDI: []string{cdi.ClaimName(uid, r.Device)}})
		}
		pd := &devs[i]
		pd.Requests = append(pd.Requests, r.Request)
		if pd.Admin && !admin {
			// Met for an admin request first: ready now too?
			if _, why := d.usable(r.Device, false); why != "" {
				return nil, why
			}
			pd.Admin = false
		}
		if d.o.Slots > 0 && !admin {
			pd.Slots += n
		}
		if r.ShareID != "" {
			pd.ShareIDs = append(pd.ShareIDs, r.ShareID)
		}
	}
	for _, pd := range devs {
		if why := d.admitted(uid, pd.Device, pd.slots(), pd.Admin); why != "" {
			return nil, why
		}
	}
	return devs, ""
}

// usable is the rdmad device behind pool device @name if it can be
// given to a container now, else why not; d.mu held.  An admin claim
// (@admin) also gets a device present but not ready: monitoring and
// repairing a sick device is what it is for.
func (d *Driver) usable(name string, admin bool) (*rdmadpb.Device, string) {
	if !d.up {
		return nil, errorf("rdmad is out of reach: cannot tell whether device %s is present", name)
	}
	for _, dev := range d.snap.Devices {
		if DeviceName(dev) != name {
			continue
		}
		switch {
		case rdmad.Away(dev):
			return nil, errorf("device %s (%s) is away (unplugged, expected back): not present", name, dev.GetName())
		case !rdmad.Present(dev):
			continue // an ended life; the present one may follow
		case !d.o.Select.Matches(dev):
			return nil, errorf("device %s (%s) is not offered by this driver (--select)", name, dev.GetName())
		case dev.GetRemoving():
			return nil, errorf("device %s (%s) is being removed: not present", name, dev.GetName())
		case !rdmad.Ready(dev) && !admin:
			return nil, errorf("device %s (%s) is present but not ready (no ACTIVE port with a GID, or its netdev down)", name, dev.GetName())
		}
		return dev, ""
	}
	return nil, errorf("device %s is not present on node %s (rdmad does not list it: removed)", name, d.o.NodeName)
}

// NodeUnprepareResources implements drav1.DRAPluginServer: the claim's
// CDI spec goes, so that its names resolve no more.  Only a claim this
// driver prepared is acted on: a claim not prepared (or unprepared
// before) is no error and touches nothing, a UID that is no UID is
// refused.
func (d *Driver) NodeUnprepareResources(ctx context.Context, req *drav1.NodeUnprepareResourcesRequest) (*drav1.NodeUnprepareResourcesResponse, error) {
	resp := &drav1.NodeUnprepareResourcesResponse{Claims: map[string]*drav1.NodeUnprepareResourceResponse{}}
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.shared()()
	for _, c := range req.GetClaims() {
		start := time.Now()
		r := &drav1.NodeUnprepareResourceResponse{Error: d.unprepare(c)}
		d.metrics.Operation("unprepare", time.Since(start), r.Error != "")
		resp.Claims[c.GetUid()] = r
	}
	d.metrics.Prepared(len(d.claims))
	d.notify()
	return resp, nil
}

// unprepare undoes claim @c's preparation, or says why not; d.mu held.
func (d *Driver) unprepare(c *drav1.Claim) string {
	if why := ValidUID(c.GetUid()); why != "" {
		d.o.logf("unprepare claim %s/%s: %s", c.GetNamespace(), c.GetName(), why)
		return why
	}
	pc, ok := d.claims[c.GetUid()]
	if !ok {
		return ""
	}
	if err := d.removeClaimSpec(c.GetUid()); err != nil {
		return errorf("removing claim %s/%s's CDI spec: %v", c.GetNamespace(), c.GetName(), err)
	}
	delete(d.claims, c.GetUid())
	if err := SaveCheckpoint(d.checkpointPath(), d.claims); err != nil {
		d.claims[c.GetUid()] = pc
		d.writeClaimSpec(c.GetUid(), pc)
		return errorf("saving the checkpoint: %v", err)
	}
	d.unprepared(c.GetUid(), pc)
	return ""
}

// Prepared is a copy of the claims prepared, by UID.
func (d *Driver) Prepared() map[string]PreparedClaim {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := map[string]PreparedClaim{}
	for k, v := range d.claims {
		m[k] = v
	}
	return m
}
