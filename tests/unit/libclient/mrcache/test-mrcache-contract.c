/* SPDX-License-Identifier: MIT */
/*
 * libclient/mrcache/: the rows of docs/mrcache.md's contract table that
 * this machine's kernel can show with fake MRs, and beside them: memory
 * of a kind whose pages change without an event (shared, file, hugetlb),
 * a merge over a page made read-only, a registration that unmaps watched
 * memory, a lost monitor descriptor, the
 * mappings the cache adds, and the changes a program must announce
 * (guard regions; MADV_DONTNEED racing a get), each by a raw system call,
 * through libc (the hooks) and announced; munmap() and mremap() through
 * libc raising no event.  Each uses only what a
 * program sees (the public calls, /proc/self), so that the cases before
 * the announced ones run against older code too.
 *
 * The fake MRs are fake-mrcache.h's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "fake-mrcache.h"
#include "proc-fd.h"
#include "mrcache/mrcache.h"

static size_t ps;
/* ---- memory whose pages change without an event ------------------------- */

struct kind {
	const char *name;
	/* Map 4 pages: the mapping, or MAP_FAILED; *fd the file, or -1. */
	void *(*map)(int *fd);
	/* Change page 1 the way that raises no userfaultfd event. */
	void (*change)(char *map, int fd);
};

static void *memfd_map(int *fd, unsigned int mfd_flags, int map_flags)
{
	size_t len = mfd_flags & MFD_HUGETLB ? 2 << 20 : 4 * ps;
	void *m;

	*fd = memfd_create("mrcache-contract", MFD_CLOEXEC | mfd_flags);
	if (*fd < 0 || ftruncate(*fd, (off_t)len) < 0)
		return MAP_FAILED;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, map_flags, *fd, 0);
	return m;
}

static void *shared_memfd(int *fd)
{
	return memfd_map(fd, 0, MAP_SHARED);
}

static void *private_memfd(int *fd)
{
	return memfd_map(fd, 0, MAP_PRIVATE);
}

static void *hugetlb_memfd(int *fd)
{
	return memfd_map(fd, MFD_HUGETLB, MAP_SHARED);
}

static void *shared_anon(int *fd)
{
	*fd = -1;
	return mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
}

static void punch(char *map, int fd)
{
	(void)map;
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)ps, (off_t)ps) == 0,
	      "punch: %s", strerror(errno));
}

static void punch_huge(char *map, int fd)
{
	(void)map;
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			2 << 20) == 0,
	      "punch: %s", strerror(errno));
}

static void truncate_and_grow(char *map, int fd)
{
	(void)map;
	CHECK(ftruncate(fd, 0) == 0 && ftruncate(fd, (off_t)(4 * ps)) == 0);
}

/* Another process discards the page of the shared object. */
static void remove_elsewhere(char *map, int fd)
{
	int status;
	pid_t pid;

	(void)fd;
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(madvise(map + ps, ps, MADV_REMOVE) == 0 ? 0 : 1);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
}

static const struct kind kinds[] = {
	{"memfd, shared, hole punched", shared_memfd, punch},
	{"memfd, shared, truncated and grown", shared_memfd, truncate_and_grow},
	{"tmpfs file mapped private, truncated and grown", private_memfd,
	 truncate_and_grow},
	{"shared anonymous, MADV_REMOVE by another process", shared_anon,
	 remove_elsewhere},
	{"hugetlb memfd, hole punched", hugetlb_memfd, punch_huge},
};

/* Get, put, change, get: the second MR is fresh, and neither was cached. */
static void check_kind(const struct kind *k)
{
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	struct ibv_mr *a, *b;
	int fd = -1;
	char *m = k->map(&fd);
	size_t len = k->map == hugetlb_memfd ? 2 << 20 : 4 * ps;

	if (m == MAP_FAILED) {
		printf("SKIP %s: %s (no huge pages reserved: "
		       "vm.nr_hugepages)\n",
		       k->name, strerror(errno));
		goto out;
	}
	a = rdmad_mr_cache_get(c, m, len, W);
	CHECK(a && rdmad_mr_cache_put(c, a) == 0, "%s", k->name);
	k->change(m, fd);
	b = rdmad_mr_cache_get(c, m, len, W);
	CHECK(b && fake_mrcache_fresh(b), "%s: a stale MR", k->name);
	CHECK(fake_mrcache_stats(c).bypassed == 2 &&
		      fake_mrcache_stats(c).entries == 0,
	      "%s: cached (%llu bypassed)", k->name,
	      (unsigned long long)fake_mrcache_stats(c).bypassed);
	if (b)
		rdmad_mr_cache_put(c, b);
	munmap(m, len);
out:
	if (fd >= 0)
		close(fd);
	rdmad_mr_cache_flush(c);
	CHECK(rdmad_mr_cache_destroy(c) == 0);
}

static void test_kinds(void)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		check_kind(&kinds[i]);
}

/* ---- a merge over a page made read-only --------------------------------- */

/* An idle entry over pages [1, 5), page 4 made read-only: a writable get
 * of [0, 2) would merge to [0, 5) and fail; the range alone registers. */
static void test_merge_read_only(void)
{
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	char *m = fake_mrcache_anon(NULL, 6 * ps, 0);
	struct ibv_mr *a, *b;

	a = rdmad_mr_cache_get(c, m + ps, 4 * ps, W);
	CHECK(a && rdmad_mr_cache_put(c, a) == 0);
	CHECK(mprotect(m + 4 * ps, ps, PROT_READ) == 0);
	errno = 0;
	b = rdmad_mr_cache_get(c, m, 2 * ps, W);
	CHECK(b && fake_mrcache_fresh(b),
	      "a get merging over a read-only page: %s", strerror(errno));
	if (b)
		rdmad_mr_cache_put(c, b);
	rdmad_mr_cache_flush(c);
	rdmad_mr_cache_destroy(c);
	munmap(m, 6 * ps);
}

/* ---- a registration that unmaps watched memory --------------------------- */

static char *victim;

/* A provider whose registration frees memory glibc then unmaps: here the
 * unmaps themselves, of a range the cache watches, a page at a time (the
 * kernel lets the first go once the monitor has read its event; the
 * second waits for a monitor that waits for the cache). */
static struct ibv_mr *unmapping_reg(struct ibv_pd *pd, void *addr,
				    size_t length, int access)
{
	if (victim) {
		munmap(victim, ps);
		munmap(victim + ps, ps);
		victim = NULL;
	}
	return fake_mrcache_ops.reg(pd, addr, length, access);
}

static int unmap_inside_reg(void)
{
	struct mrc_ops ops = {unmapping_reg, fake_mrcache_ops.dereg};
	struct rdmad_mr_cache *c = mrc_cache_new_ops(NULL, NULL, &ops, "f0");
	char *m = fake_mrcache_anon(NULL, 4 * ps, 0),
	     *v = fake_mrcache_anon(NULL, 2 * ps, 0);
	struct ibv_mr *a;

	a = rdmad_mr_cache_get(c, v, 2 * ps, W);
	rdmad_mr_cache_put(c, a);
	if (fake_mrcache_stats(c).entries != 1)
		return 2;
	victim = v;
	a = rdmad_mr_cache_get(c, m, 4 * ps, W);
	return a && fake_mrcache_fresh(a) &&
			       fake_mrcache_stats(c).invalidations >= 1
		       ? 0
		       : 3;
}

static void test_unmap_inside_reg(void)
{
	CHECK(fake_mrcache_in_child(unmap_inside_reg, 20,
				    "unmap inside a registration"),
	      "an munmap() inside ibv_reg_mr() deadlocked");
}

/* ---- the monitor's descriptor ------------------------------------------- */

/* A cache in a child (its own monitor), one entry over @m's 2 pages. */
static struct rdmad_mr_cache *child_cache(char **m)
{
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	struct ibv_mr *a;

	*m = fake_mrcache_anon(NULL, 2 * ps, 0);
	a = rdmad_mr_cache_get(c, *m, 2 * ps, W);
	rdmad_mr_cache_put(c, a);
	return c;
}

/* Closed: the cache says so, flushes, and never hands out the old MR. */
static int closed_descriptor(void)
{
	char *m;
	struct rdmad_mr_cache *c = child_cache(&m);
	struct ibv_mr *b;
	int fd = fd_naming("userfaultfd");

	if (fd < 0 || fake_mrcache_stats(c).entries != 1)
		return 2;
	close(fd);
	munmap(m, 2 * ps);
	fake_mrcache_anon(m, 2 * ps, MAP_FIXED_NOREPLACE);
	b = rdmad_mr_cache_get(c, m, 2 * ps, W);
	if (!b || !fake_mrcache_fresh(b))
		return 3;
	if (rdmad_mr_cache_is_caching(c) != 0 ||
	    !strstr(rdmad_mr_cache_get_reason(c), "descriptor"))
		return 4;
	return 0;
}

/* Replaced by a pipe: munmap() of cached memory still returns. */
static int replaced_descriptor(void)
{
	char *m;
	struct rdmad_mr_cache *c = child_cache(&m);
	struct ibv_mr *b;
	int fd = fd_naming("userfaultfd"), p[2];

	if (fd < 0 || pipe(p) < 0 || dup2(p[0], fd) < 0)
		return 2;
	munmap(m, 2 * ps);
	fake_mrcache_anon(m, 2 * ps, MAP_FIXED_NOREPLACE);
	b = rdmad_mr_cache_get(c, m, 2 * ps, W);
	return b && fake_mrcache_fresh(b) && rdmad_mr_cache_is_caching(c) == 0
		       ? 0
		       : 3;
}

static void test_descriptor(void)
{
	CHECK(fake_mrcache_in_child(closed_descriptor, 20, "closed descriptor"),
	      "a closed monitor descriptor went unnoticed");
	CHECK(fake_mrcache_in_child(replaced_descriptor, 20,
				    "replaced descriptor"),
	      "a replaced monitor descriptor hung or went unnoticed");
}

/* ---- changes the kernel tells late or not at all ----------------------
 * Each made three ways: by a raw system call (what the kernel alone tells
 * the monitor: the contract's row), through libc's symbol (the hooks,
 * libclient/mrcache/hooks.c, linked here under libc's own names as
 * librdmad defines them for a program), and announced by the program
 * (rdmad_mr_cache_begin_change()), with the hooks bypassed. */

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

enum way { RAW, HOOKED, ANNOUNCED };
static const char *const way_name[] = {"by a raw syscall", "through libc",
				       "announced"};

static int advise(enum way way, void *addr, size_t len, int advice)
{
	int r;

	if (way == HOOKED)
		return madvise(addr, len, advice);
	if (way == ANNOUNCED)
		rdmad_mr_cache_begin_change(addr, len);
	r = (int)syscall(SYS_madvise, addr, len, advice);
	if (way == ANNOUNCED)
		rdmad_mr_cache_end_change(addr, len);
	return r;
}

/* Cache 4 pages, put a guard region on page 1 and take it off again (the
 * page is then a new zero page), get again: 1 when fresh, 0 when stale,
 * -1 without guard regions (before 6.13). */
static int guard_case(enum way way)
{
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	char *m = fake_mrcache_anon(NULL, 4 * ps, 0);
	struct ibv_mr *a = rdmad_mr_cache_get(c, m, 4 * ps, W), *b;
	int r = -1;

	rdmad_mr_cache_put(c, a);
	if (advise(way, m + ps, ps, MADV_GUARD_INSTALL) == 0) {
		CHECK(madvise(m + ps, ps, MADV_GUARD_REMOVE) == 0);
		r = 0;
	}
	b = rdmad_mr_cache_get(c, m, 4 * ps, W);
	if (r == 0 && b && fake_mrcache_fresh(b))
		r = 1;
	if (b)
		rdmad_mr_cache_put(c, b);
	rdmad_mr_cache_flush(c);
	rdmad_mr_cache_destroy(c);
	munmap(m, 4 * ps);
	return r;
}

/* The contract's row holds on this kernel (a raw guard region raises no
 * event), and through libc or announced the guard region is covered. */
static void test_guard(void)
{
	int r = guard_case(RAW);

	if (r < 0) {
		printf("SKIP guard regions: %s (Linux 6.13 and later)\n",
		       strerror(errno));
		return;
	}
	CHECK(r == 0, "a guard region raised an event: the contract's row "
		      "for MADV_GUARD_INSTALL is out of date");
	CHECK(guard_case(HOOKED) == 1, "a guard region put through libc left "
				       "a stale MR");
	CHECK(guard_case(ANNOUNCED) == 1, "an announced guard region left a "
					  "stale MR");
}

struct race {
	struct rdmad_mr_cache *cache;
	char *map; /* 16 pages */
	enum way way;
	unsigned long started, finished; /* discards, atomic */
	bool stop;
	unsigned long checks, stale;
};

/* MADV_DONTNEED over the map again and again for RACE_NS. */
#define RACE_NS 1000000000L
static void *discarder(void *arg)
{
	struct race *r = arg;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		__atomic_add_fetch(&r->started, 1, __ATOMIC_SEQ_CST);
		advise(r->way, r->map, 16 * ps, MADV_DONTNEED);
		__atomic_add_fetch(&r->finished, 1, __ATOMIC_SEQ_CST);
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec <
		 RACE_NS);
	__atomic_store_n(&r->stop, true, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Gets that begin after a discard returned and see no other begin until
 * they are checked must be fresh. */
static void *racer(void *arg)
{
	struct race *r = arg;
	unsigned int seed = (unsigned int)(uintptr_t)&seed;
	unsigned long s0, f0;
	struct ibv_mr *mr;
	size_t off;

	while (!__atomic_load_n(&r->stop, __ATOMIC_SEQ_CST)) {
		off = (size_t)(rand_r(&seed) % 12) * ps;
		s0 = __atomic_load_n(&r->started, __ATOMIC_SEQ_CST);
		f0 = __atomic_load_n(&r->finished, __ATOMIC_SEQ_CST);
		mr = rdmad_mr_cache_get(r->cache, r->map + off, 4 * ps, W);
		if (!mr)
			continue;
		if (s0 == f0 && !fake_mrcache_fresh(mr) &&
		    __atomic_load_n(&r->started, __ATOMIC_SEQ_CST) == s0)
			__atomic_add_fetch(&r->stale, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&r->checks, 1, __ATOMIC_RELAXED);
		rdmad_mr_cache_put(r->cache, mr);
	}
	return NULL;
}

static struct race race_run(enum way way)
{
	struct race r = {.cache = fake_mrcache_new(64), .way = way};
	pthread_t t[4];
	int i;

	r.map = fake_mrcache_anon(NULL, 16 * ps, 0);
	for (i = 1; i < 4; i++)
		pthread_create(&t[i], NULL, racer, &r);
	pthread_create(&t[0], NULL, discarder, &r);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	rdmad_mr_cache_flush(r.cache);
	rdmad_mr_cache_destroy(r.cache);
	munmap(r.map, 16 * ps);
	return r;
}

/* MADV_DONTNEED racing gets.  By a raw syscall the
 * kernel's REMOVE comes before the zap and a get in between may cache the
 * pages about to go (how often varies from run to run, so it is printed,
 * not checked: it shows the check can fail); through libc or announced,
 * never. */
static void test_dontneed_race(void)
{
	struct race r;
	enum way way;

	for (way = RAW; way <= ANNOUNCED; way++) {
		r = race_run(way);
		printf("MADV_DONTNEED racing gets %s: %lu stale in %lu "
		       "checks\n",
		       way_name[way], r.stale, r.checks);
		CHECK(r.checks > 1000, "%s: only %lu checks", way_name[way],
		      r.checks);
		if (way != RAW)
			CHECK(r.stale == 0, "%s: %lu stale MRs", way_name[way],
			      r.stale);
	}
}

/* ---- munmap() and mremap() through libc: no event, no wait ---------------
 * A cached range unmapped or moved through libc is unregistered before
 * the call, so the monitor reads no event (the call did not wait for its
 * thread), and the next get of new memory there is fresh; by a raw
 * syscall the kernel's event does the same, which shows the count. */

static struct ibv_mr *cache_one(struct rdmad_mr_cache *c, char *m)
{
	struct ibv_mr *mr = rdmad_mr_cache_get(c, m, 4 * ps, W);

	CHECK(mr && fake_mrcache_fresh(mr));
	rdmad_mr_cache_put(c, mr);
	return mr;
}

/* One try of unmap_case(): -EEXIST where another thread (the monitor,
 * a sanitizer's runtime) mapped the freed range before the test could
 * map it again, so that there is no new memory there to ask about. */
static int unmap_try(void (*change)(char *m), unsigned long *ret_events,
		     bool *fresh_after)
{
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	char *m = fake_mrcache_anon(NULL, 4 * ps, 0);
	unsigned long before;
	struct ibv_mr *mr;
	char *again;

	cache_one(c, m);
	before = mrc_monitor_events();
	change(m);
	mrc_monitor_quiesce();
	*ret_events = mrc_monitor_events() - before;
	again = fake_mrcache_anon(m, 4 * ps, MAP_FIXED_NOREPLACE);
	if (again != m) {
		CHECK(again == MAP_FAILED && errno == EEXIST,
		      "mapping the freed range again: %s", strerror(errno));
		rdmad_mr_cache_destroy(c);
		return -EEXIST;
	}
	mr = rdmad_mr_cache_get(c, m, 4 * ps, W);
	*fresh_after = mr && fake_mrcache_fresh(mr);
	if (mr)
		rdmad_mr_cache_put(c, mr);
	rdmad_mr_cache_destroy(c);
	munmap(m, 4 * ps);
	return 0;
}

/* Events the monitor read while @change ran on a cached range, and
 * whether the next get of new memory there was fresh. */
static unsigned long unmap_case(void (*change)(char *m), bool *fresh_after)
{
	unsigned long events = 0;
	int tries = 0;

	while (unmap_try(change, &events, fresh_after) == -EEXIST)
		CHECK(++tries < 20, "the freed range was taken 20 times");
	return events;
}

static void unmap_raw(char *m)
{
	CHECK(syscall(SYS_munmap, m, 4 * ps) == 0);
}

static void unmap_libc(char *m)
{
	CHECK(munmap(m, 4 * ps) == 0);
}

/* Move the range away with mremap() (the destination is unmapped after). */
static void remap_libc(char *m)
{
	char *to = fake_mrcache_anon(NULL, 4 * ps, 0);

	CHECK(mremap(m, 4 * ps, 4 * ps, MREMAP_MAYMOVE | MREMAP_FIXED, to) ==
	      to);
	munmap(to, 4 * ps);
}

static void test_hooked_unmaps(void)
{
	bool ok = false;

	CHECK(unmap_case(unmap_raw, &ok) >= 1 && ok,
	      "a raw munmap() of a cached range raised no event");
	CHECK(unmap_case(unmap_libc, &ok) == 0, "munmap() through libc waited "
						"for the monitor");
	CHECK(ok, "munmap() through libc left a stale MR");
	CHECK(unmap_case(remap_libc, &ok) == 0, "mremap() through libc waited "
						"for the monitor");
	CHECK(ok, "mremap() through libc left a stale MR");
}

/* RDMAD_MR_CACHE_HOOKS=off: libc's calls are left to the kernel's events
 * (the monitor of a child, which reads the variable when it starts). */
static int hooks_off(void)
{
	bool ok = false;
	unsigned long events;

	setenv("RDMAD_MR_CACHE_HOOKS", "off", 1);
	events = unmap_case(unmap_libc, &ok);
	if (events < 1)
		return 1;
	return ok ? 0 : 2;
}

static void test_hooks_off(void)
{
	CHECK(fake_mrcache_in_child(hooks_off, 20, "hooks off"),
	      "RDMAD_MR_CACHE_HOOKS=off did not leave munmap() to the kernel");
}

/* ---- the mappings the cache adds ----------------------------------------- */

/* Mappings starting in [lo, hi), as /proc/self/maps lists them. */
static unsigned int count_maps(const char *lo, const char *hi)
{
	char line[512];
	unsigned int n = 0;
	unsigned long start;
	FILE *f = fopen("/proc/self/maps", "r");

	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-", &start) == 1 &&
		    start >= (unsigned long)lo && start < (unsigned long)hi)
			n++;
	fclose(f);
	return n;
}

/* Whether the mapping at @p is registered with a userfaultfd in
 * write-protect mode (smaps' "uw" flag). */
static bool watched(const void *p)
{
	char line[512], range[64];
	bool in = false, uw = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	snprintf(range, sizeof(range), "%lx-", (unsigned long)p);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') && line[0] != 'V' &&
		    !in) {
			in = !strncmp(line, range, strlen(range));
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			uw = strstr(line, " uw") != NULL;
			break;
		}
	}
	fclose(f);
	return uw;
}

/* Every other page of a large region, cached once each: the cache's
 * bound on entries bounds the mappings it adds, and a flush gives them
 * all back; a range whose entry went is no longer watched. */
/* Whether the kernel answers PROCMAP_QUERY (6.11): without it each miss
 * reads the maps file, whose length grows with the mappings. */
static bool procmap_query(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	uintptr_t here = (uintptr_t)&procmap_query;
	bool has = fd >= 0 && mrc_vma_query(fd, here, here + 1) != -ENOTTY;

	if (fd >= 0)
		close(fd);
	return has;
}

static int bounded_maps(void)
{
	/* Three times the bound where each miss reads the maps file (an
	 * emulated 6.1 guest takes milliseconds a miss at 2,000 mappings). */
	const unsigned int bound = 1024,
			   gets = procmap_query() ? 20000 : 3 * bound;
	struct rdmad_mr_cache *c = fake_mrcache_new(bound);
	size_t len = 2 * (size_t)gets * ps;
	char *m = fake_mrcache_anon(NULL, len, 0);
	unsigned int most = 0, i, n;
	struct ibv_mr *a;

	for (i = 0; i < gets; i++) {
		a = rdmad_mr_cache_get(c, m + 2 * (size_t)i * ps, ps, 0);
		if (a)
			rdmad_mr_cache_put(c, a);
		if (i % 1000 == 999 && (n = count_maps(m, m + len)) > most)
			most = n;
	}
	printf("mappings of the region: 1 before, at most %u while caching "
	       "every other page %u times (bound %u entries)\n",
	       most, gets, bound);
	if (most > 2 * bound + 1)
		return 2;
	a = rdmad_mr_cache_get(c, m, ps, 0);
	rdmad_mr_cache_put(c, a);
	if (!watched(m))
		return 3;
	rdmad_mr_cache_flush(c);
	n = count_maps(m, m + len);
	printf("mappings of the region after a flush: %u\n", n);
	if (n != 1)
		return 4;
	return watched(m) ? 5 : 0;
}

static void test_bounded_maps(void)
{
	CHECK(fake_mrcache_in_child(bounded_maps, 120, "bounded mappings"),
	      "the mappings the cache adds are not bounded or not given back");
}

int main(void)
{
	struct rdmad_mr_cache *probe;

	ps = (size_t)sysconf(_SC_PAGESIZE);
	fake_mrcache_init();
	probe = mrc_cache_new_ops(NULL, NULL, &fake_mrcache_ops, "probe0");
	test_kinds();
	test_merge_read_only();
	if (rdmad_mr_cache_is_caching(probe) == 1) {
		test_unmap_inside_reg();
		test_descriptor();
		test_bounded_maps();
		test_guard();
		test_dontneed_race();
		test_hooked_unmaps();
		test_hooks_off();
	} else {
		printf("SKIP (monitor cases): %s\n",
		       rdmad_mr_cache_get_reason(probe));
	}
	rdmad_mr_cache_destroy(probe);
	return failures ? 1 : 0;
}
