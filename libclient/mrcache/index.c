/* SPDX-License-Identifier: MIT */
/*
 * The entries of one cache, sorted by start in two parallel arrays: the
 * starts alone, which a search reads, and the entries.  Entries never
 * overlap (cache.c merges or bypasses), so those overlapping a range are
 * consecutive and the one that may cover an address is the last starting
 * at or below it.  A sorted array, not a tree: a hit is a binary search
 * over 8-byte keys that stay in cache, and an insertion's memmove of
 * 10,000 pointers costs less than the registration it follows.
 * mrc_index_remove() moves memory and nothing else, so the monitor thread
 * may call it (mrcache.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mrcache.h"

void mrc_index_free(struct mrc_index *index)
{
	free(index->starts);
	free(index->entries);
	memset(index, 0, sizeof(*index));
}

static void *grown(void *old, size_t used, size_t size,
		   struct mrc_garbage *garbage)
{
	void *p = malloc(size);

	if (p && used)
		memcpy(p, old, used);
	if (p && old)
		garbage->blocks[garbage->count++] = old;
	return p;
}

/* Not realloc(): it would free the old arrays under the cache's lock. */
int mrc_index_reserve(struct mrc_index *index, size_t n,
		      struct mrc_garbage *garbage)
{
	size_t cap = index->cap ? index->cap : 16;
	uintptr_t *starts;
	struct mrc_entry **entries;

	while (cap < index->count + n)
		cap *= 2;
	if (cap == index->cap)
		return 0;
	if (garbage->count + 2 > sizeof(garbage->blocks) / sizeof(void *))
		return -ENOMEM;
	starts = grown(index->starts, index->count * sizeof(*starts),
		       cap * sizeof(*starts), garbage);
	if (!starts)
		return -ENOMEM;
	index->starts = starts;
	entries = grown(index->entries, index->count * sizeof(*entries),
			cap * sizeof(*entries), garbage);
	if (!entries)
		return -ENOMEM;
	index->entries = entries;
	index->cap = cap;
	return 0;
}

/* Number of entries starting at or below @addr.  Without a branch on
 * the comparison (the compiler makes it a conditional move): a hit's
 * search among random entries would otherwise mispredict at every level. */
static size_t upper_bound(const struct mrc_index *index, uintptr_t addr)
{
	const uintptr_t *base = index->starts;
	size_t n = index->count, half;

	if (n == 0)
		return 0;
	while (n > 1) {
		half = n / 2;
		base = base[half] <= addr ? base + half : base;
		n -= half;
	}
	return (size_t)(base - index->starts) + (*base <= addr);
}

static bool covers(const struct mrc_entry *e, uintptr_t start, uintptr_t end)
{
	return e->start <= start && end <= e->end;
}

struct mrc_entry *mrc_index_covering(struct mrc_index *index, uintptr_t start,
				     uintptr_t end)
{
	size_t i;

	if (index->hint < index->count &&
	    covers(index->entries[index->hint], start, end))
		return index->entries[index->hint];
	i = upper_bound(index, start);
	if (i == 0 || !covers(index->entries[i - 1], start, end))
		return NULL;
	index->hint = i - 1;
	return index->entries[i - 1];
}

size_t mrc_index_overlapping(const struct mrc_index *index, uintptr_t start,
			     uintptr_t end, size_t *first)
{
	size_t last = upper_bound(index, end - 1), i = last;

	while (i > 0 && index->entries[i - 1]->end > start)
		i--;
	*first = i;
	return last - i;
}

void mrc_index_insert(struct mrc_index *index, struct mrc_entry *entry)
{
	size_t i = upper_bound(index, entry->start);
	size_t tail = index->count - i;

	memmove(index->starts + i + 1, index->starts + i,
		tail * sizeof(*index->starts));
	memmove(index->entries + i + 1, index->entries + i,
		tail * sizeof(*index->entries));
	index->starts[i] = entry->start;
	index->entries[i] = entry;
	index->count++;
	index->hint = i;
}

void mrc_index_remove(struct mrc_index *index, size_t first, size_t n)
{
	size_t tail = index->count - first - n;

	memmove(index->starts + first, index->starts + first + n,
		tail * sizeof(*index->starts));
	memmove(index->entries + first, index->entries + first + n,
		tail * sizeof(*index->entries));
	index->count -= n;
	index->hint = 0;
}

long mrc_index_find(const struct mrc_index *index,
		    const struct mrc_entry *entry)
{
	size_t i = upper_bound(index, entry->start);

	if (i == 0 || index->entries[i - 1] != entry)
		return -1;
	return (long)(i - 1);
}
