// SPDX-License-Identifier: MIT

// Package rest stands in for client-go (k8s.io/client-go): the API
// server's REST interface, reached with the pod's service account as
// rest.InClusterConfig reaches it, and the few typed verbs the DRA driver
// uses, as client-go's typed clients name them (kubernetes/typed/
// resource/v1: ResourceSlices' Create, Update, Delete, List, Watch;
// ResourceClaims' Get and the status's Apply; core/v1: Nodes' Get).
// Debian 12 packages no client-go (nor k8s.io/api or apimachinery), and
// those verbs are a page of net/http and encoding/json.
//
// Kept from client-go: the in-cluster address and credentials (the
// service account's token, read at every request as the kubelet rotates
// it, over TLS only; its ca.crt), a watch's timeout jittered as the
// reflector's (k8s.io/client-go/tools/cache/reflector.go), and a count
// of every answer by verb and resource (tools/metrics' RequestResult).
// Left out: kubeconfig files, every other resource and verb, protobuf
// encoding, client-side rate limiting (the driver paces its retries with
// internal/wait instead), informers and caches.
package rest
