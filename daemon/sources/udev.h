/* SPDX-License-Identifier: MIT */
/*
 * The udev event source (udev.c): turns uevents into rescan requests.
 * Constructors return NULL with errno set on failure.
 */
#ifndef RDMAD_UDEV_H
#define RDMAD_UDEV_H

#include <stdbool.h>

struct event_base;
struct scan;

/* udev.c: libudev monitor on infiniband, infiniband_verbs,
 * infiniband_mad, net and pci.
 * Create it before the first full scan so nothing slips between. */
struct udev_source;
struct udev_source *udev_source_new(struct event_base *base, struct scan *scan);
void udev_source_free(struct udev_source *src);

/* What one uevent asks for, decoded from its properties alone (exposed for
 * the unit test and the fuzzer).  Names are validated: at most 63 bytes,
 * no '/', not "." or "..", printable ASCII. */
enum udev_target_kind {
	UDEV_TARGET_IBDEV,  /* rescan ib device @name (and @old_name) */
	UDEV_TARGET_UVERBS, /* rescan the device behind uverbs @name */
	UDEV_TARGET_NETDEV, /* rescan devices on netdev @name (and @old_name) */
	UDEV_TARGET_PCI,    /* PCI function @name changed (sriov_numvfs) */
	UDEV_TARGET_MAD,    /* rescan the device behind umad/issm @name */
};
struct udev_uevent {
	const char *action;    /* "add", "remove", "change", "move", ... */
	const char *subsystem; /* "infiniband", "infiniband_verbs",
				* "infiniband_mad", "net", "pci" */
	const char *sysname;
	const char *devpath_old; /* DEVPATH_OLD, for "move" */
	const char *ibdev;	 /* sysattr "ibdev" of a uverbs or mad device */
	const char *ifname_old;	 /* INTERFACE_OLD, for a netdev rename */
};
struct udev_target {
	enum udev_target_kind kind;
	char name[64];
	char old_name[64]; /* empty unless renamed */
	/* The ib device's own add (the kernel sends it once every client's
	 * nodes are made, arrival.h), or its rename: the device under that
	 * name is registered and complete. */
	bool kernel_added;
};
/* 0 and *ret filled; -ENOMSG for events to ignore; -EINVAL for garbage. */
int udev_decode(const struct udev_uevent *ev, struct udev_target *ret);

#endif
