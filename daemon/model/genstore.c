/* SPDX-License-Identifier: MIT */
/*
 * Generation persistence.  <dir>/generation holds, in decimal, a ceiling:
 * no generation above it has been published.  At start the daemon
 * resumes from the old ceiling and reserves the next block of
 * GENSTORE_BLOCK; publishing a generation within half a block of the
 * ceiling reserves another block first.  So a crash at any point (kill -9)
 * loses at most the unused rest of a block, never goes back, and costs one
 * write per half block.  The file is replaced by rename(), so it is either the
 * old or the new ceiling, never a torn write.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "genstore.h"
#include "statefile.h"

#define GENSTORE_BLOCK 1024
#define GENSTORE_FILE "generation"

struct genstore {
	int dirfd;
	uint64_t ceiling;
};

/* The stored ceiling in *ret: 0 when there is no file (a first start),
 * -EBADMSG when what is there is not a clean decimal number. */
static int read_ceiling(int dirfd, uint64_t *ret)
{
	char *text = NULL, *end;
	unsigned long long v;
	int r;

	*ret = 0;
	r = statefile_read(dirfd, GENSTORE_FILE, 31, &text);
	if (r == -ENOENT)
		return 0;
	r = -EBADMSG;
	if (text && text[0] >= '0' && text[0] <= '9') {
		errno = 0;
		v = strtoull(text, &end, 10);
		if (!errno && (!*end || !strcmp(end, "\n"))) {
			*ret = v;
			r = 0;
		}
	}
	free(text);
	return r;
}

/* A floor no stored ceiling can have reached: microseconds since 1970.
 * Ceilings grow by one block per 512 changes; at 14,000 changes a second
 * they would need thousands of years to pass it. */
static uint64_t clock_floor(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The ceiling, replaced whole (statefile.h). */
static int write_ceiling(int dirfd, uint64_t ceiling)
{
	char buf[32];

	return statefile_write(dirfd, GENSTORE_FILE, buf,
			       snprintf(buf, sizeof(buf), "%llu\n",
					(unsigned long long)ceiling));
}

static int reserve(struct genstore *store, uint64_t from)
{
	uint64_t ceiling = from > UINT64_MAX - GENSTORE_BLOCK
				   ? UINT64_MAX
				   : from + GENSTORE_BLOCK;
	int r = write_ceiling(store->dirfd, ceiling);

	if (r == 0)
		store->ceiling = ceiling;
	return r;
}

int genstore_open(const char *dir, struct genstore **ret_store,
		  uint64_t *ret_start)
{
	struct genstore *store;
	uint64_t start;
	bool garbage;
	int r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	store = calloc(1, sizeof(*store));
	if (!store)
		return -ENOMEM;
	store->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (store->dirfd < 0) {
		r = -errno;
		free(store);
		return r;
	}
	garbage = read_ceiling(store->dirfd, &start) < 0;
	if (garbage)
		start = clock_floor();
	r = reserve(store, start);
	if (r < 0) {
		genstore_close(store);
		return r;
	}
	*ret_store = store;
	*ret_start = start;
	return garbage;
}

int genstore_note(struct genstore *store, uint64_t generation)
{
	/* Reserve the next block half a block early: a write that fails
	 * (a full /run) is retried on every later change while half a block
	 * of headroom is left, before anything past the ceiling goes out. */
	if (generation + GENSTORE_BLOCK / 2 < store->ceiling)
		return 0;
	return reserve(store, generation);
}

void genstore_close(struct genstore *store)
{
	if (!store)
		return;
	close(store->dirfd);
	free(store);
}
