/* SPDX-License-Identifier: MIT */
/*
 * Table-driven checks of the fork tracker's modules, linked from the
 * static library: policy.c (what each environment variable means),
 * madv.c (runs merge only when adjacent and of one kind), rangemap.c
 * (the cursor keeps order through inserts and removals) and tracker.c
 * (counts, coalescing and deferral as a user reads them in the stats).
 * The real fork() behaviour is test-fork's job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fork.h"

static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			failures++;                                            \
		}                                                              \
	} while (0)

/* ---- policy -------------------------------------------------------------- */

static const struct {
	const char *env[3];
	bool fork_safe, hugepages_safe, defer;
	enum policy_unaligned unaligned;
	enum policy_remark remark;
	int copy_on_fork;
} policy_cases[] = {
	{{NULL},
	 false,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"RDMAV_FORK_SAFE="},
	 true,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"IBV_FORK_SAFE=0"},
	 true,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"RDMAV_HUGEPAGES_SAFE=no"},
	 false,
	 true,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"RDMAD_FORK_UNALIGNED=strict", "RDMAD_FORK_DEFER=0"},
	 false,
	 false,
	 false,
	 POLICY_UNALIGNED_STRICT,
	 POLICY_REMARK_REGISTER,
	 -1},
	{{"RDMAD_FORK_UNALIGNED=bogus", "RDMAD_FORK_REMARK=fork"},
	 false,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_FORK,
	 -1},
	{{"RDMAD_FORK_COPY_ON_FORK=1"},
	 false,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 1},
	{{"RDMAD_FORK_COPY_ON_FORK=0"},
	 false,
	 false,
	 true,
	 POLICY_UNALIGNED_ROUND,
	 POLICY_REMARK_REGISTER,
	 0},
};

static void clear_env(void)
{
	static const char *const names[] = {
		"RDMAV_FORK_SAFE",	   "IBV_FORK_SAFE",
		"RDMAV_HUGEPAGES_SAFE",	   "RDMAD_FORK_UNALIGNED",
		"RDMAD_FORK_DEFER",	   "RDMAD_FORK_REMARK",
		"RDMAD_FORK_COPY_ON_FORK",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

static void test_policy(void)
{
	for (size_t i = 0; i < sizeof(policy_cases) / sizeof(policy_cases[0]);
	     i++) {
		struct policy p;

		clear_env();
		for (int k = 0; k < 3 && policy_cases[i].env[k]; k++)
			putenv((char *)policy_cases[i].env[k]);
		policy_read(&p);
		CHECK(p.fork_safe == policy_cases[i].fork_safe);
		CHECK(p.hugepages_safe == policy_cases[i].hugepages_safe);
		CHECK(p.defer == policy_cases[i].defer);
		CHECK(p.unaligned == policy_cases[i].unaligned);
		CHECK(p.remark == policy_cases[i].remark);
		CHECK(p.copy_on_fork == policy_cases[i].copy_on_fork);
	}
	clear_env();
}

/* ---- madv runs ----------------------------------------------------------- */

static void test_runs(void)
{
	static const struct {
		uintptr_t start, end;
		enum madv_kind kind;
		size_t runs_after;
	} steps[] = {
		{0x1000, 0x2000, MADV_KIND_FRESH, 1},
		{0x2000, 0x3000, MADV_KIND_FRESH, 1},  /* adjacent: merged */
		{0x3000, 0x4000, MADV_KIND_REMARK, 2}, /* other kind */
		{0x5000, 0x6000, MADV_KIND_REMARK, 3}, /* gap */
		{0x6000, 0x7000, MADV_KIND_REMARK, 3},
		{0x8000, 0x9000, MADV_KIND_FRESH, 4},
		{0xa000, 0xb000, MADV_KIND_FRESH, 5}, /* beyond inline */
		{0xc000, 0xd000, MADV_KIND_FRESH, 6},
	};
	struct madv_runs runs;

	madv_runs_init(&runs);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		CHECK(madv_runs_add(&runs, steps[i].start, steps[i].end,
				    steps[i].kind) == 0);
		CHECK(runs.n == steps[i].runs_after);
	}
	CHECK(runs.v[0].start == 0x1000 && runs.v[0].end == 0x3000);
	CHECK(runs.v[2].start == 0x5000 && runs.v[2].end == 0x7000);
	madv_runs_free(&runs);
	CHECK(runs.n == 0);
}

/* ---- rangemap ----------------------------------------------------------- */

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

/* ---- tracker bookkeeping ------------------------------------------------- */

static struct tracker_stats stats(void)
{
	struct tracker_stats s;

	tracker_get_stats(&s);
	return s;
}

/* Registering exactly a deferred range again: an unaligned one counts its
 * edges again, as a fresh one does; one whose memory is gone fails and
 * stays deferred. */
static void test_tracker_edges(char *a, size_t pg)
{
	struct tracker_stats s0 = stats(), s;
	char *gone = a + 12 * pg;

	CHECK(tracker_mark(a + pg / 2, pg) == 0);
	CHECK(tracker_release(a + pg / 2, pg) == 0);
	CHECK(tracker_mark(a + pg / 2, pg) == 0);
	CHECK(tracker_release(a + pg / 2, pg) == 0);
	s = stats();
	CHECK(s.unaligned_bytes - s0.unaligned_bytes == 2 * pg);
	CHECK(s.madvise_calls - s0.madvise_calls == 2);
	CHECK(tracker_mark(gone, 2 * pg) == 0);
	CHECK(tracker_release(gone, 2 * pg) == 0);
	CHECK(munmap(gone, 2 * pg) == 0);
	s0 = stats();
	CHECK(tracker_mark(gone, 2 * pg) == -ENOMEM);
	s = stats();
	CHECK(s.ranges == s0.ranges && s.deferred_ranges == s0.deferred_ranges);
	CHECK(s.madvise_calls == s0.madvise_calls + 1);
	tracker_flush();
	CHECK(stats().pages_marked == 0 && stats().deferred_ranges == 0);
}

static void test_tracker(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct policy p = {.defer = true, .copy_on_fork = -1};
	char *a = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static const struct {
		int op; /* 1 mark, -1 release */
		size_t first, pages;
		uint64_t ranges, pages_marked, deferred, calls, saved;
	} steps[] = {
		{1, 0, 2, 1, 2, 0, 1, 0},
		{1, 2, 2, 2, 4, 0, 2, 0},  /* adjacent: one node */
		{1, 1, 2, 3, 4, 0, 2, 0},  /* inside: no syscall */
		{-1, 1, 2, 2, 4, 0, 2, 0}, /* counts stay above 0 */
		{-1, 0, 2, 1, 4, 1, 2, 1}, /* 0-1 deferred */
		{-1, 2, 2, 0, 4, 1, 2, 2}, /* merged with 0-1 */
		{1, 0, 4, 1, 4, 0, 3, 2},  /* re-mark, one call */
		{-1, 0, 4, 0, 4, 1, 3, 3},
		{1, 8, 1, 1, 5, 1, 4, 3},
		{-1, 8, 1, 0, 5, 2, 4, 4},
		{1, 8, 1, 1, 5, 1, 5, 4},  /* exactly a deferred one */
		{1, 9, 1, 2, 6, 1, 6, 4},  /* fresh, joins 8 (both held) */
		{-1, 8, 1, 1, 6, 2, 6, 5}, /* part of a node: split */
		{-1, 9, 1, 0, 6, 2, 6, 6}, /* exact, rejoins 8: 8-9 */
		{1, 8, 2, 1, 6, 1, 7, 6},  /* exactly the joined one */
		{-1, 8, 2, 0, 6, 2, 7, 7},
	};

	CHECK(a != MAP_FAILED);
	CHECK(tracker_init(&p) == 0);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char *base = a + steps[i].first * pg;
		size_t len = steps[i].pages * pg;
		struct tracker_stats s;

		CHECK((steps[i].op > 0 ? tracker_mark(base, len)
				       : tracker_release(base, len)) == 0);
		s = stats();
		if (s.ranges != steps[i].ranges ||
		    s.pages_marked != steps[i].pages_marked ||
		    s.deferred_ranges != steps[i].deferred ||
		    s.madvise_calls != steps[i].calls ||
		    s.madvise_saved != steps[i].saved) {
			fprintf(stderr,
				"step %zu: ranges %llu pages %llu deferred "
				"%llu calls %llu saved %llu\n",
				i, (unsigned long long)s.ranges,
				(unsigned long long)s.pages_marked,
				(unsigned long long)s.deferred_ranges,
				(unsigned long long)s.madvise_calls,
				(unsigned long long)s.madvise_saved);
			failures++;
		}
	}
	tracker_flush();
	CHECK(stats().pages_marked == 0 && stats().deferred_ranges == 0);
	CHECK(stats().madvise_calls == 9); /* one DOFORK per deferred run */
	test_tracker_edges(a, pg);
	/* Bad ranges. */
	CHECK(tracker_mark((void *)(UINTPTR_MAX - pg), 2 * pg) == -EINVAL);
	CHECK(tracker_mark(NULL, pg) == 0 && tracker_mark(a, 0) == 0);
	munmap(a, 16 * pg);
}

int main(void)
{
	test_policy();
	test_runs();
	test_rangemap();
	test_tracker();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures ? 1 : 0;
}
