/* SPDX-License-Identifier: MIT */
/*
 * The daemon's event sources, each implemented in its own file
 * (scan.c, udev.c, netlink.c, async.c).  They only turn events into calls
 * on the device table; main.c creates them in order and frees them in
 * reverse.  Constructors return NULL with errno set on failure.
 */
#ifndef RDMAD_SOURCES_H
#define RDMAD_SOURCES_H

#include <stdbool.h>

struct event_base;
struct devices;
struct device;
enum devices_event;

/* scan.c: coalesces rescan requests on a short timer, then reads sysfs
 * and applies the result to the table.  One device's request rescans
 * that device; more than @storm_threshold pending (or a NULL name)
 * becomes one full rescan. */
struct scan_options {
	const char *sysroot;           /* "/sys" */
	unsigned int debounce_ms;      /* coalescing window, e.g. 10 */
	unsigned int storm_threshold;  /* e.g. 64 */
};
struct scan;
struct scan *scan_new(struct event_base *base, struct devices *table,
		      const struct scan_options *opts);
void scan_free(struct scan *scan);
/* Synchronous full rescan (start-up, SIGHUP, admin request). */
int scan_full_now(struct scan *scan);
/* Ask for a rescan of ib device @ibdev (NULL: everything), coalesced. */
void scan_request(struct scan *scan, const char *ibdev);

/* udev.c: libudev monitor on infiniband, infiniband_verbs and net.
 * Create it before the first full scan so nothing slips between. */
struct udev_source;
struct udev_source *udev_source_new(struct event_base *base,
				    struct scan *scan);
void udev_source_free(struct udev_source *src);

/* netlink.c: rtnetlink link events (netdevs behind RoCE/iWARP ports) and
 * the kernel's RDMA netlink (monitor group, COPY_ON_FORK) where present. */
struct netlink_source;
struct netlink_source *netlink_source_new(struct event_base *base,
					  struct devices *table,
					  struct scan *scan);
void netlink_source_free(struct netlink_source *src);
/* Whether the kernel offers RDMA netlink, its monitor group, and
 * copy-on-fork, as detected at start (for logs, STATUS= and metrics). */
bool netlink_has_rdma(const struct netlink_source *src);
bool netlink_has_monitor(const struct netlink_source *src);
bool netlink_copy_on_fork(const struct netlink_source *src);

/* async.c: opens each present device through libibverbs and listens to
 * its async events (port, GID, DEVICE_FATAL); degrades quietly where a
 * device cannot be opened.  main.c forwards table events to it. */
struct async_source;
struct async_source *async_source_new(struct event_base *base,
				      struct devices *table,
				      struct scan *scan);
void async_source_free(struct async_source *src);
void async_source_device_event(struct async_source *src,
			       enum devices_event event,
			       const struct device *dev);
/* Devices currently open with a verbs context. */
unsigned int async_source_open_count(const struct async_source *src);

#endif
