/* SPDX-License-Identifier: MIT */
/*
 * Which entry an MR handed out belongs to, so that a put finds it without
 * a search or a look at the MR: open addressing by the MR's address,
 * linear probing, at most half full.  Removal shifts the following slots
 * back instead of leaving tombstones, and allocates nothing, so the
 * monitor thread may remove (mrcache.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "mrcache.h"

static size_t slot_of(const struct mrc_owners *o, const struct ibv_mr *mr)
{
	return (size_t)(((uintptr_t)mr >> 4) * 0x9e3779b97f4a7c15ULL) &
	       (o->cap - 1);
}

static void place(struct mrc_owners *o, struct mrc_entry *e)
{
	size_t i = slot_of(o, e->mr);

	while (o->slots[i])
		i = (i + 1) & (o->cap - 1);
	o->slots[i] = e;
}

/* The old table is freed after the cache's lock is released. */
static int grow(struct mrc_owners *o, struct mrc_garbage *garbage)
{
	struct mrc_owners bigger = {.cap = o->cap ? o->cap * 2 : 64};
	size_t i;

	if (garbage->count == sizeof(garbage->blocks) / sizeof(void *))
		return -ENOMEM;
	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (i = 0; i < o->cap; i++)
		if (o->slots[i])
			place(&bigger, o->slots[i]);
	bigger.count = o->count;
	if (o->slots)
		garbage->blocks[garbage->count++] = o->slots;
	*o = bigger;
	return 0;
}

int mrc_owners_add(struct mrc_owners *o, struct mrc_entry *e,
		   struct mrc_garbage *garbage)
{
	if (2 * (o->count + 1) > o->cap && grow(o, garbage))
		return -ENOMEM;
	place(o, e);
	o->count++;
	return 0;
}

struct mrc_entry *mrc_owners_find(const struct mrc_owners *o,
				  const struct ibv_mr *mr)
{
	size_t i;

	if (!o->cap)
		return NULL;
	for (i = slot_of(o, mr); o->slots[i]; i = (i + 1) & (o->cap - 1))
		if (o->slots[i]->mr == mr)
			return o->slots[i];
	return NULL;
}

/* Move back every entry of the run after @hole that may fill it. */
static void close_hole(struct mrc_owners *o, size_t hole)
{
	size_t i = hole, home;

	for (;;) {
		i = (i + 1) & (o->cap - 1);
		if (!o->slots[i])
			return;
		home = slot_of(o, o->slots[i]->mr);
		/* Stays when its home lies cyclically in (hole, i]. */
		if (hole <= i ? (hole < home && home <= i)
			      : (hole < home || home <= i))
			continue;
		o->slots[hole] = o->slots[i];
		o->slots[i] = NULL;
		hole = i;
	}
}

void mrc_owners_remove(struct mrc_owners *o, const struct mrc_entry *e)
{
	size_t i;

	if (!o->cap)
		return;
	for (i = slot_of(o, e->mr); o->slots[i]; i = (i + 1) & (o->cap - 1))
		if (o->slots[i] == e) {
			o->slots[i] = NULL;
			o->count--;
			close_hole(o, i);
			return;
		}
}

void mrc_owners_free(struct mrc_owners *o)
{
	free(o->slots);
	o->slots = NULL;
	o->cap = o->count = 0;
}
