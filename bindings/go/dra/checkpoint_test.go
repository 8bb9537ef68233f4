// SPDX-License-Identifier: MIT

package dra_test

// checkpoint.go: a checkpoint that is not ours.

import (
	"os"
	"path/filepath"
	"testing"
)

// A checkpoint that does not match its checksum is set aside (.bad), not
// used: the driver starts without it.
func TestBadCheckpointSetAside(t *testing.T) {
	e := newEnv(t)
	e.stop()
	path := filepath.Join(e.o.PluginDir, "checkpoint.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"claims":{"x":{}},"checksum":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.start()
	if len(e.d.Prepared()) != 0 {
		t.Fatal("a bad checkpoint was used")
	}
	if _, err := os.Stat(path + ".bad"); err != nil {
		t.Fatal(err)
	}
}
