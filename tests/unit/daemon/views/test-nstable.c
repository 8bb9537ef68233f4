/* SPDX-License-Identifier: MIT */
/*
 * daemon/views/nstable.c: which lent sockets another namespace's table keeps
 * and which it asks, row by row; and, through views.c, a
 * co-tenant of another uid whose socket gives junk cannot freeze the
 * table for everyone.  Sockets are socketpair() ends that fake-nlquery.c
 * answers for, or fails on as the row says.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "fake-nlquery.h"
#include "nstable.h"
#include "views.h"

#define NOBODY 65534
#define END ((uid_t)(-2))

static struct device_record one_dev(void)
{
	struct device_record d = {.numa_node = -1, .sriov_numvfs = -1};

	snprintf(d.name, sizeof(d.name), "mlx5_9");
	snprintf(d.id, sizeof(d.id), "guid:mlx5_9");
	d.reg_key = 9;
	return d;
}

struct lender {
	uid_t uid;
	int err; /* what asking through its socket gives: 0 the answer */
};

static const struct {
	const char *what;
	struct lender lent[6]; /* in order of arrival, up to END */
	int rescan;	       /* nstable_rescan(): >= 0 an answer */
	unsigned int asked;    /* sockets asked by that rescan */
	uid_t kept[5];	       /* after it, in order asked, up to END */
} rows[] = {
	{"the first lender's socket answers: the others stay spare",
	 {{1000, 0}, {NOBODY, 0}, {END, 0}},
	 1,
	 1,
	 {1000, NOBODY, END}},
	{"junk from the first: closed, the next asked at once",
	 {{NOBODY, -EBUSY}, {1000, 0}, {END, 0}},
	 1,
	 2,
	 {1000, END}},
	{"replies taken (EAGAIN), a dump left running (EBUSY): both closed",
	 {{NOBODY, -EAGAIN}, {1001, -EBUSY}, {1000, 0}, {END, 0}},
	 1,
	 3,
	 {1000, END}},
	{"one socket a uid: a second of the same uid is not kept",
	 {{NOBODY, -EBUSY}, {NOBODY, 0}, {1000, 0}, {END, 0}},
	 1,
	 2,
	 {1000, END}},
	{"root's is asked first, whenever it came",
	 {{1000, 0}, {NOBODY, 0}, {0, 0}, {END, 0}},
	 1,
	 1,
	 {0, 1000, NOBODY, END}},
	{"full: a later uid's is not kept; the first ones answer",
	 {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {END, 0}},
	 1,
	 1,
	 {1, 2, 3, 4, END}},
	{"full: root's takes the last place",
	 {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {0, 0}, {END, 0}},
	 1,
	 1,
	 {0, 1, 2, 3, END}},
	{"every one junk: all closed, NSTABLE_MAX_SOCKETS asked at most",
	 {{1, -EBUSY}, {2, -EBUSY}, {3, -EAGAIN}, {4, -EMSGSIZE}, {END, 0}},
	 -ESRCH,
	 4,
	 {END}},
	{"rdmad's own shortage is not the socket's: kept",
	 {{1, -ENOMEM}, {2, 0}, {END, 0}},
	 -ENOMEM,
	 1,
	 {1, 2, END}},
	{"too many devices is an answer: kept",
	 {{1, -E2BIG}, {2, 0}, {END, 0}},
	 -E2BIG,
	 1,
	 {1, 2, END}},
};

static void check_kept(size_t row, const struct nstable *t)
{
	unsigned int n = 0;

	while (rows[row].kept[n] != END)
		n++;
	CHECK(t->nsocks == n, "%s: %u kept, want %u", rows[row].what, t->nsocks,
	      n);
	for (unsigned int i = 0; i < n && i < t->nsocks; i++)
		CHECK(t->socks[i].uid == rows[row].kept[i], "%s: place %u: %d",
		      rows[row].what, i, (int)t->socks[i].uid);
	CHECK(t->nl_fd == (n ? t->socks[0].fd : -1), "%s: nl_fd",
	      rows[row].what);
}

static void run_row(size_t row)
{
	struct device_record dev = one_dev();
	int sv[6][2], nsv = 0, r;
	unsigned int before;
	struct nstable *t = NULL;

	fake_nlquery_set(&dev, 1);
	for (const struct lender *l = rows[row].lent; l->uid != END; l++) {
		CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv[nsv]) == 0);
		fake_nlquery_fail(sv[nsv][0], l->err);
		if (!t)
			t = nstable_new(7, 0, "", sv[nsv][0], l->uid, NULL,
					NULL);
		else
			nstable_add_socket(t, sv[nsv][0], l->uid);
		nsv++;
	}
	CHECK(t, "%s: a table", rows[row].what);
	if (!t)
		return;
	before = fake_nlquery_calls();
	r = nstable_rescan(t);
	CHECK(r == rows[row].rescan || (rows[row].rescan > 0 && r >= 0),
	      "%s: rescan %d", rows[row].what, r);
	CHECK(fake_nlquery_calls() - before == rows[row].asked, "%s: asked %u",
	      rows[row].what, fake_nlquery_calls() - before);
	CHECK((r >= 0) == (devices_count(t->table) == 1),
	      "%s: the device iff answered", rows[row].what);
	check_kept(row, t);
	nstable_free(t);
	while (nsv--) {
		fake_nlquery_fail(sv[nsv][0], 0);
		close(sv[nsv][0]);
		close(sv[nsv][1]);
	}
}

/* Sockets are dups, closed with the table; the lenders keep theirs. */
static void test_rule(void)
{
	for (size_t row = 0; row < sizeof(rows) / sizeof(rows[0]); row++)
		run_row(row);
}

static void on_ns(void *ud, struct nstable *t, enum devices_event event,
		  const struct device *dev, const char *old_name)
{
	(void)ud, (void)t, (void)event, (void)dev, (void)old_name;
}

static struct peer peer_of(uid_t uid)
{
	return (struct peer){.pid = 4242, .uid = uid, .gid = uid};
}

/* A co-tenant (docs/security.md's F5): uid 65534 lends the namespace's
 * first socket and fills it with junk; a client of uid 1000 there, in a
 * view of its own, lends another.  The table answers through 1000's, for
 * both.  Siblings: test_tenants.py's TestCoTenantSocket (against rdmad),
 * the kernel suite's TestViews.test_netns_socket_of_a_co_tenant. */
static void test_co_tenant(void)
{
	struct devices *host = devices_new(1);
	struct views *vs = views_new(host, VIEWS_NETNS_EXCLUSIVE, on_ns, NULL);
	struct device_record dev = one_dev();
	struct peer nobody = peer_of(NOBODY), user = peer_of(1000);
	struct view_claim junk = {.nl_fd = -1}, good;
	struct view *a, *b;
	int sa[2], sb[2], err = 0;

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sa) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sb) == 0);
	fake_nlquery_set(&dev, 1);
	fake_nlquery_fail(sa[0], -EBUSY);
	junk.nl_fd = sa[0];
	junk.netns_cookie = views_netns_cookie(vs) + 77;
	good = junk;
	good.nl_fd = sb[0];
	a = views_join(vs, &nobody, false, &junk, &err);
	CHECK(a && a->ns && devices_count(a->table) == 0,
	      "the junk socket's table: nothing yet");
	b = views_join(vs, &user, false, &good, &err);
	CHECK(b && b->ns == (a ? a->ns : NULL), "one table, two views");
	CHECK(b && devices_count(b->table) == 1,
	      "asked through uid 1000's socket: the device");
	if (b)
		CHECK(b->ns->nsocks == 1 && b->ns->socks[0].uid == 1000,
		      "only 1000's kept");
	/* The next rescan, as the server's every 2 s, still answers. */
	if (b)
		CHECK(nstable_rescan(b->ns) >= 0 &&
			      devices_count(b->table) == 1,
		      "a later rescan answers");
	if (b)
		views_leave(vs, b);
	if (a)
		views_leave(vs, a);
	views_free(vs);
	devices_free(host);
	fake_nlquery_fail(sa[0], 0);
	close(sa[0]);
	close(sa[1]);
	close(sb[0]);
	close(sb[1]);
}

int main(void)
{
	test_rule();
	test_co_tenant();
	if (failures)
		fprintf(stderr, "%u failures\n", failures);
	return failures ? 1 : 0;
}
