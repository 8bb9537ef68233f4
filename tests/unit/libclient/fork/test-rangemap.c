/* SPDX-License-Identifier: MIT */
/*
 * Unit test of libclient/fork/rangemap.c: the ordered map of page ranges keeps
 * its order, back links and index through inserts, removals, seeks at a
 * granule's edge, trims and reuse of a kept granule.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fork.h"

#define PG ((uintptr_t)1 << RANGEMAP_SLOT_SHIFT)
#define GRANULE_PAGES (1u << (RANGEMAP_GRANULE_SHIFT - RANGEMAP_SLOT_SHIFT))

static void insert_at(struct rangemap *map, uintptr_t start)
{
	struct rangemap_cursor c;
	struct rangemap_node *n = rangemap_node_new();

	n->start = start;
	n->end = start + PG;
	CHECK(rangemap_reserve(map, start) == 0);
	rangemap_seek(map, &c, start);
	rangemap_cursor_insert(&c, n);
}

/* Every granule's nodes in ascending order, each linked back to the one
 * before, all in that granule: their number, or 0 when a link is wrong. */
static unsigned int walk_ok(struct rangemap *map)
{
	struct rangemap_cursor c;
	struct rangemap_node *n, *before;
	unsigned int count = 0;

	for (size_t i = 0; i < map->cap; i++) {
		if (!rangemap_seek_entry(map, &c, i))
			continue;
		before = NULL;
		for (n = rangemap_cursor_next(&c); n; n = rangemap_next(n)) {
			if (n->prev != before ||
			    (before && (n->start <= before->start ||
					(n->start ^ before->start) >>
						RANGEMAP_GRANULE_SHIFT)))
				return 0;
			before = n;
			count++;
		}
	}
	return count;
}

/* Seeking an odd page lands between its even neighbours, but never
 * across a granule's edge. */
static void check_seek(struct rangemap *map, uintptr_t page)
{
	struct rangemap_cursor c;
	struct rangemap_node *next;

	rangemap_seek(map, &c, page * PG);
	CHECK(rangemap_cursor_prev(&c)->start == (page - 1) * PG);
	next = rangemap_cursor_next(&c);
	if ((page + 1) % GRANULE_PAGES == 0) {
		CHECK(!next);
		return;
	}
	CHECK(next->start == (page + 1) * PG);
	/* The search leaves its node as the hint, for that key only. */
	CHECK(rangemap_hint(map, (page + 1) * PG) == next);
	CHECK(!rangemap_hint(map, (page - 1) * PG));
}

static void test_rangemap(void)
{
	struct rangemap map;
	struct rangemap_cursor c;
	struct rangemap_node *n;
	unsigned int seed = 7;
	size_t live;

	CHECK(rangemap_init(&map) == 0);
	/* Distinct even pages over 10 granules in a scrambled order (the
	 * multiplier is prime to 5000, so i -> i * k % 5000 permutes). */
	for (uint64_t i = 0; i < 5000; i++)
		insert_at(&map,
			  (2 + 2 * (uintptr_t)(i * 2654435761u % 5000)) * PG);
	CHECK(map.count == 5000 && map.live == 10);
	CHECK(walk_ok(&map) == 5000);
	for (int i = 0; i < 200; i++)
		check_seek(&map, 3 + 2 * (rand_r(&seed) % 4998));
	check_seek(&map, GRANULE_PAGES - 1);
	/* Remove the pages that are multiples of 4 through walking
	 * cursors. */
	for (size_t i = 0; i < map.cap; i++) {
		if (!rangemap_seek_entry(&map, &c, i))
			continue;
		while ((n = rangemap_cursor_next(&c))) {
			if (n->start / PG % 4 == 0)
				rangemap_cursor_remove_next(&c);
			else
				rangemap_cursor_advance(&c, n);
		}
	}
	CHECK(map.count == 2500 && walk_ok(&map) == 2500);
	/* 2 stays, 4 went; 6 is next after 4: removing it forgets the hint. */
	rangemap_seek(&map, &c, 4 * PG);
	CHECK(rangemap_cursor_prev(&c)->start == 2 * PG);
	CHECK(rangemap_cursor_next(&c)->start == 6 * PG);
	rangemap_cursor_remove_next(&c);
	CHECK(!rangemap_hint(&map, 6 * PG));
	insert_at(&map, 6 * PG);
	CHECK(walk_ok(&map) == 2500);
	/* Emptied granules are freed only when trimmed. */
	live = map.live;
	rangemap_seek(&map, &c, 0);
	while (rangemap_cursor_next(&c))
		rangemap_cursor_remove_next(&c);
	CHECK(map.live == live && map.count == 2500 - GRANULE_PAGES / 4);
	rangemap_trim(&map, PG);
	CHECK(map.live == live - 1);
	rangemap_seek(&map, &c, 2 * PG);
	CHECK(!rangemap_cursor_prev(&c) && !rangemap_cursor_next(&c));
	/* Reserving index space changes no contents; trimming gives it back. */
	CHECK(rangemap_reserve(&map, ((uintptr_t)1 << 40)) == 0);
	CHECK(map.live == live && map.count == 2500 - GRANULE_PAGES / 4);
	rangemap_trim_all(&map);
	CHECK(map.live == live - 1 && walk_ok(&map) == map.count);
	/* A granule kept for reuse comes back empty. */
	insert_at(&map, (uintptr_t)1 << 40);
	rangemap_seek(&map, &c, ((uintptr_t)1 << 40) + PG);
	CHECK(rangemap_cursor_prev(&c)->start == (uintptr_t)1 << 40);
	CHECK(!rangemap_cursor_next(&c) && walk_ok(&map) == map.count);
	CHECK(map.live == live);
	rangemap_clear(&map);
	CHECK(map.count == 0 && map.live == 0);
}

int main(void)
{
	test_rangemap();
	if (failures)
		fprintf(stderr, "%u checks failed\n", failures);
	else
		printf("test-rangemap: all passed\n");
	return failures ? 1 : 0;
}
