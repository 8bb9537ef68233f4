/* SPDX-License-Identifier: MIT */
/*
 * The registration cache (librdmad(3), "Memory registration cache").
 *
 * An entry is one MR over a page-aligned range of private anonymous
 * memory, watched by the monitor (monitor.c).  Where it lives:
 *
 *   index            in the index and on the LRU list, idle or in use
 *   detached         in use, out of the index: invalidated while in use
 *                    (dead), or never cached (a pass-through MR)
 *   dead list        no user, out of the index: to deregister
 *   pool             deregistered, for the next entry (entry.c)
 *
 * get: a hit is an entry in the index covering the range with at least
 * the access asked for.  A miss retires the idle entries it overlaps and
 * registers their union with the range (merged: one entry, not several
 * overlapping ones), evicting idle entries, least recently used first (a
 * second-chance list: see make_room()), to stay within the bounds.  When
 * an overlapping entry is in use, the range is not private anonymous
 * memory (vma.c), it cannot be watched, the bounds cannot be met with
 * idle entries, or the cache cannot cache at all (no monitor or a lost
 * one, a forked child, a leaving device, remote access refused by
 * RDMAD_MR_CACHE_NO_REMOTE), the range is registered as asked and
 * deregistered at its put: a pass-through.
 *
 * A miss in three steps: under the lock it plans the entry and watches
 * its range (in the same hold as the hit it looked for, signals blocked
 * from there on, where the hooks' answer needs no full check: reach.c);
 * unlocked it asks the kernel what memory it is and registers
 * it; under the lock again it admits the entry only if no change the
 * monitor reported since the watch overlaps it (the cache's ring of
 * changes), else the MR is handed out as a pass-through.  The lock is
 * never held across the registration: ibv_reg_mr() may free memory that
 * glibc unmaps, and that unmap waits for the monitor.
 *
 * The monitor thread only records changes in the cache's ring and moves
 * the generation (changes.c); application threads apply them under the
 * lock before they look at the index.
 *
 * The fast path: each thread remembers the entry of its last get (its
 * hint, with the cache's generation then).  A get that the hint covers
 * raises the entry's count and checks that the generation has not moved,
 * that is that no entry left the index and no change came since; with the
 * monitor idle, that is a hit taken without the lock.  A put of the
 * hint's MR drops the count without the lock.  entry.c says why that is
 * safe.
 *
 * Deregistration happens on an application thread, outside the lock, at
 * the next call (mrc_reap()), and so does unwatching the range.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "export.h"
#include "mrcache.h"

/* plan_or_pass()'s answer: register as asked, do not cache. */
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

/* A thread's last entry: valid while its cache's generation is @gen.
 * Initial-exec: a hit reaches it without a call to __tls_get_addr (32
 * bytes of the static TLS glibc keeps for libraries that are dlopen()ed). */
struct hint {
	const struct rdmad_mr_cache *cache;
	uint64_t id;
	uint64_t gen;
	struct mrc_entry *entry;
};
static __thread struct hint hint __attribute__((tls_model("initial-exec")));

static uint64_t next_id;

/* Atomic: gets on several threads may be the first at once. */
static size_t page_size(void)
{
	static size_t size;
	size_t s = __atomic_load_n(&size, __ATOMIC_RELAXED);

	if (!s) {
		s = (size_t)sysconf(_SC_PAGESIZE);
		__atomic_store_n(&size, s, __ATOMIC_RELAXED);
	}
	return s;
}

/* The pages [addr, addr + length) covers: 0, or -EINVAL. */
static inline __attribute__((always_inline)) int
pages_of(const void *addr, size_t length, uintptr_t *start, uintptr_t *end)
{
	uintptr_t mask = page_size() - 1;

	*start = (uintptr_t)addr & ~mask;
	*end = ((uintptr_t)addr + length + mask) & ~mask;
	return addr && length && *end > *start ? 0 : -EINVAL;
}

static size_t span(const struct mrc_entry *e)
{
	return e->end - e->start;
}

static uint64_t gen_of(const struct rdmad_mr_cache *c)
{
	return __atomic_load_n(&c->gen, __ATOMIC_SEQ_CST);
}

/* With the lock held, @e in the index. */
static void remember(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	uint64_t gen = gen_of(c);

	/* A change reported after the caller applied the ring may overlap
	 * @e: no hint then.  A change is published before it moves the
	 * generation, so one this misses moves the generation after it was
	 * read here. */
	if (mrc_changes_pending(c)) {
		hint.cache = NULL;
		return;
	}
	hint.cache = c;
	hint.id = c->id;
	hint.gen = gen;
	hint.entry = e;
}

static bool hinted(const struct hint *h, const struct rdmad_mr_cache *c)
{
	return h->cache == c && h->id == c->id;
}

/* First in every call but a hit: a child made without fork()'s handlers
 * (_Fork(), a raw clone()) makes the monitor's state and the kinds'
 * descriptor afresh before it takes a lock (monitor.h's token). */
static void adopt(void)
{
	if (!mrc_monitor_in_clone())
		return;
	mrc_vma_cloned();
	mrc_reach_forget();
	mrc_monitor_adopt_clone();
}

/* ---- the mode ---------------------------------------------------------------
 *
 *   from \ to   CACHING  UNWATCHED  NO_MONITOR  UNHOOKED  FORKED  LEAVING
 *   (new)       monitor   -          no monitor     -
 *   CACHING        -      test only  lost        unreached fork    leaves
 *   UNWATCHED      -         -          -            -     fork    leaves
 *   NO_MONITOR     -      test only     -            -     fork    leaves
 *   UNHOOKED    reached      -       lost            -     fork    leaves
 *   FORKED         -         -          -            -      -        -
 *   LEAVING        -         -          -            -     fork      -
 *
 * The monitor is lost when the program closed or replaced its descriptor
 * (monitor.c); the hooks are unreached when the probe finds that this
 * process's madvise() or munmap() no longer comes to them (librdmad
 * opened after libc, a library that patched the call slots), and reached
 * again when it does.  NO_MONITOR, UNHOOKED, FORKED and LEAVING pass
 * every get through, and the entries leave the index with the step into
 * them (a lost monitor watches nothing new; without the hooks a discard
 * or a guard region goes unannounced; a child's are the parent's MRs; a
 * leaving device's PD dies with it).
 */
static const bool steps[][MRC_LEAVING + 1] = {
	[MRC_CACHING] = {[MRC_UNWATCHED] = true,
			 [MRC_NO_MONITOR] = true,
			 [MRC_UNHOOKED] = true,
			 [MRC_FORKED] = true,
			 [MRC_LEAVING] = true},
	[MRC_UNWATCHED] = {[MRC_FORKED] = true, [MRC_LEAVING] = true},
	[MRC_NO_MONITOR] = {[MRC_UNWATCHED] = true,
			    [MRC_FORKED] = true,
			    [MRC_LEAVING] = true},
	[MRC_UNHOOKED] = {[MRC_CACHING] = true,
			  [MRC_NO_MONITOR] = true,
			  [MRC_FORKED] = true,
			  [MRC_LEAVING] = true},
	[MRC_FORKED] = {false},
	[MRC_LEAVING] = {[MRC_FORKED] = true},
};

static void set_mode(struct rdmad_mr_cache *c, enum mrc_mode mode)
{
	if (!steps[c->mode][mode])
		return;
	c->mode = mode;
	if (mode != MRC_CACHING && mode != MRC_UNWATCHED)
		mrc_retire_range(c, 0, c->index.count);
}

/* With the lock held: a monitor found lost by any cache stops this one. */
static void check_monitor(struct rdmad_mr_cache *c)
{
	if ((c->mode == MRC_CACHING || c->mode == MRC_UNHOOKED) &&
	    mrc_monitor_lost()) {
		c->why = mrc_monitor_lost_why;
		set_mode(c, MRC_NO_MONITOR);
	}
}

/* Whether the mode follows the hooks (hooks_hold() is asked). */
static bool hookable(const struct rdmad_mr_cache *c)
{
	return c->mode == MRC_CACHING || c->mode == MRC_UNHOOKED;
}

/* reach.c's answer @why (NULL: reached) as this cache takes it. */
static bool hooks_answer(struct rdmad_mr_cache *c, const char *why)
{
	if ((c->flags & RDMAD_MR_CACHE_EVENTS_ONLY) || !mrc_monitor_hooks_on())
		return true;
	if (why)
		__atomic_store_n(&c->unhooked_why, why, __ATOMIC_RELAXED);
	return !why;
}

/* Whether the cache's entries are safe with the hooks as they are now:
 * the program's madvise() and munmap() reach them (a probe, no system
 * call), or the program chose the kernel's events alone
 * (RDMAD_MR_CACHE_EVENTS_ONLY, or RDMAD_MR_CACHE_HOOKS=off, announcing
 * its discards itself).  Unlocked: the probe goes through whatever
 * another library put in the call slots. */
static bool hooks_hold(struct rdmad_mr_cache *c)
{
	/* Always: it also takes note of the slot a hit reads. */
	return hooks_answer(c, mrc_reach_check());
}

/* As hooks_hold() for a miss, from what the last check saw (no lock, no
 * call: under the cache's lock): false when only a check can answer. */
static bool hooks_known(struct rdmad_mr_cache *c, bool *hooked)
{
	const char *why;

	if (!hookable(c)) {
		*hooked = true;
		return true;
	}
	if (!mrc_reach_known(&why))
		return false;
	*hooked = hooks_answer(c, why);
	return true;
}

/* With the lock held: the step the probe's answer makes. */
static void check_hooks(struct rdmad_mr_cache *c, bool hooked)
{
	if (c->mode == MRC_CACHING && !hooked)
		set_mode(c, MRC_UNHOOKED);
	else if (c->mode == MRC_UNHOOKED && hooked)
		set_mode(c, MRC_CACHING);
}

static void leaving(void *arg, const void *device)
{
	struct rdmad_mr_cache *c = arg;

	if (strcmp(c->device, device))
		return;
	mrc_lock(&c->lock);
	set_mode(c, MRC_LEAVING);
	mrc_unlock(&c->lock);
	mrc_reap(c);
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
	uint64_t claimed =
		__atomic_load_n(&c->changes_claimed, __ATOMIC_SEQ_CST);
	struct mrc_entry *e;

	/* A slot another thread of the parent had claimed is never
	 * published here: start the ring after it, or the child's first
	 * change would wait for it. */
	c->changes_head = claimed;
	c->changes_tail = claimed;
	set_mode(c, MRC_FORKED);
	for (e = c->dead; e; e = e->next)
		e->orphan = true;
	for (e = c->detached; e; e = e->next)
		e->orphan = true;
}

void mrc_cache_unmonitored(struct rdmad_mr_cache *c)
{
	set_mode(c, MRC_UNWATCHED);
}

static void lock_cache(void *arg)
{
	mrc_lock(&((struct rdmad_mr_cache *)arg)->lock);
}

static void unlock_cache(void *arg)
{
	mrc_unlock(&((struct rdmad_mr_cache *)arg)->lock);
}

/* The lock checks its owner, and the child's thread has another id than
 * the parent's that took it: made afresh and taken again, so that the
 * handler's unlock is the owner's. */
static void forked(void *arg)
{
	struct rdmad_mr_cache *c = arg;

	mrc_cache_forked(c);
	mrc_lock_init(&c->lock);
	mrc_lock(&c->lock);
}

/* A raw clone()'s child, alone: the lock may be a parent thread's. */
static void cloned(void *arg)
{
	struct rdmad_mr_cache *c = arg;

	mrc_lock_init(&c->lock);
	mrc_lock(&c->lock);
	mrc_cache_forked(c);
	mrc_unlock(&c->lock);
}

static bool overlaps(const struct mrc_entry *e, uintptr_t start, uintptr_t end)
{
	return e->start < end && start < e->end;
}

/* The monitor unwatches [start, end) itself (mrc_monitor_release()). */
static void unwatched(struct mrc_entry *list, uintptr_t start, uintptr_t end)
{
	struct mrc_entry *e;

	for (e = list; e; e = e->next)
		if (overlaps(e, start, end))
			e->watch = 0;
}

static void release(void *arg, uintptr_t start, uintptr_t end)
{
	struct rdmad_mr_cache *c = arg;
	size_t first, n;

	mrc_lock(&c->lock);
	mrc_changes_apply(c);
	n = mrc_index_overlapping(&c->index, start, end, &first);
	c->stats.invalidations += n;
	mrc_retire_range(c, first, n);
	unwatched(c->detached, start, end);
	unwatched(c->dead, start, end);
	mrc_unlock(&c->lock);
	mrc_reap(c);
}

/* What the monitor calls: cache.c registers, monitor.c names nothing. */
static const struct mrc_monitor_client client = {
	.changed = mrc_changes_record,
	.lock = lock_cache,
	.unlock = unlock_cache,
	.forked = forked,
	.cloned = cloned,
	.release = release,
};

/* ---- get ---------------------------------------------------------------- */

static bool cacheable(const struct rdmad_mr_cache *c, int access)
{
	if (c->mode != MRC_CACHING && c->mode != MRC_UNWATCHED)
		return false;
	if (access & ~CACHEABLE_ACCESS)
		return false;
	return !((c->flags & RDMAD_MR_CACHE_NO_REMOTE) &&
		 (access & REMOTE_ACCESS));
}

static bool serves(const struct mrc_entry *e, uintptr_t start, uintptr_t end,
		   int access)
{
	return e->start <= start && end <= e->end &&
	       (e->access & access) == access;
}

/* The hint's entry, taken without the lock; NULL to take the lock. */
static inline __attribute__((always_inline)) struct mrc_entry *
fast_hit(struct rdmad_mr_cache *c, uintptr_t start, uintptr_t end, int access)
{
	struct hint *h = &hint;
	struct mrc_entry *e = h->entry;

	if (!hinted(h, c) || gen_of(c) != h->gen || mrc_monitor_busy() ||
	    mrc_monitor_in_clone() || !mrc_reach_steady())
		return NULL;
	__atomic_add_fetch(&e->refcnt, 1, __ATOMIC_SEQ_CST);
	/* Unmoved: @e has stayed in the index, unchanged, since the hint. */
	if (gen_of(c) != h->gen || !serves(e, start, end, access)) {
		mrc_entry_undo(c, e);
		return NULL;
	}
	__atomic_store_n(&e->recent, true, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->stats.hits, 1, __ATOMIC_RELAXED);
	return e;
}

/* With the lock held: @e, holding @mr, handed out once and deregistered
 * at its put.  False when there is no memory to track it. */
static bool detach(struct rdmad_mr_cache *c, struct mrc_entry *e,
		   struct ibv_mr *mr, struct mrc_garbage *g)
{
	/* Atomic: a put compares its MR with a hint's entry unlocked. */
	__atomic_store_n(&e->mr, mr, __ATOMIC_RELAXED);
	if (mrc_owners_add(&c->owners, e, g))
		return false;
	e->start = (uintptr_t)mr->addr;
	e->end = e->start + mr->length;
	mrc_entry_activate(e);
	mrc_push(&c->detached, e);
	c->stats.bypassed++;
	c->stats.bytes_pinned += span(e);
	return true;
}

/* Registered as asked, handed out once, deregistered at its put. */
static struct mrc_entry *pass_through(struct rdmad_mr_cache *c, void *addr,
				      size_t length, int access)
{
	struct ibv_mr *mr = c->ops.reg(c->pd, addr, length, access);
	struct mrc_garbage g = {0};
	struct mrc_entry *e = NULL;

	if (!mr)
		return NULL;
	mrc_lock(&c->lock);
	e = mrc_entry_alloc(c);
	if (e && !detach(c, e, mr, &g)) {
		mrc_entry_unalloc(c, e);
		e = NULL;
	}
	mrc_unlock(&c->lock);
	mrc_garbage_free(&g);
	if (!e) {
		c->ops.dereg(mr);
		errno = ENOMEM;
	}
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
		if (__atomic_load_n(&e->refcnt, __ATOMIC_SEQ_CST) ||
		    __atomic_exchange_n(&e->recent, false, __ATOMIC_RELAXED)) {
			mrc_lru_unlink(c, e);
			mrc_lru_append(c, e);
			turns++;
			continue;
		}
		c->stats.evictions++;
		mrc_retire_range(c, (size_t)mrc_index_find(&c->index, e), 1);
	}
	return true;
}

/* The union of [*start, *end) with the idle entries it overlaps, and
 * their access; false when one of them is in use. */
static bool merge(struct rdmad_mr_cache *c, uintptr_t *start, uintptr_t *end,
		  int *access, size_t *first, size_t *n)
{
	struct mrc_entry *e;
	size_t i;

	*n = mrc_index_overlapping(&c->index, *start, *end, first);
	for (i = *first; i < *first + *n; i++) {
		e = c->index.entries[i];
		if (__atomic_load_n(&e->refcnt, __ATOMIC_SEQ_CST))
			return false;
		*start = e->start < *start ? e->start : *start;
		*end = e->end > *end ? e->end : *end;
		*access |= e->access;
	}
	return true;
}

/* A get on its way: what it asked for, and the changes seen when it
 * began to watch. */
struct ask {
	void *addr;
	size_t length;
	int access;
	uint64_t seen;
};

/* Under the lock: an entry for the union of the range with the idle
 * entries it overlaps, its range watched; PASS to pass through, NULL with
 * errno set. */
static struct mrc_entry *plan(struct rdmad_mr_cache *c, uintptr_t start,
			      uintptr_t end, struct ask *ask,
			      struct mrc_garbage *g)
{
	struct mrc_entry *e;
	int access = ask->access, err;
	size_t first, n;

	if (!merge(c, &start, &end, &access, &first, &n) ||
	    end - start > c->max_bytes || mrc_monitor_in_flight(start, end) ||
	    mrc_index_reserve(&c->index, 1, g))
		return PASS;
	e = mrc_entry_alloc(c);
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	mrc_retire_range(c, first, n);
	ask->seen = mrc_changes_seen(c);
	if (!make_room(c, end - start)) {
		mrc_entry_unalloc(c, e);
		return PASS;
	}
	if (c->mode == MRC_CACHING) {
		err = mrc_monitor_watch(start, end, &e->watch);
		if (err == -ESTALE)
			check_monitor(c);
		if (err) {
			mrc_entry_unalloc(c, e);
			return PASS;
		}
	}
	e->start = start;
	e->end = end;
	e->access = access;
	return e;
}

/* Under the lock: put @e, registered unlocked, in the index, unless a
 * change overlapping it came since the watch or is announced and not yet
 * done (its pages may be about to go), the cache stopped caching,
 * another thread cached an overlapping range, or there is no room. */
static bool admit(struct rdmad_mr_cache *c, struct mrc_entry *e,
		  const struct ask *ask, struct mrc_garbage *g)
{
	size_t first;

	mrc_changes_apply(c);
	if (!cacheable(c, e->access) ||
	    mrc_changes_since(c, ask->seen, e->start, e->end) ||
	    mrc_monitor_in_flight(e->start, e->end) ||
	    mrc_index_overlapping(&c->index, e->start, e->end, &first) ||
	    !make_room(c, span(e)) || mrc_index_reserve(&c->index, 1, g) ||
	    mrc_owners_add(&c->owners, e, g))
		return false;
	e->cached = true;
	mrc_entry_activate(e);
	mrc_index_insert(&c->index, e);
	mrc_lru_append(c, e);
	c->stats.misses++;
	c->stats.bytes_cached += span(e);
	c->stats.bytes_pinned += span(e);
	remember(c, e);
	return true;
}

/* A planned entry that will not be: back to the pool, unwatched. */
static void drop_plan(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	if (e->watch)
		mrc_monitor_unwatch(e->watch);
	mrc_lock(&c->lock);
	mrc_entry_unalloc(c, e);
	mrc_unlock(&c->lock);
}

/* Unlocked: ask the kernel what memory @e's range is, register it, and
 * admit it; else a pass-through.  A merged range the kernel refuses to
 * register (a part made read-only since) falls back to the range asked. */
static struct mrc_entry *fill(struct rdmad_mr_cache *c, struct mrc_entry *e,
			      struct ask *ask)
{
	struct mrc_garbage g = {0};
	struct ibv_mr *mr;
	bool ok;

	/* UNWATCHED, the tests' control, caches any kind, so that a case
	 * can be shown to corrupt. */
	if (c->mode == MRC_CACHING &&
	    mrc_vma_private_anon(e->start, e->end) != 1) {
		drop_plan(c, e);
		return pass_through(c, ask->addr, ask->length, ask->access);
	}
	mr = c->ops.reg(c->pd, (void *)e->start, span(e), e->access);
	if (!mr) {
		drop_plan(c, e);
		return pass_through(c, ask->addr, ask->length, ask->access);
	}
	__atomic_store_n(&e->mr, mr, __ATOMIC_RELAXED);
	mrc_lock(&c->lock);
	ok = admit(c, e, ask, &g) || detach(c, e, mr, &g);
	mrc_unlock(&c->lock);
	mrc_garbage_free(&g);
	if (ok)
		return e;
	c->ops.dereg(mr);
	drop_plan(c, e);
	errno = ENOMEM;
	return NULL;
}

static struct mrc_entry *hit(struct rdmad_mr_cache *c, uintptr_t start,
			     uintptr_t end, int access)
{
	struct mrc_entry *e = mrc_index_covering(&c->index, start, end);

	if (!e || (e->access & access) != access)
		return NULL;
	__atomic_add_fetch(&e->refcnt, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&e->recent, true, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->stats.hits, 1, __ATOMIC_RELAXED);
	return e;
}

/* Under the lock: the cached entry serving the get, remembered as the
 * thread's hint, or NULL. */
static struct mrc_entry *cached_hit(struct rdmad_mr_cache *c, uintptr_t start,
				    uintptr_t end, int access)
{
	struct mrc_entry *e;

	if (!cacheable(c, access))
		return NULL;
	e = hit(c, start, end, access);
	if (e)
		remember(c, e);
	return e;
}

/* Under the lock, no hit found, the mode up to date: the plan for a
 * miss, or PASS to pass through.  Signals blocked: the plan watches. */
static struct mrc_entry *plan_or_pass(struct rdmad_mr_cache *c, uintptr_t start,
				      uintptr_t end, struct ask *ask,
				      struct mrc_garbage *g)
{
	return cacheable(c, ask->access) ? plan(c, start, end, ask, g) : PASS;
}

/* Unlocked, signals blocked: a hit as it is, a planned entry registered
 * and admitted, PASS passed through; NULL with errno set. */
static struct mrc_entry *finish(struct rdmad_mr_cache *c, struct mrc_entry *e,
				struct ask *ask, bool hooked)
{
	if (e == PASS && !hooked)
		__atomic_add_fetch(&c->stats.unhooked, 1, __ATOMIC_RELAXED);
	if (e == PASS)
		return pass_through(c, ask->addr, ask->length, ask->access);
	/* A hit is cached; a planned entry is not until fill() admits it. */
	if (!e || e->cached)
		return e;
	return fill(c, e, ask);
}

/* The entry for [start, end), cached or passed through, the hooks
 * checked (something changed, or the check is due); signals blocked.
 * NULL with errno set. */
static struct mrc_entry *lookup(struct rdmad_mr_cache *c, uintptr_t start,
				uintptr_t end, struct ask *ask)
{
	struct mrc_garbage g = {0};
	struct mrc_entry *e;
	bool hooked = !hookable(c) || hooks_hold(c);

	if (c->mode == MRC_CACHING)
		mrc_monitor_quiesce();
	mrc_lock(&c->lock);
	if (mrc_changes_pending(c))
		mrc_changes_apply(c);
	check_monitor(c);
	check_hooks(c, hooked);
	e = cached_hit(c, start, end, ask->access);
	if (!e)
		e = plan_or_pass(c, start, end, ask, &g);
	mrc_unlock(&c->lock);
	mrc_garbage_free(&g);
	return finish(c, e, ask, hooked);
}

/* What locked_get() found: a hit, or a miss planned with signals
 * blocked (hushed) and the hooks' answer it planned with. */
struct look {
	struct mrc_entry *e;
	bool hushed;
	bool hooked;
};

/* A get under the cache's lock, looked up once.  First a hit, before
 * anything that takes a lock of the monitor's or makes a system call: no
 * signal blocked (that costs two system calls), cancellation points none
 * but the monitor's wait (which disables cancellation itself), and a
 * pthread_exit() from a handler landing here unlocks the cache's lock on
 * its way out.  The hooks' probe and the watched call slot are asked for
 * it.  Without one, where the hooks' answer is known without a lock or a
 * call (reach.c's steady check), the miss blocks signals (@h) and plans
 * under the same lock; where it is not, neither: lookup() decides, after
 * the check. */
static void locked_get(struct rdmad_mr_cache *c, uintptr_t start, uintptr_t end,
		       struct ask *ask, struct mrc_hush *h, struct look *l,
		       struct mrc_garbage *g)
{
	if (hookable(c) && !(c->flags & RDMAD_MR_CACHE_EVENTS_ONLY) &&
	    mrc_monitor_hooks_on() &&
	    !(mrc_monitor_hooks_reached() && mrc_reach_steady()))
		return;
	if (c->mode == MRC_CACHING)
		mrc_monitor_quiesce();
	pthread_cleanup_push(mrc_unlock_on_exit, &c->lock);
	mrc_lock(&c->lock);
	if (mrc_changes_pending(c))
		mrc_changes_apply(c);
	check_monitor(c);
	l->e = cached_hit(c, start, end, ask->access);
	/* No hit: none after check_hooks() either (a step into CACHING
	 * comes from UNHOOKED, whose index is empty). */
	if (!l->e && hooks_known(c, &l->hooked)) {
		mrc_monitor_hush(h);
		l->hushed = true;
		check_hooks(c, l->hooked);
		l->e = plan_or_pass(c, start, end, ask, g);
	}
	mrc_unlock(&c->lock);
	pthread_cleanup_pop(0);
}

/* A get the thread's hint does not serve: the lock, the index, a miss.
 * Apart, so that a hit does not pay for this one's frame. */
static __attribute__((noinline)) struct ibv_mr *
get_locked(struct rdmad_mr_cache *cache, void *addr, size_t length, int access)
{
	struct ask ask = {addr, length, access, 0};
	struct look l = {NULL, false, true};
	struct mrc_garbage g = {0};
	uintptr_t start, end;
	struct mrc_entry *e;
	struct mrc_hush h;
	int err;

	pages_of(addr, length, &start, &end);
	adopt();
	mrc_reap(cache);
	locked_get(cache, start, end, &ask, &h, &l, &g);
	if (l.hushed) {
		mrc_garbage_free(&g);
		e = finish(cache, l.e, &ask, l.hooked);
	} else if (l.e) {
		return l.e->mr;
	} else {
		mrc_monitor_hush(&h);
		e = lookup(cache, start, end, &ask);
	}
	err = errno;
	mrc_reap(cache);
	mrc_monitor_unhush(&h);
	errno = err;
	return e ? e->mr : NULL;
}

RDMAD_EXPORT struct ibv_mr *rdmad_mr_cache_get(struct rdmad_mr_cache *cache,
					       void *addr, size_t length,
					       int access)
{
	uintptr_t start, end;
	struct mrc_entry *e;

	if (!cache || pages_of(addr, length, &start, &end)) {
		errno = EINVAL;
		return NULL;
	}
	e = fast_hit(cache, start, end, access);
	if (e)
		return e->mr;
	return get_locked(cache, addr, length, access);
}

/* ---- changes the program announces --------------------------------------- */

/* Signals blocked: a handler's madvise() on this thread must not find a
 * ring slot or a lock of this call's half taken (monitor.h). */
RDMAD_EXPORT int rdmad_mr_cache_begin_change(void *addr, size_t length)
{
	uintptr_t start, end;
	struct mrc_hush h;

	if (pages_of(addr, length, &start, &end))
		return -EINVAL;
	adopt();
	mrc_monitor_hush(&h);
	mrc_monitor_changing(start, end);
	mrc_monitor_unhush(&h);
	return 0;
}

RDMAD_EXPORT int rdmad_mr_cache_end_change(void *addr, size_t length)
{
	uintptr_t start, end;
	struct mrc_hush h;

	if (pages_of(addr, length, &start, &end))
		return -EINVAL;
	adopt();
	mrc_monitor_hush(&h);
	mrc_monitor_changed(start, end);
	mrc_monitor_unhush(&h);
	return 0;
}

RDMAD_EXPORT int rdmad_mr_cache_release(void *addr, size_t length)
{
	uintptr_t start, end;
	struct mrc_hush h;

	if (pages_of(addr, length, &start, &end))
		return -EINVAL;
	adopt();
	mrc_monitor_hush(&h);
	mrc_monitor_release(start, end);
	mrc_monitor_unhush(&h);
	return 0;
}

/* ---- put ---------------------------------------------------------------- */

RDMAD_EXPORT int rdmad_mr_cache_put(struct rdmad_mr_cache *cache,
				    struct ibv_mr *mr)
{
	struct hint *h = &hint;
	struct mrc_entry *e;
	int err;

	if (!cache || !mr)
		return -EINVAL;
	adopt();

	/* The hint's entry, if it has stayed in the index: a dead entry's
	 * old MR pointer may since name another entry's MR. */
	if (hinted(h, cache) && gen_of(cache) == h->gen &&
	    __atomic_load_n(&h->entry->mr, __ATOMIC_RELAXED) == mr) {
		e = h->entry;
	} else {
		/* As locked_get()'s hit: no system call. */
		pthread_cleanup_push(mrc_unlock_on_exit, &cache->lock);
		mrc_lock(&cache->lock);
		e = mrc_owners_find(&cache->owners, mr);
		mrc_unlock(&cache->lock);
		pthread_cleanup_pop(0);
		if (!e)
			return -EINVAL;
	}
	err = mrc_entry_drop(cache, e);
	mrc_reap(cache);
	return err;
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
	if (attr->flags &
	    ~(RDMAD_MR_CACHE_NO_REMOTE | RDMAD_MR_CACHE_EVENTS_ONLY))
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
	struct mrc_hush h;
	int err;

	adopt();
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	err = bounds(c, attr);
	if (err)
		goto fail;
	mrc_lock_init(&c->lock);
	c->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
	c->pd = pd;
	c->ops = *ops;
	strncpy(c->device, device ? device : "", sizeof(c->device) - 1);
	/* Starting the monitor waits for its thread (a cancellation
	 * point) holding the start lock that fork() takes. */
	mrc_monitor_hush(&h);
	c->mode =
		mrc_monitor_start(&c->why) == 0 ? MRC_CACHING : MRC_NO_MONITOR;
	/* Last: from here the monitor and leaving devices see it. */
	err = mrc_monitor_add(&client, c);
	mrc_monitor_unhush(&h);
	if (!err)
		return c;
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

static int flush(struct rdmad_mr_cache *cache)
{
	struct mrc_entry *e, *next;
	long n = 0;

	mrc_lock(&cache->lock);
	for (e = cache->lru_head; e; e = next) {
		next = e->lru_next;
		if (__atomic_load_n(&e->refcnt, __ATOMIC_SEQ_CST))
			continue;
		mrc_retire_range(cache,
				 (size_t)mrc_index_find(&cache->index, e), 1);
		n++;
	}
	mrc_unlock(&cache->lock);
	mrc_reap(cache);
	return n > INT_MAX ? INT_MAX : (int)n;
}

RDMAD_EXPORT int rdmad_mr_cache_flush(struct rdmad_mr_cache *cache)
{
	struct mrc_hush h;
	int n;

	if (!cache)
		return -EINVAL;
	adopt();
	mrc_monitor_hush(&h);
	n = flush(cache);
	mrc_monitor_unhush(&h);
	return n;
}

RDMAD_EXPORT int rdmad_mr_cache_destroy(struct rdmad_mr_cache *cache)
{
	struct mrc_hush h;
	uint64_t busy;

	if (!cache)
		return 0;
	adopt();
	mrc_monitor_hush(&h);
	mrc_lock(&cache->lock);
	busy = mrc_in_use(cache);
	mrc_unlock(&cache->lock);
	if (!busy) {
		mrc_monitor_remove(cache);
		flush(cache);
	}
	mrc_monitor_unhush(&h);
	if (busy)
		return -EBUSY;
	mrc_pool_free(cache);
	mrc_index_free(&cache->index);
	mrc_owners_free(&cache->owners);
	free(cache);
	return 0;
}

/* ---- what it says ------------------------------------------------------- */

RDMAD_EXPORT int rdmad_mr_cache_get_stats(struct rdmad_mr_cache *cache,
					  struct rdmad_mr_cache_stats *stats,
					  size_t size)
{
	struct rdmad_mr_cache_stats now;

	struct mrc_hush h;

	if (!cache || !stats)
		return -EINVAL;
	adopt();
	if (size > sizeof(now))
		size = sizeof(now);
	mrc_monitor_hush(&h);
	mrc_lock(&cache->lock);
	now = cache->stats;
	now.hits = __atomic_load_n(&cache->stats.hits, __ATOMIC_RELAXED);
	now.entries = cache->index.count;
	now.in_use = mrc_in_use(cache);
	mrc_unlock(&cache->lock);
	mrc_monitor_unhush(&h);
	memcpy(stats, &now, size);
	return 0;
}

RDMAD_EXPORT int rdmad_mr_cache_is_caching(struct rdmad_mr_cache *cache)
{
	struct mrc_hush h;
	bool hooked = true;
	int r;

	if (!cache)
		return -EINVAL;
	adopt();
	mrc_monitor_hush(&h);
	/* The one call that checks the descriptor and the hooks without a
	 * miss. */
	if (hookable(cache)) {
		mrc_monitor_alive();
		hooked = hooks_hold(cache);
	}
	mrc_lock(&cache->lock);
	check_monitor(cache);
	check_hooks(cache, hooked);
	r = cacheable(cache, 0);
	mrc_unlock(&cache->lock);
	mrc_reap(cache);
	mrc_monitor_unhush(&h);
	return r;
}

RDMAD_EXPORT const char *
rdmad_mr_cache_get_reason(const struct rdmad_mr_cache *cache)
{
	if (!cache)
		return NULL;
	switch (cache->mode) {
	case MRC_UNWATCHED:
		return "none: unmonitored for a test, stale entries possible";
	case MRC_FORKED:
		return "a forked child's copy: its entries are the parent's";
	case MRC_LEAVING:
		return "its device is leaving (RDMAD_EVENT_REMOVING)";
	case MRC_UNHOOKED:
		return __atomic_load_n(&cache->unhooked_why, __ATOMIC_RELAXED);
	case MRC_CACHING:
	case MRC_NO_MONITOR:
		break;
	}
	return cache->why;
}
