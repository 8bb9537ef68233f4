// SPDX-License-Identifier: MIT

package rdmad

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// The generation page (PROTOCOL.md section 4, proto/genpage.h).
const (
	pageSize   = 4096
	pageMagic  = 0x52444d47 // 'RDMG'
	pageLayout = 1

	fcntlGetSeals = 1034 // F_GET_SEALS
	sealShrink    = 0x2  // F_SEAL_SHRINK
)

type genPage struct {
	mem []byte
}

// mapPage maps the Welcome's descriptor if it is a page this package can
// trust; nil (fall back to events) otherwise.  The descriptor is closed
// either way.
func mapPage(fd int) *genPage {
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Size < pageSize {
		return nil
	}
	seals, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd),
		fcntlGetSeals, 0)
	if errno != 0 || seals&sealShrink == 0 {
		return nil
	}
	mem, err := syscall.Mmap(fd, 0, pageSize, syscall.PROT_READ,
		syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	p := &genPage{mem: mem}
	if *(*uint32)(unsafe.Pointer(&mem[0])) != pageMagic ||
		*(*uint32)(unsafe.Pointer(&mem[4])) != pageLayout {
		p.unmap()
		return nil
	}
	return p
}

// generation loads the page's word (acquire): no system call.
func (p *genPage) generation() uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&p.mem[8])))
}

func (p *genPage) unmap() {
	syscall.Munmap(p.mem)
}
