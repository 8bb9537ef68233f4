/* SPDX-License-Identifier: MIT */
/*
 * Which network namespace a device is in: see netns.h.  A device of
 * another namespace has its cookie from any daemon that knows of cookies
 * (proto field 30) and its inode where rdmad could learn it; a daemon
 * from before cookies sets the inode alone.  So either marks it, and
 * either names it.
 */
#include <inttypes.h>
#include <stdio.h>

#include "netns.h"

bool netns_foreign(const Rdmad__Device *dev)
{
	return dev->netns != 0 || dev->netns_cookie != 0;
}

bool netns_same(const Rdmad__Device *a, const Rdmad__Device *b)
{
	return a->netns == b->netns && a->netns_cookie == b->netns_cookie;
}

bool netns_matches(const Rdmad__Device *dev, uint64_t id)
{
	if (!id)
		return !netns_foreign(dev);
	return dev->netns == id || dev->netns_cookie == id;
}

const char *netns_qualifier(const Rdmad__Device *dev,
			    char buf[NETNS_QUALIFIER_MAX])
{
	if (dev->netns)
		snprintf(buf, NETNS_QUALIFIER_MAX, "@netns:%" PRIu64,
			 dev->netns);
	else if (dev->netns_cookie)
		snprintf(buf, NETNS_QUALIFIER_MAX, "@netns-cookie:%" PRIu64,
			 dev->netns_cookie);
	else
		buf[0] = '\0';
	return buf;
}
