// SPDX-License-Identifier: MIT

// Command benchdra runs a cluster's rdmad-dra drivers, one per simulated
// node with fake devices, against one scripted API server (k8sfake,
// every ResourceSlice checked against the published schema), through
// what an API server puts every node through at once, and reports the
// request rate the API server saw and how long until every node's pool
// was right again (bench/run-bench-dra-scale.sh; docs/benchmarks.md).
// The drivers are the dra package's, run as goroutines of this process,
// each with its own HTTPS connections, kubelet sockets and backoff, fed
// rdmad's states directly (Driver.Set), as rdmad.Follow hands them over.
//
// Phases, in order:
//
//	start       every driver starts at once (a cluster's daemonset
//	            rolled out, or the API server back after a long outage)
//	compaction  etcd compacts the history every watch resumes from: for
//	            -fail, every watch is answered 410 Gone in its stream;
//	            meanwhile someone deletes every node's slice (a repair
//	            needs a list)
//	restart     -settle later (a healthy cluster again), the API server
//	            is down for -down (connections refused),
//	            every node's devices change meanwhile, then it is back
//	            with a new watch cache: for -fail more, every watch is
//	            answered 410 Gone
//
// For each phase, one JSON line: the requests the API server answered
// from the phase's start for -window, the peak of them in one second,
// per node, and the seconds until every pool was complete with the
// devices its node has ("converged_s", -1 if not within -window).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/rdmad/rdmad/bindings/go/dra"
	"github.com/rdmad/rdmad/bindings/go/internal/k8sfake"
	"github.com/rdmad/rdmad/bindings/go/internal/resourceslice"
	"github.com/rdmad/rdmad/bindings/go/internal/rest"
	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

const driverName = "rdmad.io"

type node struct {
	name string
	d    *dra.Driver
	gen  uint64
	devs []*rdmadpb.Device
}

// devices are node @n's @count fake devices, from index @from.
func devices(n, from, count int) []*rdmadpb.Device {
	var out []*rdmadpb.Device
	for i := from; i < from+count; i++ {
		out = append(out, &rdmadpb.Device{Name: fmt.Sprintf("mlx5_%d", i),
			Identity: fmt.Sprintf("guid:n%04d:vf%03d", n, i), Uverbs: fmt.Sprintf("uverbs%d", i),
			State: rdmadpb.DeviceState_DEVICE_STATE_PRESENT, Ready: true, NumaNode: -1,
			Incarnation: 1, Ports: []*rdmadpb.Port{{Port: 1, LinkLayer: "InfiniBand", State: "ACTIVE"}}})
	}
	return out
}

func (n *node) set(devs []*rdmadpb.Device) {
	n.gen++
	n.devs = devs
	n.d.Set(&rdmad.Snapshot{Generation: n.gen, Devices: devs}, true)
}

func (n *node) want() []string {
	var names []string
	for _, d := range n.devs {
		names = append(names, dra.DeviceName(d))
	}
	sort.Strings(names)
	return names
}

type result struct {
	Phase          string  `json:"phase"`
	Variant        string  `json:"variant"`
	Nodes          int     `json:"nodes"`
	Requests       int     `json:"requests"`
	PeakPerSecond  int     `json:"peak_per_s"`
	PeakPerNode    float64 `json:"peak_per_node_per_s"`
	MeanPerNode    float64 `json:"mean_per_node_per_s"`
	ConvergedAfter float64 `json:"converged_s"`
	WindowS        float64 `json:"window_s"`
}

func main() {
	nodes := flag.Int("nodes", 300, "simulated nodes, one driver each")
	ndev := flag.Int("devices", 4, "fake devices per node")
	down := flag.Duration("down", 5*time.Second, "how long the API server is down at its restart")
	fail := flag.Duration("fail", 10*time.Second, "how long every watch is answered 410 after a compaction or a restart (a watch cache being rebuilt)")
	window := flag.Duration("window", 30*time.Second, "how long each phase is measured")
	settle := flag.Duration("settle", 130*time.Second, "the wait between the compaction and the restart: longer than client-go's backoff reset (2 min), so that each phase starts from a healthy cluster")
	variant := flag.String("variant", "", "a name for this build of the driver, in the output")
	flag.Parse()
	log.SetFlags(0)
	schema, err := k8sfake.LoadSchema("")
	if err != nil {
		log.Fatal(err)
	}
	api := k8sfake.New(schema)
	defer api.Close()
	base, err := os.MkdirTemp("", "bd")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	sa := filepath.Join(base, "sa")
	if err := api.ServiceAccount(sa); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var ns []*node
	for i := 0; i < *nodes; i++ {
		name := fmt.Sprintf("node-%04d", i)
		api.PutNode(name, fmt.Sprintf("uid-%04d", i))
		client, err := rest.InCluster(api.URL, sa)
		if err != nil {
			log.Fatal(err)
		}
		dir := filepath.Join(base, fmt.Sprintf("n%d", i))
		d, err := dra.New(dra.Options{NodeName: name, PluginDir: filepath.Join(dir, "p"),
			RegistryDir: filepath.Join(dir, "r"), API: client,
			SysRoot: filepath.Join(dir, "sys")})
		if err != nil {
			log.Fatal(err)
		}
		ns = append(ns, &node{name: name, d: d})
	}
	enc := json.NewEncoder(os.Stdout)
	measure := func(phase string, start time.Time) {
		r := result{Phase: phase, Variant: *variant, Nodes: *nodes, ConvergedAfter: -1,
			WindowS: window.Seconds()}
		for time.Since(start) < *window {
			if r.ConvergedAfter < 0 && converged(api, ns) {
				r.ConvergedAfter = time.Since(start).Seconds()
			}
			time.Sleep(50 * time.Millisecond)
		}
		bins := map[int]int{}
		for _, at := range api.Requests() {
			if at.Before(start) || !at.Before(start.Add(*window)) {
				continue
			}
			r.Requests++
			bins[int(at.Sub(start)/time.Second)]++
		}
		for _, c := range bins {
			if c > r.PeakPerSecond {
				r.PeakPerSecond = c
			}
		}
		r.PeakPerNode = float64(r.PeakPerSecond) / float64(*nodes)
		r.MeanPerNode = float64(r.Requests) / window.Seconds() / float64(*nodes)
		enc.Encode(r)
	}

	// start: every driver at once.
	start := time.Now()
	for i, n := range ns {
		n.set(devices(i, 0, *ndev))
		wg.Add(1)
		go func(d *dra.Driver) {
			defer wg.Done()
			d.Serve(ctx)
		}(n.d)
	}
	measure("start", start)

	// compaction: every watch 410 for -fail, every node's slice deleted.
	start = time.Now()
	api.SetWatchFailure(k8sfake.WatchGoneInStream)
	api.Compact()
	for _, n := range ns {
		api.Delete(resourceslice.SliceName(n.name, driverName, 0))
	}
	time.AfterFunc(*fail, func() { api.SetWatchFailure(k8sfake.WatchServe) })
	measure("compaction", start)

	// restart: down for -down while every node's devices change, back
	// with a new watch cache answering every watch 410 for -fail.
	time.Sleep(*settle)
	start = time.Now()
	api.Stop()
	for i, n := range ns {
		n.set(devices(i, 1, *ndev))
	}
	time.Sleep(*down)
	api.SetWatchFailure(k8sfake.WatchGoneInStream)
	if err := api.Start(); err != nil {
		log.Fatal(err)
	}
	time.AfterFunc(*fail, func() { api.SetWatchFailure(k8sfake.WatchServe) })
	measure("restart", start)
	if r := api.Refused(); len(r) > 0 {
		log.Fatalf("the API server refused writes: %v", r[0])
	}
}

// converged reports whether every node's pool is complete with its
// devices.
func converged(api *k8sfake.Server, ns []*node) bool {
	pools := api.CompletePools(driverName)
	for _, n := range ns {
		if !reflect.DeepEqual(pools[n.name], n.want()) {
			return false
		}
	}
	return true
}
