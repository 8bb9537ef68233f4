// SPDX-License-Identifier: MIT

// Package deviceplugin is a kubelet device plugin (API v1beta1) fed by
// rdmad's events: rdmad-device-plugin(8).  Each configured resource is
// served on its own socket in the kubelet's device plugin directory and
// registered with the kubelet; ListAndWatch sends a new list as soon as
// rdmad says a device came, returned, became ready or unready, went away
// or was removed; Allocate answers with CDI device names bound to each
// device's identity (rdmad.io/rdma=IDENTITY, from the spec package cdi
// writes) and the device nodes;
// GetPreferredAllocation keeps a container's devices on one NUMA node.
// When the kubelet restarts (its socket made anew, the plugins' sockets
// removed) every resource is served and registered again, and while rdmad
// is out of reach every device is listed Unhealthy.  Registering runs
// beside the loop that feeds the lists: a kubelet slow to answer holds
// back no list.
package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/rdmad/rdmad/bindings/go/cdi"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
)

// Options of Run besides the configuration.
type Options struct {
	Socket     string // rdmad's socket ("" as rdmad.Dial)
	KubeletDir string // the kubelet's device plugin directory
	// Logf reports what happens (registrations, rdmad lost and back, CDI
	// errors); nil: nothing.
	Logf func(format string, args ...interface{})
}

func (o *Options) logf(format string, args ...interface{}) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// state is one message from rdmad: a new state, or the connection lost.
type state struct {
	snap *rdmad.Snapshot
	err  error
}

// SpecDirs are where runtimes read CDI specs (the CDI library's
// defaults): where SocketWarning looks for rdmad-cdi's spec.
var SpecDirs = []string{"/etc/cdi", cdi.DefaultDir}

// Run serves cfg's resources until ctx ends.
func Run(ctx context.Context, cfg *Config, o Options) error {
	if o.KubeletDir == "" {
		o.KubeletDir = "/var/lib/kubelet/device-plugins"
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(o.KubeletDir); err != nil {
		return fmt.Errorf("watching the kubelet's directory %s: %w",
			o.KubeletDir, err)
	}
	if w := cfg.SocketWarning(SpecDirs...); w != "" {
		o.logf("warning: %s", w)
	}
	m := &manager{cfg: cfg, o: &o, registered: make(chan registration, 1)}
	if cfg.CDISpecDir != "" {
		m.spec = cdi.NewWriter(cfg.CDISpecDir)
	}
	for i := range cfg.Resources {
		m.plugins = append(m.plugins, NewPlugin(cfg, &cfg.Resources[i]))
	}
	defer m.stop()
	states := make(chan state, 1)
	go rdmad.Follow(ctx, o.Socket, func(s *rdmad.Snapshot, err error) {
		latest(states, state{s, err})
	}, rdmad.WithClientName("rdmad-device-plugin"))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	m.kubelet(ctx)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case st := <-states:
			m.update(st)
		case r := <-m.registered:
			m.done(r)
			if r.epoch != m.epoch {
				// A kubelet started while registering with
				// the one before: at once, not at the tick.
				m.kubelet(ctx)
			}
		case ev := <-w.Events:
			if filepath.Base(ev.Name) == "kubelet.sock" &&
				ev.Op&fsnotify.Create != 0 {
				// Made anew or moved in (inotify's IN_MOVED_TO is
				// fsnotify's Create): a new kubelet, whatever
				// inode number the file system handed it.
				m.newKubelet()
			}
			if filepath.Base(ev.Name) == "kubelet.sock" ||
				ev.Op&fsnotify.Remove != 0 {
				m.kubelet(ctx)
			}
		case err := <-w.Errors:
			o.logf("watching %s: %v", o.KubeletDir, err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// A creation of kubelet.sock may be among
				// the events lost: register again.
				m.newKubelet()
				m.kubelet(ctx)
			}
		case <-tick.C:
			m.kubelet(ctx)
		}
	}
}

// newKubelet counts a kubelet.sock made anew.  A registration still
// dialling the one before ends: it would reach the new kubelet in the old
// epoch's name, and the new epoch would register with it once more.
func (m *manager) newKubelet() {
	m.epoch++
	if m.registering != nil {
		m.registering()
	}
}

// latest puts s in ch, dropping an older state not yet taken: only the
// newest state matters.
func latest(ch chan state, s state) {
	for {
		select {
		case ch <- s:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

type manager struct {
	cfg       *Config
	o         *Options
	plugins   []*Plugin
	serving   []*serving
	kubeID    uint64 // inode of the kubelet.sock registered with
	epoch     uint64 // kubelet.sock creations and moves-in seen
	kubeEpoch uint64 // the epoch registered in
	stale     bool   // a socket served anew is not registered yet
	// Ends the registration that runs (register()); nil when none does.
	registering context.CancelFunc
	registered  chan registration
	snap        *rdmad.Snapshot
	up          bool
	spec        *cdi.Writer
}

// registration is what one run of register() did.
type registration struct {
	id    uint64     // the kubelet.sock it registered with
	epoch uint64     // and the manager's epoch when it began
	done  []*serving // registered, in order
	err   error      // where it stopped
}

// update takes a state from rdmad to every resource and the CDI spec.
func (m *manager) update(st state) {
	if st.err != nil {
		if m.up {
			m.o.logf("rdmad lost (%v): every device unhealthy until it is back", st.err)
		}
		m.up = false
	} else {
		if !m.up {
			m.o.logf("rdmad connected at generation %d", st.snap.Generation)
		}
		m.up, m.snap = true, st.snap
	}
	for _, p := range m.plugins {
		p.Set(m.snap, m.up)
	}
	if m.spec != nil && m.up {
		if _, err := m.spec.Write(cdi.Spec(m.snap,
			cdi.Options{SocketDir: m.cfg.SocketMount})); err != nil {
			m.o.logf("CDI spec %s: %v", m.spec.Path(), err)
		}
	}
}

// kubelet serves every resource whose socket is gone (first, or taken by
// a kubelet that started) and registers them all with a kubelet socket
// not registered with yet.  A kubelet socket is new when it was created
// or moved in since the last registration (the epoch: inotify says so
// even when the file system reuses the old inode number, as ext4 does at
// once), or when inotify's queue overflowed, or when its inode number
// differs (a change inotify could not report).
func (m *manager) kubelet(ctx context.Context) {
	for i, p := range m.plugins {
		if i < len(m.serving) && m.serving[i].alive() {
			continue
		}
		if i < len(m.serving) {
			// First: closing its listener unlinks the path.
			m.serving[i].server.Stop()
		}
		s, err := serve(p, m.o.KubeletDir)
		if err != nil {
			m.o.logf("%s: %v", p.ResourceName(), err)
			return
		}
		if i < len(m.serving) {
			m.serving[i] = s
		} else {
			m.serving = append(m.serving, s)
		}
		m.stale = true
	}
	id := kubeletID(m.o.KubeletDir)
	if id == 0 || m.registering != nil ||
		(id == m.kubeID && m.epoch == m.kubeEpoch && !m.stale) {
		return
	}
	m.stale = false
	ctx, m.registering = context.WithCancel(ctx)
	go register(ctx, registration{id: id, epoch: m.epoch},
		append([]*serving(nil), m.serving...), m.o.KubeletDir, m.registered)
}

// register registers every one of @serving with the kubelet at
// dir/kubelet.sock (@r's), which may take it up to 10 s each; it tells
// the loop what it did on @ret.
func register(ctx context.Context, r registration, serving []*serving,
	dir string, ret chan<- registration) {
	for _, s := range serving {
		if r.err = s.register(ctx, dir); r.err != nil {
			break
		}
		r.done = append(r.done, s)
	}
	ret <- r
}

// done takes a registration's outcome; one that failed is tried again at
// the next look at the kubelet's directory.
func (m *manager) done(r registration) {
	m.registering()
	m.registering = nil
	for _, s := range r.done {
		m.o.logf("registered %s at %s", s.plugin.ResourceName(), s.path)
	}
	if r.err != nil {
		m.o.logf("%v", r.err)
		m.stale = true
		return
	}
	m.kubeID, m.kubeEpoch = r.id, r.epoch
}

// kubeletID is the inode of the kubelet's socket, 0 without one (a
// variable: tests make every kubelet.sock have one inode number).
var kubeletID = func(dir string) uint64 {
	fi, err := os.Stat(filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

func (m *manager) stop() {
	for _, s := range m.serving {
		s.stop()
	}
}
