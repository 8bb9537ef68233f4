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
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct devices;
struct device;
enum devices_event;

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
/* Ask for a rescan of every device with a port on netdev @ifname; returns
 * how many were asked for (udev and rtnetlink know netdevs, not devices). */
unsigned int scan_request_netdev(struct scan *scan, const char *ifname);
/* Ask for a rescan of the device behind char device @uverbs ("uverbs3"),
 * or of everything when no device in the table has it. */
void scan_request_uverbs(struct scan *scan, const char *uverbs);

/* udev.c: libudev monitor on infiniband, infiniband_verbs and net.
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
};
struct udev_uevent {
	const char *action;    /* "add", "remove", "change", "move", ... */
	const char *subsystem; /* "infiniband", "infiniband_verbs", "net" */
	const char *sysname;
	const char *devpath_old; /* DEVPATH_OLD, for "move" */
	const char *ibdev;	 /* sysattr "ibdev" of a uverbs device */
	const char *ifname_old;	 /* INTERFACE_OLD, for a netdev rename */
};
struct udev_target {
	enum udev_target_kind kind;
	char name[64];
	char old_name[64]; /* empty unless renamed */
};
/* 0 and *ret filled; -ENOMSG for events to ignore; -EINVAL for garbage. */
int udev_decode(const struct udev_uevent *ev, struct udev_target *ret);

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

/* Decoding of the kernel's RDMA netlink messages (exposed for the unit test
 * and the fuzzer).  @buf holds one message as read from the socket. */
struct netlink_rdma_sys {
	bool has_copy_on_fork; /* the attribute is there at all */
	bool copy_on_fork;
	bool has_monitor; /* RDMA_NLDEV_SYS_ATTR_MONITOR_MODE: >= 6.12 */
};
/* A SYS_GET reply: 0; -ENOMSG other type; -EBADMSG malformed; a kernel
 * error reply gives its -errno. */
int netlink_parse_sys(const void *buf, size_t len,
		      struct netlink_rdma_sys *ret);

enum netlink_rdma_event {
	NETLINK_RDMA_REGISTER,
	NETLINK_RDMA_UNREGISTER,
	NETLINK_RDMA_NETDEV_ATTACH,
	NETLINK_RDMA_NETDEV_DETACH,
	NETLINK_RDMA_RENAME,
	NETLINK_RDMA_NETDEV_RENAME,
	NETLINK_RDMA_UNKNOWN,
};
struct netlink_rdma_notice {
	enum netlink_rdma_event event;
	char ibdev[64];	 /* empty if absent or unusable */
	char netdev[16]; /* empty if absent or unusable */
	uint32_t port;	 /* 0 if absent */
};
/* A RDMA_NLDEV_CMD_MONITOR message: 0; -ENOMSG other type; -EBADMSG. */
int netlink_parse_monitor(const void *buf, size_t len,
			  struct netlink_rdma_notice *ret);

/* async.c: opens each present device through libibverbs and listens to
 * its async events (port, GID, DEVICE_FATAL); degrades quietly where a
 * device cannot be opened.  main.c forwards table events to it. */
struct async_source;
struct async_source *async_source_new(struct event_base *base,
				      struct devices *table, struct scan *scan);
void async_source_free(struct async_source *src);
void async_source_device_event(struct async_source *src,
			       enum devices_event event,
			       const struct device *dev);
/* Devices currently open with a verbs context. */
unsigned int async_source_open_count(const struct async_source *src);

#endif
