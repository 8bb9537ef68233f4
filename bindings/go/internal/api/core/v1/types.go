// SPDX-License-Identifier: MIT

package v1

import metav1 "github.com/rdmad/rdmad/bindings/go/internal/apimachinery/meta/v1"

// Node is the part of core/v1 Node read: its UID, for the slices'
// ownerReference.
type Node struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
}
