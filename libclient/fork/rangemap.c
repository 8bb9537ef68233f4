/* SPDX-License-Identifier: MIT */
/*
 * An ordered map of disjoint page ranges, each carrying how many
 * registrations hold its pages.  The address space is cut into 4 MiB
 * granules that no range crosses (the tracker cuts registrations there);
 * a granule holding ranges has a direct index of their starts, one slot a
 * 4 KiB page, with a bit per slot to find the range before an address in
 * a few words, and a list of its ranges in address order.  A search thus
 * costs a hash probe, a bit scan and one slot, whatever the number of
 * ranges: with 20,000 live ranges and caches emptied by the kernel's own
 * VMA work between two calls, a skip list paid a dozen dependent cache
 * misses where this pays two or three.
 *
 * The caller locks, and takes nodes and index space (rangemap_reserve())
 * before changing anything, so that applying a change can never fail
 * half-way; empty granules are freed only when the caller says so
 * (rangemap_trim()), never in the middle of a walk.
 */
#include <errno.h>
#include <stdlib.h>

#include "fork.h"

#define GRANULE_SLOTS (RANGEMAP_CHUNKS * RANGEMAP_CHUNK_SLOTS)

/* An entry whose granule was freed: probes go on past it. */
static struct rangemap_granule gone;

static uintptr_t number_of(uintptr_t addr)
{
	return addr >> RANGEMAP_GRANULE_SHIFT;
}

static unsigned int slot_of(uintptr_t addr)
{
	return (unsigned int)(addr >> RANGEMAP_SLOT_SHIFT) % GRANULE_SLOTS;
}

static size_t hash(uintptr_t number, size_t cap)
{
	return (size_t)((number * UINT64_C(0x9e3779b97f4a7c15)) >> 32) &
	       (cap - 1);
}

/* The table entry of granule @number, or NULL. */
static struct rangemap_entry *find_entry(const struct rangemap *map,
					 uintptr_t number)
{
	for (size_t i = map->cap ? hash(number, map->cap) : 0; map->cap;
	     i = (i + 1) & (map->cap - 1)) {
		struct rangemap_entry *e = &map->table[i];

		if (!e->granule)
			return NULL;
		if (e->granule != &gone && e->number == number)
			return e;
	}
	return NULL;
}

static struct rangemap_granule *find_granule(const struct rangemap *map,
					     uintptr_t addr)
{
	struct rangemap_entry *e = find_entry(map, number_of(addr));

	return e ? e->granule : NULL;
}

int rangemap_init(struct rangemap *map)
{
	*map = (struct rangemap){0};
	return 0;
}

struct rangemap_node *rangemap_node_new(void)
{
	return calloc(1, sizeof(struct rangemap_node));
}

/* ---- the table of granules ----------------------------------------------- */

static void place(struct rangemap_entry *table, size_t cap, uintptr_t number,
		  struct rangemap_granule *g)
{
	size_t i = hash(number, cap);

	while (table[i].granule)
		i = (i + 1) & (cap - 1);
	table[i] = (struct rangemap_entry){number, g};
}

/* Room for one more entry, at most 3/4 full counting freed entries. */
static int make_room(struct rangemap *map)
{
	struct rangemap_entry *table;
	size_t cap = 8;

	if ((map->used + 1) * 4 <= map->cap * 3)
		return 0;
	while ((map->live + 1) * 2 > cap)
		cap *= 2;
	table = calloc(cap, sizeof(*table));
	if (!table)
		return -ENOMEM;
	for (size_t i = 0; i < map->cap; i++)
		if (map->table[i].granule && map->table[i].granule != &gone)
			place(table, cap, map->table[i].number,
			      map->table[i].granule);
	free(map->table);
	map->table = table;
	map->cap = cap;
	map->used = map->live;
	return 0;
}

static struct rangemap_granule *add_granule(struct rangemap *map,
					    uintptr_t addr)
{
	struct rangemap_granule *g;

	if (make_room(map) < 0)
		return NULL;
	g = map->spare;
	if (g) {
		map->spare = g->spare_next;
		map->spares--;
	} else {
		g = calloc(1, sizeof(*g));
	}
	if (!g)
		return NULL;
	place(map->table, map->cap, number_of(addr), g);
	map->used++;
	map->live++;
	return g;
}

int rangemap_reserve(struct rangemap *map, uintptr_t addr)
{
	struct rangemap_granule *g = find_granule(map, addr);
	unsigned int ci = slot_of(addr) / RANGEMAP_CHUNK_SLOTS;

	if (!g)
		g = add_granule(map, addr);
	if (!g)
		return -ENOMEM;
	if (!g->chunk[ci])
		g->chunk[ci] = calloc(1, sizeof(*g->chunk[ci]));
	return g->chunk[ci] ? 0 : -ENOMEM;
}

static void free_granule(struct rangemap_granule *g)
{
	for (unsigned int i = 0; i < RANGEMAP_CHUNKS; i++)
		free(g->chunk[i]);
	free(g);
}

#define SPARE_GRANULES 4

/* Take an empty granule out of the table: kept for reuse (its chunks are
 * empty already) or freed. */
static void retire(struct rangemap *map, struct rangemap_entry *e)
{
	struct rangemap_granule *g = e->granule;

	if (map->spares < SPARE_GRANULES) {
		g->spare_next = map->spare;
		map->spare = g;
		map->spares++;
	} else {
		free_granule(g);
	}
	e->granule = &gone;
	map->live--;
}

void rangemap_trim(struct rangemap *map, uintptr_t addr)
{
	struct rangemap_entry *e = find_entry(map, number_of(addr));

	if (e && !e->granule->count)
		retire(map, e);
}

void rangemap_trim_all(struct rangemap *map)
{
	for (size_t i = 0; i < map->cap; i++) {
		struct rangemap_entry *e = &map->table[i];

		if (e->granule && e->granule != &gone && !e->granule->count)
			retire(map, e);
	}
}

void rangemap_clear(struct rangemap *map)
{
	struct rangemap_cursor c;

	for (size_t i = 0; i < map->cap; i++) {
		if (!rangemap_seek_entry(map, &c, i))
			continue;
		while (rangemap_cursor_next(&c))
			rangemap_cursor_remove_next(&c);
		free_granule(c.granule);
	}
	while (map->spare) {
		struct rangemap_granule *g = map->spare;

		map->spare = g->spare_next;
		free_granule(g);
	}
	free(map->table);
	rangemap_init(map);
}

/* ---- searching ----------------------------------------------------------- */

static struct rangemap_node *highest(const struct rangemap_chunk *ch,
				     uint64_t bits)
{
	return ch->slot[63 - __builtin_clzll(bits)];
}

static struct rangemap_node *lowest(const struct rangemap_chunk *ch,
				    uint64_t bits, unsigned int *ret_slot)
{
	*ret_slot = (unsigned int)__builtin_ctzll(bits);
	return ch->slot[*ret_slot];
}

/* The last node of @g starting in a slot below @s, or NULL. */
static struct rangemap_node *last_before(const struct rangemap_granule *g,
					 unsigned int s)
{
	int ci = (int)(s / RANGEMAP_CHUNK_SLOTS);
	const struct rangemap_chunk *ch = g->chunk[ci];
	uint64_t below = (UINT64_C(1) << (s % RANGEMAP_CHUNK_SLOTS)) - 1;

	if (ch && (ch->bits & below))
		return highest(ch, ch->bits & below);
	while (--ci >= 0) {
		ch = g->chunk[ci];
		if (ch && ch->bits)
			return highest(ch, ch->bits);
	}
	return NULL;
}

/* The first node of @g starting in slot @s or above, or NULL; its slot in
 * @ret_slot. */
static struct rangemap_node *first_from(const struct rangemap_granule *g,
					unsigned int s, unsigned int *ret_slot)
{
	uint64_t from = ~((UINT64_C(1) << (s % RANGEMAP_CHUNK_SLOTS)) - 1);

	for (unsigned int ci = s / RANGEMAP_CHUNK_SLOTS; ci < RANGEMAP_CHUNKS;
	     ci++) {
		const struct rangemap_chunk *ch = g->chunk[ci];
		uint64_t bits = ch ? ch->bits & from : 0;
		struct rangemap_node *n;
		unsigned int bit;

		from = ~UINT64_C(0);
		if (!bits)
			continue;
		n = lowest(ch, bits, &bit);
		*ret_slot = ci * RANGEMAP_CHUNK_SLOTS + bit;
		return n;
	}
	return NULL;
}

/* Both neighbours come from the index, so that their loads (likely cache
 * misses) overlap instead of one waiting for the other's link. */
void rangemap_seek(struct rangemap *map, struct rangemap_cursor *c,
		   uintptr_t key)
{
	unsigned int s = slot_of(key), at;

	c->map = map;
	c->granule = find_granule(map, key);
	c->prev = NULL;
	c->next = NULL;
	if (!c->granule || !c->granule->count)
		return;
	c->prev = last_before(c->granule, s);
	c->next = first_from(c->granule, s, &at);
	if (c->next) {
		map->hint = c->next;
		map->hint_start =
			(key &
			 ~(((uintptr_t)1 << RANGEMAP_GRANULE_SHIFT) - 1)) +
			((uintptr_t)at << RANGEMAP_SLOT_SHIFT);
	}
}

bool rangemap_seek_entry(struct rangemap *map, struct rangemap_cursor *c,
			 size_t i)
{
	struct rangemap_granule *g = map->table[i].granule;

	if (!g || g == &gone)
		return false;
	c->map = map;
	c->granule = g;
	c->prev = NULL;
	c->next = g->first;
	return true;
}

/* ---- changing ------------------------------------------------------------ */

static struct rangemap_node **slot_ref(struct rangemap_granule *g,
				       uintptr_t start, uint64_t *ret_bit,
				       uint64_t **ret_bits)
{
	unsigned int s = slot_of(start);
	struct rangemap_chunk *ch = g->chunk[s / RANGEMAP_CHUNK_SLOTS];

	*ret_bit = UINT64_C(1) << (s % RANGEMAP_CHUNK_SLOTS);
	*ret_bits = &ch->bits;
	return &ch->slot[s % RANGEMAP_CHUNK_SLOTS];
}

void rangemap_cursor_insert(struct rangemap_cursor *c,
			    struct rangemap_node *node)
{
	struct rangemap_node **slot;
	uint64_t bit, *bits;

	if (!c->granule)
		c->granule = find_granule(c->map, node->start);
	slot = slot_ref(c->granule, node->start, &bit, &bits);
	*slot = node;
	*bits |= bit;
	node->prev = c->prev;
	node->next = c->next;
	if (node->next)
		node->next->prev = node;
	if (c->prev)
		c->prev->next = node;
	else
		c->granule->first = node;
	c->next = node;
	c->granule->count++;
	c->map->count++;
}

void rangemap_cursor_remove_next(struct rangemap_cursor *c)
{
	struct rangemap_node *node = rangemap_cursor_next(c);
	uint64_t bit, *bits;

	slot_ref(c->granule, node->start, &bit, &bits);
	*bits &= ~bit;
	if (node->next)
		node->next->prev = node->prev;
	if (c->prev)
		c->prev->next = node->next;
	else
		c->granule->first = node->next;
	c->next = node->next;
	if (c->map->hint == node)
		c->map->hint = NULL;
	c->granule->count--;
	c->map->count--;
	free(node);
}
