/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the generation store: whatever was noted before a "crash"
 * (dropping the store without closing it cleanly is the same as reopening
 * the file), the next start is never lower; garbage in the file starts
 * from a clock-based floor, above anything stored; one write per half
 * block, not per generation.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "genstore.h"
#include "check.h"

static char dir[64];

static void write_file(const char *content)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/generation", dir);
	f = fopen(path, "w");
	if (!f || fputs(content, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(99);
	}
}

static uint64_t file_value(void)
{
	char path[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/generation", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static void remove_state(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/generation", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/generation.tmp", dir);
	unlink(path);
}

#define CLOCK 1 /* want_start: the clock's floor */

/* What the file holds before open, and the start open must give. */
static const struct {
	const char *content; /* NULL: no file */
	uint64_t want_start;
} opens[] = {
	{NULL, 0},
	{"", CLOCK},
	{"garbage\n", CLOCK},
	{"12x\n", CLOCK},
	{"-5\n", CLOCK},
	{"99999999999999999999999\n", CLOCK},
	{"5000\n", 5000},
	{"5000", 5000},
	{"18446744073709551615\n", UINT64_MAX},
};

static void test_open(void)
{
	for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
		struct genstore *s = NULL;
		uint64_t start = 42;
		int r;

		remove_state();
		if (opens[i].content)
			write_file(opens[i].content);
		r = genstore_open(dir, &s, &start);
		if (opens[i].want_start == CLOCK) {
			/* 2020-01-01 in microseconds: well past 5000. */
			CHECK(r == 1 && start > 1577836800000000ULL,
			      "garbage \"%s\": r=%d start=%" PRIu64,
			      opens[i].content, r, start);
			genstore_close(s);
			continue;
		}
		CHECK(r == 0 && start == opens[i].want_start,
		      "file \"%s\": r=%d start=%" PRIu64 ", want %" PRIu64,
		      opens[i].content ? opens[i].content : "(none)", r, start,
		      opens[i].want_start);
		CHECK(file_value() > start || start == UINT64_MAX,
		      "file \"%s\": no block reserved (%" PRIu64 ")",
		      opens[i].content ? opens[i].content : "(none)",
		      file_value());
		genstore_close(s);
	}
}

/* Note generations, "crash" at various points, reopen: the start is at
 * least every generation noted before. */
static void test_never_back(void)
{
	static const uint64_t crash_after[] = {0, 1, 1023, 1024, 1025, 5000, 3};
	uint64_t published = 0;
	struct genstore *s;
	uint64_t start;

	remove_state();
	for (size_t i = 0; i < sizeof(crash_after) / sizeof(*crash_after);
	     i++) {
		CHECK(genstore_open(dir, &s, &start) == 0, "open");
		CHECK(start >= published,
		      "restart %zu: start %" PRIu64 " below published %" PRIu64,
		      i, start, published);
		for (uint64_t g = start + 1; g <= start + crash_after[i]; g++) {
			CHECK(genstore_note(s, g) == 0, "note %" PRIu64, g);
			published = g;
		}
		/* kill -9: no close, no final write; just drop it. */
		genstore_close(s);
	}
}

static void test_one_write_per_half_block(void)
{
	struct genstore *s;
	uint64_t start, before;

	remove_state();
	CHECK(genstore_open(dir, &s, &start) == 0 && start == 0, "open");
	before = file_value();
	CHECK(before == 1024, "first ceiling %" PRIu64, before);
	/* The next block is reserved half a block early, so that a failed
	 * write is retried while there is headroom. */
	for (uint64_t g = 1; g < 512; g++)
		genstore_note(s, g);
	CHECK(file_value() == before, "rewrote too early: %" PRIu64,
	      file_value());
	CHECK(genstore_note(s, 512) == 0 && file_value() == 1536,
	      "reserve ahead %" PRIu64, file_value());
	for (uint64_t g = 513; g < 1024; g++)
		genstore_note(s, g);
	CHECK(file_value() == 1536, "rewrote within half a block: %" PRIu64,
	      file_value());
	CHECK(genstore_note(s, 1024) == 0 && file_value() == 2048,
	      "next block %" PRIu64, file_value());
	/* A jump far ahead reserves past it. */
	CHECK(genstore_note(s, 100000) == 0 && file_value() > 100000,
	      "jump %" PRIu64, file_value());
	genstore_close(s);
}

/* The state path is a file, not a directory: an error, not a crash. */
static void test_not_a_directory(void)
{
	struct genstore *s;
	uint64_t start;
	char path[128];

	write_file("7\n");
	snprintf(path, sizeof(path), "%s/generation", dir);
	CHECK(genstore_open(path, &s, &start) == -ENOTDIR, "file as dir");
	remove_state();
}

static void test_missing_parent(void)
{
	struct genstore *s;
	uint64_t start;
	char sub[128];

	snprintf(sub, sizeof(sub), "%s/no/such", dir);
	CHECK(genstore_open(sub, &s, &start) == -ENOENT, "missing parent");
	snprintf(sub, sizeof(sub), "%s/new", dir);
	CHECK(genstore_open(sub, &s, &start) == 0 && start == 0,
	      "creates its directory");
	genstore_close(s);
	snprintf(sub, sizeof(sub), "%s/new/generation", dir);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/new", dir);
	rmdir(sub);
}

int main(void)
{
	strcpy(dir, "/tmp/rdmad-state-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 99;
	}
	test_open();
	test_never_back();
	test_one_write_per_half_block();
	test_not_a_directory();
	test_missing_parent();
	remove_state();
	rmdir(dir);
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("test-genstore: all passed\n");
	return failures ? 1 : 0;
}
