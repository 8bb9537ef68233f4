// SPDX-License-Identifier: MIT

package rdmad

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rdmad/rdmad/bindings/go/rdmad/rdmadpb"
)

// What the client tells rdmad about its own place (PROTOCOL.md section
// 8b), as proto/scope.c does for librdmad and rdmactl: rdmad never looks
// into a client's files and builds the client's view from this and from
// what the kernel says.
// scopeDevDir is where the uverbs nodes are (a variable for tests).
var scopeDevDir = "/dev/infiniband"

const (
	// scopeMntns is this process's mount namespace.
	scopeMntns = "/proc/self/ns/mnt"
	// maxScopeNodes is how many nodes are reported (and accepted).
	maxScopeNodes = 256
	// netlinkRDMA is NETLINK_RDMA of <linux/netlink.h>.
	netlinkRDMA = 20
)

// devnum is a device number on the wire: major << 32 | minor, decoded
// from Linux's dev_t as glibc's major() and minor() do.
func devnum(dev uint64) uint64 {
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	return major<<32 | minor&0xffffffff
}

// collectScope looks at this process's mount namespace and dir (its
// /dev/infiniband): dir's st_dev, and the st_rdev of each character
// device in it, following symlinks, at most maxScopeNodes of them.  What
// cannot be read is left 0 or empty.  NetnsSocket is left false.
func collectScope(dir string) *rdmadpb.Scope {
	s := &rdmadpb.Scope{}
	var st syscall.Stat_t
	if syscall.Stat(scopeMntns, &st) == nil {
		s.Mntns = st.Ino
	}
	f, err := os.Open(dir)
	if err != nil {
		// No RDMA node yet: the file system of dir's parent (/dev)
		// says whether the nodes that come will be ours (the kernel's
		// devtmpfs), as proto/scope.c says.
		if syscall.Stat(filepath.Dir(dir), &st) == nil {
			s.DevDir = devnum(uint64(st.Dev))
		}
		return s
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return s
	} else if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.DevDir = devnum(uint64(sys.Dev))
	}
	for len(s.Nodes) < maxScopeNodes {
		names, err := f.Readdirnames(64)
		for _, name := range names {
			if len(s.Nodes) == maxScopeNodes {
				break
			}
			if strings.HasPrefix(name, ".") {
				continue
			}
			if syscall.Stat(dir+"/"+name, &st) == nil &&
				st.Mode&syscall.S_IFMT == syscall.S_IFCHR {
				s.Nodes = append(s.Nodes, devnum(uint64(st.Rdev)))
			}
		}
		if err != nil { // io.EOF, or a directory that cannot be read
			break
		}
	}
	return s
}

// netnsSocket is a NETLINK_RDMA socket of this process's network
// namespace (close-on-exec) to pass with Hello, or -1 where the kernel has
// none (no RDMA netlink) or it cannot be made.
func netnsSocket() int {
	fd, err := syscall.Socket(syscall.AF_NETLINK,
		syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, netlinkRDMA)
	if err != nil {
		return -1
	}
	return fd
}
