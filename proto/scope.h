/* SPDX-License-Identifier: MIT */
/*
 * What a client tells rdmad about its own place (PROTOCOL.md, section
 * 8b): the uverbs nodes its /dev/infiniband has and, for the kernel's
 * exclusive RDMA namespace mode, a NETLINK_RDMA socket of its network
 * namespace.  rdmad never looks into a client's files; it builds the
 * client's view from this and from what the kernel says.  Shared by
 * librdmad and rdmactl.  No logging; -errno returns.
 */
#ifndef RDMAD_SCOPE_H
#define RDMAD_SCOPE_H

#include <stdint.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include "rdmad.pb-c.h"

/* At most this many nodes are reported (and accepted by rdmad). */
#define SCOPE_MAX_NODES 256

struct scope {
	Rdmad__Scope msg;
	uint64_t nodes[SCOPE_MAX_NODES];
};

/* A device number on the wire: major << 32 | minor, in every language. */
static inline uint64_t scope_devnum(dev_t dev)
{
	return (uint64_t)major(dev) << 32 | minor(dev);
}

/* Look at our own mount namespace and /dev/infiniband into @s (its msg
 * points into @s: keep @s alive while msg is sent).  Without a
 * /dev/infiniband, dev_dir is the st_dev of /dev: on the host, the
 * kernel's devtmpfs, where the nodes to come will be.  What cannot be
 * read is left 0 or empty. */
void scope_collect(struct scope *s);

/* A NETLINK_RDMA socket of our network namespace (close-on-exec), for
 * Hello; -errno (-EPROTONOSUPPORT where the kernel has no RDMA netlink). */
int scope_netns_socket(void);

#endif
