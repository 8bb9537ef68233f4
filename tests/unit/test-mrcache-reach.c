/* SPDX-License-Identifier: MIT */
/*
 * libclient/mrcache/: the cache knows whether its hooks are reached.  This
 * program does not link librdmad: it opens it with dlopen() after libc,
 * as Python's ctypes or an MPI's plugin loader does, so its madvise() and
 * munmap() are libc's and never come to librdmad's hooks.
 *
 * With the real librdmad (argv[1]) on a PD that registers nothing: a
 * cache says it is not caching and why, and caches with
 * RDMAD_MR_CACHE_EVENTS_ONLY, the opt-in.  With the cache's own static
 * library and hooks built into a module of fake MRs (argv[2], the same
 * objects as librdmad's, fake-mrcache.h's MRs): a guard region put on a
 * cached page by the program's madvise() and taken off leaves no stale
 * MR, and the statistics count the gets passed through; opted in, the
 * same guard region is the program's to announce (stale unannounced, as
 * librdmad(3) says; fresh announced).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rdmad.h"

#ifndef RDMAD_MR_CACHE_EVENTS_ONLY
#define RDMAD_MR_CACHE_EVENTS_ONLY 0x2
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
#define W IBV_ACCESS_LOCAL_WRITE

static size_t ps;

/* The calls, from whichever module was opened. */
static struct {
	struct rdmad_mr_cache *(*new)(struct ibv_pd *,
				      const struct rdmad_mr_cache_attr *);
	int (*destroy)(struct rdmad_mr_cache *);
	struct ibv_mr *(*get)(struct rdmad_mr_cache *, void *, size_t, int);
	int (*put)(struct rdmad_mr_cache *, struct ibv_mr *);
	int (*is_caching)(struct rdmad_mr_cache *);
	const char *(*reason)(const struct rdmad_mr_cache *);
	int (*stats)(struct rdmad_mr_cache *, struct rdmad_mr_cache_stats *,
		     size_t);
	int (*begin)(void *, size_t);
	int (*end)(void *, size_t);
	/* the module of fake MRs only */
	void (*fake_init)(void);
	struct rdmad_mr_cache *(*fake_new)(const struct rdmad_mr_cache_attr *);
	bool (*fresh)(const struct ibv_mr *);
} api;

static bool open_api(const char *path, bool fake)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	CHECK(h, "dlopen(%s): %s", path, dlerror());
	if (!h)
		return false;
	*(void **)&api.new = dlsym(h, "rdmad_mr_cache_new");
	*(void **)&api.destroy = dlsym(h, "rdmad_mr_cache_destroy");
	*(void **)&api.get = dlsym(h, "rdmad_mr_cache_get");
	*(void **)&api.put = dlsym(h, "rdmad_mr_cache_put");
	*(void **)&api.is_caching = dlsym(h, "rdmad_mr_cache_is_caching");
	*(void **)&api.reason = dlsym(h, "rdmad_mr_cache_get_reason");
	*(void **)&api.stats = dlsym(h, "rdmad_mr_cache_get_stats");
	*(void **)&api.begin = dlsym(h, "rdmad_mr_cache_begin_change");
	*(void **)&api.end = dlsym(h, "rdmad_mr_cache_end_change");
	if (fake) {
		*(void **)&api.fake_init = dlsym(h, "fake_mrcache_init");
		*(void **)&api.fake_new = dlsym(h, "fake_mrcache_new_attr");
		*(void **)&api.fresh = dlsym(h, "fake_mrcache_fresh");
		api.fake_init();
	}
	return true;
}

static bool says_unhooked(struct rdmad_mr_cache *c)
{
	const char *why = api.reason(c);

	return api.is_caching(c) == 0 && why &&
	       strstr(why, "hooks are not reached");
}

/* A PD the cache is made for and never registers with. */
static struct ibv_device dev = {.name = "fake0"};
static struct ibv_context ctx = {.device = &dev};
static struct ibv_pd pd = {.context = &ctx};

static void test_librdmad(const char *path)
{
	struct rdmad_mr_cache_attr attr = {.flags = RDMAD_MR_CACHE_EVENTS_ONLY};
	struct rdmad_mr_cache *c, *opted;

	if (!open_api(path, false))
		return;
	c = api.new(&pd, NULL);
	CHECK(c);
	if (!c)
		return;
	if (api.is_caching(c) == 0 && !strstr(api.reason(c), "hooks")) {
		printf("SKIP librdmad opened late: %s\n", api.reason(c));
		api.destroy(c);
		return;
	}
	CHECK(says_unhooked(c),
	      "librdmad opened after libc: caching %d, \"%s\"",
	      api.is_caching(c), api.reason(c));
	opted = api.new(&pd, &attr);
	CHECK(opted && api.is_caching(opted) == 1,
	      "RDMAD_MR_CACHE_EVENTS_ONLY: %s",
	      opted ? api.reason(opted) : strerror(errno));
	if (opted)
		api.destroy(opted);
	api.destroy(c);
}

/* Cache 4 pages, a guard region on page 1 by the program's madvise()
 * (libc's), announced or not, off again, get: 1 fresh, 0 stale, -1
 * without guard regions (before 6.13). */
static int guard_case(unsigned int flags, bool announced,
		      struct rdmad_mr_cache_stats *ret_stats)
{
	struct rdmad_mr_cache_attr attr = {.flags = flags};
	struct rdmad_mr_cache *c = api.fake_new(&attr);
	char *m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *a = api.get(c, m, 4 * ps, W), *b;
	int r = -1;

	api.put(c, a);
	if (announced)
		api.begin(m + ps, ps);
	if (madvise(m + ps, ps, MADV_GUARD_INSTALL) == 0) {
		CHECK(madvise(m + ps, ps, MADV_GUARD_REMOVE) == 0);
		r = 0;
	}
	if (announced)
		api.end(m + ps, ps);
	b = api.get(c, m, 4 * ps, W);
	if (r == 0 && b && api.fresh(b))
		r = 1;
	if (b)
		api.put(c, b);
	api.stats(c, ret_stats, sizeof(*ret_stats));
	api.destroy(c);
	munmap(m, 4 * ps);
	return r;
}

static void test_fake_module(const char *path)
{
	struct rdmad_mr_cache_stats s;
	int r;

	if (!open_api(path, true))
		return;
	r = guard_case(0, false, &s);
	if (r < 0) {
		printf("SKIP guard regions: %s (Linux 6.13 and later)\n",
		       strerror(errno));
		return;
	}
	CHECK(r == 1, "a guard region by the program's madvise() left a "
		      "stale MR (the hooks are not reached)");
	CHECK(s.unhooked == 2 && s.misses == 0,
	      "%llu gets passed through for the hooks, %llu cached",
	      (unsigned long long)s.unhooked, (unsigned long long)s.misses);
	r = guard_case(RDMAD_MR_CACHE_EVENTS_ONLY, false, &s);
	CHECK(r == 0 && s.misses == 1,
	      "opted in, an unannounced guard region: %d (%llu cached); "
	      "librdmad(3) says it is stale",
	      r, (unsigned long long)s.misses);
	CHECK(guard_case(RDMAD_MR_CACHE_EVENTS_ONLY, true, &s) == 1,
	      "opted in, an announced guard region left a stale MR");
}

int main(int argc, char **argv)
{
	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (argc != 3) {
		fprintf(stderr, "usage: %s LIBRDMAD FAKE-MODULE\n", argv[0]);
		return 2;
	}
	test_librdmad(argv[1]);
	test_fake_module(argv[2]);
	return failures ? 1 : 0;
}
