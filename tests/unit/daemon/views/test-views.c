/* SPDX-License-Identifier: MIT */
/*
 * daemon/views/views.c and nstable.c: a view is built from what the kernel
 * says and what its clients say of themselves, never from
 * their files.  Views by reported nodes, a claim of the kernel's
 * devtmpfs, clients that say nothing, root in a container; and, in
 * exclusive mode, another namespace's table asked through a socket
 * (fake-nlquery.c scripts the kernel's answer), stranded when its last
 * client leaves with devices still there, dropped when they return.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "fake-nlquery.h"
#include "scope.h"
#include "views.h"

static struct device_record make_dev(const char *name, unsigned int minor)
{
	struct device_record d = {.numa_node = -1, .sriov_numvfs = -1};

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.uverbs, sizeof(d.uverbs), "uverbs%u", minor - 192);
	d.uverbs_dev = makedev(231, minor);
	snprintf(d.id, sizeof(d.id), "guid:%s", name);
	snprintf(d.node_guid, sizeof(d.node_guid), "%s", name);
	d.reg_key = minor;
	return d;
}

static struct devices *host_table(void)
{
	struct devices *t = devices_new(1);
	struct device_record devs[] = {make_dev("mlx5_0", 192),
				       make_dev("mlx5_1", 193)};

	CHECK(devices_apply_scan(t, devs, 2) == 2, "two devices");
	return t;
}

static struct peer user_peer(uid_t uid, bool known)
{
	struct peer p = {.pid = 4242, .uid = uid, .gid = uid, .known = known};

	if (known) {
		p.ns.net = 1; /* not rdmad's */
		p.ns.mnt = 2;
		p.ns.pid = 3;
	}
	return p;
}

static unsigned int ns_events[DEVICES_EVENT_REMOVING + 1];

static void on_ns(void *ud, struct nstable *t, enum devices_event event,
		  const struct device *dev, const char *old_name)
{
	(void)ud;
	(void)t;
	(void)dev;
	(void)old_name;
	if (event <= DEVICES_EVENT_REMOVING)
		ns_events[event]++;
}

static unsigned int entered, left;

static void on_change(void *ud, struct view *v, const struct device *dev,
		      enum view_change change)
{
	(void)ud;
	(void)v;
	(void)dev;
	entered += change == VIEW_ENTERS;
	left += change == VIEW_LEAVES;
}

static const struct device *dev_named(struct devices *t, const char *name)
{
	return devices_find(t, name);
}

/* Shared mode: what a client reports of its /dev is its view, for its
 * uid only; a new report moves devices in and out. */
static void test_by_nodes(void)
{
	struct devices *t = host_table();
	struct views *vs = views_new(t, VIEWS_NETNS_SHARED, on_ns, NULL);
	uint64_t nodes[] = {scope_devnum(makedev(231, 193))};
	uint64_t other[] = {scope_devnum(makedev(231, 192)),
			    scope_devnum(makedev(231, 250))};
	struct view_claim claim = {.reported = true,
				   .mntns = 777,
				   .nodes = nodes,
				   .nnodes = 1,
				   .nl_fd = -1,
				   .conn = 1};
	struct view_claim sibling = claim;
	struct peer p = user_peer(1000, false), q = user_peer(1001, false);
	struct peer k = user_peer(1000, true);
	struct view *v, *v2, *w, *k1, *k2;
	int err = 0;

	v = views_join(vs, &p, false, &claim, &err);
	CHECK(v && err == 0, "joined: %d", err);
	if (!v)
		goto out;
	CHECK(view_kind(v) == VIEW_KIND_MOUNT, "by nodes: %d", view_kind(v));
	CHECK(!view_has(v, dev_named(t, "mlx5_0")) &&
		      view_has(v, dev_named(t, "mlx5_1")),
	      "only mlx5_1's node was reported");
	/* Another container of the uid claims the same mount namespace;
	 * nothing proves either claim (F2 of docs/security.md; sibling:
	 * test_tenants.py's TestSameUidContainers, against rdmad). */
	sibling.conn = 2;
	v2 = views_join(vs, &p, false, &sibling, &err);
	CHECK(v2 && v2 != v, "same uid, same claim, another connection: a "
			     "view of its own");
	CHECK(v2 && view_set_nodes(v2, NULL, 0) == 1, "it reports no node");
	if (v2)
		view_refresh(v2, on_change, NULL);
	CHECK(view_has(v, dev_named(t, "mlx5_1")),
	      "the first connection's view did not change");
	/* Where the kernel says where both are, they share. */
	claim.conn = 3;
	k1 = views_join(vs, &k, false, &claim, &err);
	claim.conn = 4;
	k2 = views_join(vs, &k, false, &claim, &err);
	CHECK(k1 && k1 == k2 && k1->nclients == 2,
	      "same uid, same known namespaces: one view");
	views_leave(vs, k2);
	views_leave(vs, k1);
	entered = left = 0;
	claim.conn = 1;
	w = views_join(vs, &q, false, &claim, &err);
	CHECK(w && w != v, "another uid saying the same: a view of its own");
	CHECK(view_set_nodes(w, other, 2) == 1, "new nodes");
	view_refresh(w, on_change, NULL);
	CHECK(entered == 1 && left == 1, "mlx5_0 enters, mlx5_1 leaves: %u %u",
	      entered, left);
	CHECK(view_has(w, dev_named(t, "mlx5_0")) &&
		      !view_has(w, dev_named(t, "mlx5_1")),
	      "the liar's view changed");
	CHECK(!view_has(v, dev_named(t, "mlx5_0")) &&
		      view_has(v, dev_named(t, "mlx5_1")),
	      "the other uid's did not");
	CHECK(view_set_nodes(w, other, 2) == 0, "the same nodes: no change");
	views_leave(vs, w);
	views_leave(vs, v2);
	views_leave(vs, v);
out:
	views_free(vs);
	devices_free(t);
}

/* Who sees every node: a /dev/infiniband on the kernel's devtmpfs, a
 * client that says nothing (unverified), root unless it says it is in a
 * container. */
static void test_every_node(void)
{
	struct devices *t = host_table();
	struct views *vs = views_new(t, VIEWS_NETNS_SHARED, on_ns, NULL);
	struct view_claim devtmpfs = {
		.reported = true, .mntns = 5, .devtmpfs = true, .nl_fd = -1};
	struct view_claim silent = {.nl_fd = -1};
	uint64_t nodes[] = {scope_devnum(makedev(231, 192))};
	struct view_claim pod = {.reported = true,
				 .mntns = 6,
				 .nodes = nodes,
				 .nnodes = 1,
				 .nl_fd = -1};
	struct peer p = user_peer(1000, false), root = user_peer(0, false);
	struct view *a, *b, *c, *d;
	int err = 0;

	a = views_join(vs, &p, false, &devtmpfs, &err);
	b = views_join(vs, &p, false, &silent, &err);
	c = views_join(vs, &root, true, &silent, &err);
	d = views_join(vs, &root, true, &pod, &err);
	CHECK(a && b && c && d, "joined");
	if (!a || !b || !c || !d)
		return;
	CHECK(view_kind(a) == VIEW_KIND_HOST && view_has(a, devices_first(t)),
	      "devtmpfs: every node");
	CHECK(view_kind(b) == VIEW_KIND_UNVERIFIED &&
		      view_has(b, devices_first(t)),
	      "nothing said: the host's view, unverified");
	CHECK(view_kind(c) == VIEW_KIND_ALL, "root, nothing said: all");
	CHECK(view_kind(d) == VIEW_KIND_MOUNT &&
		      view_has(d, dev_named(t, "mlx5_0")) &&
		      !view_has(d, dev_named(t, "mlx5_1")),
	      "root in a pod sees the pod's nodes");
	views_leave(vs, a);
	views_leave(vs, b);
	views_leave(vs, c);
	views_leave(vs, d);
	views_free(vs);
	devices_free(t);
}

/* Exclusive mode: another namespace's table, from the kernel's answer
 * through the client's socket; stranded with devices, gone when they
 * return; a client known elsewhere without a socket sees nothing. */
static void test_exclusive(void)
{
	struct devices *t = host_table();
	struct views *vs = views_new(t, VIEWS_NETNS_EXCLUSIVE, on_ns, NULL);
	struct device_record in_ns = make_dev("mlx5_9", 200);
	struct peer p = user_peer(1000, false), known = user_peer(1000, true);
	struct view_claim claim = {.nl_fd = -1};
	struct view *v, *blind;
	int sv[2], err = 0;

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, "socketpair");
	claim.nl_fd = sv[0];
	claim.netns_cookie = views_netns_cookie(vs) + 1000;
	fake_nlquery_set(&in_ns, 1);
	v = views_join(vs, &p, false, &claim, &err);
	CHECK(v && v->ns && view_kind(v) == VIEW_KIND_NETNS, "netns view");
	if (!v)
		return;
	CHECK(devices_count(v->table) == 1 &&
		      view_has(v, devices_first(v->table)),
	      "the namespace's device, as the kernel says");
	CHECK(ns_events[DEVICES_EVENT_ADDED] == 1,
	      "ADDED for those who see all");
	CHECK(v->ns->cookie == claim.netns_cookie && v->ns->netns == 0,
	      "known by its cookie; its inode unknown");
	blind = views_join(vs, &known, false, &(struct view_claim){.nl_fd = -1},
			   &err);
	CHECK(blind && blind->blind && !view_has(blind, devices_first(t)),
	      "known elsewhere, no socket: nothing");
	views_leave(vs, blind);
	views_leave(vs, v);
	CHECK(views_unsettled(vs), "its last view went");
	views_settle(vs);
	CHECK(views_nstables(vs) && views_nstables(vs)->stranded &&
		      views_nstables(vs)->nl_fd < 0,
	      "stranded, its socket let go");
	CHECK(ns_events[DEVICES_EVENT_CHANGED] == 1, "CHANGED: stranded");
	views_returned(vs, in_ns.id);
	CHECK(!views_nstables(vs) && ns_events[DEVICES_EVENT_REMOVED] == 1,
	      "back on the host: the table goes");
	/* A namespace without devices goes when its last view does. */
	fake_nlquery_set(NULL, 0);
	v = views_join(vs, &p, false, &claim, &err);
	CHECK(v && v->ns && devices_count(v->table) == 0, "empty namespace");
	if (v)
		views_leave(vs, v);
	views_settle(vs);
	CHECK(!views_nstables(vs), "gone, not stranded");
	close(sv[0]);
	close(sv[1]);
	views_free(vs);
	devices_free(t);
}

int main(void)
{
	test_by_nodes();
	test_every_node();
	test_exclusive();
	return failures ? 1 : 0;
}
