// SPDX-License-Identifier: MIT

// Command rdmad-watch prints rdmad's device changes as they happen, one
// JSON object a line, exactly as `rdmactl monitor --json` does: the same
// keys, an object per event ("added", "removed", "changed", "renamed",
// "released") with its "generation" and the whole "device", and a
// "resync" object with every device after a gap.  Like rdmactl it says
// the protocol's "lifecycle" feature: a lifecycle event keeps in "event"
// the name a client without the feature gets and names itself in
// "lifecycle" ("returned", "ready", "unready", "expecting", "settled",
// the last two with an "sriov" object and the PF as the device), and
// devices carry "identity", "incarnation", "ready", "aliases" and, where
// they apply, "away_deadline_ms", "changed" and "sriov_pf".  Of views
// (PROTOCOL.md 8b) devices carry "unusable" and, when one left this
// view, "reason"; holders "pidns", "netns", "mntns" and "pod_uid" where
// the daemon gave them.  It is the example program of the Go client
// (package rdmad).
//
//	rdmad-watch [--socket PATH] [--timeout SEC]
//
// Once subscribed it says so on stderr ("monitoring rdmad at PATH:
// generation N, M devices"), as rdmactl monitor --json does, so that a
// script can wait for that line before it causes changes.  SIGINT and
// SIGTERM end it with status 0; a daemon that cannot be reached, does not
// answer within the timeout, or goes away is a one-line message naming
// the socket and status 3 (rdmactl's); anything else, status 1.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

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
	fs := flag.NewFlagSet("rdmad-watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "",
		"rdmad's socket (default: $RDMAD_SOCKET, else "+
			rdmad.DefaultSocket+")")
	timeout := fs.Duration("timeout", 10*time.Second,
		"how long to wait for the daemon to answer")
	// Accepted for rdmactl's sake: the output is always JSON.
	fs.Bool("json", true, "print JSON (the only form)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "rdmad-watch: unexpected argument %q\n",
			fs.Arg(0))
		return exitUsage
	}
	path := rdmad.SocketPath(*socket)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt,
		syscall.SIGTERM)
	defer stop()

	start, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := rdmad.Dial(start, path, rdmad.WithClientName("rdmad-watch"))
	if err != nil {
		if ctx.Err() != nil {
			return 0
		}
		fmt.Fprintf(stderr, "rdmad-watch: cannot connect to rdmad at %s: %v\n",
			path, err)
		return exitUnreachable
	}
	defer c.Close()
	sub, err := c.Subscribe(start)
	if err != nil {
		return report(ctx, stderr, path, err)
	}
	n := len(sub.State().Devices)
	plural := "s"
	if n == 1 {
		plural = ""
	}
	fmt.Fprintf(stderr, "monitoring rdmad at %s: generation %d, %d device%s\n",
		path, sub.Generation(), n, plural)

	out := bufio.NewWriter(stdout)
	for {
		u, err := sub.Next(ctx)
		if err != nil {
			return report(ctx, stderr, path, err)
		}
		line, err := updateLine(u)
		if err != nil {
			fmt.Fprintf(stderr, "rdmad-watch: %v\n", err)
			return exitFailure
		}
		out.Write(line)
		out.WriteByte('\n')
		// A reader must see each line as it happens.
		if err := out.Flush(); err != nil {
			fmt.Fprintf(stderr, "rdmad-watch: write: %v\n", err)
			return exitFailure
		}
	}
}

// report prints why the watch ended and picks the exit status.
func report(ctx context.Context, stderr io.Writer, path string, err error) int {
	if ctx.Err() != nil {
		return 0 // SIGINT or SIGTERM
	}
	fmt.Fprintf(stderr, "rdmad-watch: rdmad at %s: %v\n", path, err)
	var se *rdmad.StatusError
	if errors.As(err, &se) {
		return exitFailure
	}
	return exitUnreachable
}
