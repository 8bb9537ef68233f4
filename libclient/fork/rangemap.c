/* SPDX-License-Identifier: MIT */
/*
 * An ordered map of disjoint page ranges, as a skip list: lookups,
 * insertions and removals cost O(log n) expected, so 20,000 live ranges
 * cost little more than 20.  Each node carries how many registrations hold
 * its pages.  The caller locks; nodes are allocated by the caller ahead of
 * time so that applying a change can never fail half-way.
 */
#include <errno.h>
#include <stdlib.h>

#include "fork.h"

/* Each level holds a quarter of the one below, so RANGEMAP_MAX_LEVEL
 * levels serve up to 4^14 (about 268 million) nodes. */
static unsigned int random_level(void)
{
	static __thread uint32_t state;
	unsigned int level = 1;
	uint32_t x;

	if (!state)
		state = (uint32_t)(uintptr_t)&state | 1;
	x = state;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	state = x;
	while (level < RANGEMAP_MAX_LEVEL && (x & 3) == 0) {
		level++;
		x >>= 2;
	}
	return level;
}

static struct rangemap_node *node_alloc(unsigned int level)
{
	struct rangemap_node *node;

	node = calloc(1, sizeof(*node) + level * sizeof(node->next[0]));
	if (node)
		node->level = level;
	return node;
}

struct rangemap_node *rangemap_node_new(void)
{
	return node_alloc(random_level());
}

int rangemap_init(struct rangemap *map)
{
	if (map->head)
		return 0;
	map->head = node_alloc(RANGEMAP_MAX_LEVEL);
	if (!map->head)
		return -ENOMEM;
	map->count = 0;
	return 0;
}

/* Fill @update with, per level, the last node starting below @key. */
static void find_before(const struct rangemap *map, uintptr_t key,
			struct rangemap_node **update)
{
	struct rangemap_node *x = map->head;

	for (int i = RANGEMAP_MAX_LEVEL - 1; i >= 0; i--) {
		while (x->next[i] && x->next[i]->start < key)
			x = x->next[i];
		update[i] = x;
	}
}

struct rangemap_node *rangemap_lookup(const struct rangemap *map,
				      uintptr_t addr)
{
	struct rangemap_node *update[RANGEMAP_MAX_LEVEL];
	struct rangemap_node *prev;

	/* The node holding @addr is the last one starting at or below it. */
	find_before(map, addr + 1, update);
	prev = update[0];
	if (prev != map->head && prev->end > addr)
		return prev;
	return prev->next[0];
}

struct rangemap_node *rangemap_ending_at(const struct rangemap *map,
					 uintptr_t addr)
{
	struct rangemap_node *update[RANGEMAP_MAX_LEVEL];

	find_before(map, addr, update);
	if (update[0] != map->head && update[0]->end == addr)
		return update[0];
	return NULL;
}

void rangemap_insert(struct rangemap *map, struct rangemap_node *node)
{
	struct rangemap_node *update[RANGEMAP_MAX_LEVEL];

	find_before(map, node->start, update);
	for (unsigned int i = 0; i < node->level; i++) {
		node->next[i] = update[i]->next[i];
		update[i]->next[i] = node;
	}
	map->count++;
}

void rangemap_remove(struct rangemap *map, struct rangemap_node *node)
{
	struct rangemap_node *update[RANGEMAP_MAX_LEVEL];

	find_before(map, node->start, update);
	for (unsigned int i = 0; i < node->level; i++) {
		if (update[i]->next[i] == node)
			update[i]->next[i] = node->next[i];
	}
	map->count--;
	free(node);
}
