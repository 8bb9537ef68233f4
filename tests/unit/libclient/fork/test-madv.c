/* SPDX-License-Identifier: MIT */
/*
 * Unit test of libclient/fork/madv.c: runs of pages to madvise merge only when
 * adjacent and of one kind.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fork.h"

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

int main(void)
{
	test_runs();
	if (failures)
		fprintf(stderr, "%u checks failed\n", failures);
	else
		printf("test-madv: all passed\n");
	return failures ? 1 : 0;
}
