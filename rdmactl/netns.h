/* SPDX-License-Identifier: MIT */
/*
 * Which network namespace a device is in (PROTOCOL.md 8b): in the
 * kernel's exclusive RDMA namespace mode, those who see all get the
 * devices of other namespaces beside rdmad's own, marked with the
 * namespace's inode (Device.netns, 0 where rdmad could not learn it) and
 * cookie (Device.netns_cookie).  The one rule for "of another namespace"
 * and "in namespace ID", for the handlers and the output alike.
 */
#ifndef RDMACTL_NETNS_H
#define RDMACTL_NETNS_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

/* Longest netns_qualifier(), with its NUL. */
#define NETNS_QUALIFIER_MAX sizeof("@netns-cookie:18446744073709551615")

/* Whether @dev is of another network namespace than rdmad's own. */
bool netns_foreign(const Rdmad__Device *dev);
/* Whether @a and @b are in one network namespace. */
bool netns_same(const Rdmad__Device *a, const Rdmad__Device *b);
/* Whether @dev is in the namespace @id names: its inode or its cookie;
 * 0 names rdmad's own. */
bool netns_matches(const Rdmad__Device *dev, uint64_t id);
/* What follows the name of a device of another namespace where names of
 * several namespaces are listed together: "@netns:INODE", or
 * "@netns-cookie:COOKIE" where rdmad does not know the inode; "" for
 * rdmad's own.  Written into @buf, returned. */
const char *netns_qualifier(const Rdmad__Device *dev,
			    char buf[NETNS_QUALIFIER_MAX]);

#endif
