// SPDX-License-Identifier: MIT

// Package v1 stands in for k8s.io/apimachinery/pkg/apis/meta/v1 (with
// the event types of k8s.io/apimachinery/pkg/watch): the object and list
// metadata the DRA driver writes and reads, as plain structs with the
// API's JSON names.  Debian 12 packages no k8s.io/apimachinery.
//
// Left out: everything not used (TypeMeta as a type, ObjectMeta's other
// fields, Status, label selectors, runtime.Object and the scheme); the
// fields kept have upstream's names and JSON tags.
package v1
