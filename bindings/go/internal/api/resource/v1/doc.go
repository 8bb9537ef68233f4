// SPDX-License-Identifier: MIT

// Package v1 stands in for k8s.io/api/resource/v1 (Kubernetes 1.34 and
// later, resource.k8s.io/v1): the few objects the DRA driver writes (a
// ResourceSlice, its entries of a ResourceClaim's status by server-side
// apply) and reads (a ResourceClaim's allocation), as typed structs with
// the API's field names and JSON tags.  Debian 12 packages no k8s.io/api.
//
// Left out: every field the driver neither sets nor reads (writing sets
// no field not set here; reading ignores the rest), the deep-copy and
// protobuf code, and the validation (the API server does it).  Quantities
// are their canonical strings, not resource.Quantity; a device status's
// Data (a runtime.RawExtension upstream) is any value that marshals to a
// JSON object.  ClaimStatusApply and ClaimStatus are the apply
// configuration of the status (k8s.io/client-go/applyconfigurations/
// resource/v1's shape, trimmed to status.devices).  Tests check what these
// marshal to against the published OpenAPI schema (internal/k8sfake), not
// against these structs.
package v1

// APIVersion is the group and version of every object here.
const APIVersion = "resource.k8s.io/v1"
