// SPDX-License-Identifier: MIT

package dra

// Seamless upgrades (the kubelet's, from 1.33): with
// Options.RollingUpdateUID (the pod's UID) each driver pod serves
// sockets of its own, dra-UID.sock and DRIVER-UID-reg.sock, as
// k8s.io/dynamic-resource-allocation's kubeletplugin.RollingUpdate names
// them, so that during a DaemonSet's rolling update (maxSurge 1,
// maxUnavailable 0) the old pod and the new both answer the kubelet,
// which calls the newest registered and falls back to the other; each
// takes only its own sockets away when it stops.  What the two share on
// the node is kept consistent by a lock (flock) on the plugin
// directory's serialize.lock, held around every change of it: a prepare,
// an unprepare, the claim specs written at rdmad's states, the
// reconciliation at start; under it the checkpoint is read again first,
// so neither pod acts on claims the other has since prepared or
// unprepared, nor writes back the spec of a claim the other removed.
// Only one pod publishes the ResourceSlices and the claims' status at a
// time: the one holding publish.lock, which the new pod takes when the
// old one exits (so two versions never rewrite each other's slices).

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rdmad/rdmad/bindings/go/internal/kubeletplugin"
)

// shared takes the lock of what the pods of a rolling update share and
// reads the checkpoint again under it, where Options.RollingUpdateUID
// is set (else it does nothing); d.mu held.  The caller calls what it
// returns when done.
func (d *Driver) shared() func() {
	if d.o.RollingUpdateUID == "" {
		return func() {}
	}
	f, err := kubeletplugin.Flock(filepath.Join(d.o.PluginDir, "serialize.lock"))
	if err != nil {
		d.o.logf("serialize.lock: %v: going on without it", err)
		return func() {}
	}
	claims, err := LoadCheckpoint(d.checkpointPath())
	if err != nil {
		d.o.logf("%v", err)
	} else {
		for uid := range d.claims {
			if _, ok := claims[uid]; !ok {
				// Unprepared by the other pod: its spec is gone.
				delete(d.claimSpecs, uid)
			}
		}
		d.claims = claims
		d.metrics.Prepared(len(claims))
	}
	return func() { f.Close() }
}

// publishLock waits until this pod may publish (the other pod of a
// rolling update gone), true then; false where @ctx ended first.
func (d *Driver) publishLock(ctx context.Context) bool {
	if d.o.RollingUpdateUID == "" {
		return true
	}
	f, err := os.OpenFile(filepath.Join(d.o.PluginDir, "publish.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		d.o.logf("publish.lock: %v: publishing without it", err)
		return true
	}
	waited := false
	for {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if waited {
				d.o.logf("the other driver pod is gone: publishing the ResourceSlices now")
			}
			go func() {
				<-ctx.Done()
				f.Close()
			}()
			return true
		}
		if !waited {
			d.o.logf("another driver pod publishes the ResourceSlices (a rolling update): waiting for it to go")
			waited = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}
