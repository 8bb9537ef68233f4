/* SPDX-License-Identifier: MIT */
/*
 * A scan module that records the rescan requests event sources make, so
 * their tests check which device a uevent or link event asked for.
 */
#include <stddef.h>

#include "fake.h"
#include "scan.h"

void scan_request(struct scan *scan, const char *ibdev)
{
	if (ibdev)
		fake_calls_add("dev:%s", ibdev);
	else
		fake_calls_add("all");
}

void scan_kernel_added(struct scan *scan, const char *ibdev)
{
	fake_calls_add("added:%s", ibdev);
}

void scan_request_removed(struct scan *scan, const char *ibdev)
{
	fake_calls_add("removed:%s", ibdev);
}

unsigned int scan_request_netdev(struct scan *scan, const char *ifname)
{
	fake_calls_add("netdev:%s", ifname);
	return 0;
}

void scan_request_uverbs(struct scan *scan, const char *uverbs)
{
	fake_calls_add("uverbs:%s", uverbs);
}

void scan_uverbs_gone(struct scan *scan, const char *uverbs)
{
	fake_calls_add("uverbs-gone:%s", uverbs);
}

void scan_request_mad(struct scan *scan, const char *mad)
{
	fake_calls_add("mad:%s", mad);
}
