// SPDX-License-Identifier: MIT

package dra

// Each prepared claim's CDI spec (cdi.ClaimSpec, a file of its own in
// Options.CDISpecDir): the names the kubelet keeps for the pod's life,
// rdmad.io/claim=UID-DEVICE, resolve to the nodes of the device that has
// the prepared identity now.  The spec is written at prepare, again at
// every state of rdmad (a device renamed, gone or back under new kernel
// names and uverbs numbers), and removed at unprepare.  A device whose
// identity no present device has (away, removed, or its PCI function now
// empty) has no entry: a container created for the claim then fails
// with "unresolvable CDI devices", never gets another device's nodes.
// At start the checkpoint's devices are checked the same way against
// rdmad's first state.

import (
	"fmt"
	"strings"

	"github.com/rdmad/rdmad/bindings/go/cdi"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// holder is the device of rdmad's state that has @pd's identity now and
// is present, nil where none has; d.mu held.  A device matches only
// where both its identity and its pool name are those prepared: a
// checkpoint whose two disagree names no device.
func (d *Driver) holder(pd PreparedDevice) *rdmadpb.Device {
	if d.snap == nil {
		return nil
	}
	for _, dev := range d.snap.Devices {
		if rdmad.Present(dev) && dev.GetIdentity() == pd.Identity &&
			DeviceName(dev) == pd.Device {
			return dev
		}
	}
	return nil
}

// writeClaimSpec writes the spec of claim @uid from rdmad's state now
// and logs where a device's resolution changed; d.mu held.
func (d *Driver) writeClaimSpec(uid string, pc PreparedClaim) error {
	if d.o.CDISpecDir == "" {
		return nil
	}
	var devs []cdi.ClaimDevice
	for _, pd := range pc.Devices {
		dev := d.holder(pd)
		devs = append(devs, cdi.ClaimDevice{Name: pd.Device, Dev: dev})
		d.logResolution(uid, pc, pd, dev)
	}
	w := d.claimSpecs[uid]
	if w == nil {
		w = cdi.NewFileWriter(d.o.CDISpecDir, cdi.ClaimFile(uid))
		d.claimSpecs[uid] = w
	}
	_, err := w.Write(cdi.ClaimSpec(uid, devs,
		cdi.Options{SocketDir: d.o.SocketMount}))
	return err
}

// logResolution says what a claim's device resolves to, when that
// changed; d.mu held.
func (d *Driver) logResolution(uid string, pc PreparedClaim, pd PreparedDevice, dev *rdmadpb.Device) {
	now := ""
	if dev != nil && cdi.Offered(dev) {
		now = fmt.Sprintf("is %s (%s)", dev.GetName(), dev.GetUverbs())
	} else {
		now = "has no present device: its CDI device resolves to nothing"
	}
	key := uid + "/" + pd.Device
	if d.resolved[key] == now {
		return
	}
	d.resolved[key] = now
	d.o.logf("claim %s/%s (%s): device %s (identity %s) %s",
		pc.Namespace, pc.Name, uid, pd.Device, pd.Identity, now)
}

// writeClaimSpecs writes every prepared claim's spec; d.mu held.
func (d *Driver) writeClaimSpecs() {
	for _, uid := range uids(d.claims) {
		if err := d.writeClaimSpec(uid, d.claims[uid]); err != nil {
			d.o.logf("claim %s's CDI spec: %v", uid, err)
		}
	}
}

// removeClaimSpec takes claim @uid's spec away; d.mu held.
func (d *Driver) removeClaimSpec(uid string) error {
	if d.o.CDISpecDir == "" {
		return nil
	}
	w := d.claimSpecs[uid]
	if w == nil {
		w = cdi.NewFileWriter(d.o.CDISpecDir, cdi.ClaimFile(uid))
	}
	if err := w.Remove(); err != nil {
		return err
	}
	delete(d.claimSpecs, uid)
	for key := range d.resolved {
		if strings.HasPrefix(key, uid+"/") {
			delete(d.resolved, key)
		}
	}
	return nil
}

// rebind makes the CDI names of checkpointed claims those of their
// identities: a checkpoint written before the names were bound to
// identities holds kernel names (rdmad.io/rdma=mlx5_0), which the
// kernel may since have given to another device.  It reports whether
// anything changed.
func rebind(claims map[string]PreparedClaim, logf func(string, ...interface{})) bool {
	changed := false
	for uid, pc := range claims {
		for i, pd := range pc.Devices {
			want := []string{cdi.ClaimName(uid, pd.Device)}
			if len(pd.CDI) == 1 && pd.CDI[0] == want[0] {
				continue
			}
			logf("claim %s/%s (%s): device %s named %v in the checkpoint, now %s (bound to identity %s)",
				pc.Namespace, pc.Name, uid, pd.Device, pd.CDI, want[0], pd.Identity)
			pc.Devices[i].CDI = want
			changed = true
		}
	}
	return changed
}
