/* SPDX-License-Identifier: MIT */
/*
 * The rescanner (scan.c): the one event source that reads sysfs; the
 * others only ask it to.
 * Constructors return NULL with errno set on failure.
 */
#ifndef RDMAD_SCAN_H
#define RDMAD_SCAN_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct devices;

/* scan.c: coalesces rescan requests on a short timer, then reads sysfs
 * and applies the result to the table.  One device's request rescans
 * that device; more than @storm_threshold pending (or a NULL name)
 * becomes one full rescan. */
struct scan_options {
	const char *sysroot;	      /* "/sys" */
	unsigned int debounce_ms;     /* coalescing window, e.g. 10 */
	unsigned int storm_threshold; /* e.g. 64 */
};
struct scan;
struct scan *scan_new(struct event_base *base, struct devices *table,
		      const struct scan_options *opts);
void scan_free(struct scan *scan);
/* Synchronous full rescan (start-up, SIGHUP, admin request). */
int scan_full_now(struct scan *scan);
/* Ask for a rescan of ib device @ibdev (NULL: everything), coalesced. */
void scan_request(struct scan *scan, const char *ibdev);
/* The kernel announced ib device @ibdev (its own add uevent, or RDMA
 * netlink's REGISTER): every node its loaded clients make is there; a
 * registration held back is announced by the look this asks for
 * (arrival.h). */
void scan_kernel_added(struct scan *scan, const char *ibdev);
/* A removal of ib device @ibdev was announced: rescan it now and once more
 * a moment later, since the kernel announces a removal before sysfs
 * forgets the device (the first pass may still find it). */
void scan_request_removed(struct scan *scan, const char *ibdev);
/* Ask for a rescan of every device with a port on netdev @ifname; returns
 * how many were asked for (udev and rtnetlink know netdevs, not devices).
 * Here and below, which device a name stands for is route.h's answer. */
unsigned int scan_request_netdev(struct scan *scan, const char *ifname);
/* Ask for a rescan of the device behind char device @uverbs ("uverbs3"),
 * or of everything when no device in the table has it. */
void scan_request_uverbs(struct scan *scan, const char *uverbs);
/* Ask for a rescan of the device with ib_umad char device @mad ("umad0",
 * "issm0"), or of everything when no device in the table has it. */
void scan_request_mad(struct scan *scan, const char *mad);
/* The kernel removed char device @uverbs: unless sysfs has it again for
 * the same name (departure.c, rule 4), the present device that had it is
 * REMOVING now (devices_uverbs_gone()), before any scan; then it is
 * rescanned as scan_request_uverbs() does. */
void scan_uverbs_gone(struct scan *scan, const char *uverbs);

/* Passes over sysfs since start, and the time they took (for metrics). */
enum scan_kind {
	SCAN_KIND_FULL,	  /* every device */
	SCAN_KIND_DEVICE, /* one device */
	SCAN_KIND_COUNT,
};
struct scan_stats {
	uint64_t passes[SCAN_KIND_COUNT];
	uint64_t total_ns[SCAN_KIND_COUNT];
	uint64_t last_ns[SCAN_KIND_COUNT]; /* the latest pass */
};
const struct scan_stats *scan_get_stats(const struct scan *scan);

#endif
