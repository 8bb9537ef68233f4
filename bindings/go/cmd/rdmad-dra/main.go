// SPDX-License-Identifier: MIT

// Command rdmad-dra is a Kubernetes DRA driver fed by rdmad
// (rdmad-dra(8), package dra): it publishes the node's RDMA devices as
// ResourceSlices, prepares the claims the kubelet hands it with CDI
// names, and streams each device's health to the kubelet.
//
//	rdmad-dra [--socket PATH] [--node-name NODE] [--driver-name NAME]
//	          [--plugin-dir DIR] [--registry-dir DIR] [--cdi-dir DIR]
//	          [--socket-mount DIR] [--apiserver URL] [--serviceaccount DIR]
//	          [--select EXPR] [--slots N] [--taint-effect EFFECT]
//	          [--metrics-address HOST:PORT] [--rolling-update-uid UID]
//	          [--no-apiserver]
//
// It logs to stderr.  SIGINT and SIGTERM stop it (status 0), taking its
// sockets away and leaving the slices and the checkpoint; bad arguments
// are status 2; a socket it cannot serve or an API server it cannot be
// configured for, status 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rdmad/rdmad/bindings/go/cdi"
	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/rest"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmad-dra", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "rdmad's socket (default: $RDMAD_SOCKET, else "+rdmad.DefaultSocket+")")
	node := fs.String("node-name", os.Getenv("NODE_NAME"), "this node's name (default: $NODE_NAME)")
	driver := fs.String("driver-name", dra.DefaultDriverName, "the DRA driver's name")
	pluginDir := fs.String("plugin-dir", "", "the DRA socket's and checkpoint's directory (default: /var/lib/kubelet/plugins/DRIVER)")
	registry := fs.String("registry-dir", "/var/lib/kubelet/plugins_registry", "the kubelet's plugin registry")
	cdiDir := fs.String("cdi-dir", cdi.DefaultDir, "where the CDI spec is written (\"\": not written)")
	mount := fs.String("socket-mount", "/run/rdmad", "rdmad's socket directory, bind-mounted into containers by the CDI spec (\"\": none)")
	apiserver := fs.String("apiserver", "", "the API server's URL (default: from $KUBERNETES_SERVICE_HOST and _PORT)")
	sa := fs.String("serviceaccount", rest.ServiceAccountDir, "the service account's token and ca.crt")
	sel := fs.String("select", "", "which devices to offer: rdmad-device-plugin's matchers, e.g. \"link_layer:Ethernet vf\" (default: every device)")
	sysfs := fs.String("sysfs", "/sys", "sysfs: devices' PCIe roots, net devices' hardware addresses, GIDs")
	slots := fs.Int("slots", 0, "share each device among up to N claims (1..1000, the device plugin's slots; DRAConsumableCapacity); 0: every device exclusive")
	taint := fs.String("taint-effect", dra.TaintNoSchedule, "the effect of the taint on a device none of whose ports is up: NoSchedule, NoExecute, None, or off (DRADeviceTaints)")
	metrics := fs.String("metrics-address", "", "serve Prometheus metrics at http://HOST:PORT/metrics (\"\": not served)")
	rolling := fs.String("rolling-update-uid", os.Getenv("POD_UID"), "the pod's UID: sockets of its own, for the kubelet's seamless upgrade (1.33 and later); \"\": fixed socket names (default: $POD_UID)")
	noAPI := fs.Bool("no-apiserver", false, "publish no ResourceSlices and read no claims (testing the kubelet's side alone)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "rdmad-dra: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	selector, err := rdmad.ParseSelector(*sel)
	if err != nil {
		fmt.Fprintf(stderr, "rdmad-dra: --%v\n", err)
		return 2
	}
	if *pluginDir == "" {
		*pluginDir = "/var/lib/kubelet/plugins/" + *driver
	}
	logf := func(f string, a ...interface{}) {
		fmt.Fprintf(stderr, "rdmad-dra: "+f+"\n", a...)
	}
	o := dra.Options{DriverName: *driver, NodeName: *node,
		Socket: rdmad.SocketPath(*socket), PluginDir: *pluginDir,
		RegistryDir: *registry, CDISpecDir: *cdiDir, SocketMount: *mount,
		SysRoot: *sysfs, Select: selector, Slots: *slots, TaintEffect: *taint,
		MetricsAddress: *metrics, RollingUpdateUID: *rolling, Logf: logf}
	if !*noAPI {
		api, err := rest.InCluster(*apiserver, *sa)
		if err != nil {
			logf("%v", err)
			return 1
		}
		o.API = api
	}
	d, err := dra.New(o)
	if err != nil {
		logf("%v", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := d.Run(ctx); err != nil && ctx.Err() == nil {
		logf("%v", err)
		return 1
	}
	return 0
}
