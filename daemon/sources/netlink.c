/* SPDX-License-Identifier: MIT */
/*
 * The netlink event sources.
 *
 * rtnetlink: a libnl cache manager keeps a cache of links and tells us
 * each change with the old and the new object, so a rename shows both
 * names.  Up/down of a netdev goes straight to the device table (the
 * state of RoCE/iWARP ports follows their netdev); a rename, a new or a
 * deleted link asks for a rescan of the devices whose ports it backs.
 *
 * RDMA netlink (NETLINK_RDMA, family RDMA_NL_NLDEV): asked once at start
 * for the system attributes (copy-on-fork, since 5.13; the monitor mode,
 * since 6.12), and where the kernel has the monitor, subscribed to its
 * notify group for device (un)registration, renames and netdev
 * (de)association.  Kernels without RDMA netlink (or without RDMA at all)
 * get one info line; udev covers the same ground a little later.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <event2/event.h>
#include <linux/if.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <rdma/rdma_netlink.h>

#include "devices.h"
#include "log.h"
#include "name.h"
#include "netlink.h"
#include "scan.h"

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

/*
 * Newer than Debian 12's <rdma/rdma_netlink.h> (Linux 6.1): values from
 * Linux 6.12's include/uapi/rdma/rdma_netlink.h.  They are ABI and never
 * change; prefixed so a newer header cannot clash.
 */
#define RDMAD_NL_GROUP_NOTIFY 4
#define RDMAD_NLDEV_CMD_MONITOR 28
#define RDMAD_NLDEV_ATTR_EVENT_TYPE 102
#define RDMAD_NLDEV_SYS_ATTR_MONITOR_MODE 103
#define RDMAD_NLDEV_ATTR_MAX 104

/* enum rdma_nl_notify_event_type, same source. */
enum {
	RDMAD_REGISTER_EVENT,
	RDMAD_UNREGISTER_EVENT,
	RDMAD_NETDEV_ATTACH_EVENT,
	RDMAD_NETDEV_DETACH_EVENT,
	RDMAD_RENAME_EVENT,
	RDMAD_NETDEV_RENAME_EVENT,
};

/* Socket buffers big enough for a burst of link or device events. */
#define NETLINK_RCVBUF (4 * 1024 * 1024)
/* A kernel that does not answer the start-up query within this long is
 * treated as having no RDMA netlink. */
#define NETLINK_QUERY_TIMEOUT_S 2

struct netlink_source {
	struct event_base *base;
	struct devices *table;
	struct scan *scan;

	struct nl_sock *route_sk;   /* the cache manager's, for events */
	struct nl_sock *route_sync; /* for refills after an overrun */
	struct nl_cache_mngr *mngr;
	struct nl_cache *links;
	struct event *route_ev;

	struct nl_sock *rdma_sk; /* monitor group subscription */
	struct event *rdma_ev;

	bool has_rdma;
	bool has_monitor;
	bool copy_on_fork;
	enum views_netns_mode netns_mode;
	bool overrun_logged;
	bool links_in_mngr; /* the manager frees the cache */
};

/* ---- RDMA netlink decoding ---- */

/* Check that @buf holds one whole netlink message of @type.  Kernel error
 * replies give their -errno; an ACK or another type gives -ENOMSG. */
static int check_msg(const void *buf, size_t len, uint16_t type)
{
	const struct nlmsghdr *nlh = buf;
	const struct nlmsgerr *err;

	if (!buf || len > INT_MAX || !nlmsg_ok(nlh, (int)len))
		return -EBADMSG;
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(*err))
			return -EBADMSG;
		err = nlmsg_data(nlh);
		if (err->error == 0)
			return -ENOMSG;
		if (err->error > 0 || err->error < -4095)
			return -EBADMSG;
		return err->error;
	}
	return nlh->nlmsg_type == type ? 0 : -ENOMSG;
}

static int parse_attrs(const void *buf, struct nlattr **tb,
		       struct nla_policy *policy)
{
	/* libnl's parser takes a mutable header but only reads it. */
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;

	if (nlmsg_parse(nlh, 0, tb, RDMAD_NLDEV_ATTR_MAX - 1, policy) < 0)
		return -EBADMSG;
	return 0;
}

int netlink_parse_sys(const void *buf, size_t len, struct netlink_rdma_sys *ret)
{
	static struct nla_policy policy[RDMAD_NLDEV_ATTR_MAX] = {
		[RDMA_NLDEV_SYS_ATTR_NETNS_MODE] = {.type = NLA_U8},
		[RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK] = {.type = NLA_U8},
		[RDMAD_NLDEV_SYS_ATTR_MONITOR_MODE] = {.type = NLA_U8},
	};
	struct nlattr *tb[RDMAD_NLDEV_ATTR_MAX];
	struct nlattr *cof, *mode;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = check_msg(buf, len,
		      RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET));
	if (r == 0)
		r = parse_attrs(buf, tb, policy);
	if (r < 0)
		return r;
	cof = tb[RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK];
	ret->has_copy_on_fork = cof != NULL;
	ret->copy_on_fork = cof && nla_get_u8(cof) != 0;
	ret->has_monitor = tb[RDMAD_NLDEV_SYS_ATTR_MONITOR_MODE] != NULL;
	mode = tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE];
	ret->has_netns_mode = mode != NULL;
	/* 1: shared (the default), 0: exclusive. */
	ret->netns_exclusive = mode && nla_get_u8(mode) == 0;
	return 0;
}

/* Copy a string attribute if it is a plausible device name; else leave
 * @ret empty (the caller then rescans everything). */
static void copy_name_attr(char *ret, size_t size, const struct nlattr *a)
{
	const char *s;
	size_t n;

	if (!a)
		return;
	/* The attribute need not hold a NUL: never read past it. */
	s = nla_data(a);
	n = strnlen(s, (size_t)nla_len(a));
	if (n >= size || !rdmad_name_valid(s, n))
		return;
	memcpy(ret, s, n);
	ret[n] = '\0';
}

static enum netlink_rdma_event event_of(const struct nlattr *a)
{
	if (!a)
		return NETLINK_RDMA_UNKNOWN;
	switch (nla_get_u8((struct nlattr *)a)) {
	case RDMAD_REGISTER_EVENT:
		return NETLINK_RDMA_REGISTER;
	case RDMAD_UNREGISTER_EVENT:
		return NETLINK_RDMA_UNREGISTER;
	case RDMAD_NETDEV_ATTACH_EVENT:
		return NETLINK_RDMA_NETDEV_ATTACH;
	case RDMAD_NETDEV_DETACH_EVENT:
		return NETLINK_RDMA_NETDEV_DETACH;
	case RDMAD_RENAME_EVENT:
		return NETLINK_RDMA_RENAME;
	case RDMAD_NETDEV_RENAME_EVENT:
		return NETLINK_RDMA_NETDEV_RENAME;
	default:
		return NETLINK_RDMA_UNKNOWN;
	}
}

int netlink_parse_monitor(const void *buf, size_t len,
			  struct netlink_rdma_notice *ret)
{
	static struct nla_policy policy[RDMAD_NLDEV_ATTR_MAX] = {
		[RDMA_NLDEV_ATTR_DEV_NAME] = {.type = NLA_UNSPEC},
		[RDMA_NLDEV_ATTR_PORT_INDEX] = {.type = NLA_U32},
		[RDMA_NLDEV_ATTR_NDEV_NAME] = {.type = NLA_UNSPEC},
		[RDMAD_NLDEV_ATTR_EVENT_TYPE] = {.type = NLA_U8},
	};
	struct nlattr *tb[RDMAD_NLDEV_ATTR_MAX];
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->event = NETLINK_RDMA_UNKNOWN;
	r = check_msg(buf, len,
		      RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMAD_NLDEV_CMD_MONITOR));
	if (r == 0)
		r = parse_attrs(buf, tb, policy);
	if (r < 0)
		return r;
	ret->event = event_of(tb[RDMAD_NLDEV_ATTR_EVENT_TYPE]);
	copy_name_attr(ret->ibdev, sizeof(ret->ibdev),
		       tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	copy_name_attr(ret->netdev, sizeof(ret->netdev),
		       tb[RDMA_NLDEV_ATTR_NDEV_NAME]);
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		ret->port = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	return 0;
}

/* ---- RDMA netlink sockets ---- */

static void on_notice(struct netlink_source *src,
		      const struct netlink_rdma_notice *n)
{
	switch (n->event) {
	case NETLINK_RDMA_REGISTER:
		/* Sent after the device's own add uevent (arrival.h). */
		if (n->ibdev[0]) {
			scan_kernel_added(src->scan, n->ibdev);
			break;
		}
		scan_request(src->scan, NULL);
		break;
	case NETLINK_RDMA_UNREGISTER:
	case NETLINK_RDMA_NETDEV_ATTACH:
	case NETLINK_RDMA_NETDEV_DETACH:
	case NETLINK_RDMA_NETDEV_RENAME:
		scan_request(src->scan, n->ibdev[0] ? n->ibdev : NULL);
		break;
	case NETLINK_RDMA_RENAME:
	case NETLINK_RDMA_UNKNOWN:
		/* A rename names only the new device: the old entry is
		 * found by a full pass, by its identity. */
		scan_request(src->scan, NULL);
		break;
	}
}

static int on_monitor_msg(struct nl_msg *msg, void *arg)
{
	struct netlink_source *src = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct netlink_rdma_notice n;

	if (netlink_parse_monitor(nlh, nlh->nlmsg_len, &n) < 0) {
		log_debug("netlink: odd RDMA netlink message type %u",
			  nlh->nlmsg_type);
		return NL_SKIP;
	}
	log_debug("netlink: RDMA event %d on '%s'", n.event, n.ibdev);
	on_notice(src, &n);
	return NL_OK;
}

static void on_rdma_readable(evutil_socket_t fd, short what, void *arg)
{
	struct netlink_source *src = arg;
	int r;

	r = nl_recvmsgs_default(src->rdma_sk);
	if (r == -NLE_NOMEM) {
		/* ENOBUFS: notifications were lost. */
		if (!src->overrun_logged)
			log_warnx("netlink: RDMA monitor overran; rescanning");
		src->overrun_logged = true;
		scan_request(src->scan, NULL);
	}
}

static int on_sys_reply(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	if (netlink_parse_sys(nlh, nlh->nlmsg_len, arg) < 0)
		return NL_SKIP;
	return NL_OK;
}

static struct nl_sock *rdma_connect(void)
{
	struct nl_sock *sk;
	int r;

	sk = nl_socket_alloc();
	if (!sk)
		return NULL;
	r = nl_connect(sk, NETLINK_RDMA);
	if (r < 0) {
		log_info("netlink: kernel has no RDMA netlink (%s); "
			 "relying on udev",
			 nl_geterror(r));
		nl_socket_free(sk);
		return NULL;
	}
	return sk;
}

/* Ask the kernel for its RDMA system attributes, as libibverbs does for
 * copy-on-fork.  Older kernels answer with an error or without them. */
static void rdma_query_sys(struct netlink_source *src,
			   struct netlink_rdma_sys *ret)
{
	struct timeval tv = {.tv_sec = NETLINK_QUERY_TIMEOUT_S};
	struct nl_sock *sk;
	struct nl_msg *msg;
	int r = -NLE_NOMEM;

	memset(ret, 0, sizeof(*ret));
	sk = rdma_connect();
	if (!sk)
		return;
	src->has_rdma = true;
	setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_sys_reply, ret);
	msg = nlmsg_alloc_simple(
		RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), 0);
	if (msg && nl_send_auto(sk, msg) >= 0)
		r = nl_recvmsgs_default(sk);
	if (r < 0)
		log_info("netlink: RDMA system query failed: %s",
			 nl_geterror(r));
	nlmsg_free(msg);
	nl_socket_free(sk);
}

static int rdma_monitor_open(struct netlink_source *src)
{
	int fd;

	src->rdma_sk = rdma_connect();
	if (!src->rdma_sk)
		return -EPROTONOSUPPORT;
	/* Multicast notifications carry no sequence numbers of ours. */
	nl_socket_disable_seq_check(src->rdma_sk);
	nl_socket_modify_cb(src->rdma_sk, NL_CB_VALID, NL_CB_CUSTOM,
			    on_monitor_msg, src);
	if (nl_socket_add_membership(src->rdma_sk, RDMAD_NL_GROUP_NOTIFY) < 0 ||
	    nl_socket_set_nonblocking(src->rdma_sk) < 0)
		return -EPROTONOSUPPORT;
	nl_socket_set_buffer_size(src->rdma_sk, NETLINK_RCVBUF, 0);
	fd = nl_socket_get_fd(src->rdma_sk);
	src->rdma_ev = event_new(src->base, fd, EV_READ | EV_PERSIST,
				 on_rdma_readable, src);
	if (!src->rdma_ev || event_add(src->rdma_ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

static void rdma_open(struct netlink_source *src)
{
	struct netlink_rdma_sys sys;

	rdma_query_sys(src, &sys);
	if (!src->has_rdma)
		return;
	src->copy_on_fork = sys.copy_on_fork;
	log_info("netlink: kernel %s pinned pages at fork",
		 sys.copy_on_fork ? "copies" : "does not copy");
	if (sys.has_netns_mode)
		src->netns_mode = sys.netns_exclusive ? VIEWS_NETNS_EXCLUSIVE
						      : VIEWS_NETNS_SHARED;
	log_info("netlink: RDMA namespace mode %s",
		 views_netns_mode_name(src->netns_mode));
	if (!sys.has_monitor) {
		log_info("netlink: kernel has no RDMA monitor group (< 6.12); "
			 "relying on udev");
		return;
	}
	if (rdma_monitor_open(src) < 0) {
		log_info("netlink: cannot join the RDMA monitor group; "
			 "relying on udev");
		return;
	}
	src->has_monitor = true;
}

/* ---- rtnetlink ---- */

static bool link_up(struct rtnl_link *link)
{
	uint8_t oper = rtnl_link_get_operstate(link);

	/* IF_OPER_UNKNOWN: drivers that never report carrier (RFC 2863). */
	return (rtnl_link_get_flags(link) & IFF_UP) &&
	       (oper == IF_OPER_UP || oper == IF_OPER_UNKNOWN);
}

static void set_state(struct netlink_source *src, struct rtnl_link *link,
		      bool up)
{
	const char *name = rtnl_link_get_name(link);

	if (name && devices_set_netdev_state(src->table, name, up) < 0)
		log_debug("netlink: cannot note %s %s", name,
			  up ? "up" : "down");
}

static void forget(struct netlink_source *src, struct rtnl_link *link)
{
	const char *name = rtnl_link_get_name(link);

	if (name)
		devices_netdev_gone(src->table, name);
}

static void rescan_for(struct netlink_source *src, struct rtnl_link *link)
{
	const char *name = rtnl_link_get_name(link);

	if (name)
		scan_request_netdev(src->scan, name);
}

static void on_link_change(struct nl_cache *cache, struct nl_object *old_obj,
			   struct nl_object *new_obj, uint64_t diff, int action,
			   void *arg)
{
	struct netlink_source *src = arg;
	struct rtnl_link *old = (struct rtnl_link *)old_obj;
	struct rtnl_link *new = (struct rtnl_link *)new_obj;
	const char *old_name, *new_name;

	if (action == NL_ACT_NEW && new) {
		set_state(src, new, link_up(new));
		rescan_for(src, new);
	} else if (action == NL_ACT_DEL && (old || new)) {
		forget(src, old ? old : new);
		rescan_for(src, old ? old : new);
	} else if (action == NL_ACT_CHANGE && old && new) {
		old_name = rtnl_link_get_name(old);
		new_name = rtnl_link_get_name(new);
		if (old_name && new_name && strcmp(old_name, new_name) != 0) {
			forget(src, old);
			set_state(src, new, link_up(new));
			rescan_for(src, old);
			rescan_for(src, new);
		} else if (link_up(old) != link_up(new)) {
			set_state(src, new, link_up(new));
		}
	}
}

static void seed_one(struct nl_object *obj, void *arg)
{
	struct rtnl_link *link = (struct rtnl_link *)obj;

	set_state(arg, link, link_up(link));
}

static void route_resync(struct netlink_source *src)
{
	if (!src->overrun_logged)
		log_warnx("netlink: link events lost; resynchronising");
	src->overrun_logged = true;
	if (nl_cache_refill(src->route_sync, src->links) == 0)
		nl_cache_foreach(src->links, seed_one, src);
	scan_request(src->scan, NULL);
}

static void on_route_readable(evutil_socket_t fd, short what, void *arg)
{
	struct netlink_source *src = arg;
	int r;

	r = nl_cache_mngr_data_ready(src->mngr);
	/* libnl reports the socket's ENOBUFS as NLE_NOMEM. */
	if (r == -NLE_NOMEM)
		route_resync(src);
	else if (r < 0)
		log_debug("netlink: link events: %s", nl_geterror(r));
}

static int route_open(struct netlink_source *src)
{
	int r;

	src->route_sk = nl_socket_alloc();
	src->route_sync = nl_socket_alloc();
	if (!src->route_sk || !src->route_sync)
		return -ENOMEM;
	r = nl_connect(src->route_sync, NETLINK_ROUTE);
	if (r == 0)
		r = nl_cache_mngr_alloc(src->route_sk, NETLINK_ROUTE, 0,
					&src->mngr);
	if (r == 0)
		r = nl_cache_alloc_name("route/link", &src->links);
	if (r == 0)
		r = nl_cache_mngr_add_cache_v2(src->mngr, src->links,
					       on_link_change, src);
	src->links_in_mngr = r == 0;
	if (r < 0) {
		log_warnx("netlink: rtnetlink: %s", nl_geterror(r));
		return -EIO;
	}
	nl_socket_set_buffer_size(src->route_sk, NETLINK_RCVBUF, 0);
	nl_cache_foreach(src->links, seed_one, src);
	src->route_ev = event_new(src->base, nl_cache_mngr_get_fd(src->mngr),
				  EV_READ | EV_PERSIST, on_route_readable, src);
	if (!src->route_ev || event_add(src->route_ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

struct netlink_source *netlink_source_new(struct event_base *base,
					  struct devices *table,
					  struct scan *scan)
{
	struct netlink_source *src;
	int r;

	src = calloc(1, sizeof(*src));
	if (!src)
		return NULL;
	src->base = base;
	src->table = table;
	src->scan = scan;
	r = route_open(src);
	if (r < 0) {
		netlink_source_free(src);
		errno = -r;
		return NULL;
	}
	rdma_open(src);
	return src;
}

void netlink_source_free(struct netlink_source *src)
{
	if (!src)
		return;
	if (src->rdma_ev)
		event_free(src->rdma_ev);
	nl_socket_free(src->rdma_sk);
	if (src->route_ev)
		event_free(src->route_ev);
	/* The manager frees the caches added to it, not a socket it was
	 * given. */
	if (src->mngr)
		nl_cache_mngr_free(src->mngr);
	if (src->links && !src->links_in_mngr)
		nl_cache_free(src->links);
	nl_socket_free(src->route_sk);
	nl_socket_free(src->route_sync);
	free(src);
}

bool netlink_has_rdma(const struct netlink_source *src)
{
	return src->has_rdma;
}

bool netlink_has_monitor(const struct netlink_source *src)
{
	return src->has_monitor;
}

bool netlink_copy_on_fork(const struct netlink_source *src)
{
	return src->copy_on_fork;
}

enum views_netns_mode netlink_netns_mode(const struct netlink_source *src)
{
	return src ? src->netns_mode : VIEWS_NETNS_UNKNOWN;
}
