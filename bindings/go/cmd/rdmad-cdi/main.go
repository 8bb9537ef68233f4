// SPDX-License-Identifier: MIT

// Command rdmad-cdi keeps a Container Device Interface spec of rdmad's
// devices current (rdmad-cdi(8)): subscribed to rdmad, it writes
// SPEC-DIR/rdmad.io-rdma.json (kind rdmad.io/rdma, CDI 0.5.0) at once and
// again on every change that alters it, atomically, after the CDI
// library's own validation, so that `podman run --device
// rdmad.io/rdma=mlx5_0` (or an alias) gets exactly that device's nodes.
// A device away or removed has no entry.  While rdmad is out of reach the
// last spec stays (the devices are still the kernel's) and it dials again.
//
//	rdmad-cdi [--socket PATH] [--spec-dir DIR] [--socket-mount] [--once]
//	rdmad-cdi --check DIR
//
// --check reads DIR as runtimes do (the CDI library's cache) and prints
// each device it offers, one qualified name a line; any error in a spec
// there is printed and makes the status 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	cdiapi "github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"

	"github.com/rdmad/rdmad/bindings/go/cdi"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
)

const (
	exitFailure     = 1
	exitUsage       = 2
	exitUnreachable = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmad-cdi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "rdmad's socket (default: $RDMAD_SOCKET, else "+rdmad.DefaultSocket+")")
	dir := fs.String("spec-dir", cdi.DefaultDir, "the CDI spec directory to write in")
	mount := fs.Bool("socket-mount", false, "mount rdmad's socket directory into containers (read-only)")
	once := fs.Bool("once", false, "write the spec of the current state and exit")
	check := fs.String("check", "", "print the devices the CDI library finds in this directory, and exit")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "rdmad-cdi: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *check != "" {
		return checkDir(*check, stdout, stderr)
	}
	path := rdmad.SocketPath(*socket)
	o := cdi.Options{}
	if *mount {
		o.SocketDir = filepath.Dir(path)
	}
	w := cdi.NewWriter(*dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *once {
		return writeOnce(ctx, path, w, o, stderr)
	}
	logf := func(format string, a ...interface{}) {
		fmt.Fprintf(stderr, "rdmad-cdi: "+format+"\n", a...)
	}
	up := false
	rdmad.Follow(ctx, path, func(s *rdmad.Snapshot, err error) {
		if err != nil {
			if up {
				logf("rdmad at %s: %v (the spec stays; dialing again)", path, err)
			}
			up = false
			return
		}
		up = true
		write(w, s, o, logf)
	}, rdmad.WithClientName("rdmad-cdi"))
	return 0
}

func write(w *cdi.Writer, s *rdmad.Snapshot, o cdi.Options, logf func(string, ...interface{})) error {
	spec := cdi.Spec(s, o)
	wrote, err := w.Write(spec)
	if err != nil {
		logf("%s: %v", w.Path(), err)
	} else if wrote {
		logf("wrote %s: %d CDI devices at generation %d", w.Path(), len(spec.Devices), s.Generation)
	}
	return err
}

func writeOnce(ctx context.Context, path string, w *cdi.Writer, o cdi.Options, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := rdmad.Dial(ctx, path, rdmad.WithClientName("rdmad-cdi"))
	if err != nil {
		fmt.Fprintf(stderr, "rdmad-cdi: cannot connect to rdmad at %s: %v\n", path, err)
		return exitUnreachable
	}
	defer c.Close()
	s, err := c.Snapshot(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "rdmad-cdi: rdmad at %s: %v\n", path, err)
		return exitUnreachable
	}
	if write(w, s, o, func(f string, a ...interface{}) {
		fmt.Fprintf(stderr, "rdmad-cdi: "+f+"\n", a...)
	}) != nil {
		return exitFailure
	}
	return 0
}

func checkDir(dir string, stdout, stderr io.Writer) (rc int) {
	// Debian 12's CDI library (0.5.2) panics on some names in other
	// vendors' specs (a one-letter class): say so, as an error.
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "rdmad-cdi: %s: the CDI library failed reading it: %v\n", dir, p)
			rc = exitFailure
		}
	}()
	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(dir), cdiapi.WithAutoRefresh(false))
	if err != nil {
		fmt.Fprintf(stderr, "rdmad-cdi: %s: %v\n", dir, err)
		rc = exitFailure
	}
	if cache == nil {
		return exitFailure
	}
	var files []string
	for f := range cache.GetErrors() {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		for _, e := range cache.GetErrors()[f] {
			fmt.Fprintf(stderr, "rdmad-cdi: %s: %v\n", f, e)
			rc = exitFailure
		}
	}
	for _, d := range cache.ListDevices() {
		fmt.Fprintln(stdout, d)
	}
	return rc
}
