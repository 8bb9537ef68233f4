// SPDX-License-Identifier: MIT

package deviceplugin

import "fmt"

// A share of a device is one of its slots: a device offered in shared
// mode ("mode": "shared", "slots": N) is given to at most N containers
// at once, each holding one slot, as k8s-rdma-shared-dev-plugin's
// rdmaHcaMax.  rdmad-dra's --slots N is the same number: each device
// of its pool has the consumable capacity "slots" of N, a claim
// consumes one slot unless it asks for more, and no device is given
// past its N (rdmad-dra(8), docs/kubernetes.md).  So a node moved from
// the device plugin's shared mode to DRA with the same N serves as many
// containers per device as before.
const (
	MinSlots = 1
	MaxSlots = 1000
)

// ValidSlots says why @n is no number of slots, nil where it is one.
func ValidSlots(n int) error {
	if n < MinSlots || n > MaxSlots {
		return fmt.Errorf("slots %d: %d..%d", n, MinSlots, MaxSlots)
	}
	return nil
}
