// SPDX-License-Identifier: MIT

// Command rdmad-device-plugin is a kubelet device plugin fed by rdmad
// (rdmad-device-plugin(8), package deviceplugin): it serves the resources
// of its configuration to the kubelet (device plugin API v1beta1) and
// sends each new device list the moment rdmad says a device changed.
//
//	rdmad-device-plugin [--socket PATH] [--config FILE] [--kubelet-dir DIR]
//	rdmad-device-plugin --config FILE --check-config
//
// It logs to stderr.  SIGINT and SIGTERM stop it (status 0), taking its
// sockets away; a configuration that does not parse is a message saying
// where and status 2; a kubelet directory it cannot watch, status 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rdmad/rdmad/bindings/go/deviceplugin"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmad-device-plugin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "rdmad's socket (default: $RDMAD_SOCKET, else "+rdmad.DefaultSocket+")")
	config := fs.String("config", deviceplugin.DefaultConfig, "the configuration file")
	kubelet := fs.String("kubelet-dir", "/var/lib/kubelet/device-plugins", "the kubelet's device plugin directory")
	check := fs.Bool("check-config", false, "check the configuration, print the resources, and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "rdmad-device-plugin: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, err := deviceplugin.LoadConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "rdmad-device-plugin: %v\n", err)
		return 2
	}
	if *check {
		if w := cfg.SocketWarning(deviceplugin.SpecDirs...); w != "" {
			fmt.Fprintf(stderr, "rdmad-device-plugin: warning: %s\n", w)
		}
		for i := range cfg.Resources {
			r := &cfg.Resources[i]
			fmt.Fprintf(stdout, "%s %s slots=%d select=%q\n", cfg.FullName(r), r.Mode, r.Slots, r.Select)
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = deviceplugin.Run(ctx, cfg, deviceplugin.Options{
		Socket:     rdmad.SocketPath(*socket),
		KubeletDir: *kubelet,
		Logf: func(f string, a ...interface{}) {
			fmt.Fprintf(stderr, "rdmad-device-plugin: "+f+"\n", a...)
		},
	})
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "rdmad-device-plugin: %v\n", err)
		return 1
	}
	return 0
}
