/* SPDX-License-Identifier: MIT */
/*
 * Unit test of libclient/fork/tracker.c: counts, coalescing and deferral as a
 * user reads them in the stats, the exact paths, an unaligned re-mark and a
 * re-mark of unmapped memory.  The real fork() behaviour is test-fork's job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fork.h"

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

	CHECK(tracker_mark(a + pg / 2, pg, NULL) == 0);
	CHECK(tracker_release(a + pg / 2, pg) == 0);
	CHECK(tracker_mark(a + pg / 2, pg, NULL) == 0);
	CHECK(tracker_release(a + pg / 2, pg) == 0);
	s = stats();
	CHECK(s.unaligned_bytes - s0.unaligned_bytes == 2 * pg);
	CHECK(s.madvise_calls - s0.madvise_calls == 2);
	CHECK(tracker_mark(gone, 2 * pg, NULL) == 0);
	CHECK(tracker_release(gone, 2 * pg) == 0);
	CHECK(munmap(gone, 2 * pg) == 0);
	s0 = stats();
	CHECK(tracker_mark(gone, 2 * pg, NULL) == -ENOMEM);
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

		CHECK((steps[i].op > 0 ? tracker_mark(base, len, NULL)
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
	CHECK(tracker_mark((void *)(UINTPTR_MAX - pg), 2 * pg, NULL) ==
	      -EINVAL);
	CHECK(tracker_mark(NULL, pg, NULL) == 0 &&
	      tracker_mark(a, 0, NULL) == 0);
	munmap(a, 16 * pg);
}

int main(void)
{
	test_tracker();
	if (failures)
		fprintf(stderr, "%u checks failed\n", failures);
	else
		printf("test-tracker: all passed\n");
	return failures ? 1 : 0;
}
