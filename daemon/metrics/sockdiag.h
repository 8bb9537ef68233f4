/* SPDX-License-Identifier: MIT */
/*
 * Who owns a TCP socket on this host, from the kernel's sock_diag
 * (NETLINK_SOCK_DIAG, what ss(8) reads): the metrics listener asks it for
 * the uid at the other end of a connection made from this host, so that
 * one local user cannot take every connection slot from another.
 */
#ifndef RDMAD_SOCKDIAG_H
#define RDMAD_SOCKDIAG_H

#include <sys/socket.h>
#include <sys/types.h>

/* A NETLINK_SOCK_DIAG socket, or -errno. */
int sockdiag_open(void);
/* The uid owning the connected TCP socket on this host whose own address
 * is @local and whose peer is @remote (an accepted connection's peer name
 * and socket name, in that order, give its client's socket).  Both are
 * AF_INET or both AF_INET6.  -ENOENT when there is no such connection
 * here (a peer on another host; one that has gone); -ESRCH when there is
 * but no process holds its socket any more (its client closed it: it has
 * no owner, though the kernel says uid 0); -EAFNOSUPPORT for other
 * families; -EAGAIN if the kernel has not answered at once. */
int sockdiag_tcp_owner(int nl, const struct sockaddr *local,
		       const struct sockaddr *remote, uid_t *ret_uid);

#endif
