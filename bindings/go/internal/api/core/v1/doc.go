// SPDX-License-Identifier: MIT

// Package v1 stands in for k8s.io/api/core/v1: of it only Node, and of
// a Node only its metadata (the DRA driver's ResourceSlices are owned by
// their Node, by its UID).  Debian 12 packages no k8s.io/api.
package v1
