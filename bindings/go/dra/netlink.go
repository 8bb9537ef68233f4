// SPDX-License-Identifier: MIT

package dra

// The kernel's announcements of link and address changes (rtnetlink's
// RTMGRP_LINK, RTMGRP_IPV4_IFADDR and RTMGRP_IPV6_IFADDR groups), which
// a claim's status follows (networkData's addresses, the RoCE GIDs made
// from them).  Which interface changed is not parsed: the status worker
// computes every claim's status again and applies only what differs.

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// rtnetlink's multicast groups (linux/rtnetlink.h), which the syscall
// package does not name.
const (
	rtmgrpLink       = 0x1
	rtmgrpIPv4Ifaddr = 0x10
	rtmgrpIPv6Ifaddr = 0x100
)

// watchLinks signals @ch (without blocking: one signal stands for many)
// at every link or address change of the driver's network namespace,
// until @ctx ends.
func watchLinks(ctx context.Context, ch chan<- struct{}) error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK,
		syscall.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	groups := uint32(rtmgrpLink | rtmgrpIPv4Ifaddr | rtmgrpIPv6Ifaddr)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Groups: groups}); err != nil {
		syscall.Close(fd)
		return err
	}
	// A non-blocking descriptor in an os.File is read through Go's
	// poller: Close, when @ctx ends, ends the Read.
	f := os.NewFile(uintptr(fd), "rtnetlink")
	go func() {
		<-ctx.Done()
		f.Close()
	}()
	buf := make([]byte, 1<<16)
	for {
		_, err := f.Read(buf)
		if err != nil && ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, syscall.ENOBUFS) {
			return err
		}
		// ENOBUFS: announcements were lost; something changed.
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
