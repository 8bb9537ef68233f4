// SPDX-License-Identifier: MIT

package deviceplugin

import (
	"fmt"
	"testing"

	"github.com/rdmad/rdmad/bindings/go/rdmad"
	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// A share is one slot: shared mode takes exactly the numbers of slots
// ValidSlots takes (which rdmad-dra's --slots takes too), and a device
// in shared mode with N slots is N device IDs, N containers.
func TestSharesAreSlots(t *testing.T) {
	for _, n := range []int{MinSlots - 1, MinSlots, 64, MaxSlots, MaxSlots + 1} {
		_, err := ParseConfig([]byte(fmt.Sprintf(`{"resources":[{"name":"hca","mode":"shared","slots":%d}]}`, n)))
		if (err == nil) != (ValidSlots(n) == nil) {
			t.Errorf("slots %d: config %v, ValidSlots %v", n, err, ValidSlots(n))
		}
	}
	c := config(t, `{"resources":[{"name":"hca","mode":"shared","slots":4}]}`)
	s := &rdmad.Snapshot{Devices: []*rdmadpb.Device{dev("mlx5_0", 0, "InfiniBand", true)}}
	if n := len(c.Resources[0].Inventory(s, true).List); n != 4 {
		t.Fatalf("shared mode with 4 slots lists %d device IDs, want 4", n)
	}
}
