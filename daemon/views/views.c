/* SPDX-License-Identifier: MIT */
/*
 * Views (views.h): which devices each client can use, and the generation
 * of what it sees.  A handful of views on a host (root's, a few users,
 * one per pod), each with a small array of member devices; an event costs
 * one lookup per view, and a device that registers one search of a
 * view's reported nodes: no system call.  Other network namespaces'
 * tables (exclusive mode) live here too, with their views, and as
 * stranded ones after them (views_settle()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scope.h"
#include "views.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

struct views {
	struct devices *table;
	enum views_netns_mode mode;
	nstable_listener_fn ns_fn;
	void *userdata;
	struct nstable *nstables;
	bool unsettled;	     /* a table lost its last view: views_settle() */
	struct peer_ns host; /* rdmad's netns and pidns, pid 1's mount ns */
	uint64_t own_mnt;    /* rdmad's own mount namespace */
	uint64_t devtmpfs;   /* st_dev of rdmad's /dev */
	uint64_t cookie;     /* rdmad's network namespace cookie */
	struct view *list;
};

/* rdmad's own /dev, not a client's: where a node of the kernel's
 * devtmpfs lives. */
static uint64_t own_devtmpfs(void)
{
	struct stat st;

	if (stat("/dev/infiniband", &st) == 0 || stat("/dev", &st) == 0)
		return scope_devnum(st.st_dev);
	return 0;
}

static uint64_t own_netns_cookie(void)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) < 0)
		cookie = 0;
	if (fd >= 0)
		close(fd);
	return cookie;
}

struct views *views_new(struct devices *table, enum views_netns_mode mode,
			nstable_listener_fn ns_fn, void *userdata)
{
	struct views *vs = calloc(1, sizeof(*vs));

	if (!vs)
		return NULL;
	vs->table = table;
	vs->mode = mode;
	vs->ns_fn = ns_fn;
	vs->userdata = userdata;
	peer_ns_host(&vs->host);
	vs->own_mnt = peer_ns_own_mnt();
	vs->devtmpfs = own_devtmpfs();
	vs->cookie = own_netns_cookie();
	return vs;
}

uint64_t views_devtmpfs(const struct views *vs)
{
	return vs->devtmpfs;
}

uint64_t views_netns_cookie(const struct views *vs)
{
	return vs->cookie;
}

static void nstable_put(struct views *vs, struct nstable *t);
static void nstable_tell(struct views *vs, struct nstable *t);

static void view_free(struct views *vs, struct view *v)
{
	nstable_put(vs, v->ns);
	genshare_close(&v->page);
	free(v->nodes);
	free(v->members);
	free(v->unusable);
	free(v);
}

void views_free(struct views *vs)
{
	struct view *v;

	if (!vs)
		return;
	while ((v = vs->list)) {
		vs->list = v->next;
		view_free(vs, v);
	}
	while (vs->nstables) {
		struct nstable *t = vs->nstables;

		vs->nstables = t->next;
		t->fn = NULL; /* going down: nobody to tell */
		nstable_free(t);
	}
	free(vs);
}

enum views_netns_mode views_netns_mode(const struct views *vs)
{
	return vs->mode;
}

struct view *views_first(struct views *vs)
{
	return vs->list;
}

struct nstable *views_nstables(struct views *vs)
{
	return vs->nstables;
}

/* The table of the namespace of @claim's socket, made and asked on first
 * use, or found again where it was left stranded.  Every new view lends
 * its first client's socket; nstable.c says which the table keeps and
 * which it asks, so that a co-tenant who fills its own with junk cannot
 * freeze the table for the others. */
static struct nstable *nstable_get(struct views *vs, const struct peer *peer,
				   const struct view_claim *claim)
{
	struct nstable *t;
	bool had_socket;

	for (t = vs->nstables; t; t = t->next)
		if (t->cookie == claim->netns_cookie)
			break;
	if (!t) {
		t = nstable_new(claim->netns_cookie,
				peer->known ? peer->ns.net : 0, peer->pod_uid,
				claim->nl_fd, peer->uid, vs->ns_fn,
				vs->userdata);
		if (!t)
			return NULL;
		t->next = vs->nstables;
		vs->nstables = t;
	}
	had_socket = t->nsocks > 0;
	nstable_add_socket(t, claim->nl_fd, peer->uid);
	/* Stranded or unsettled: its namespace has a client again.  Or
	 * nothing was left to ask through (each gave junk): ask now. */
	if (!t->refs || !had_socket)
		nstable_rescan(t);
	if (t->stranded) {
		t->stranded = false;
		nstable_tell(vs, t);
	}
	t->refs++;
	return t;
}

/* Its last view went: views_settle() decides what becomes of it, once
 * its last client had time to leave (clients come and go). */
static void nstable_put(struct views *vs, struct nstable *t)
{
	if (t && !--t->refs)
		vs->unsettled = true;
}

static void nstable_unlink(struct views *vs, struct nstable *t)
{
	struct nstable **p;

	for (p = &vs->nstables; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
}

/* Its devices changed for those who see all (stranded, or not any more):
 * a CHANGED each. */
static void nstable_tell(struct views *vs, struct nstable *t)
{
	const struct device *dev;

	for (dev = devices_first(t->table); dev;
	     dev = devices_next(t->table, dev))
		vs->ns_fn(vs->userdata, t, DEVICES_EVENT_CHANGED, dev, NULL);
}

bool views_unsettled(const struct views *vs)
{
	return vs->unsettled;
}

/* Tables without views: asked once more, then let go of their socket
 * (which keeps the namespace alive).  One that still has devices is
 * stranded: listed as last seen until they come back to rdmad's
 * namespace (a namespace that dies gives its devices back; one that a
 * bind mount keeps, as `ip netns add` and CNI plugins make, keeps them
 * out of reach).  One without devices goes. */
void views_settle(struct views *vs)
{
	struct nstable *t, *next;

	vs->unsettled = false;
	for (t = vs->nstables; t; t = next) {
		next = t->next;
		if (t->refs || t->stranded)
			continue;
		nstable_rescan(t);
		nstable_drop_socket(t);
		if (devices_count(t->table)) {
			t->stranded = true;
			nstable_tell(vs, t);
			continue;
		}
		nstable_unlink(vs, t);
		nstable_free(t);
	}
}

void views_returned(struct views *vs, const char *identity)
{
	struct nstable *t, *next;
	const struct device *dev;

	for (t = vs->nstables; t; t = next) {
		next = t->next;
		if (!t->stranded || !(dev = nstable_find_identity(t, identity)))
			continue;
		nstable_drop(t, dev);
		if (!devices_count(t->table)) {
			nstable_unlink(vs, t);
			nstable_free(t);
		}
	}
}

static bool in_mnt(const struct views *vs, uint64_t mnt)
{
	return mnt == vs->own_mnt || mnt == vs->host.mnt;
}

bool views_peer_is_host(const struct views *vs, const struct peer *peer)
{
	return peer->known && peer->ns.net == vs->host.net &&
	       peer->ns.pid == vs->host.pid && in_mnt(vs, peer->ns.mnt);
}

static bool key_equal(const struct view_key *a, const struct view_key *b)
{
	if (a->all || b->all)
		return a->all == b->all;
	return a->known == b->known && a->reported == b->reported &&
	       a->by_nodes == b->by_nodes && a->uid == b->uid &&
	       a->ns.net == b->ns.net && a->ns.mnt == b->ns.mnt &&
	       a->ns.pid == b->ns.pid && a->netns_cookie == b->netns_cookie &&
	       a->conn == b->conn;
}

/* Exclusive mode: the cookie of the other network namespace whose
 * devices @claim's socket shows, or 0 (rdmad's own, or no socket). */
static uint64_t other_netns(const struct views *vs,
			    const struct view_claim *claim)
{
	if (vs->mode != VIEWS_NETNS_EXCLUSIVE || claim->nl_fd < 0 ||
	    !claim->netns_cookie || claim->netns_cookie == vs->cookie)
		return 0;
	return claim->netns_cookie;
}

/* Does @claim put its client somewhere other than rdmad's place: nodes
 * of its own, or another network namespace's devices? */
static bool claims_elsewhere(const struct views *vs, const struct peer *peer,
			     const struct view_claim *claim)
{
	bool host_mnt = peer->known && in_mnt(vs, peer->ns.mnt);

	return (claim->reported && !claim->devtmpfs && !host_mnt) ||
	       other_netns(vs, claim);
}

/* Root sees all in the host's namespaces, or where nothing known or said
 * puts it elsewhere; the admin group sees all anywhere. */
static bool sees_all(const struct views *vs, const struct peer *peer,
		     bool admin, const struct view_claim *claim)
{
	if (!admin)
		return false;
	if (peer->uid != 0)
		return true;
	if (peer->known)
		return views_peer_is_host(vs, peer) &&
		       !claims_elsewhere(vs, peer, claim);
	return !claims_elsewhere(vs, peer, claim);
}

static struct view_key key_of(const struct views *vs, const struct peer *peer,
			      bool admin, const struct view_claim *claim)
{
	struct view_key k = {.all = sees_all(vs, peer, admin, claim)};

	if (k.all)
		return k;
	k.known = peer->known;
	k.reported = claim->reported;
	k.uid = peer->uid;
	k.ns = peer->ns;
	if (!peer->known) {
		/* Claimed, not known: shared with nobody (views.h). */
		k.ns.mnt = claim->mntns;
		k.conn = claim->conn;
	}
	k.by_nodes = claim->reported && !claim->devtmpfs &&
		     !(peer->known && in_mnt(vs, peer->ns.mnt));
	k.netns_cookie = other_netns(vs, claim);
	return k;
}

static bool node_visible(struct view *v, const struct device *dev);
static int member_add(struct view *v, const struct device *dev);

/* The members of a new view: every present device it sees. */
static int fill_members(struct view *v)
{
	const struct device *dev;

	for (dev = devices_first(v->table); dev;
	     dev = devices_next(v->table, dev))
		if (!v->every_node &&
		    device_state(dev) == DEVICE_STATE_PRESENT &&
		    node_visible(v, dev) && member_add(v, dev) < 0)
			return -ENOMEM;
	return 0;
}

/* Exclusive mode, a client rdmad knows is in another network namespace
 * but which gave no socket: nothing of rdmad's is usable there, and
 * nothing else is known. */
static bool blind(const struct views *vs, const struct view_key *key)
{
	return !key->all && key->known && !key->netns_cookie &&
	       vs->mode == VIEWS_NETNS_EXCLUSIVE && key->ns.net != vs->host.net;
}

static struct view *view_new(struct views *vs, const struct view_key *key,
			     const struct peer *peer,
			     const struct view_claim *claim, int *ret_err)
{
	struct view *v = calloc(1, sizeof(*v));
	int r;

	if (!v) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	v->key = *key;
	v->page.fd = v->page.ro_fd = -1;
	v->host = views_peer_is_host(vs, peer) && !key->by_nodes &&
		  !key->netns_cookie;
	v->blind = blind(vs, key);
	v->every_node = key->all || (!key->by_nodes && !v->blind);
	v->table = vs->table;
	if (key->netns_cookie) {
		v->ns = nstable_get(vs, peer, claim);
		if (!v->ns) {
			view_free(vs, v);
			*ret_err = -errno;
			return NULL;
		}
		v->table = v->ns->table;
	}
	v->generation = devices_generation(vs->table);
	r = genshare_open(&v->page, -1, v->generation);
	if (r == 0 && key->by_nodes)
		r = view_set_nodes(v, claim->nodes, claim->nnodes) < 0 ? -ENOMEM
								       : 0;
	if (r == 0)
		r = fill_members(v);
	if (r < 0) {
		view_free(vs, v);
		*ret_err = r;
		return NULL;
	}
	/* Only the read-only descriptor is needed from here on. */
	close(v->page.fd);
	v->page.fd = -1;
	return v;
}

struct view *views_join(struct views *vs, const struct peer *peer, bool admin,
			const struct view_claim *claim, int *ret_err)
{
	struct view_key key = key_of(vs, peer, admin, claim);
	struct view *v;

	for (v = vs->list; v; v = v->next)
		if (key_equal(&v->key, &key))
			break;
	if (!v) {
		v = view_new(vs, &key, peer, claim, ret_err);
		if (!v)
			return NULL;
		v->next = vs->list;
		vs->list = v;
	} else if (v->ns && claim->nl_fd >= 0 && v->ns->nl_fd < 0) {
		nstable_take_socket(v->ns, claim->nl_fd);
	}
	v->nclients++;
	return v;
}

void views_leave(struct views *vs, struct view *v)
{
	struct view **p;

	if (--v->nclients)
		return;
	for (p = &vs->list; *p; p = &(*p)->next)
		if (*p == v) {
			*p = v->next;
			break;
		}
	view_free(vs, v);
}

/* ---- membership ---- */

static ssize_t member_index(const struct view *v, const struct device *dev)
{
	for (size_t i = 0; i < v->nmembers; i++)
		if (v->members[i] == dev)
			return (ssize_t)i;
	return -1;
}

bool view_has(const struct view *v, const struct device *dev)
{
	return v->every_node || member_index(v, dev) >= 0;
}

static int member_add(struct view *v, const struct device *dev)
{
	const struct device **m;
	size_t cap;

	if (v->nmembers == v->cap) {
		cap = v->cap ? 2 * v->cap : 16;
		m = reallocarray(v->members, cap, sizeof(*m));
		if (!m)
			return -ENOMEM;
		v->members = m;
		v->cap = cap;
	}
	v->members[v->nmembers++] = dev;
	return 0;
}

static void member_remove(struct view *v, const struct device *dev)
{
	ssize_t i = member_index(v, dev);

	if (i >= 0)
		v->members[i] = v->members[--v->nmembers];
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int view_set_nodes(struct view *v, const uint64_t *nodes, size_t n)
{
	uint64_t *copy = NULL;

	if (!v->key.by_nodes)
		return 0;
	if (n > SCOPE_MAX_NODES)
		n = SCOPE_MAX_NODES;
	if (n && !(copy = malloc(n * sizeof(*copy))))
		return -ENOMEM;
	if (n) {
		memcpy(copy, nodes, n * sizeof(*copy));
		qsort(copy, n, sizeof(*copy), cmp_u64);
	}
	if (n == v->nnodes &&
	    (!n || !memcmp(copy, v->nodes, n * sizeof(*copy)))) {
		free(copy);
		return 0;
	}
	free(v->nodes);
	v->nodes = copy;
	v->nnodes = n;
	return 1;
}

/* Is @dev's uverbs node among those @v's clients reported? */
static bool node_visible(struct view *v, const struct device *dev)
{
	const struct device_record *info = device_info(dev);
	uint64_t want;

	if (v->blind || !info->uverbs[0] || !info->uverbs_dev || !v->nnodes)
		return false;
	want = scope_devnum(info->uverbs_dev);
	return bsearch(&want, v->nodes, v->nnodes, sizeof(want), cmp_u64);
}

/* Is @dev in @v after @event?  @look: look for its node again (else a
 * present device stays where it was). */
static bool sees_now(struct view *v, const struct device *dev,
		     enum devices_event event, bool look)
{
	bool had = member_index(v, dev) >= 0;

	if (event == DEVICES_EVENT_RELEASED || device_going(dev))
		return false;
	/* A device that left stays where it was, so its holders see it. */
	if (device_state(dev) != DEVICE_STATE_PRESENT || !look)
		return had;
	return node_visible(v, dev);
}

static enum view_change apply(struct view *v, const struct device *dev,
			      enum devices_event event, bool look)
{
	bool had, has;

	if (v->every_node)
		return VIEW_SEEN;
	had = member_index(v, dev) >= 0;
	has = sees_now(v, dev, event, look);
	if (had && has)
		return VIEW_SEEN;
	if (had) {
		member_remove(v, dev);
		/* Its own end is the event itself, not a leaving. */
		return event == DEVICES_EVENT_RELEASED || device_going(dev)
			       ? VIEW_SEEN
			       : VIEW_LEAVES;
	}
	if (!has || member_add(v, dev) < 0)
		return VIEW_UNSEEN;
	return VIEW_ENTERS;
}

/* Does @v check a device against its nodes on @event?  When the device
 * registers (ADDED, RETURNED); every device is checked again when a
 * client reports its nodes (view_set_nodes(), view_refresh()). */
static bool view_looks(const struct view *v, enum devices_event event)
{
	return !v->every_node && (event == DEVICES_EVENT_ADDED ||
				  event == DEVICES_EVENT_RETURNED);
}

enum view_change view_apply(struct view *v, const struct device *dev,
			    enum devices_event event)
{
	return apply(v, dev, event, view_looks(v, event));
}

void view_refresh(struct view *v,
		  void (*fn)(void *ud, struct view *v, const struct device *dev,
			     enum view_change change),
		  void *ud)
{
	const struct device *dev;
	enum view_change c;

	if (v->every_node)
		return;
	for (dev = devices_first(v->table); dev;
	     dev = devices_next(v->table, dev)) {
		c = apply(v, dev, DEVICES_EVENT_CHANGED, true);
		if (c == VIEW_ENTERS || c == VIEW_LEAVES)
			fn(ud, v, dev, c);
	}
}

/* ---- unusable devices ---- */

static ssize_t unusable_index(const struct view *v, const struct device *dev)
{
	for (size_t i = 0; i < v->nunusable; i++)
		if (v->unusable[i].dev == dev)
			return (ssize_t)i;
	return -1;
}

bool view_unusable(const struct view *v, const struct device *dev)
{
	ssize_t i = unusable_index(v, dev);

	return i >= 0 && v->unusable[i].incarnation == device_incarnation(dev);
}

int view_set_unusable(struct view *v, const struct device *dev)
{
	ssize_t i = unusable_index(v, dev);
	struct view_unusable *u;
	size_t cap;

	if (i >= 0) {
		if (v->unusable[i].incarnation == device_incarnation(dev))
			return -EALREADY;
		v->unusable[i].incarnation = device_incarnation(dev);
		return 0;
	}
	if (v->nunusable == v->ucap) {
		cap = v->ucap ? 2 * v->ucap : 8;
		u = reallocarray(v->unusable, cap, sizeof(*u));
		if (!u)
			return -ENOMEM;
		v->unusable = u;
		v->ucap = cap;
	}
	v->unusable[v->nunusable++] =
		(struct view_unusable){dev, device_incarnation(dev)};
	return 0;
}

void views_forget(struct views *vs, const struct device *dev)
{
	ssize_t i;

	for (struct view *v = vs->list; v; v = v->next) {
		member_remove(v, dev);
		i = unusable_index(v, dev);
		if (i >= 0)
			v->unusable[i] = v->unusable[--v->nunusable];
	}
}

uint64_t view_next_generation(struct view *v)
{
	v->generation++;
	genshare_publish(&v->page, v->generation);
	return v->generation;
}

enum view_kind view_kind(const struct view *v)
{
	if (v->key.all)
		return VIEW_KIND_ALL;
	if (v->ns || v->blind)
		return VIEW_KIND_NETNS;
	if (v->key.by_nodes)
		return VIEW_KIND_MOUNT;
	if (!v->key.known && !v->key.reported)
		return VIEW_KIND_UNVERIFIED;
	return VIEW_KIND_HOST;
}

const char *view_kind_name(enum view_kind kind)
{
	static const char *const names[VIEW_KIND_COUNT] = {
		[VIEW_KIND_ALL] = "all",
		[VIEW_KIND_HOST] = "host",
		[VIEW_KIND_MOUNT] = "mount",
		[VIEW_KIND_NETNS] = "netns",
		[VIEW_KIND_UNVERIFIED] = "unverified",
	};

	return kind < VIEW_KIND_COUNT ? names[kind] : "?";
}
