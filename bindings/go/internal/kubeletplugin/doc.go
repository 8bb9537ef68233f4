// SPDX-License-Identifier: MIT

// Package kubeletplugin stands in for k8s.io/dynamic-resource-allocation/
// kubeletplugin (Kubernetes 1.34): what a DRA driver needs to be a kubelet
// plugin.  Start serves the DRA service's socket (DRAPlugin v1, and
// v1beta1 converted to it, as the helper serves both) and then the
// registration socket that the kubelet's plugin watcher finds, answers
// GetInfo with the plugin's name, endpoint and supported versions, and
// hears NotifyRegistrationStatus; KeepRegistered makes the registration
// socket again when it goes; Stop takes both away.  With a
// RollingUpdateUID the sockets are the pod's own (upstream's
// RollingUpdate option), and Flock is the lock on serialize.lock in the
// plugin directory that serializes the calls of the pods of a rolling
// update (upstream's Serialize and FlockDirectoryPath).  Debian 12
// packages neither it nor the kubelet's Go API it is built on; the
// kubelet's protocols come from the copies in internal/kubeletapi.
//
// Different from upstream: the plugin serves drav1.DRAPluginServer itself
// (NodePrepareResources with the kubelet's claim references) rather than
// upstream's DRAPlugin interface (PrepareResourceClaims given the
// ResourceClaims the helper read), so the driver reads its claims
// itself; the services beside DRAPlugin (the driver's health service)
// are added through Options.Register and listed in
// Options.SupportedVersions; the slices are published by the driver with
// internal/resourceslice, not through the helper's PublishResources.
// Left out: gRPC interceptors, the registration status query, the
// kubelet's node name and API client (the helper needs neither here).
package kubeletplugin
