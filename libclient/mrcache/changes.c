/* SPDX-License-Identifier: MIT */
/*
 * A cache's ring of changes: ranges whose pages changed, told by the
 * monitor (its thread for the kernel's events, the thread of a program
 * announcing a change), applied to the index by application threads
 * under the cache's lock.  Writers take no lock, so the monitor thread
 * never waits for an application thread: a writer claims a slot
 * (changes_claimed), fills it, and publishes it in claim order
 * (changes_head), then moves the cache's generation so that no lock-free
 * hit takes an entry before the change is applied.  A reader that finds
 * the ring overrun (a writer claimed a slot it had not read yet) assumes
 * the worst: every entry leaves the index, every miss in flight is
 * refused.
 */
#include <sched.h>

#include "mrcache.h"

static bool overlaps(uintptr_t s1, uintptr_t e1, uintptr_t s2, uintptr_t e2)
{
	return s1 < e2 && s2 < e1;
}

uint64_t mrc_changes_seen(const struct rdmad_mr_cache *c)
{
	return __atomic_load_n(&c->changes_head, __ATOMIC_ACQUIRE);
}

void mrc_changes_record(void *arg, uintptr_t start, uintptr_t end)
{
	struct rdmad_mr_cache *c = arg;
	uint64_t k =
		__atomic_fetch_add(&c->changes_claimed, 1, __ATOMIC_SEQ_CST);
	struct mrc_change *slot = &c->changes[k % MRC_CHANGES];

	__atomic_store_n(&slot->start, start, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->end, end, __ATOMIC_RELAXED);
	/* The wait is for a writer a few stores ahead. */
	while (__atomic_load_n(&c->changes_head, __ATOMIC_ACQUIRE) != k)
		sched_yield();
	__atomic_store_n(&c->changes_head, k + 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&c->gen, 1, __ATOMIC_SEQ_CST);
}

/* Whether slots from @k on may have been overwritten by a writer that
 * claimed past them (checked after reading them). */
static bool overrun(const struct rdmad_mr_cache *c, uint64_t k)
{
	return __atomic_load_n(&c->changes_claimed, __ATOMIC_SEQ_CST) - k >
	       MRC_CHANGES;
}

static void slot(const struct rdmad_mr_cache *c, uint64_t k, uintptr_t *start,
		 uintptr_t *end)
{
	const struct mrc_change *s = &c->changes[k % MRC_CHANGES];

	*start = __atomic_load_n(&s->start, __ATOMIC_RELAXED);
	*end = __atomic_load_n(&s->end, __ATOMIC_RELAXED);
}

bool mrc_changes_since(const struct rdmad_mr_cache *c, uint64_t seen,
		       uintptr_t start, uintptr_t end)
{
	uint64_t head = mrc_changes_seen(c), k;
	uintptr_t s, e;

	if (head - seen > MRC_CHANGES)
		return true;
	for (k = seen; k < head; k++) {
		slot(c, k, &s, &e);
		if (overlaps(s, e, start, end))
			return true;
	}
	return overrun(c, seen);
}

static void retire_all(struct rdmad_mr_cache *c)
{
	c->stats.invalidations += c->index.count;
	mrc_retire_range(c, 0, c->index.count);
}

void mrc_changes_apply(struct rdmad_mr_cache *c)
{
	uint64_t head = mrc_changes_seen(c), k;
	size_t first, n;
	uintptr_t s, e;

	if (head == c->changes_tail)
		return;
	if (head - c->changes_tail > MRC_CHANGES) {
		retire_all(c);
	} else {
		for (k = c->changes_tail; k < head; k++) {
			slot(c, k, &s, &e);
			n = mrc_index_overlapping(&c->index, s, e, &first);
			c->stats.invalidations += n;
			mrc_retire_range(c, first, n);
		}
		if (overrun(c, c->changes_tail))
			retire_all(c);
	}
	c->changes_tail = head;
}
