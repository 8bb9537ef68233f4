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

/* Each level holds half of the one below (fewest nodes visited per
 * search), so RANGEMAP_MAX_LEVEL levels serve about a million nodes a
 * shard at full speed. */
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
	while (level < RANGEMAP_MAX_LEVEL && (x & 1) == 0) {
		level++;
		x >>= 1;
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
	map->level = 1;
	return 0;
}

/* Fill @update with, per level in use, the last node starting below
 * @key. */
void rangemap_seek(struct rangemap *map, struct rangemap_cursor *c,
		   uintptr_t key)
{
	struct rangemap_node *x = map->head;

	c->map = map;
	c->level = map->level;
	for (int i = (int)map->level - 1; i >= 0; i--) {
		while (x->next[i].node && x->next[i].start < key)
			x = x->next[i].node;
		c->update[i] = x;
	}
	x = x->next[0].node;
	if (x) {
		map->hint = x;
		map->hint_start = x->start;
	}
}

/* Levels from c->level up to @level: the head, see struct
 * rangemap_cursor. */
static void fill_to(struct rangemap_cursor *c, unsigned int level)
{
	for (; c->level < level; c->level++)
		c->update[c->level] = c->map->head;
}

/* Step over @node, the cursor's next: it becomes the last one passed on
 * each of its levels, which keeps update[] right for what follows. */
void rangemap_cursor_advance(struct rangemap_cursor *c,
			     struct rangemap_node *node)
{
	for (unsigned int i = 0; i < node->level; i++)
		c->update[i] = node;
	if (c->level < node->level)
		c->level = node->level;
}

void rangemap_cursor_insert(struct rangemap_cursor *c,
			    struct rangemap_node *node)
{
	fill_to(c, node->level);
	if (node->level > c->map->level)
		c->map->level = node->level;
	for (unsigned int i = 0; i < node->level; i++) {
		node->next[i] = c->update[i]->next[i];
		c->update[i]->next[i].node = node;
		c->update[i]->next[i].start = node->start;
	}
	node->prev = c->update[0] == c->map->head ? NULL : c->update[0];
	if (node->next[0].node)
		node->next[0].node->prev = node;
	c->map->count++;
}

void rangemap_cursor_remove_next(struct rangemap_cursor *c)
{
	struct rangemap_node *node = c->update[0]->next[0].node;

	fill_to(c, node->level);
	for (unsigned int i = 0; i < node->level; i++)
		c->update[i]->next[i] = node->next[i];
	if (node->next[0].node)
		node->next[0].node->prev = node->prev;
	if (c->map->hint == node)
		c->map->hint = NULL;
	c->map->count--;
	free(node);
}
