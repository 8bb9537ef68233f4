/* SPDX-License-Identifier: MIT */
/*
 * The netlink event source (netlink.c): rtnetlink link events and the
 * kernel's RDMA netlink.
 * Constructors return NULL with errno set on failure.
 */
#ifndef RDMAD_NETLINK_H
#define RDMAD_NETLINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "views.h"

struct event_base;
struct devices;
struct scan;

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
/* The kernel's RDMA namespace mode (`rdma system set netns`), as detected
 * at start; UNKNOWN without RDMA netlink.  The mode is the views' (views.h). */
enum views_netns_mode netlink_netns_mode(const struct netlink_source *src);

/* Decoding of the kernel's RDMA netlink messages (exposed for the unit test
 * and the fuzzer).  @buf holds one message as read from the socket. */
struct netlink_rdma_sys {
	bool has_copy_on_fork; /* the attribute is there at all */
	bool copy_on_fork;
	bool has_monitor;    /* RDMA_NLDEV_SYS_ATTR_MONITOR_MODE: >= 6.12 */
	bool has_netns_mode; /* RDMA_NLDEV_SYS_ATTR_NETNS_MODE: >= 5.3 */
	bool netns_exclusive;
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

#endif
