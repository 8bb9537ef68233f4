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
//
// Each spec also records what it was made for, in its own containerEdits
// (so that the file, written whole or not at all, carries it): the
// variable RDMAD_CLAIM_<UID, "-" made "_"> = {"namespace", "name",
// "devices": [{"device", "identity", "requests"}]}, which containers of
// the claim see too.  At start, before rdmad's first state, every claim
// spec in the directory is reconciled (reconcileSpecs): a claim the
// checkpoint lacks (the checkpoint lost, torn or set aside) is taken
// back from its record; a device whose record and checkpoint disagree
// on its identity is bound to neither (it resolves to nothing); a spec
// that records nothing usable (an older driver's, a tampered one) is
// removed; and every spec is written again with no device until rdmad
// says which device has each identity now: after a restart (of the
// driver, of the node) the kernel nodes a spec named may be another
// device's.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	if d.snap == nil || pd.Unbound {
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
	spec := cdi.ClaimSpec(uid, devs, cdi.Options{SocketDir: d.o.SocketMount})
	rec, err := recordEnv(uid, pc)
	if err != nil {
		return err
	}
	spec.ContainerEdits.Env = append(spec.ContainerEdits.Env, rec)
	_, err = w.Write(spec)
	return err
}

// claimRecord is what a claim's spec records of it.
type claimRecord struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Devices   []deviceRecord `json:"devices"`
}

type deviceRecord struct {
	Device   string   `json:"device"`
	Identity string   `json:"identity"` // "": bound to none (Unbound)
	Requests []string `json:"requests"`
}

// recordVar is the name of claim @uid's record in its spec.
func recordVar(uid string) string {
	return "RDMAD_CLAIM_" + strings.ReplaceAll(uid, "-", "_")
}

// recordEnv is claim @uid's record, as its spec's variable.
func recordEnv(uid string, pc PreparedClaim) (string, error) {
	rec := claimRecord{Namespace: pc.Namespace, Name: pc.Name, Devices: []deviceRecord{}}
	for _, pd := range pc.Devices {
		id := pd.Identity
		if pd.Unbound {
			id = ""
		}
		rec.Devices = append(rec.Devices, deviceRecord{Device: pd.Device,
			Identity: id, Requests: pd.Requests})
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	return recordVar(uid) + "=" + string(b), nil
}

// readRecord is the claim that claim @uid's spec at @path records, or
// why there is none usable: no record, one for another claim, or one
// whose device names are not those of the identities it gives (each
// device's pool name is made from its identity: DeviceName).
func readRecord(path, uid string) (PreparedClaim, error) {
	var pc PreparedClaim
	b, err := os.ReadFile(path)
	if err != nil {
		return pc, err
	}
	// The fields read, as the spec's JSON names them.
	var spec struct {
		Kind           string `json:"kind"`
		ContainerEdits struct {
			Env []string `json:"env"`
		} `json:"containerEdits"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return pc, err
	}
	if spec.Kind != cdi.ClaimKind {
		return pc, fmt.Errorf("kind %q, not %q", spec.Kind, cdi.ClaimKind)
	}
	var raw string
	for _, e := range spec.ContainerEdits.Env {
		if strings.HasPrefix(e, recordVar(uid)+"=") {
			raw = strings.TrimPrefix(e, recordVar(uid)+"=")
		}
	}
	if raw == "" {
		return pc, fmt.Errorf("no %s: it records no claim", recordVar(uid))
	}
	var rec claimRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return pc, fmt.Errorf("%s: %v", recordVar(uid), err)
	}
	pc = PreparedClaim{Namespace: rec.Namespace, Name: rec.Name}
	for _, dr := range rec.Devices {
		pd := PreparedDevice{Requests: dr.Requests, Pool: "", Device: dr.Device,
			Identity: dr.Identity, CDI: []string{cdi.ClaimName(uid, dr.Device)},
			Unbound: dr.Identity == ""}
		if !pd.Unbound && DeviceName(&rdmadpb.Device{Identity: dr.Identity}) != dr.Device {
			return pc, fmt.Errorf("device %q recorded with identity %q, whose name is %q",
				dr.Device, dr.Identity, DeviceName(&rdmadpb.Device{Identity: dr.Identity}))
		}
		pc.Devices = append(pc.Devices, pd)
	}
	return pc, nil
}

// reconcileSpecs binds every claim spec in the CDI directory to the
// hardware it was made for, or to nothing (the comment at the top);
// d.claims is the checkpoint's, the driver not yet serving.  It reports
// whether the claims changed.
func (d *Driver) reconcileSpecs() bool {
	dir := d.o.CDISpecDir
	if dir == "" {
		return false
	}
	paths, _ := filepath.Glob(filepath.Join(dir, cdi.ClaimFile("*")))
	changed := false
	for _, path := range paths {
		base := filepath.Base(path)
		uid := strings.TrimSuffix(strings.TrimPrefix(base, cdi.Vendor+"-"+cdi.ClaimClass+"_"), ".json")
		if ValidUID(uid) != "" {
			d.o.logf("%s: not named after a claim's UID: left alone", path)
			continue
		}
		rec, err := readRecord(path, uid)
		pc, known := d.claims[uid]
		switch {
		case err != nil && known:
			d.o.logf("claim %s's CDI spec: %v; written again from the checkpoint", uid, err)
		case err != nil:
			d.o.logf("claim %s's CDI spec records no hardware it was made for (%v), and the checkpoint has no such claim: removed, its names resolve to nothing", uid, err)
			if err := os.Remove(path); err != nil {
				d.o.logf("%v", err)
			}
		case !known:
			for i := range rec.Devices {
				rec.Devices[i].Pool = d.o.NodeName
			}
			d.claims[uid] = rec
			changed = true
			d.o.logf("claim %s/%s (%s): not in the checkpoint, taken back from its CDI spec's record", rec.Namespace, rec.Name, uid)
		default:
			changed = d.reconcileClaim(uid, pc, rec) || changed
		}
	}
	return changed
}

// reconcileClaim unbinds each device of checkpointed claim @uid whose
// identity its spec's record @rec gives otherwise: one of the two was
// changed behind the driver's back, and neither is trusted.
func (d *Driver) reconcileClaim(uid string, pc PreparedClaim, rec PreparedClaim) bool {
	recorded := map[string]PreparedDevice{}
	for _, rd := range rec.Devices {
		recorded[rd.Device] = rd
	}
	changed := false
	for i, pd := range pc.Devices {
		rd, ok := recorded[pd.Device]
		if pd.Unbound || ok && !rd.Unbound && rd.Identity == pd.Identity {
			continue
		}
		d.o.logf("claim %s/%s (%s): device %s has identity %q in the checkpoint, %q in its CDI spec: bound to neither, it resolves to nothing",
			pc.Namespace, pc.Name, uid, pd.Device, pd.Identity, rd.Identity)
		pc.Devices[i].Unbound = true
		changed = true
	}
	return changed
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
