/* SPDX-License-Identifier: MIT */
/*
 * The registration cache (librdmad(3), "Memory registration cache").
 *
 * An entry is one MR over a page-aligned range of private anonymous
 * memory, watched by the monitor (monitor.c).  Where it lives:
 *
 *   index, idle      in the index and on the LRU list   (refcnt 0)
 *   index, in use    in the index and on the LRU list   (refcnt > 0)
 *   detached         in use, out of the index: invalidated while in use
 *                    (dead), or never cached (a pass-through MR)
 *   dead list        idle and out of the index, to deregister
 *
 * get: a hit is an entry in the index covering the range with at least
 * the access asked for.  A miss retires the idle entries it overlaps and
 * registers their union with the range (merged: one entry, not several
 * overlapping ones), evicting idle entries, least recently used first (a
 * second-chance list: see make_room()), to stay within the bounds.  When an
 * overlapping entry is in use, the range is not watchable, the bounds cannot be
 * met with idle entries, or the cache cannot cache at all (no monitor, a forked
 * child, a leaving device, remote access refused by RDMAD_MR_CACHE_NO_REMOTE),
 * the range is registered as asked and deregistered at its put: a pass-through.
 *
 * Deregistration happens on an application thread, outside the lock, at
 * the next call (reap()): the monitor only moves entries (mrcache.h).
 * A miss registers with the lock held, so the monitor cannot apply an
 * event in between and the entry it inserts is watched before it pins.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "export.h"
#include "mrcache.h"

/* lookup()'s and miss()'s answer: register as asked, do not cache. */
static struct mrc_entry pass;
#define PASS (&pass)

#define DEFAULT_MAX_ENTRIES 1024
#define DEFAULT_MAX_BYTES (1ULL << 30)

/* What an entry may be registered with; anything else passes through
 * (on-demand paging needs no cache, zero-based MRs change the iova). */
#define CACHEABLE_ACCESS                                                       \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_RELAXED_ORDERING)
#define REMOTE_ACCESS                                                          \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                    \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

struct rdmad_mr_cache {
	pthread_mutex_t lock;
	struct ibv_pd *pd;
	struct mrc_ops ops;
	char device[IBV_SYSFS_NAME_MAX];
	size_t max_entries;
	size_t max_bytes;
	unsigned int flags;
	bool monitored; /* a monitor runs: entries may be cached */
	bool forked;	/* a child's copy: passes through */
	bool leaving;	/* its device began to leave: passes through */
	bool watch;	/* ranges are watched before they are cached */
	const char *why;
	struct mrc_index index;
	struct mrc_owners owners; /* what may be put: in use, or idle cached */
	struct mrc_entry *lru_head; /* the index's entries, least recent */
	struct mrc_entry *lru_tail;
	struct mrc_entry *detached;
	struct mrc_entry *dead;
	struct rdmad_mr_cache_stats stats;
};

static size_t page_size(void)
{
	static size_t size;

	if (!size)
		size = (size_t)sysconf(_SC_PAGESIZE);
	return size;
}

static size_t span(const struct mrc_entry *e)
{
	return e->end - e->start;
}

/* ---- lists ----------------------------------------------------------------
 */

static void lru_append(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	e->lru_next = NULL;
	e->lru_prev = c->lru_tail;
	if (c->lru_tail)
		c->lru_tail->lru_next = e;
	else
		c->lru_head = e;
	c->lru_tail = e;
}

static void lru_unlink(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		c->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		c->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void push(struct mrc_entry **list, struct mrc_entry *e)
{
	e->next = *list;
	*list = e;
}

/* The dead list is read without the lock (reap()'s first look). */
static void push_dead(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	mrc_owners_remove(&c->owners, e);
	e->next = c->dead;
	__atomic_store_n(&c->dead, e, __ATOMIC_RELEASE);
}

static bool unlink_from(struct mrc_entry **list, struct mrc_entry *e)
{
	for (; *list; list = &(*list)->next)
		if (*list == e) {
			*list = e->next;
			return true;
		}
	return false;
}

/* An entry of the index leaves it (already removed from the arrays): to
 * the dead list when idle, else detached until its put. */
static void retire(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	e->dead = true;
	c->stats.entries--;
	c->stats.bytes_cached -= span(e);
	lru_unlink(c, e);
	if (e->refcnt)
		push(&c->detached, e);
	else
		push_dead(c, e);
}

static void retire_range(struct rdmad_mr_cache *c, size_t first, size_t n)
{
	size_t i;

	for (i = first; i < first + n; i++)
		retire(c, c->index.entries[i]);
	mrc_index_remove(&c->index, first, n);
}

/* Deregister the dead list, on the caller's thread, without the lock. */
static void reap(struct rdmad_mr_cache *c)
{
	struct mrc_entry *e, *next;

	if (!__atomic_load_n(&c->dead, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&c->lock);
	e = c->dead;
	__atomic_store_n(&c->dead, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lock);
	for (; e; e = next) {
		next = e->next;
		if (!e->orphan)
			c->ops.dereg(e->mr);
		pthread_mutex_lock(&c->lock);
		c->stats.bytes_pinned -= span(e);
		pthread_mutex_unlock(&c->lock);
		free(e);
	}
}

/* ---- the monitor's and the client library's calls ----------------------- */

void mrc_cache_lock(struct rdmad_mr_cache *c)
{
	pthread_mutex_lock(&c->lock);
}

void mrc_cache_unlock(struct rdmad_mr_cache *c)
{
	pthread_mutex_unlock(&c->lock);
}

void mrc_cache_invalidate(struct rdmad_mr_cache *c, uintptr_t start,
			  uintptr_t end)
{
	size_t first, n;

	pthread_mutex_lock(&c->lock);
	n = mrc_index_overlapping(&c->index, start, end, &first);
	c->stats.invalidations += n;
	retire_range(c, first, n);
	pthread_mutex_unlock(&c->lock);
}

static void retire_all(struct rdmad_mr_cache *c)
{
	retire_range(c, 0, c->index.count);
}

static void leaving(struct rdmad_mr_cache *c, const void *device)
{
	if (strcmp(c->device, device))
		return;
	pthread_mutex_lock(&c->lock);
	c->leaving = true;
	retire_all(c);
	pthread_mutex_unlock(&c->lock);
	reap(c);
}

void mrcache_device_leaving(const char *device)
{
	if (device)
		mrc_monitor_each(leaving, device);
}

/* In the child, with the lock held (monitor.c's fork handler): the MRs
 * are the parent's (its verbs file is shared), so none is deregistered
 * here; the ones in use are forgotten at their put. */
void mrc_cache_forked(struct rdmad_mr_cache *c)
{
	struct mrc_entry *e;

	c->forked = true;
	retire_all(c);
	for (e = c->dead; e; e = e->next)
		e->orphan = true;
	for (e = c->detached; e; e = e->next)
		e->orphan = true;
}

void mrc_cache_unmonitored(struct rdmad_mr_cache *c)
{
	c->monitored = true;
	c->watch = false;
	c->why = "none: unmonitored for a test, stale entries possible";
}

/* ---- get ---------------------------------------------------------------- */

static bool cacheable(const struct rdmad_mr_cache *c, int access)
{
	if (!c->monitored || c->forked || c->leaving)
		return false;
	if (access & ~CACHEABLE_ACCESS)
		return false;
	return !((c->flags & RDMAD_MR_CACHE_NO_REMOTE) &&
		 (access & REMOTE_ACCESS));
}

/* Registered as asked, handed out once, deregistered at its put. */
static struct mrc_entry *pass_through(struct rdmad_mr_cache *c, void *addr,
				      size_t length, int access)
{
	struct mrc_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->mr = c->ops.reg(c->pd, addr, length, access);
	if (!e->mr) {
		free(e);
		return NULL;
	}
	e->start = (uintptr_t)e->mr->addr;
	e->end = e->start + e->mr->length;
	e->refcnt = 1;
	pthread_mutex_lock(&c->lock);
	if (mrc_owners_add(&c->owners, e)) {
		pthread_mutex_unlock(&c->lock);
		c->ops.dereg(e->mr);
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	push(&c->detached, e);
	c->stats.bypassed++;
	c->stats.in_use++;
	c->stats.bytes_pinned += span(e);
	pthread_mutex_unlock(&c->lock);
	return e;
}

/* Evict idle entries until @bytes more fit beside one more entry: false
 * when entries in use leave no room.  Second chance: an entry in use, or
 * used since it last came to the head, goes to the tail instead, so a hit
 * only marks its entry and touches no list. */
static bool make_room(struct rdmad_mr_cache *c, size_t bytes)
{
	struct mrc_entry *e;
	size_t turns = 0;

	while (c->index.count + 1 > c->max_entries ||
	       c->stats.bytes_cached + bytes > c->max_bytes) {
		e = c->lru_head;
		if (!e || turns > 2 * c->index.count)
			return false;
		if (e->refcnt || e->recent) {
			e->recent = false;
			lru_unlink(c, e);
			lru_append(c, e);
			turns++;
			continue;
		}
		c->stats.evictions++;
		retire_range(c, (size_t)mrc_index_find(&c->index, e), 1);
	}
	return true;
}

/* The entry for [start, end) merged with the idle entries it overlaps,
 * registered and in the index; PASS when the range must pass through
 * instead, NULL with errno set when it cannot be registered. */
static struct mrc_entry *miss(struct rdmad_mr_cache *c, uintptr_t start,
			      uintptr_t end, int access)
{
	struct mrc_entry *e;
	size_t first, n, i;

	n = mrc_index_overlapping(&c->index, start, end, &first);
	for (i = first; i < first + n; i++) {
		e = c->index.entries[i];
		if (e->refcnt)
			return PASS;
		start = e->start < start ? e->start : start;
		end = e->end > end ? e->end : end;
		access |= e->access;
	}
	if (end - start > c->max_bytes || mrc_index_reserve(&c->index, 1))
		return PASS;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	retire_range(c, first, n);
	if (!make_room(c, end - start) ||
	    (c->watch && mrc_monitor_watch(start, end) < 0)) {
		free(e);
		return PASS;
	}
	e->mr = c->ops.reg(c->pd, (void *)start, end - start, access);
	if (!e->mr) {
		free(e);
		return NULL;
	}
	if (mrc_owners_add(&c->owners, e)) {
		c->ops.dereg(e->mr);
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	e->start = start;
	e->end = end;
	e->access = access;
	e->cached = true;
	e->refcnt = 1;
	mrc_index_insert(&c->index, e);
	lru_append(c, e);
	c->stats.misses++;
	c->stats.entries++;
	c->stats.in_use++;
	c->stats.bytes_cached += span(e);
	c->stats.bytes_pinned += span(e);
	return e;
}

static struct mrc_entry *hit(struct rdmad_mr_cache *c, uintptr_t start,
			     uintptr_t end, int access)
{
	struct mrc_entry *e = mrc_index_covering(&c->index, start, end);

	if (!e || (e->access & access) != access)
		return NULL;
	e->refcnt++;
	e->recent = true;
	c->stats.hits++;
	c->stats.in_use++;
	return e;
}

/* The cached entry for the range; PASS to pass through; NULL with errno
 * set. */
static struct mrc_entry *lookup(struct rdmad_mr_cache *c, void *addr,
				size_t length, int access)
{
	uintptr_t mask = page_size() - 1;
	uintptr_t start = (uintptr_t)addr & ~mask;
	uintptr_t end = ((uintptr_t)addr + length + mask) & ~mask;
	struct mrc_entry *e = PASS;

	if (c->monitored)
		mrc_monitor_quiesce();
	pthread_mutex_lock(&c->lock);
	if (cacheable(c, access)) {
		e = hit(c, start, end, access);
		if (!e)
			e = miss(c, start, end, access);
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

RDMAD_EXPORT struct ibv_mr *rdmad_mr_cache_get(struct rdmad_mr_cache *cache,
					       void *addr, size_t length,
					       int access)
{
	struct mrc_entry *e;

	if (!cache || !addr || !length ||
	    (uintptr_t)addr + length < (uintptr_t)addr) {
		errno = EINVAL;
		return NULL;
	}
	reap(cache);
	e = lookup(cache, addr, length, access);
	if (e == PASS)
		e = pass_through(cache, addr, length, access);
	reap(cache);
	return e ? e->mr : NULL;
}

/* ---- put ---------------------------------------------------------------- */

/* The entry's last user went: what happens to it. */
static void idle(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	if (!e->cached || e->dead) {
		unlink_from(&c->detached, e);
		push_dead(c, e);
		return;
	}
	/* A cached entry stays on the LRU list, in use or not. */
}

RDMAD_EXPORT int rdmad_mr_cache_put(struct rdmad_mr_cache *cache,
				    struct ibv_mr *mr)
{
	struct mrc_entry *e;

	if (!cache || !mr)
		return -EINVAL;
	pthread_mutex_lock(&cache->lock);
	e = mrc_owners_find(&cache->owners, mr);
	if (!e || !e->refcnt) {
		pthread_mutex_unlock(&cache->lock);
		return -EINVAL;
	}
	cache->stats.in_use--;
	if (--e->refcnt == 0)
		idle(cache, e);
	pthread_mutex_unlock(&cache->lock);
	reap(cache);
	return 0;
}

/* ---- making, flushing, destroying -----------------------------------------
 */

/* A size from the environment ("4096", "64M", "1G"): 0 when unset, -1
 * when malformed. */
static long long env_size(const char *name)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || v == 0)
		return -1;
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	return *end || v > LLONG_MAX ? -1 : (long long)v;
}

/* attr, else the environment, else the default. */
static int bounds(struct rdmad_mr_cache *c,
		  const struct rdmad_mr_cache_attr *attr)
{
	long long entries = env_size("RDMAD_MR_CACHE_MAX_ENTRIES");
	long long bytes = env_size("RDMAD_MR_CACHE_MAX_BYTES");
	size_t i;

	if (entries < 0 || bytes < 0)
		return -EINVAL;
	c->max_entries = entries ? (size_t)entries : DEFAULT_MAX_ENTRIES;
	c->max_bytes = bytes ? (size_t)bytes : DEFAULT_MAX_BYTES;
	if (!attr)
		return 0;
	for (i = 0; i < sizeof(attr->reserved) / sizeof(attr->reserved[0]); i++)
		if (attr->reserved[i])
			return -EINVAL;
	if (attr->flags & ~RDMAD_MR_CACHE_NO_REMOTE)
		return -EINVAL;
	c->flags = attr->flags;
	if (attr->max_entries)
		c->max_entries = attr->max_entries;
	if (attr->max_bytes)
		c->max_bytes = attr->max_bytes;
	return 0;
}

struct rdmad_mr_cache *mrc_cache_new_ops(struct ibv_pd *pd,
					 const struct rdmad_mr_cache_attr *attr,
					 const struct mrc_ops *ops,
					 const char *device)
{
	struct rdmad_mr_cache *c;
	int err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	err = bounds(c, attr);
	if (err)
		goto fail;
	pthread_mutex_init(&c->lock, NULL);
	c->pd = pd;
	c->ops = *ops;
	strncpy(c->device, device ? device : "", sizeof(c->device) - 1);
	c->monitored = mrc_monitor_start(&c->why) == 0;
	c->watch = true;
	/* Last: from here the monitor and leaving devices see it. */
	err = mrc_monitor_add(c);
	if (!err)
		return c;
	pthread_mutex_destroy(&c->lock);
fail:
	free(c);
	errno = -err;
	return NULL;
}

static struct ibv_mr *default_reg(struct ibv_pd *pd, void *addr, size_t length,
				  int access)
{
	return rdmad_reg_mr(pd, addr, length, access);
}

static int default_dereg(struct ibv_mr *mr)
{
	return rdmad_dereg_mr(mr);
}

RDMAD_EXPORT struct rdmad_mr_cache *
rdmad_mr_cache_new(struct ibv_pd *pd, const struct rdmad_mr_cache_attr *attr)
{
	static const struct mrc_ops ops = {default_reg, default_dereg};

	if (!pd || !pd->context || !pd->context->device) {
		errno = EINVAL;
		return NULL;
	}
	return mrc_cache_new_ops(pd, attr, &ops,
				 ibv_get_device_name(pd->context->device));
}

RDMAD_EXPORT int rdmad_mr_cache_flush(struct rdmad_mr_cache *cache)
{
	struct mrc_entry *e, *next;
	long n = 0;

	if (!cache)
		return -EINVAL;
	pthread_mutex_lock(&cache->lock);
	for (e = cache->lru_head; e; e = next) {
		next = e->lru_next;
		if (e->refcnt)
			continue;
		retire_range(cache, (size_t)mrc_index_find(&cache->index, e),
			     1);
		n++;
	}
	pthread_mutex_unlock(&cache->lock);
	reap(cache);
	return n > INT_MAX ? INT_MAX : (int)n;
}

RDMAD_EXPORT int rdmad_mr_cache_destroy(struct rdmad_mr_cache *cache)
{
	if (!cache)
		return 0;
	pthread_mutex_lock(&cache->lock);
	if (cache->stats.in_use) {
		pthread_mutex_unlock(&cache->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&cache->lock);
	mrc_monitor_remove(cache);
	rdmad_mr_cache_flush(cache);
	mrc_index_free(&cache->index);
	mrc_owners_free(&cache->owners);
	pthread_mutex_destroy(&cache->lock);
	free(cache);
	return 0;
}

/* ---- what it says ------------------------------------------------------- */

RDMAD_EXPORT int rdmad_mr_cache_get_stats(struct rdmad_mr_cache *cache,
					  struct rdmad_mr_cache_stats *stats,
					  size_t size)
{
	if (!cache || !stats)
		return -EINVAL;
	if (size > sizeof(*stats))
		size = sizeof(*stats);
	pthread_mutex_lock(&cache->lock);
	memcpy(stats, &cache->stats, size);
	pthread_mutex_unlock(&cache->lock);
	return 0;
}

RDMAD_EXPORT int rdmad_mr_cache_is_caching(struct rdmad_mr_cache *cache)
{
	int r;

	if (!cache)
		return -EINVAL;
	pthread_mutex_lock(&cache->lock);
	r = cacheable(cache, 0);
	pthread_mutex_unlock(&cache->lock);
	return r;
}

RDMAD_EXPORT const char *
rdmad_mr_cache_get_reason(const struct rdmad_mr_cache *cache)
{
	if (!cache)
		return NULL;
	if (cache->forked)
		return "a forked child's copy: its entries are the parent's";
	if (cache->leaving)
		return "its device is leaving (RDMAD_EVENT_REMOVING)";
	return cache->why;
}
