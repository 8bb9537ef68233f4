/* SPDX-License-Identifier: MIT */
/*
 * Views: see views.h.  A handful of views on a host (root's, a few users,
 * one per pod), each with a small array of member devices; an event costs
 * one lookup per view, and a device that registers one fstatat() of its
 * node per view in another mount namespace, as that namespace shows it.
 * Other network namespaces' tables (exclusive mode) live here too, with
 * their views, and as stranded ones after them (views_settle()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "views.h"

struct views {
	struct devices *table;
	enum netlink_netns_mode mode;
	nstable_listener_fn ns_fn;
	void *userdata;
	struct nstable *nstables;
	bool unsettled;	     /* a table lost its last view: views_settle() */
	struct peer_ns host; /* rdmad's netns and pidns, pid 1's mount ns */
	uint64_t own_mnt;    /* rdmad's own mount namespace */
	struct view *list;
};

struct views *views_new(struct devices *table, enum netlink_netns_mode mode,
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
	return vs;
}

static void nstable_put(struct views *vs, struct nstable *t);
static void nstable_tell(struct views *vs, struct nstable *t);

static void view_free(struct views *vs, struct view *v)
{
	nstable_put(vs, v->ns);
	genshare_close(&v->page);
	if (v->proc_fd >= 0)
		close(v->proc_fd);
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

enum netlink_netns_mode views_netns_mode(const struct views *vs)
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

/* The table of @peer's network namespace, made and read on first use,
 * or found again where it was left stranded. */
static struct nstable *nstable_get(struct views *vs, const struct peer *peer)
{
	struct nstable *t;
	int fd = peer->proc_fd >= 0 ? fcntl(peer->proc_fd, F_DUPFD_CLOEXEC, 3)
				    : -1;

	for (t = vs->nstables; t; t = t->next)
		if (t->netns == peer->ns.net)
			break;
	if (t && !t->refs) {
		/* Stranded or unsettled: its namespace has a client again. */
		if (t->proc_fd >= 0)
			close(t->proc_fd);
		t->proc_fd = fd;
		nstable_rescan(t);
		if (t->stranded) {
			t->stranded = false;
			nstable_tell(vs, t);
		}
	} else if (t) {
		if (fd >= 0)
			close(fd);
	} else {
		t = nstable_new(peer, fd, vs->ns_fn, vs->userdata);
		if (!t)
			return NULL;
		t->next = vs->nstables;
		vs->nstables = t;
		nstable_rescan(t);
	}
	t->refs++;
	return t;
}

/* Its last view went: views_settle() decides what becomes of it, once
 * its last process had time to leave the namespace (a socket closes
 * before its process has left its namespaces). */
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

static void nstable_strand(struct views *vs, struct nstable *t)
{
	t->stranded = true;
	if (t->proc_fd >= 0)
		close(t->proc_fd);
	t->proc_fd = -1;
	nstable_tell(vs, t);
}

bool views_unsettled(const struct views *vs)
{
	return vs->unsettled;
}

/* Tables without views: stranded where their namespace still has
 * devices and lives on with no process in it (a bind mount keeps it),
 * else gone (a namespace that dies gives its devices back to rdmad's,
 * where they return). */
void views_settle(struct views *vs)
{
	struct nstable *t, *next;

	vs->unsettled = false;
	for (t = vs->nstables; t; t = next) {
		next = t->next;
		if (t->refs || t->stranded)
			continue;
		if (devices_count(t->table) &&
		    !nstable_netns_has_process(t->netns) &&
		    nstable_netns_is_mounted(t->netns)) {
			nstable_strand(vs, t);
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
	return a->known == b->known && a->uid == b->uid &&
	       a->ns.net == b->ns.net && a->ns.mnt == b->ns.mnt &&
	       a->ns.pid == b->ns.pid;
}

static struct view_key key_of(const struct peer *peer, bool admin)
{
	struct view_key k = {.all = admin};

	if (!admin) {
		k.known = peer->known;
		k.uid = peer->uid;
		k.ns = peer->ns;
	}
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

static struct view *view_new(struct views *vs, const struct view_key *key,
			     struct peer *peer, int *ret_err)
{
	struct view *v = calloc(1, sizeof(*v));
	bool other_netns;
	int r;

	if (!v) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	v->key = *key;
	v->proc_fd = -1;
	v->page.fd = v->page.ro_fd = -1;
	v->host = views_peer_is_host(vs, peer);
	other_netns = !key->all && key->known &&
		      vs->mode == NETLINK_NETNS_EXCLUSIVE &&
		      key->ns.net != vs->host.net;
	v->every_node = !other_netns &&
			(key->all || !key->known || in_mnt(vs, key->ns.mnt));
	v->table = vs->table;
	if (other_netns) {
		v->ns = nstable_get(vs, peer);
		if (!v->ns) {
			view_free(vs, v);
			*ret_err = -ENOMEM;
			return NULL;
		}
		v->table = v->ns->table;
	}
	if (!v->every_node) {
		v->proc_fd = peer->proc_fd;
		peer->proc_fd = -1;
	}
	v->generation = devices_generation(vs->table);
	r = genshare_open(&v->page, -1, v->generation);
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

struct view *views_join(struct views *vs, struct peer *peer, bool admin,
			int *ret_err)
{
	struct view_key key = key_of(peer, admin);
	struct view *v;

	for (v = vs->list; v; v = v->next)
		if (key_equal(&v->key, &key))
			break;
	if (!v) {
		v = view_new(vs, &key, peer, ret_err);
		if (!v)
			return NULL;
		v->next = vs->list;
		vs->list = v;
	}
	if (view_needs_proc(v))
		view_offer_proc(v, peer);
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

bool view_needs_proc(const struct view *v)
{
	return !v->every_node &&
	       (v->proc_fd < 0 || faccessat(v->proc_fd, "ns/mnt", F_OK, 0) < 0);
}

bool view_offer_proc(struct view *v, struct peer *peer)
{
	if (!peer->known || peer->proc_fd < 0 || peer->ns.mnt != v->key.ns.mnt)
		return false;
	if (v->proc_fd >= 0)
		close(v->proc_fd);
	v->proc_fd = peer->proc_fd;
	peer->proc_fd = -1;
	return true;
}

/* Is a character device numbered @rdev at "root/dev/infiniband/@name"
 * of the view's process, or, under another name, in that directory? */
static bool node_at(int proc_fd, const char *name, dev_t rdev)
{
	char path[96];
	struct stat st;
	struct dirent *e;
	bool found = false;
	DIR *dir;
	int fd;

	snprintf(path, sizeof(path), "root/dev/infiniband/%s", name);
	if (fstatat(proc_fd, path, &st, 0) == 0 && S_ISCHR(st.st_mode) &&
	    st.st_rdev == rdev)
		return true;
	fd = openat(proc_fd, "root/dev/infiniband",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!found && (e = readdir(dir)))
		found = fstatat(dirfd(dir), e->d_name, &st, 0) == 0 &&
			S_ISCHR(st.st_mode) && st.st_rdev == rdev;
	closedir(dir);
	return found;
}

/* Does @v's mount namespace have @dev's uverbs node?  Unknown (no live
 * process to look through): what it had. */
static bool node_visible(struct view *v, const struct device *dev)
{
	const struct sysfs_device *info = device_info(dev);

	if (v->proc_fd < 0)
		return member_index(v, dev) >= 0;
	if (!info->uverbs[0] || !info->uverbs_dev)
		return false;
	return node_at(v->proc_fd, info->uverbs, info->uverbs_dev);
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

bool view_looks(const struct view *v, enum devices_event event)
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
	if (!v->key.known)
		return VIEW_KIND_UNVERIFIED;
	if (v->ns)
		return VIEW_KIND_NETNS;
	return v->every_node ? VIEW_KIND_HOST : VIEW_KIND_MOUNT;
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
