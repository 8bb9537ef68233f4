// SPDX-License-Identifier: MIT

// Package resourceslice stands in for k8s.io/dynamic-resource-allocation/
// resourceslice (Kubernetes 1.34): a controller that keeps the API
// server's ResourceSlices of one driver on one node equal to the pool it
// is handed (New, Update, Run), repairing what others delete or change,
// as the kubelet plugin helper runs it for a DRA driver.  Debian 12
// packages neither it nor the client-go it is built on; this one talks to
// the API server through internal/rest.
//
// Kept from upstream: one pool per node named after the node, the slices
// owned by the Node, a pool's slices at one generation raised for every
// change, the watch of the driver's slices resumed from the last
// resourceVersion (listed again on 410 Gone), events of its own writes
// told from others' by resourceVersion (upstream's mutation cache), the
// fields an API server with a feature gate off drops left out of later
// writes, and failures paced as client-go's reflector paces them
// (internal/wait).  Different: one pool of devices per node only (no
// DriverResources with several pools, no network-attached pools, no
// per-pool node selectors), slices named NODE-DRIVER-N rather than by
// generateName, at most 128 devices a slice (64 where one has taints), and
// Update takes the devices of that one pool.  Left out: the work queue
// and informer (a single goroutine serves it), the ErrorHandler option
// (failures are logged through Options.Logf), and devices' binding
// conditions and counters.
package resourceslice
