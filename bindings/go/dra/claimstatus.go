// SPDX-License-Identifier: MIT

package dra

// A prepared claim's status.devices: for each of this driver's devices of
// the claim, what a program in the pod addresses it by, as dranet reports
// a network device's: networkData (the net device behind a RoCE or iWARP
// port, its hardware address and its IP addresses, in CIDR notation) and,
// in data, the identity, the node GUID and the GIDs in use.  Written by
// server-side apply with the driver's name as field manager after the
// claim is prepared, beside the kubelet's work, never in its way: a write
// that fails (no RBAC for resourceclaims/status, a claim gone) is logged
// and the claim stays prepared.  A claim with none of this driver's
// devices gets no write.  The net device is the host's (the driver runs
// in the host's network namespace); its addresses are read from the
// kernel, its hardware address and the GIDs from sysfs.

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	resourceapi "github.com/rdmad/rdmad/bindings/go/internal/api/resource/v1"
	metav1 "github.com/rdmad/rdmad/bindings/go/internal/apimachinery/meta/v1"
	"github.com/rdmad/rdmad/bindings/go/internal/rest"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Limits of AllocatedDeviceStatus (resource.k8s.io/v1's validation).
const (
	maxNetworkIPs      = 16
	maxInterfaceName   = 256
	maxHardwareAddress = 128
	maxStatusGIDs      = 32 // keeps data well under its 10 KiB
)

// DeviceStatusData is the driver-specific data of a device's status
// (the API's RawExtension, at most 10 KiB): what an RDMA program
// addresses the device by.
type DeviceStatusData struct {
	Identity string    `json:"identity,omitempty"`
	NodeGUID string    `json:"nodeGUID,omitempty"`
	GIDs     []PortGID `json:"gids,omitempty"`
}

// PortGID is one GID table entry that is in use.
type PortGID struct {
	Port  uint32 `json:"port"`
	Index int    `json:"index"`
	GID   string `json:"gid"`
}

// deviceStatus is the status entry of pool device @name, rdmad's @dev.
func (d *Driver) deviceStatus(name string, dev *rdmadpb.Device) resourceapi.AllocatedDeviceStatus {
	st := resourceapi.AllocatedDeviceStatus{Driver: d.o.DriverName, Pool: d.o.NodeName, Device: name,
		Data: &DeviceStatusData{Identity: dev.GetIdentity(), NodeGUID: dev.GetNodeGuid(),
			GIDs: gids(d.o.SysRoot, dev)}}
	for _, p := range dev.GetPorts() {
		if nd := p.GetNetdev(); nd != "" && len(nd) <= maxInterfaceName {
			st.NetworkData = netdevData(d.o.SysRoot, nd)
			break
		}
	}
	return st
}

// netdevData is what the host says of net device @name.
func netdevData(sysRoot, name string) *resourceapi.NetworkDeviceData {
	nd := &resourceapi.NetworkDeviceData{InterfaceName: name}
	if b, err := os.ReadFile(filepath.Join(sysRoot, "class", "net", name, "address")); err == nil {
		if mac := strings.TrimSpace(string(b)); len(mac) <= maxHardwareAddress &&
			strings.Trim(mac, "0:") != "" {
			nd.HardwareAddress = mac
		}
	}
	if ifc, err := net.InterfaceByName(name); err == nil {
		if addrs, err := ifc.Addrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && len(nd.IPs) < maxNetworkIPs {
					nd.IPs = append(nd.IPs, ipn.String())
				}
			}
		}
	}
	return nd
}

// gids are the GID table entries of @dev's ports that are in use (not
// all zeros), at most maxStatusGIDs, port by port, index by index.
func gids(sysRoot string, dev *rdmadpb.Device) []PortGID {
	var out []PortGID
	for _, p := range dev.GetPorts() {
		dir := filepath.Join(sysRoot, "class", "infiniband", dev.GetName(), "ports",
			strconv.Itoa(int(p.GetPort())), "gids")
		ents, _ := os.ReadDir(dir)
		var idx []int
		for _, e := range ents {
			if i, err := strconv.Atoi(e.Name()); err == nil {
				idx = append(idx, i)
			}
		}
		sort.Ints(idx)
		for _, i := range idx {
			b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
			g := strings.TrimSpace(string(b))
			if err != nil || strings.Trim(g, "0:") == "" {
				continue
			}
			if len(out) == maxStatusGIDs {
				return out
			}
			out = append(out, PortGID{Port: p.GetPort(), Index: i, GID: g})
		}
	}
	return out
}

// Keeping status true (statusWorker): the status of every prepared
// claim is computed again at each state of rdmad (a port's net device
// renamed, gone, back, its device away or back under another name), at
// each link or address change the kernel announces on rtnetlink (the
// port's addresses, and its RoCE GIDs, which the kernel makes from them,
// read again a moment later too: statusSettle), and applied where it
// differs from what was last applied; a device that no present device
// holds has no entry.  At unprepare this driver's entries are taken out
// (an apply of none).  An apply that fails is tried again, paced as
// every request to the API server is (internal/wait); a claim gone or made
// anew under its name (404, or 409 for the UID given) is left alone.

// statusSettle is when the addresses and GIDs are read again after a
// change the kernel announced: the RoCE GID table follows the addresses
// a little later.
const statusSettle = 500 * time.Millisecond

// statusRef is a claim unprepared whose entries are still to go.
type statusRef struct{ Namespace, Name string }

// statusJob is one apply: claim @uid's entries @devs (none: remove).
type statusJob struct {
	uid  string
	ref  statusRef
	devs []resourceapi.AllocatedDeviceStatus
	key  string // @devs as JSON: what was applied
	gone bool   // unprepared: remove this driver's entries
}

// wakeStatus has the status worker look at every claim again.
func (d *Driver) wakeStatus() {
	select {
	case d.statusWake <- struct{}{}:
	default:
	}
}

// desiredStatus is claim @pc's entries now: one for each of its devices
// that a present device holds; d.mu held.
func (d *Driver) desiredStatus(pc PreparedClaim) []resourceapi.AllocatedDeviceStatus {
	out := []resourceapi.AllocatedDeviceStatus{}
	for _, pd := range pc.Devices {
		dev := d.holder(pd)
		if dev == nil {
			continue
		}
		// One entry per share of a shared device (the API keys
		// status.devices by shareID too), else one.
		shares := pd.ShareIDs
		if len(shares) == 0 {
			shares = []string{""}
		}
		for _, id := range shares {
			st := d.deviceStatus(pd.Device, dev)
			st.ShareID = id
			out = append(out, st)
		}
	}
	return out
}

// statusJobs are the applies due: claims whose entries differ from those
// last applied, then claims unprepared; none before rdmad's first state
// (every device would look gone); d.mu held.
func (d *Driver) statusJobs() []statusJob {
	if d.snap == nil {
		return nil
	}
	var jobs []statusJob
	for _, uid := range uids(d.claims) {
		pc := d.claims[uid]
		if len(pc.Devices) == 0 {
			continue // none of this driver's devices: nothing to say
		}
		devs := d.desiredStatus(pc)
		b, _ := json.Marshal(devs)
		if d.statusApplied[uid] == string(b) {
			continue
		}
		jobs = append(jobs, statusJob{uid: uid, ref: statusRef{pc.Namespace, pc.Name},
			devs: devs, key: string(b)})
	}
	var gone []string
	for uid := range d.statusGone {
		gone = append(gone, uid)
	}
	sort.Strings(gone)
	for _, uid := range gone {
		jobs = append(jobs, statusJob{uid: uid, ref: d.statusGone[uid],
			devs: []resourceapi.AllocatedDeviceStatus{}, gone: true})
	}
	return jobs
}

// statusWorker applies the claims' status as it changes, until @ctx
// ends; @net announces the kernel's link and address changes.
func (d *Driver) statusWorker(ctx context.Context, net <-chan struct{}) {
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	paused := false
	for {
		if !paused {
			d.mu.Lock()
			jobs := d.statusJobs()
			d.mu.Unlock()
			for _, j := range jobs {
				err := d.applyStatus(ctx, j)
				if ctx.Err() != nil {
					return
				}
				if err != nil && !rest.IsStatus(err, http.StatusNotFound) &&
					!rest.IsStatus(err, http.StatusConflict) && !rest.IsStatus(err, http.StatusUnprocessableEntity) {
					wait := d.backoff.Next()
					d.o.logf("claim %s/%s: status not written: %v (again in %v)",
						j.ref.Namespace, j.ref.Name, err, wait.Round(time.Millisecond))
					pace.Reset(wait)
					paused = true
					break
				}
				if err != nil {
					d.o.logf("claim %s/%s: status left alone: %v", j.ref.Namespace, j.ref.Name, err)
				}
				d.mu.Lock()
				if j.gone {
					delete(d.statusGone, j.uid)
					delete(d.statusApplied, j.uid)
				} else {
					d.statusApplied[j.uid] = j.key
				}
				d.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-d.statusWake:
		case <-net:
			settle.Reset(statusSettle)
		case <-settle.C:
		case <-pace.C:
			paused = false
		}
	}
}

// applyStatus applies job @j: the claim's entries of this driver, with
// its UID as precondition (that claim and no other of the name).
func (d *Driver) applyStatus(ctx context.Context, j statusJob) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st := &resourceapi.ClaimStatusApply{APIVersion: resourceapi.APIVersion, Kind: "ResourceClaim",
		Metadata: metav1.ObjectMeta{Name: j.ref.Name, Namespace: j.ref.Namespace, UID: j.uid},
		Status:   resourceapi.ClaimStatus{Devices: j.devs}}
	return d.o.API.ApplyClaimStatus(ctx, d.o.DriverName, st)
}

// unprepared has claim @uid's entries taken out of its status; d.mu held.
func (d *Driver) unprepared(uid string, pc PreparedClaim) {
	if len(pc.Devices) == 0 {
		return
	}
	d.statusGone[uid] = statusRef{pc.Namespace, pc.Name}
	delete(d.statusApplied, uid)
	d.wakeStatus()
}
