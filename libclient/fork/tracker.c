/* SPDX-License-Identifier: MIT */
/*
 * The fork tracker's state: which pages are marked MADV_DONTFORK and how
 * many registrations hold each, with libibverbs' semantics (DONTFORK on a
 * 0 -> 1 transition, un-mark on 1 -> 0) but three differences:
 *
 * - Released ranges stay marked ("deferred") until a fork is about to
 *   happen: the pthread_atfork prepare handler un-marks them all.  A range
 *   registered again meanwhile costs no DOFORK/DONTFORK pair, only one
 *   MADV_DONTFORK re-issued on an already marked mapping (cheap, no VMA
 *   split), which also marks a new mapping that replaced the old one.
 * - The address space is cut into 4 MiB granules hashed onto 64 shards,
 *   each with its own lock and range map, so threads registering in
 *   different places do not wait for one another.  A range spanning
 *   granules locks its shards in ascending order; fork locks them all.
 * - Work is planned first (which runs need marking, how many nodes, room
 *   in the index), then madvise is called, then the map is changed: a
 *   failed madvise leaves the map as it was and un-marks what this call
 *   had marked.
 *
 * With RDMAD_FORK_AUDIT or RDMAD_FORK_EXPLAIN set at init, every
 * registration and release is also told to audit.c (under the shard
 * lock, so that a fork sees both in step), and so are the fork handlers;
 * otherwise each costs one test of a flag that never changes.
 *
 * The common cases of a buffer pool, registering again exactly a range
 * whose release is deferred and releasing the only registration of a
 * range, take a fast path: one shard lock, the node found through the
 * map's hint without a search, its count changed in place.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fork.h"

#define SHARD_COUNT 64
#define GRANULE_SHIFT RANGEMAP_GRANULE_SHIFT

struct shard {
	pthread_mutex_t lock;
	struct rangemap map;
	int64_t ranges; /* registrations counted where they start */
	uint64_t pages_marked;
	uint64_t madvise_calls;
	uint64_t madvise_saved;
	uint64_t deferred;
	uint64_t unverified;
	uint64_t unaligned_bytes;
	struct rangemap_node *spare; /* unused nodes, to spare malloc */
	unsigned int spares;
} __attribute__((aligned(64)));

static struct shard shards[SHARD_COUNT];
static struct policy policy;
static size_t page_size;
static bool initialised;
static bool any_ranges;
static bool diagnosing; /* RDMAD_FORK_AUDIT or _EXPLAIN, fixed at init */

static unsigned int shard_index(uintptr_t addr)
{
	uintptr_t g = addr >> GRANULE_SHIFT;

	return (unsigned int)((g ^ (g >> 6) ^ (g >> 12)) % SHARD_COUNT);
}

static uintptr_t granule_end(uintptr_t addr)
{
	return ((addr >> GRANULE_SHIFT) + 1) << GRANULE_SHIFT;
}

static uintptr_t min_addr(uintptr_t a, uintptr_t b)
{
	return a < b ? a : b;
}

static uintptr_t max_addr(uintptr_t a, uintptr_t b)
{
	return a > b ? a : b;
}

/* ---- locking ------------------------------------------------------------- */

/* The shards holding [start, end), as a mask: with 64 shards, one bit a
 * shard, locked in ascending order so that two callers never deadlock. */
_Static_assert(SHARD_COUNT == 64, "shard masks are 64-bit");
#define ALL_SHARDS UINT64_MAX

static uint64_t range_mask(uintptr_t start, uintptr_t end)
{
	uint64_t mask = 0;

	for (uintptr_t g = start >> GRANULE_SHIFT;
	     g <= (end - 1) >> GRANULE_SHIFT && mask != ALL_SHARDS; g++)
		mask |= UINT64_C(1) << shard_index(g << GRANULE_SHIFT);
	return mask;
}

static void lock_shards(uint64_t mask)
{
	for (; mask; mask &= mask - 1)
		pthread_mutex_lock(&shards[__builtin_ctzll(mask)].lock);
}

static void unlock_shards(uint64_t mask)
{
	for (; mask; mask &= mask - 1)
		pthread_mutex_unlock(&shards[__builtin_ctzll(mask)].lock);
}

/* ---- node pool: taken before anything changes ---------------------------- */

#define SPARE_MAX 16

static int pool_fill(struct shard *sh, struct rangemap_node **pool, size_t n)
{
	while (n--) {
		struct rangemap_node *node = sh->spare;

		if (node) {
			sh->spare = node->pool_next;
			sh->spares--;
		} else {
			node = rangemap_node_new();
		}
		if (!node)
			return -ENOMEM;
		node->pool_next = *pool;
		*pool = node;
	}
	return 0;
}

static struct rangemap_node *pool_take(struct rangemap_node **pool,
				       uintptr_t start, uintptr_t end,
				       unsigned int refcnt)
{
	struct rangemap_node *node = *pool;

	*pool = node->pool_next;
	node->start = start;
	node->end = end;
	node->refcnt = refcnt;
	node->unverified = false;
	return node;
}

/* Keep a few unused nodes for the next call, free the rest. */
static void pool_return(struct shard *sh, struct rangemap_node *pool)
{
	while (pool) {
		struct rangemap_node *next = pool->pool_next;

		if (sh->spares < SPARE_MAX) {
			pool->pool_next = sh->spare;
			sh->spare = pool;
			sh->spares++;
		} else {
			free(pool);
		}
		pool = next;
	}
}

/* ---- map edits, one walk in address order -------------------------------- */

/* With @c positioned before @addr, split the node that straddles it. */
static void split_prev(struct shard *sh, struct rangemap_cursor *c,
		       uintptr_t addr, struct rangemap_node **pool)
{
	struct rangemap_node *p, *tail;

	p = rangemap_cursor_prev(c);
	if (!p || p->end <= addr)
		return;
	tail = pool_take(pool, addr, p->end, p->refcnt);
	tail->unverified = p->unverified;
	p->end = addr;
	rangemap_cursor_insert(c, tail);
	if (!tail->refcnt)
		sh->deferred++;
	sh->unverified += tail->unverified;
}

/* Move past the cursor's next node @n, merged into the previous one when
 * they touch and have equal counts: fewer nodes, and neighbouring
 * deferred ranges are un-marked in one call. */
static inline bool joins(const struct rangemap_node *p,
			 const struct rangemap_node *n)
{
	return p && n && p->end == n->start && p->refcnt == n->refcnt &&
	       p->unverified == n->unverified;
}

static void pass(struct shard *sh, struct rangemap_cursor *c,
		 struct rangemap_node *n)
{
	struct rangemap_node *p = rangemap_cursor_prev(c);

	if (joins(p, n)) {
		p->end = n->end;
		if (!n->refcnt)
			sh->deferred--;
		sh->unverified -= n->unverified;
		rangemap_cursor_remove_next(c);
		return;
	}
	rangemap_cursor_advance(c, n);
}

static void merge_next(struct shard *sh, struct rangemap_cursor *c)
{
	struct rangemap_node *n = rangemap_cursor_next(c);

	if (n)
		pass(sh, c, n);
}

/* Cut the cursor's next node @n at @end, inserting the part above @end
 * behind it through a copy of the cursor: @c stays valid before @n. */
static void split_next(struct shard *sh, const struct rangemap_cursor *c,
		       struct rangemap_node *n, uintptr_t end,
		       struct rangemap_node **pool)
{
	struct rangemap_cursor behind;
	struct rangemap_node *tail;

	if (n->end <= end)
		return;
	behind = *c;
	tail = pool_take(pool, end, n->end, n->refcnt);
	tail->unverified = n->unverified;
	sh->unverified += tail->unverified;
	if (!tail->refcnt)
		sh->deferred++;
	n->end = end;
	rangemap_cursor_advance(&behind, n);
	rangemap_cursor_insert(&behind, tail);
}

/* ---- marking ------------------------------------------------------------- */

/* Applying will insert a node starting at @addr: count it, and make room
 * for it in the index now, while failing changes nothing. */
static int need_node(const struct rangemap_cursor *c, uintptr_t addr,
		     size_t *nodes)
{
	(*nodes)++;
	return rangemap_reserve(c->map, addr);
}

/* Runs of [start, end) to mark, and how many nodes applying will need;
 * @c is positioned before @start. */
static int plan_mark(const struct rangemap_cursor *c, uintptr_t start,
		     uintptr_t end, struct madv_runs *runs, size_t *nodes)
{
	struct rangemap_node *n, *p;
	uintptr_t at = start;
	int r = 0;

	p = rangemap_cursor_prev(c);
	n = p && p->end > start ? p : rangemap_cursor_next(c);
	if (p && n == p)
		r = need_node(c, start, nodes);
	for (; n && n->start < end && !r; n = rangemap_next(n)) {
		if (n->start > at) {
			r = madv_runs_add(runs, at, n->start, MADV_KIND_FRESH);
			if (!r)
				r = need_node(c, at, nodes);
		}
		if (!r && !n->refcnt && policy.remark == POLICY_REMARK_REGISTER)
			r = madv_runs_add(runs, max_addr(at, n->start),
					  min_addr(end, n->end),
					  MADV_KIND_REMARK);
		if (!r && n->end > end)
			r = need_node(c, end, nodes);
		at = n->end;
	}
	if (!r && at < end) {
		r = madv_runs_add(runs, at, end, MADV_KIND_FRESH);
		if (!r)
			r = need_node(c, at, nodes);
	}
	return r;
}

/* One more registration on @n; a deferred range is live again. */
static void hold(struct shard *sh, struct rangemap_node *n)
{
	if (n->refcnt++)
		return;
	sh->deferred--;
	if (policy.remark == POLICY_REMARK_FORK && !n->unverified) {
		n->unverified = true;
		sh->unverified++;
	}
}

/* Apply a planned mark; @seeded, if not NULL, is the plan's cursor. */
static void apply_mark(struct shard *sh, uintptr_t start, uintptr_t end,
		       struct rangemap_node **pool,
		       const struct rangemap_cursor *seeded)
{
	struct rangemap_cursor c;
	struct rangemap_node *n;
	uintptr_t at = start;

	if (seeded)
		c = *seeded;
	else
		rangemap_seek(&sh->map, &c, start);
	split_prev(sh, &c, start, pool);
	while (at < end) {
		n = rangemap_cursor_next(&c);
		if (!n || n->start > at) {
			n = pool_take(pool, at,
				      n ? min_addr(n->start, end) : end, 1);
			rangemap_cursor_insert(&c, n);
			sh->pages_marked += (n->end - n->start) / page_size;
		} else {
			split_next(sh, &c, n, end, pool);
			hold(sh, n);
		}
		at = n->end;
		pass(sh, &c, n);
	}
	merge_next(sh, &c);
}

/* End of the granule-sized piece of [s, end) that starts at @s. */
static uintptr_t piece_end(uintptr_t s, uintptr_t end)
{
	return min_addr(granule_end(s), end);
}

/* Plan every piece.  @c is positioned before @start already (the caller
 * looked there first) and stays valid for applying the first piece, since
 * nothing changes in between. */
static int plan_all(struct shard *first, uintptr_t start, uintptr_t end,
		    struct madv_runs *runs, struct rangemap_node **pool,
		    const struct rangemap_cursor *c)
{
	struct rangemap_cursor other;
	size_t nodes = 0;
	uintptr_t s, e;
	int r;

	for (s = start; s < end; s = e) {
		e = piece_end(s, end);
		if (s != start)
			rangemap_seek(&shards[shard_index(s)].map, &other, s);
		r = plan_mark(s == start ? c : &other, s, e, runs, &nodes);
		if (r < 0)
			return r;
	}
	return pool_fill(first, pool, nodes);
}

/* Free the index of every granule of [start, end) left without nodes. */
static void trim_pieces(uintptr_t start, uintptr_t end)
{
	for (uintptr_t s = start; s < end; s = piece_end(s, end))
		rangemap_trim(&shards[shard_index(s)].map, s);
}

/* Bytes of the rounded range outside the registration, on edge pages this
 * call marked: memory that a child will miss though nobody registered it. */
static uint64_t unaligned_marked(const struct madv_runs *runs, uintptr_t start,
				 uintptr_t end, uintptr_t base, size_t size)
{
	uint64_t bytes = 0;

	if (!runs->n)
		return 0;
	if (runs->v[0].start == start)
		bytes += base - start;
	if (runs->v[runs->n - 1].end == end)
		bytes += end - (base + size);
	return bytes;
}

/* Round [base, base + size) to whole pages of its mapping, or refuse. */
static inline int round_range(void *base, size_t size, uintptr_t *ret_start,
			      uintptr_t *ret_end)
{
	uintptr_t b = (uintptr_t)base;
	size_t ps = page_size;

	if (b + size < b)
		return -EINVAL;
	/* Read before any lock is held: a later init may change it. */
	if (__atomic_load_n(&policy.hugepages_safe, __ATOMIC_RELAXED))
		ps = hugepage_size(b);
	if (policy.unaligned == POLICY_UNALIGNED_STRICT &&
	    ((b | size) & (ps - 1)))
		return -EINVAL;
	*ret_start = b & ~(uintptr_t)(ps - 1);
	*ret_end = (b + size + ps - 1) & ~(uintptr_t)(ps - 1);
	return 0;
}

/* A failed mark: a huge page table that said otherwise is stale. */
static int mark_failed(int r)
{
	if (r == -EINVAL && policy.hugepages_safe)
		hugepage_invalidate();
	return r;
}

/* The general case: plan every piece, take the nodes, mark, apply.  @c is
 * positioned before @start in @first's map. */
static int mark_locked(struct shard *first, uintptr_t start, uintptr_t end,
		       void *base, size_t size, const struct rangemap_cursor *c)
{
	struct rangemap_node *pool = NULL;
	struct madv_runs runs;
	uintptr_t s, e;
	int r;

	madv_runs_init(&runs);
	r = plan_all(first, start, end, &runs, &pool, c);
	if (!r)
		r = mark_failed(madv_mark_all(&runs, &first->madvise_calls));
	if (r)
		trim_pieces(start, end);
	if (!r) {
		for (s = start; s < end; s = e) {
			e = piece_end(s, end);
			apply_mark(&shards[shard_index(s)], s, e, &pool,
				   s == start ? c : NULL);
		}
		first->ranges++;
		first->unaligned_bytes += unaligned_marked(
			&runs, start, end, (uintptr_t)base, size);
	}
	pool_return(first, pool);
	madv_runs_free(&runs);
	return r;
}

/* ---- fast paths: exactly one node, one shard ----------------------------- */

/* The node that is exactly [start, end) with @refcnt registrations: the
 * map's hint when it is that node (no search), else found by positioning
 * @c before @start, which the general path then uses.  A node never
 * crosses a granule, so a match also means that @start's shard is the
 * only one concerned. */
static inline struct rangemap_node *find_exact(struct rangemap *map,
					       struct rangemap_cursor *c,
					       uintptr_t start, uintptr_t end,
					       unsigned int refcnt)
{
	struct rangemap_node *n = rangemap_hint(map, start);

	if (!n || n->end != end || n->refcnt != refcnt) {
		rangemap_seek(map, c, start);
		n = rangemap_cursor_next(c);
		if (!n || n->start != start)
			return NULL;
	}
	return n->end == end && n->refcnt == refcnt ? n : NULL;
}

/* After @n's count changed in place, merge it with a neighbour of equal
 * count, as a walk would have; only then is a search needed. */
static inline void settle(struct shard *sh, struct rangemap_node *n)
{
	struct rangemap_cursor c;

	if (!joins(n->prev, n) && !joins(n, rangemap_next(n)))
		return;
	rangemap_seek(&sh->map, &c, n->start);
	pass(sh, &c, n);
	merge_next(sh, &c);
}

/* Register again exactly a deferred range @n: nothing to plan, no node to
 * take, one mark re-issued in case the memory was replaced (none with
 * REMARK=fork).  The madvise runs under the shard lock, as in the general
 * case: a fork then never sees the range live but unmarked, and a failure
 * needs no undo.  The kernel serialises the call on its mmap lock
 * anyway. */
static int remark_exact(struct shard *sh, struct rangemap_node *n, void *base,
			size_t size)
{
	if (policy.remark == POLICY_REMARK_REGISTER) {
		sh->madvise_calls++;
		if (madvise((void *)n->start, n->end - n->start, MADV_DONTFORK))
			return mark_failed(-errno);
		/* As unaligned_marked() counts a re-marked run. */
		sh->unaligned_bytes += ((uintptr_t)base - n->start) +
				       (n->end - ((uintptr_t)base + size));
	}
	hold(sh, n);
	sh->ranges++;
	settle(sh, n);
	return 0;
}

/* Lock what [start, end) needs: the one shard of @first when the range
 * stays in one granule (returns 0), else a mask of shards. */
static inline uint64_t lock_range(struct shard *first, uintptr_t start,
				  uintptr_t end)
{
	uint64_t mask;

	if (start >> GRANULE_SHIFT == (end - 1) >> GRANULE_SHIFT) {
		pthread_mutex_lock(&first->lock);
		return 0;
	}
	mask = range_mask(start, end);
	lock_shards(mask);
	return mask;
}

static inline void unlock_range(struct shard *first, uint64_t mask)
{
	if (mask)
		unlock_shards(mask);
	else
		pthread_mutex_unlock(&first->lock);
}

/* Tell audit.c what a registration did, under the shard lock. */
static void note_mark(int r, void *base, size_t size, uintptr_t start,
		      uintptr_t end, const void *caller, unsigned int site)
{
	if (r)
		audit_unreserve();
	else
		audit_add((uintptr_t)base, size, start, end, caller, site);
}

int tracker_mark(void *base, size_t size, const void *caller)
{
	struct rangemap_cursor c;
	struct rangemap_node *n;
	struct shard *first;
	uintptr_t start, end;
	unsigned int site = 0;
	uint64_t mask;
	int r;

	if (!base || !size)
		return 0;
	r = round_range(base, size, &start, &end);
	if (r < 0)
		return r;
	if (diagnosing && (r = audit_reserve(caller, &site)) < 0)
		return r;
	first = &shards[shard_index(start)];
	mask = lock_range(first, start, end);
	/* Written once: a shared line stays clean for other threads. */
	if (!__atomic_load_n(&any_ranges, __ATOMIC_RELAXED))
		__atomic_store_n(&any_ranges, true, __ATOMIC_RELAXED);
	n = find_exact(&first->map, &c, start, end, 0);
	if (n)
		r = remark_exact(first, n, base, size);
	else
		r = mark_locked(first, start, end, base, size, &c);
	if (diagnosing)
		note_mark(r, base, size, start, end, caller, site);
	unlock_range(first, mask);
	return r;
}

/* ---- releasing ----------------------------------------------------------- */

/* Without deferral: un-mark @n, the cursor's next, and drop it. */
static void unmark_now(struct shard *sh, struct rangemap_cursor *c,
		       struct rangemap_node *n)
{
	madv_unmark(n->start, n->end, page_size, &sh->madvise_calls);
	sh->pages_marked -= (n->end - n->start) / page_size;
	sh->unverified -= n->unverified;
	rangemap_cursor_remove_next(c);
}

/* Drop one reference from [start, end) of one shard; pages reaching zero
 * stay marked (deferred) or, without deferral, are un-marked now.  @seeded,
 * if not NULL, is a cursor positioned before @start. */
static void apply_release(struct shard *sh, uintptr_t start, uintptr_t end,
			  struct rangemap_node **pool,
			  const struct rangemap_cursor *seeded)
{
	struct rangemap_cursor c;
	struct rangemap_node *n;

	if (seeded)
		c = *seeded;
	else
		rangemap_seek(&sh->map, &c, start);
	split_prev(sh, &c, start, pool);
	while ((n = rangemap_cursor_next(&c)) && n->start < end) {
		split_next(sh, &c, n, end, pool);
		if (n->refcnt && !--n->refcnt) {
			if (!policy.defer) {
				unmark_now(sh, &c, n);
				continue;
			}
			sh->deferred++;
			sh->madvise_saved++;
		}
		pass(sh, &c, n);
	}
	merge_next(sh, &c);
}

static int release_locked(struct shard *first, uintptr_t start, uintptr_t end,
			  const struct rangemap_cursor *c)
{
	struct rangemap_node *pool = NULL;
	uintptr_t s, e;
	size_t pieces = 0;
	int r = 0;

	/* At most the two nodes straddling each piece's ends get split (at a
	 * granule's end no node does). */
	for (s = start; s < end && !r; s = e) {
		struct rangemap *map = &shards[shard_index(s)].map;

		e = piece_end(s, end);
		pieces++;
		r = rangemap_reserve(map, s);
		if (!r && (e & ((UINT64_C(1) << GRANULE_SHIFT) - 1)))
			r = rangemap_reserve(map, e);
	}
	if (!r)
		r = pool_fill(first, &pool, 2 * pieces);
	if (!r) {
		for (s = start; s < end; s = e) {
			e = piece_end(s, end);
			apply_release(&shards[shard_index(s)], s, e, &pool,
				      s == start ? c : NULL);
		}
		first->ranges--;
	}
	trim_pieces(start, end);
	pool_return(first, pool);
	return r;
}

/* Release the only registration of exactly the range of @n: no split, no
 * node; it stays marked until the next fork. */
static void release_exact(struct shard *sh, struct rangemap_node *n)
{
	n->refcnt = 0;
	sh->deferred++;
	sh->madvise_saved++;
	sh->ranges--;
	settle(sh, n);
}

int tracker_release(void *base, size_t size)
{
	struct rangemap_cursor c;
	struct rangemap_node *n;
	struct shard *first;
	uintptr_t start, end;
	uint64_t mask;
	int r = 0;

	if (!base || !size)
		return 0;
	r = round_range(base, size, &start, &end);
	if (r < 0)
		return r;
	first = &shards[shard_index(start)];
	mask = lock_range(first, start, end);
	if (policy.defer) {
		n = find_exact(&first->map, &c, start, end, 1);
	} else {
		rangemap_seek(&first->map, &c, start);
		n = NULL;
	}
	if (n)
		release_exact(first, n);
	else
		r = release_locked(first, start, end, &c);
	if (diagnosing && !r)
		audit_remove((uintptr_t)base, size);
	unlock_range(first, mask);
	return r;
}

/* ---- fork ---------------------------------------------------------------- */

/* Re-issue the mark of a range registered again while deferred, in case
 * its memory was unmapped and mapped again since (RDMAD_FORK_REMARK=fork).
 * Too late to report a failure: a range that is gone needs no mark. */
static void verify(struct shard *sh, struct rangemap_node *n)
{
	sh->madvise_calls++;
	madvise((void *)n->start, n->end - n->start, MADV_DONTFORK);
	n->unverified = false;
	sh->unverified--;
}

static void flush_shard(struct shard *sh)
{
	struct rangemap_cursor c;
	struct rangemap_node *n;

	for (size_t i = 0; i < sh->map.cap; i++) {
		if (!rangemap_seek_entry(&sh->map, &c, i))
			continue;
		while ((sh->deferred || sh->unverified) &&
		       (n = rangemap_cursor_next(&c))) {
			if (n->refcnt) {
				if (n->unverified)
					verify(sh, n);
				rangemap_cursor_advance(&c, n);
				continue;
			}
			madv_unmark(n->start, n->end, page_size,
				    &sh->madvise_calls);
			sh->pages_marked -= (n->end - n->start) / page_size;
			sh->deferred--;
			sh->unverified -= n->unverified;
			rangemap_cursor_remove_next(&c);
		}
	}
	rangemap_trim_all(&sh->map);
}

void tracker_flush(void)
{
	for (unsigned int i = 0; i < SHARD_COUNT; i++)
		flush_shard(&shards[i]);
}

/* Held from prepare until the fork returned, so that no thread releases
 * (defers) a range between the flush and the fork. */
static uint64_t pages_marked_locked(void)
{
	uint64_t pages = 0;

	for (unsigned int i = 0; i < SHARD_COUNT; i++)
		pages += shards[i].pages_marked;
	return pages;
}

static void atfork_prepare(void)
{
	lock_shards(ALL_SHARDS);
	if (__atomic_load_n(&any_ranges, __ATOMIC_RELAXED))
		tracker_flush();
	if (diagnosing)
		audit_fork_prepare(pages_marked_locked());
}

static void atfork_parent(void)
{
	unlock_shards(ALL_SHARDS);
}

static void atfork_child(void)
{
	unlock_shards(ALL_SHARDS);
	hugepage_child();
	if (diagnosing)
		audit_fork_child();
}

static void init_locks(void)
{
	for (unsigned int i = 0; i < SHARD_COUNT; i++)
		pthread_mutex_init(&shards[i].lock, NULL);
}

int tracker_init(const struct policy *p)
{
	int r;

	if (initialised)
		return 0;
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	policy = *p;
	r = madv_probe(page_size);
	if (r < 0)
		return r;
	for (unsigned int i = 0; i < SHARD_COUNT; i++) {
		r = rangemap_init(&shards[i].map);
		if (r < 0)
			return r;
	}
	init_locks();
	diagnosing = p->audit || p->explain;
	if (diagnosing && (r = audit_init(p, page_size)) < 0)
		return r;
	r = pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (r)
		return -r;
	__atomic_store_n(&initialised, true, __ATOMIC_RELEASE);
	return 0;
}

void tracker_set_policy(const struct policy *p)
{
	lock_shards(ALL_SHARDS);
	__atomic_store_n(&policy.hugepages_safe, p->hugepages_safe,
			 __ATOMIC_RELAXED);
	policy.remark = p->remark;
	unlock_shards(ALL_SHARDS);
}

bool tracker_has_ranges(void)
{
	return __atomic_load_n(&any_ranges, __ATOMIC_RELAXED);
}

/* Does a marked range end at @start, in the granule below it? */
static bool continues_below(uintptr_t start)
{
	uintptr_t below = start - page_size;
	struct rangemap_cursor c;
	struct rangemap_node *n;

	rangemap_seek(&shards[shard_index(below)].map, &c, below);
	n = rangemap_cursor_next(&c);
	if (!n || n->start != below)
		n = rangemap_cursor_prev(&c);
	return n && n->end == start;
}

/* Runs of contiguous marked pages in @sh (all shards locked): a node
 * starts one unless a node ends where it starts, in its granule or, at a
 * granule's start, in the one below (another shard's). */
static uint64_t marked_runs(struct shard *sh)
{
	struct rangemap_cursor c;
	struct rangemap_node *n, *prev;
	uint64_t runs = 0;

	for (size_t i = 0; i < sh->map.cap; i++) {
		if (!rangemap_seek_entry(&sh->map, &c, i))
			continue;
		for (prev = NULL, n = rangemap_cursor_next(&c); n;
		     prev = n, n = rangemap_next(n)) {
			if (prev ? prev->end != n->start
				 : !continues_below(n->start))
				runs++;
		}
	}
	return runs;
}

void tracker_get_stats(struct tracker_stats *ret_stats)
{
	int64_t ranges = 0;

	*ret_stats = (struct tracker_stats){0};
	if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE))
		return;
	lock_shards(ALL_SHARDS);
	for (unsigned int i = 0; i < SHARD_COUNT; i++) {
		const struct shard *sh = &shards[i];

		ranges += sh->ranges;
		ret_stats->pages_marked += sh->pages_marked;
		ret_stats->madvise_calls += sh->madvise_calls;
		ret_stats->madvise_saved += sh->madvise_saved;
		ret_stats->deferred_ranges += sh->deferred;
		ret_stats->unaligned_bytes += sh->unaligned_bytes;
		ret_stats->marked_runs += marked_runs(&shards[i]);
	}
	unlock_shards(ALL_SHARDS);
	ret_stats->ranges = ranges > 0 ? (uint64_t)ranges : 0;
}
