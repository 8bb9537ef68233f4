/* SPDX-License-Identifier: MIT */
/*
 * Unit test of daemon/sources/netlink.c.
 *
 * RDMA netlink: no kernel here answers, so crafted replies and monitor
 * messages (built with libnl as the kernel would send them, and broken on
 * purpose) go through the decoders, table-driven.
 *
 * rtnetlink: as root in a fresh network namespace, a veth pair is
 * created, brought up and down, renamed and deleted; the fake device
 * table and scan record what the source told them.  Without root or
 * unshare(CLONE_NEWNET) this part is skipped (exit 77) with the reason.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <rdma/rdma_netlink.h>

#include "fake.h"
#include "check.h"
#include "netlink.h"
#include "scan.h"

/* Newer than Debian 12's header; see netlink.c. */
#define MONITOR_CMD 28
#define ATTR_EVENT_TYPE 102
#define ATTR_MONITOR_MODE 103

/* ---- crafted RDMA netlink messages ---- */

enum attr_kind { A_END, A_U8, A_U32, A_STR, A_RAW };
struct attr {
	enum attr_kind kind;
	int type;
	uint32_t value;
	const char *str;
	int rawlen;
};

static struct nl_msg *build(int cmd, const struct attr *attrs)
{
	struct nl_msg *msg;

	msg = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), 0);
	for (; msg && attrs->kind != A_END; attrs++) {
		switch (attrs->kind) {
		case A_U8:
			nla_put_u8(msg, attrs->type, attrs->value);
			break;
		case A_U32:
			nla_put_u32(msg, attrs->type, attrs->value);
			break;
		case A_STR:
			nla_put_string(msg, attrs->type, attrs->str);
			break;
		case A_RAW:
			nla_put(msg, attrs->type, attrs->rawlen, attrs->str);
			break;
		case A_END:
			break;
		}
	}
	return msg;
}

static void test_parse_sys(void)
{
	static const struct {
		const char *what;
		int cmd;
		struct attr attrs[4];
		int ret;
		bool has_cof, cof, monitor;
	} cases[] = {
		{"6.12 kernel",
		 RDMA_NLDEV_CMD_SYS_GET,
		 {{A_U8, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1},
		  {A_U8, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1},
		  {A_U8, ATTR_MONITOR_MODE, 1}},
		 0,
		 true,
		 true,
		 true},
		{"5.13 kernel",
		 RDMA_NLDEV_CMD_SYS_GET,
		 {{A_U8, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1},
		  {A_U8, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1}},
		 0,
		 true,
		 true,
		 false},
		{"5.10 kernel",
		 RDMA_NLDEV_CMD_SYS_GET,
		 {{A_U8, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 0}},
		 0,
		 false,
		 false,
		 false},
		{"copy-on-fork off",
		 RDMA_NLDEV_CMD_SYS_GET,
		 {{A_U8, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 0}},
		 0,
		 true,
		 false,
		 false},
		{"unknown attributes",
		 RDMA_NLDEV_CMD_SYS_GET,
		 {{A_U32, 200, 7}, {A_U8, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1}},
		 0,
		 true,
		 true,
		 false},
		{"empty u8",
		 RDMA_NLDEV_CMD_SYS_GET,
		 {{A_RAW, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 0, "", 0}},
		 -EBADMSG},
		{"another command",
		 RDMA_NLDEV_CMD_GET,
		 {{A_U8, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1}},
		 -ENOMSG},
	};
	struct netlink_rdma_sys sys;
	struct nl_msg *msg;
	struct nlmsghdr *nlh;
	size_t i;
	int r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		msg = build(cases[i].cmd, cases[i].attrs);
		nlh = nlmsg_hdr(msg);
		r = netlink_parse_sys(nlh, nlh->nlmsg_len, &sys);
		CHECK(r == cases[i].ret, "%s: %d", cases[i].what, r);
		if (r == 0)
			CHECK(sys.has_copy_on_fork == cases[i].has_cof &&
				      sys.copy_on_fork == cases[i].cof &&
				      sys.has_monitor == cases[i].monitor,
			      "%s: %d %d %d", cases[i].what,
			      sys.has_copy_on_fork, sys.copy_on_fork,
			      sys.has_monitor);
		/* Every truncation of a good message is refused. */
		for (size_t len = 0; len < nlh->nlmsg_len; len++)
			CHECK(netlink_parse_sys(nlh, len, &sys) < 0,
			      "%s: truncated to %zu accepted", cases[i].what,
			      len);
		nlmsg_free(msg);
	}
	/* The namespace mode: 0 is exclusive, 1 shared, absent unknown. */
	for (int mode = 0; mode <= 1; mode++) {
		msg = build(
			RDMA_NLDEV_CMD_SYS_GET,
			(struct attr[]){
				{A_U8, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, mode},
				{A_END}});
		nlh = nlmsg_hdr(msg);
		CHECK(netlink_parse_sys(nlh, nlh->nlmsg_len, &sys) == 0 &&
			      sys.has_netns_mode &&
			      sys.netns_exclusive == (mode == 0),
		      "netns mode %d: %d %d", mode, sys.has_netns_mode,
		      sys.netns_exclusive);
		nlmsg_free(msg);
	}
	msg = build(RDMA_NLDEV_CMD_SYS_GET,
		    (struct attr[]){{A_U8, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1},
				    {A_END}});
	nlh = nlmsg_hdr(msg);
	CHECK(netlink_parse_sys(nlh, nlh->nlmsg_len, &sys) == 0 &&
		      !sys.has_netns_mode,
	      "no netns mode attribute: unknown");
	nlmsg_free(msg);
}

static void test_parse_errors(void)
{
	struct {
		struct nlmsghdr h;
		struct nlmsgerr e;
	} err = {
		.h = {.nlmsg_len = sizeof(err), .nlmsg_type = NLMSG_ERROR},
		.e = {.error = -EOPNOTSUPP},
	};
	struct nlmsghdr lying = {.nlmsg_len = 4096};
	struct netlink_rdma_sys sys;
	int r;

	/* An old kernel without SYS_GET answers with an error. */
	r = netlink_parse_sys(&err, sizeof(err), &sys);
	CHECK(r == -EOPNOTSUPP, "%d", r);
	err.e.error = 0;
	CHECK(netlink_parse_sys(&err, sizeof(err), &sys) == -ENOMSG, "ack");
	err.e.error = 12345;
	CHECK(netlink_parse_sys(&err, sizeof(err), &sys) == -EBADMSG, "bad");
	err.h.nlmsg_len = sizeof(struct nlmsghdr) + 2;
	CHECK(netlink_parse_sys(&err, sizeof(err), &sys) == -EBADMSG, "short");
	CHECK(netlink_parse_sys(&lying, sizeof(lying), &sys) == -EBADMSG,
	      "length beyond the buffer");
	CHECK(netlink_parse_sys(NULL, 0, &sys) == -EBADMSG, "NULL");
}

static void test_parse_monitor(void)
{
	static const struct {
		const char *what;
		struct attr attrs[5];
		enum netlink_rdma_event event;
		const char *ibdev, *netdev;
		uint32_t port;
	} cases[] = {
		{"register",
		 {{A_U32, RDMA_NLDEV_ATTR_DEV_INDEX, 3},
		  {A_STR, RDMA_NLDEV_ATTR_DEV_NAME, 0, "mlx5_0"},
		  {A_U8, ATTR_EVENT_TYPE, 0}},
		 NETLINK_RDMA_REGISTER,
		 "mlx5_0",
		 "",
		 0},
		{"unregister",
		 {{A_STR, RDMA_NLDEV_ATTR_DEV_NAME, 0, "mlx5_0"},
		  {A_U8, ATTR_EVENT_TYPE, 1}},
		 NETLINK_RDMA_UNREGISTER,
		 "mlx5_0",
		 "",
		 0},
		{"netdev attach",
		 {{A_STR, RDMA_NLDEV_ATTR_DEV_NAME, 0, "rxe0"},
		  {A_U32, RDMA_NLDEV_ATTR_PORT_INDEX, 1},
		  {A_STR, RDMA_NLDEV_ATTR_NDEV_NAME, 0, "eth0"},
		  {A_U8, ATTR_EVENT_TYPE, 2}},
		 NETLINK_RDMA_NETDEV_ATTACH,
		 "rxe0",
		 "eth0",
		 1},
		{"rename",
		 {{A_STR, RDMA_NLDEV_ATTR_DEV_NAME, 0, "rdma7"},
		  {A_U8, ATTR_EVENT_TYPE, 4}},
		 NETLINK_RDMA_RENAME,
		 "rdma7",
		 "",
		 0},
		{"future event type",
		 {{A_STR, RDMA_NLDEV_ATTR_DEV_NAME, 0, "mlx5_0"},
		  {A_U8, ATTR_EVENT_TYPE, 99}},
		 NETLINK_RDMA_UNKNOWN,
		 "mlx5_0",
		 "",
		 0},
		{"no event type",
		 {{A_STR, RDMA_NLDEV_ATTR_DEV_NAME, 0, "mlx5_0"}},
		 NETLINK_RDMA_UNKNOWN,
		 "mlx5_0",
		 "",
		 0},
		{"name with a slash",
		 {{A_STR, RDMA_NLDEV_ATTR_DEV_NAME, 0, "../etc"},
		  {A_U8, ATTR_EVENT_TYPE, 0}},
		 NETLINK_RDMA_REGISTER,
		 "",
		 "",
		 0},
		{"name without NUL",
		 {{A_RAW, RDMA_NLDEV_ATTR_DEV_NAME, 0, "mlx5_0", 6},
		  {A_U8, ATTR_EVENT_TYPE, 0}},
		 NETLINK_RDMA_REGISTER,
		 "mlx5_0",
		 "",
		 0},
		{"'.' without NUL, last in the message",
		 {{A_U8, ATTR_EVENT_TYPE, 0},
		  {A_RAW, RDMA_NLDEV_ATTR_DEV_NAME, 0, ".", 1}},
		 NETLINK_RDMA_REGISTER,
		 "",
		 "",
		 0},
		{"netdev name too long",
		 {{A_STR, RDMA_NLDEV_ATTR_DEV_NAME, 0, "rxe0"},
		  {A_STR, RDMA_NLDEV_ATTR_NDEV_NAME, 0,
		   "a_name_longer_than_ifnamsiz"},
		  {A_U8, ATTR_EVENT_TYPE, 3}},
		 NETLINK_RDMA_NETDEV_DETACH,
		 "rxe0",
		 "",
		 0},
	};
	struct netlink_rdma_notice n;
	struct nl_msg *msg;
	struct nlmsghdr *nlh;
	size_t i;
	int r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		msg = build(MONITOR_CMD, cases[i].attrs);
		nlh = nlmsg_hdr(msg);
		r = netlink_parse_monitor(nlh, nlh->nlmsg_len, &n);
		CHECK(r == 0, "%s: %d", cases[i].what, r);
		CHECK(n.event == cases[i].event &&
			      strcmp(n.ibdev, cases[i].ibdev) == 0 &&
			      strcmp(n.netdev, cases[i].netdev) == 0 &&
			      n.port == cases[i].port,
		      "%s: event %d ibdev '%s' netdev '%s' port %u",
		      cases[i].what, n.event, n.ibdev, n.netdev, n.port);
		nlmsg_free(msg);
	}
	msg = build(RDMA_NLDEV_CMD_SYS_GET, cases[0].attrs);
	nlh = nlmsg_hdr(msg);
	CHECK(netlink_parse_monitor(nlh, nlh->nlmsg_len, &n) == -ENOMSG,
	      "a SYS_GET reply taken for a notice");
	nlmsg_free(msg);
}

/* ---- rtnetlink in a fresh network namespace ---- */

static struct event_base *base;

/* How long to wait for an event: a deadline, not a pace. */
#define WAIT_MS 10000

static bool wait_for(const char *call, unsigned int ms)
{
	struct timeval tv = {.tv_usec = 20 * 1000};
	unsigned int waited;

	for (waited = 0; waited < ms; waited += 20) {
		if (fake_calls_count(call) > 0)
			return true;
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	return fake_calls_count(call) > 0;
}

static int link_change(struct nl_sock *sk, const char *name, int up,
		       const char *new_name)
{
	struct rtnl_link *orig = NULL, *change;
	int r;

	r = rtnl_link_get_kernel(sk, 0, name, &orig);
	if (r < 0)
		return r;
	change = rtnl_link_alloc();
	if (up > 0)
		rtnl_link_set_flags(change, IFF_UP);
	else if (up == 0)
		rtnl_link_unset_flags(change, IFF_UP);
	if (new_name)
		rtnl_link_set_name(change, new_name);
	r = rtnl_link_change(sk, orig, change, 0);
	rtnl_link_put(change);
	rtnl_link_put(orig);
	return r;
}

/* The source's rtnetlink event socket: the one subscribed to groups. */
static int find_event_socket(void)
{
	struct sockaddr_nl sa;
	socklen_t len;
	int fd, proto;

	for (fd = 3; fd < 1024; fd++) {
		len = sizeof(sa);
		if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
		    sa.nl_family != AF_NETLINK)
			continue;
		len = sizeof(proto);
		if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0 ||
		    proto != NETLINK_ROUTE || sa.nl_groups == 0)
			continue;
		return fd;
	}
	return -1;
}

/* Events lost to a full socket buffer (ENOBUFS): the source re-reads
 * every link and asks for a full rescan instead of going stale. */
static void test_overrun(struct nl_sock *sk)
{
	int fd = find_event_socket(), small = 4096, i;
	char a[16], b[16];

	CHECK(fd >= 0, "no rtnetlink event socket found");
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	fake_calls_reset();
	for (i = 0; i < 32; i++) {
		snprintf(a, sizeof(a), "ova%d", i);
		snprintf(b, sizeof(b), "ovb%d", i);
		rtnl_link_veth_add(sk, a, b, getpid());
	}
	CHECK(wait_for("all", WAIT_MS), "no full rescan after an overrun: %s",
	      fake_calls_dump());
	/* The resync told the table about links it never heard of. */
	CHECK(fake_calls_count("state:ova31=down") >= 1, "not reseeded: %s",
	      fake_calls_dump());
}

static int test_rtnetlink(void)
{
	struct netlink_source *src;
	struct nl_sock *sk;
	struct rtnl_link *link = NULL;
	int r;

	/* A network namespace of our own for the veths; not root (a package
	 * build), in a user namespace of our own too, which gives
	 * CAP_NET_ADMIN over it. */
	if (unshare(geteuid() ? CLONE_NEWUSER | CLONE_NEWNET : CLONE_NEWNET) <
	    0) {
		fprintf(stderr,
			"SKIP: rtnetlink part: no network namespace "
			"of our own (%s%s)\n",
			geteuid() ? "user namespace: " : "", strerror(errno));
		return 77;
	}
	base = event_base_new();
	sk = nl_socket_alloc();
	if (nl_connect(sk, NETLINK_ROUTE) < 0)
		return 1;

	/* Seeding: the new namespace has lo, down. */
	fake_calls_reset();
	src = netlink_source_new(base, NULL, NULL);
	CHECK(src != NULL, "netlink_source_new: %s", strerror(errno));
	if (!src)
		return 1;
	CHECK(fake_calls_count("state:lo=down") == 1, "%s", fake_calls_dump());
	/* This kernel has no RDMA netlink (or we would test it here). */
	if (!netlink_has_rdma(src))
		CHECK(!netlink_has_monitor(src) && !netlink_copy_on_fork(src),
		      "monitor or copy-on-fork without RDMA netlink");

	fake_calls_reset();
	r = rtnl_link_veth_add(sk, "c2a", "c2b", getpid());
	CHECK(r == 0, "veth: %s", nl_geterror(r));
	CHECK(wait_for("netdev:c2b", WAIT_MS) &&
		      wait_for("netdev:c2a", WAIT_MS),
	      "new links: %s", fake_calls_dump());
	CHECK(fake_calls_count("state:c2a=down") == 1, "%s", fake_calls_dump());

	/* Up only counts once the peer is up too (oper state). */
	fake_calls_reset();
	link_change(sk, "c2a", 1, NULL);
	link_change(sk, "c2b", 1, NULL);
	CHECK(wait_for("state:c2a=up", WAIT_MS) &&
		      wait_for("state:c2b=up", WAIT_MS),
	      "up: %s", fake_calls_dump());

	fake_calls_reset();
	link_change(sk, "c2a", 0, NULL);
	CHECK(wait_for("state:c2a=down", WAIT_MS), "down: %s",
	      fake_calls_dump());
	CHECK(wait_for("state:c2b=down", WAIT_MS), "peer: %s",
	      fake_calls_dump());
	CHECK(fake_calls_count("state:c2a=up") == 0, "%s", fake_calls_dump());

	/* A rename (of a down link) tells both names; the old is gone. */
	fake_calls_reset();
	link_change(sk, "c2b", 0, NULL);
	link_change(sk, "c2b", -1, "c2c");
	CHECK(wait_for("netdev:c2c", WAIT_MS), "rename: %s", fake_calls_dump());
	CHECK(fake_calls_count("netdev:c2b") == 1 &&
		      fake_calls_count("gone:c2b") == 1,
	      "rename: %s", fake_calls_dump());

	/* Deleting one end deletes both. */
	fake_calls_reset();
	r = rtnl_link_get_kernel(sk, 0, "c2a", &link);
	if (r == 0) {
		rtnl_link_delete(sk, link);
		rtnl_link_put(link);
	}
	CHECK(wait_for("netdev:c2a", WAIT_MS) &&
		      wait_for("netdev:c2c", WAIT_MS),
	      "delete: %s", fake_calls_dump());
	CHECK(wait_for("gone:c2a", WAIT_MS) && wait_for("gone:c2c", WAIT_MS),
	      "deleted links forgotten: %s", fake_calls_dump());

	test_overrun(sk);

	netlink_source_free(src);
	nl_socket_free(sk);
	event_base_free(base);
	return 0;
}

int main(void)
{
	int r;

	test_parse_sys();
	test_parse_errors();
	test_parse_monitor();
	r = test_rtnetlink();
	if (failures)
		fprintf(stderr, "%u failures\n", failures);
	return failures ? 1 : r;
}
