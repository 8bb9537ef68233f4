// SPDX-License-Identifier: MIT

package kubeletplugin

// The lock that serializes the plugin's calls between the pods of a
// rolling update on one node (upstream's FlockDirectoryPath: a flock on
// serialize.lock in the plugin directory).

import (
	"os"
	"syscall"
)

// Flock takes an exclusive flock on @path (made where absent),
// waiting for it; the returned file holds it until closed.
func Flock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
