/* SPDX-License-Identifier: MIT */
/*
 * An entry's life (cache.c says where an entry lives and why).
 *
 * A hit may take an entry without the cache's lock (cache.c's fast path:
 * increment its count, then check that nothing left the index since the
 * thread last looked), so an entry's count is atomic, and the memory of an
 * entry is never freed while its cache lives: a late increment on an
 * entry that just left must land on an entry, and is taken back at once.
 * Who owns an entry is decided by its count:
 *
 *   0 .. MRC_CLAIMED-1   its users; 0 and in the index: idle
 *   MRC_CLAIMED          claimed: on the dead list or in the pool, no user
 *   MRC_CLAIMED + k      claimed, with k late increments about to go back
 *
 * An entry leaving with no user is claimed by a compare-and-swap from 0,
 * so that a hit racing with it either sees the count it raised (and the
 * entry goes detached until its put) or sees the generation that moved
 * (and takes its increment back).  Whoever takes the count of an entry
 * out of the index to 0 claims it for the dead list (mrc_entry_drop()).
 * mrc_reap() waits for late increments to go back before it deregisters,
 * and a recycled entry keeps any that are still in flight
 * (mrc_entry_activate()).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "mrcache.h"

static unsigned int load(const unsigned int *count)
{
	return __atomic_load_n(count, __ATOMIC_SEQ_CST);
}

static bool claim(struct mrc_entry *e)
{
	unsigned int zero = 0;

	return __atomic_compare_exchange_n(&e->refcnt, &zero, MRC_CLAIMED,
					   false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

static size_t span(const struct mrc_entry *e)
{
	return e->end - e->start;
}

struct mrc_entry *mrc_entry_alloc(struct rdmad_mr_cache *c)
{
	struct mrc_entry *e = c->pool;

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		e->refcnt = MRC_CLAIMED;
	}
	c->pool = e == c->pool ? e->next : c->pool;
	__atomic_store_n(&e->dead, false, __ATOMIC_SEQ_CST);
	e->orphan = e->cached = false;
	e->watch = 0;
	__atomic_store_n(&e->recent, false, __ATOMIC_RELAXED);
	e->lru_prev = e->lru_next = e->next = NULL;
	return e;
}

/* Late increments still in flight stay counted, and go back. */
void mrc_entry_activate(struct mrc_entry *e)
{
	__atomic_sub_fetch(&e->refcnt, MRC_CLAIMED - 1, __ATOMIC_SEQ_CST);
}

/* Back to the pool, unused (a registration that failed). */
void mrc_entry_unalloc(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	mrc_push(&c->pool, e);
}

void mrc_pool_free(struct rdmad_mr_cache *c)
{
	struct mrc_entry *e, *next;

	for (e = c->pool; e; e = next) {
		next = e->next;
		free(e);
	}
	c->pool = NULL;
}

void mrc_garbage_free(struct mrc_garbage *g)
{
	while (g->count)
		free(g->blocks[--g->count]);
}

/* ---- lists ----------------------------------------------------------------
 */

void mrc_lru_append(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	e->lru_next = NULL;
	e->lru_prev = c->lru_tail;
	if (c->lru_tail)
		c->lru_tail->lru_next = e;
	else
		c->lru_head = e;
	c->lru_tail = e;
}

void mrc_lru_unlink(struct rdmad_mr_cache *c, struct mrc_entry *e)
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

void mrc_push(struct mrc_entry **list, struct mrc_entry *e)
{
	e->next = *list;
	*list = e;
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

/* A claimed entry to the dead list, which mrc_reap() reads unlocked. */
static void push_dead(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	mrc_owners_remove(&c->owners, e);
	e->next = c->dead;
	__atomic_store_n(&c->dead, e, __ATOMIC_RELEASE);
}

/* ---- leaving the index, and the last put ----------------------------------
 */

static void retire(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	/* Before the claim: a last put that the claim missed sees it. */
	__atomic_store_n(&e->dead, true, __ATOMIC_SEQ_CST);
	c->stats.bytes_cached -= span(e);
	mrc_lru_unlink(c, e);
	if (claim(e))
		push_dead(c, e);
	else
		mrc_push(&c->detached, e);
}

void mrc_retire_range(struct rdmad_mr_cache *c, size_t first, size_t n)
{
	size_t i;

	if (!n)
		return;
	/* Before the claims: a hit that raised a count after this sees it. */
	__atomic_add_fetch(&c->gen, 1, __ATOMIC_SEQ_CST);
	for (i = first; i < first + n; i++)
		retire(c, c->index.entries[i]);
	mrc_index_remove(&c->index, first, n);
}

/* The count of @e went to 0: a cached entry in the index stays, idle;
 * one detached (dead, or a pass-through) goes to the dead list, unless a
 * late hit raised the count again (then its own drop comes here).
 * No cancellation point and no lock of the monitor's: a pthread_exit()
 * from a handler landing here gives the cache's lock back on its way
 * out where it holds it (lock.h), at no system call. */
static void settle(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	pthread_cleanup_push(mrc_unlock_on_exit, &c->lock);
	mrc_lock(&c->lock);
	if ((!e->cached || __atomic_load_n(&e->dead, __ATOMIC_SEQ_CST)) &&
	    claim(e) && unlink_from(&c->detached, e))
		push_dead(c, e);
	mrc_unlock(&c->lock);
	pthread_cleanup_pop(0);
}

/* The entry may have been recycled since the increment: settle() looks
 * under the lock at what it is now. */
void mrc_entry_undo(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	if (__atomic_sub_fetch(&e->refcnt, 1, __ATOMIC_SEQ_CST) == 0)
		settle(c, e);
}

int mrc_entry_drop(struct rdmad_mr_cache *c, struct mrc_entry *e)
{
	unsigned int old = load(&e->refcnt);
	bool cached = e->cached; /* fixed while the caller counts in it */

	do {
		if (old == 0 || old >= MRC_CLAIMED)
			return -EINVAL;
	} while (!__atomic_compare_exchange_n(&e->refcnt, &old, old - 1, false,
					      __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	/* A cached entry still in the index just goes idle, without the
	 * lock.  A retire that missed this count set dead before its claim,
	 * and an entry it left detached waits for this drop; settle() looks
	 * again under the lock, so a spurious call is harmless. */
	if (old == 1 &&
	    (!cached || __atomic_load_n(&e->dead, __ATOMIC_SEQ_CST)))
		settle(c, e);
	return 0;
}

/* ---- deregistering --------------------------------------------------------
 */

/* Signals blocked and cancellation off: a thread that ended here would
 * leave the cache's lock held, or the entries it took off the dead list
 * neither deregistered nor back in the pool. */
void mrc_reap_dead(struct rdmad_mr_cache *c)
{
	struct mrc_entry *e, *next;
	struct mrc_hush h;

	mrc_monitor_hush(&h);
	mrc_lock(&c->lock);
	e = c->dead;
	__atomic_store_n(&c->dead, NULL, __ATOMIC_RELEASE);
	mrc_unlock(&c->lock);
	for (; e; e = next) {
		next = e->next;
		/* A hit between its increment and taking it back. */
		while (load(&e->refcnt) != MRC_CLAIMED)
			sched_yield();
		if (!e->orphan)
			c->ops.dereg(e->mr);
		__atomic_store_n(&e->mr, NULL, __ATOMIC_RELAXED);
		/* No entry needs the range now: its mappings merge back. */
		if (e->watch)
			mrc_monitor_unwatch(e->watch);
		e->watch = 0;
		mrc_lock(&c->lock);
		c->stats.bytes_pinned -= span(e);
		mrc_push(&c->pool, e);
		mrc_unlock(&c->lock);
	}
	mrc_monitor_unhush(&h);
}

static uint64_t users(const struct mrc_entry *e)
{
	unsigned int n = load(&e->refcnt);

	return n < MRC_CLAIMED ? n : 0;
}

uint64_t mrc_in_use(const struct rdmad_mr_cache *c)
{
	const struct mrc_entry *e;
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < c->index.count; i++)
		n += users(c->index.entries[i]);
	for (e = c->detached; e; e = e->next)
		n += users(e);
	return n;
}
