// SPDX-License-Identifier: MIT

package dra_test

// internal/kubeletplugin, as the driver uses it: the registration socket.

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The registration socket, taken away, is made again.
func TestRegistrationSocketComesBack(t *testing.T) {
	e := newEnv(t)
	k := e.register()
	os.Remove(filepath.Join(e.o.RegistryDir, driver+"-reg.sock"))
	time.Sleep(1500 * time.Millisecond)
	if k2 := e.register(); k2.info.Endpoint != k.info.Endpoint {
		t.Fatalf("endpoint %s, was %s", k2.info.Endpoint, k.info.Endpoint)
	}
}
