/* SPDX-License-Identifier: MIT */
/*
 * libclient/mrcache/: the index's interval logic, what kind of memory a
 * range is (vma.c, both ways of asking the kernel), the cache's rules
 * (hits, merges, pass-through, eviction under the bounds, access, remote
 * access refused, bad environment, leaving devices, fork) and, against
 * this machine's kernel, the monitor: every way of changing a cached
 * range's pages, threads getting and putting while another remaps, and a
 * model-checked random run.
 *
 * Registration is faked (no RDMA device here): a fake MR records, for
 * each page it covers, how many changes of that page had begun when it
 * was registered (the model counts changes begun and changes done, as the
 * test changes which memory backs a page).  An MR that recorded fewer
 * than the changes done before a get began is stale: RDMA through it
 * would land in pages the program no longer sees.  The real-kernel proof with
 * real MRs and RDMA WRITEs is tests/kernel/mrcache-app.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "proc-fd.h"
#include "mrcache/mrcache.h"

#define PAGES 256

static size_t ps;
static char *region; /* PAGES pages the model follows */
static unsigned int begun[PAGES], done[PAGES];
static unsigned int regs, deregs;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

struct fake_mr {
	struct ibv_mr mr;
	unsigned int epoch[PAGES];
};

static struct ibv_mr *fake_reg(struct ibv_pd *pd, void *addr, size_t length,
			       int access)
{
	struct fake_mr *f = calloc(1, sizeof(*f));
	size_t first = ((char *)addr - region) / ps, i;

	(void)pd;
	(void)access;
	f->mr.addr = addr;
	f->mr.length = length;
	pthread_mutex_lock(&fake_lock);
	for (i = 0;
	     i < length / ps && (char *)addr >= region && first + i < PAGES;
	     i++)
		f->epoch[first + i] = begun[first + i];
	regs++;
	pthread_mutex_unlock(&fake_lock);
	return &f->mr;
}

static int fake_dereg(struct ibv_mr *mr)
{
	pthread_mutex_lock(&fake_lock);
	deregs++;
	pthread_mutex_unlock(&fake_lock);
	free(mr);
	return 0;
}

static const struct mrc_ops fake_ops = {fake_reg, fake_dereg};

/* Pages [first, first + n) of the region, as the model says now. */
static bool fresh(const struct ibv_mr *mr, size_t first, size_t n)
{
	const struct fake_mr *f = (const struct fake_mr *)mr;
	size_t i;
	bool ok = true;

	pthread_mutex_lock(&fake_lock);
	for (i = first; i < first + n; i++)
		ok &= f->epoch[i] >= done[i];
	pthread_mutex_unlock(&fake_lock);
	return ok;
}

static void *page(size_t i)
{
	return region + i * ps;
}

static void count(unsigned int *changes, size_t first, size_t n)
{
	pthread_mutex_lock(&fake_lock);
	while (n--)
		changes[first++]++;
	pthread_mutex_unlock(&fake_lock);
}

/* A change of pages [first, first + n) begins, and is done. */
static void begin(size_t first, size_t n)
{
	count(begun, first, n);
}

static void end(size_t first, size_t n)
{
	count(done, first, n);
}

/* ---- what changes a range's pages -------------------------------------- */

static void *anon(void *at, size_t len, int flags)
{
	return mmap(at, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
}

static void remap_fixed(size_t first, size_t n)
{
	begin(first, n);
	CHECK(anon(page(first), n * ps, MAP_FIXED) == page(first));
	end(first, n);
}

static void unmap_then_map(size_t first, size_t n)
{
	begin(first, n);
	CHECK(munmap(page(first), n * ps) == 0);
	CHECK(anon(page(first), n * ps, MAP_FIXED_NOREPLACE) == page(first));
	end(first, n);
}

static void advise(size_t first, size_t n, int advice)
{
	begin(first, n);
	CHECK(madvise(page(first), n * ps, advice) == 0, "advice %d: %s",
	      advice, strerror(errno));
	end(first, n);
}

static void dontneed(size_t first, size_t n)
{
	advise(first, n, MADV_DONTNEED);
}

static void dontneed_locked(size_t first, size_t n)
{
	advise(first, n, MADV_DONTNEED_LOCKED);
}

static void lazy_free(size_t first, size_t n)
{
	advise(first, n, MADV_FREE);
}

/* Move the pages of [first, first + n) to @away with mremap() and
 * @flags, a page at a time (a range may span mappings the cache split). */
static void move_pages(size_t first, size_t n, char *away, int flags)
{
	size_t i;

	for (i = 0; i < n; i++)
		CHECK(mremap(page(first + i), ps, ps,
			     MREMAP_MAYMOVE | MREMAP_FIXED | flags,
			     away + i * ps) == away + i * ps,
		      "%s", strerror(errno));
}

/* The pages move away and the range stays mapped, empty (Linux 5.7). */
static void mremap_dontunmap(size_t first, size_t n)
{
	char *away = anon(NULL, n * ps, 0);

	begin(first, n);
	move_pages(first, n, away, MREMAP_DONTUNMAP);
	munmap(away, n * ps);
	end(first, n);
}

/* A mapping shrunk in place: its tail is unmapped, then mapped again. */
static void mremap_shrink(size_t first, size_t n)
{
	begin(first, n);
	CHECK(mremap(page(first - 1), (n + 1) * ps, ps, 0) == page(first - 1),
	      "%s", strerror(errno));
	CHECK(anon(page(first), n * ps, MAP_FIXED_NOREPLACE) == page(first));
	end(first, n);
}

/* Move the pages elsewhere and map new memory in their place, as a
 * program that moves a buffer and maps another where it was. */
static void mremap_away(size_t first, size_t n)
{
	char *away = anon(NULL, n * ps, 0);

	begin(first, n);
	move_pages(first, n, away, 0);
	CHECK(anon(page(first), n * ps, MAP_FIXED) == page(first));
	munmap(away, n * ps);
	end(first, n);
}

/* ---- the index ---------------------------------------------------------- */

static struct mrc_entry *entry(uintptr_t start, uintptr_t end)
{
	struct mrc_entry *e = calloc(1, sizeof(*e));

	e->start = start;
	e->end = end;
	return e;
}

static void test_index(void)
{
	struct mrc_index ix = {0};
	struct mrc_garbage g = {0};
	struct mrc_entry *e[3] = {entry(0x3000, 0x5000), entry(0x1000, 0x2000),
				  entry(0x8000, 0xa000)};
	size_t first, n, i;

	for (i = 0; i < 3; i++) {
		CHECK(mrc_index_reserve(&ix, 1, &g) == 0);
		mrc_index_insert(&ix, e[i]);
	}
	mrc_garbage_free(&g);
	CHECK(ix.count == 3);
	CHECK(ix.starts[0] == 0x1000 && ix.starts[1] == 0x3000 &&
		      ix.starts[2] == 0x8000,
	      "sorted");
	CHECK(mrc_index_covering(&ix, 0x3000, 0x5000) == e[0]);
	CHECK(mrc_index_covering(&ix, 0x4000, 0x5000) == e[0], "inside");
	CHECK(!mrc_index_covering(&ix, 0x4000, 0x6000), "past the end");
	CHECK(!mrc_index_covering(&ix, 0x2000, 0x3000), "in a gap");
	CHECK(!mrc_index_covering(&ix, 0x0, 0x1000), "before all");
	CHECK(mrc_index_covering(&ix, 0x9000, 0xa000) == e[2]);
	n = mrc_index_overlapping(&ix, 0x1800, 0x3800, &first);
	CHECK(first == 0 && n == 2, "first %zu n %zu", first, n);
	n = mrc_index_overlapping(&ix, 0x5000, 0x8000, &first);
	CHECK(n == 0, "touching is not overlapping: %zu", n);
	n = mrc_index_overlapping(&ix, 0x0, 0x10000, &first);
	CHECK(first == 0 && n == 3);
	n = mrc_index_overlapping(&ix, 0x9fff, 0xa000, &first);
	CHECK(first == 2 && n == 1);
	CHECK(mrc_index_find(&ix, e[2]) == 2);
	mrc_index_remove(&ix, 1, 1);
	CHECK(ix.count == 2 && ix.entries[1] == e[2], "removed the middle");
	CHECK(mrc_index_find(&ix, e[0]) == -1);
	mrc_index_free(&ix);
	for (i = 0; i < 3; i++)
		free(e[i]);
}

/* ---- what kind of memory a range is (vma.c) ------------------------------ */

struct vma_row {
	const char *name;
	int expect;
	char *map; /* 3 pages; the row's range is all of them */
};

static char *three_pages(int flags, int fd)
{
	return mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, flags, fd, 0);
}

/* The kept descriptor replaced by the program, and a forked child's copy
 * (which shows the parent): the answers stay the child's own. */
static void test_vma_descriptor(void)
{
	char *m = three_pages(MAP_PRIVATE | MAP_ANONYMOUS, -1), *late;
	uintptr_t s = (uintptr_t)m;
	int fd, status;
	pid_t pid;

	CHECK(mrc_vma_private_anon(s, s + 3 * ps) == 1);
	fd = fd_naming("/maps");
	if (fd >= 0) {
		CHECK(dup2(open("/dev/null", O_RDONLY | O_CLOEXEC), fd) == fd);
		CHECK(mrc_vma_private_anon(s, s + 3 * ps) == 1,
		      "after the program replaced the descriptor");
	}
	pid = fork();
	if (pid == 0) {
		late = three_pages(MAP_PRIVATE | MAP_ANONYMOUS, -1);
		_exit(mrc_vma_private_anon((uintptr_t)late,
					   (uintptr_t)late + 3 * ps) == 1
			      ? 0
			      : 1);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0,
	      "a child asked its parent's maps");
	munmap(m, 3 * ps);
}

/* Whether a child forked now sees @byte in the first byte of @m's pages
 * (a page the parent marked MADV_WIPEONFORK reads zero there). */
static bool child_sees(const char *m, size_t pages, char byte)
{
	int status;
	size_t i;
	pid_t pid = fork();

	if (pid == 0) {
		for (i = 0; i < pages; i++)
			if (m[i * ps] != byte)
				_exit(1);
		_exit(0);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/* A program that marks its memory MADV_WIPEONFORK itself keeps the mark
 * after the cache asked what memory it is. */
static int wipeonfork_kept(void)
{
	struct rdmad_mr_cache_attr attr = {0};
	struct rdmad_mr_cache *c = mrc_cache_new_ops((struct ibv_pd *)&attr,
						     &attr, &fake_ops, "f0");
	char *m = three_pages(MAP_PRIVATE | MAP_ANONYMOUS, -1);
	struct ibv_mr *mr;

	memset(m, 0x5a, 3 * ps);
	if (madvise(m, 3 * ps, MADV_WIPEONFORK) < 0)
		return 0;
	mr = rdmad_mr_cache_get(c, m, 3 * ps, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || rdmad_mr_cache_put(c, mr))
		return 2;
	return child_sees(m, 3, 0) ? 0 : 3;
}

static void test_vma_keeps_program_marks(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(wipeonfork_kept());
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0,
	      "the program's own MADV_WIPEONFORK was taken off (%d)",
	      WEXITSTATUS(status));
}

/* Every method, and the one the cache uses, give each row's answer;
 * PROCMAP_QUERY only where the kernel has it (6.11). */
static void test_vma(void)
{
	int memfd = memfd_create("test-vma", MFD_CLOEXEC);
	struct vma_row rows[] = {
		{"private anonymous", 1,
		 three_pages(MAP_PRIVATE | MAP_ANONYMOUS, -1)},
		{"private anonymous, three mappings", 1,
		 three_pages(MAP_PRIVATE | MAP_ANONYMOUS, -1)},
		{"shared anonymous", 0,
		 three_pages(MAP_SHARED | MAP_ANONYMOUS, -1)},
		{"a file mapped private", 0, NULL},
		{"a hole", 0, three_pages(MAP_PRIVATE | MAP_ANONYMOUS, -1)},
		{"anonymous, then shared anonymous", 0,
		 three_pages(MAP_PRIVATE | MAP_ANONYMOUS, -1)},
		{"shared anonymous, then anonymous", 0,
		 three_pages(MAP_PRIVATE | MAP_ANONYMOUS, -1)},
	};
	uintptr_t start, end;
	size_t i;
	int fd, q;

	CHECK(memfd >= 0 && ftruncate(memfd, (off_t)(3 * ps)) == 0);
	rows[3].map = three_pages(MAP_PRIVATE, memfd);
	CHECK(mprotect(rows[1].map + ps, ps, PROT_READ) == 0);
	CHECK(munmap(rows[4].map + ps, ps) == 0);
	CHECK(mmap(rows[5].map + 2 * ps, ps, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1,
		   0) == rows[5].map + 2 * ps);
	CHECK(mmap(rows[6].map, ps, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1,
		   0) == rows[6].map);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		start = (uintptr_t)rows[i].map;
		end = start + 3 * ps;
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		q = mrc_vma_query(fd, start, end);
		CHECK(q == rows[i].expect || q == -ENOTTY, "%s: query %d",
		      rows[i].name, q);
		CHECK(mrc_vma_parse(fd, start, end) == rows[i].expect,
		      "%s: parse", rows[i].name);
		CHECK(mrc_vma_private_anon(start, end) == rows[i].expect, "%s",
		      rows[i].name);
		close(fd);
		munmap(rows[i].map, 3 * ps);
	}
	close(memfd);
	test_vma_descriptor();
	test_vma_keeps_program_marks();
}

/* ---- the cache's rules -------------------------------------------------- */

static bool monitored;

/* Without a monitor (a kernel without userfaultfd) the rules are tested
 * on unwatched caches. */
static struct rdmad_mr_cache *new_cache_on(const char *device, size_t entries,
					   size_t bytes, unsigned int flags)
{
	struct rdmad_mr_cache_attr attr = {
		.max_entries = entries, .max_bytes = bytes, .flags = flags};
	struct rdmad_mr_cache *c;

	c = mrc_cache_new_ops((struct ibv_pd *)&attr, &attr, &fake_ops, device);
	if (c && !monitored)
		mrc_cache_unmonitored(c);
	return c;
}

static struct rdmad_mr_cache *new_cache(size_t entries, size_t bytes,
					unsigned int flags)
{
	return new_cache_on("fake0", entries, bytes, flags);
}

static struct rdmad_mr_cache_stats stats(struct rdmad_mr_cache *c)
{
	struct rdmad_mr_cache_stats s;

	rdmad_mr_cache_get_stats(c, &s, sizeof(s));
	return s;
}

static struct ibv_mr *get(struct rdmad_mr_cache *c, size_t first, size_t n,
			  int access)
{
	return rdmad_mr_cache_get(c, page(first), n * ps, access);
}

static void test_hit_merge_pass(void)
{
	struct rdmad_mr_cache *c = new_cache(0, 0, 0);
	struct ibv_mr *a, *b, *d;
	unsigned int d0;

	a = get(c, 10, 2, IBV_ACCESS_LOCAL_WRITE);
	CHECK(a && a->addr == page(10) && a->length == 2 * ps);
	rdmad_mr_cache_put(c, a);
	b = rdmad_mr_cache_get(c, (char *)page(10) + 100, ps,
			       IBV_ACCESS_LOCAL_WRITE);
	CHECK(b == a, "a range inside an entry is a hit");
	CHECK(stats(c).hits == 1 && stats(c).misses == 1);
	/* Overlapping an idle entry: merged into one, the old one goes. */
	rdmad_mr_cache_put(c, b);
	d0 = deregs;
	b = get(c, 11, 3, IBV_ACCESS_LOCAL_WRITE);
	CHECK(b && b->addr == page(10) && b->length == 4 * ps,
	      "merged [10, 14)");
	CHECK(deregs == d0 + 1, "the merged entry deregistered");
	CHECK(stats(c).entries == 1);
	/* Overlapping an entry in use: passes through, as asked. */
	d = get(c, 13, 2, IBV_ACCESS_LOCAL_WRITE);
	CHECK(d && d != b && d->addr == page(13) && d->length == 2 * ps);
	CHECK(stats(c).bypassed == 1 && stats(c).in_use == 2);
	d0 = deregs;
	CHECK(rdmad_mr_cache_put(c, d) == 0);
	CHECK(deregs == d0 + 1, "a pass-through is deregistered at its put");
	/* More access than the entry has: one entry with both. */
	rdmad_mr_cache_put(c, b);
	a = get(c, 10, 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(a && a != b && a->length == 4 * ps, "re-registered wider");
	rdmad_mr_cache_put(c, a);
	CHECK(get(c, 12, 1, IBV_ACCESS_LOCAL_WRITE) == a, "then a hit");
	rdmad_mr_cache_put(c, a);
	CHECK(rdmad_mr_cache_put(c, a) == -EINVAL, "put twice");
	CHECK(get(c, 12, 1, IBV_ACCESS_ON_DEMAND) != a, "ODP passes through");
	CHECK(rdmad_mr_cache_destroy(c) == -EBUSY, "one still out");
	CHECK(stats(c).in_use == 1);
	rdmad_mr_cache_flush(c);
	CHECK(stats(c).entries == 0);
}

static void test_bounds(void)
{
	struct rdmad_mr_cache *c = new_cache(0, 4 * ps, 0);
	struct ibv_mr *mr[5];
	size_t i;

	for (i = 0; i < 4; i++) {
		mr[i] = get(c, 20 + 2 * i, 1, 0);
		rdmad_mr_cache_put(c, mr[i]);
	}
	CHECK(stats(c).entries == 4 && stats(c).bytes_cached == 4 * ps);
	CHECK(get(c, 20, 1, 0) == mr[0], "touch the oldest");
	rdmad_mr_cache_put(c, mr[0]);
	mr[4] = get(c, 40, 1, 0);
	CHECK(stats(c).evictions == 1 && stats(c).entries == 4);
	get(c, 20, 1, 0);
	CHECK(stats(c).misses == 5, "the most recently used stayed");
	get(c, 22, 1, 0);
	CHECK(stats(c).misses == 6, "the least recently used went");
	/* All in use: nothing can be evicted, so a new range passes. */
	c = new_cache(2, 0, 0);
	mr[0] = get(c, 50, 1, 0);
	mr[1] = get(c, 52, 1, 0);
	mr[2] = get(c, 54, 1, 0);
	CHECK(stats(c).entries == 2 && stats(c).bypassed == 1,
	      "entries in use are never evicted");
	/* Larger than the byte bound: passes through. */
	c = new_cache(0, 2 * ps, 0);
	get(c, 60, 3, 0);
	CHECK(stats(c).bypassed == 1 && stats(c).entries == 0);
}

static void test_remote_and_env(void)
{
	struct rdmad_mr_cache *c = new_cache(0, 0, RDMAD_MR_CACHE_NO_REMOTE);
	struct rdmad_mr_cache_attr bad = {.flags = 0x80};

	get(c, 70, 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(stats(c).bypassed == 1, "remote access refused by the flag");
	get(c, 72, 1, IBV_ACCESS_LOCAL_WRITE);
	CHECK(stats(c).misses == 1, "local access still cached");
	errno = 0;
	CHECK(!mrc_cache_new_ops(NULL, &bad, &fake_ops, "fake0") &&
	      errno == EINVAL);
	setenv("RDMAD_MR_CACHE_MAX_BYTES", "lots", 1);
	errno = 0;
	CHECK(!new_cache(0, 0, 0) && errno == EINVAL, "bad environment");
	setenv("RDMAD_MR_CACHE_MAX_BYTES", "8K", 1);
	c = new_cache(0, 0, 0);
	get(c, 74, 3, 0);
	CHECK(c && stats(c).bypassed == 1, "8K from the environment");
	unsetenv("RDMAD_MR_CACHE_MAX_BYTES");
}

/* In a child: the cache passes through and says @reason. */
static void check_child_reason(struct rdmad_mr_cache *c, const char *reason)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(!rdmad_mr_cache_is_caching(
			      c) && strstr(rdmad_mr_cache_get_reason(c), reason)
			      ? 0
			      : 1);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0,
	      "the child's cache does not say %s", reason);
}

static void test_leaving(void)
{
	struct rdmad_mr_cache *c = new_cache_on("leaving0", 0, 0, 0);
	struct ibv_mr *idle = get(c, 80, 1, 0), *held = get(c, 82, 1, 0);
	unsigned int d0;

	rdmad_mr_cache_put(c, idle);
	d0 = deregs;
	mrcache_device_leaving("other0");
	CHECK(stats(c).entries == 2, "another device's event");
	mrcache_device_leaving("leaving0");
	CHECK(deregs == d0 + 1, "the idle entry deregistered at once");
	CHECK(stats(c).entries == 0 && !rdmad_mr_cache_is_caching(c));
	CHECK(rdmad_mr_cache_put(c, held) == 0 && deregs == d0 + 2,
	      "the held one at its put");
	CHECK(get(c, 80, 1, 0) && stats(c).bypassed == 1 && stats(c).hits == 0);
	CHECK(strstr(rdmad_mr_cache_get_reason(c), "leaving"));
	/* cache.c's mode table: leaving is for good, but a fork still
	 * makes the child's copy a child's. */
	mrc_cache_unmonitored(c);
	CHECK(!rdmad_mr_cache_is_caching(c) &&
		      strstr(rdmad_mr_cache_get_reason(c), "leaving"),
	      "LEAVING -> UNWATCHED is no row");
	check_child_reason(c, "forked");
}

/* ---- the monitor, on this machine's kernel ------------------------------ */

/* Cache pages [5, 9), change pages [6, 7) with @change, and ask again:
 * a new MR over fresh pages; [20, 22), not touched, stays a hit. */
static void check_change(const char *what, void (*change)(size_t, size_t))
{
	struct rdmad_mr_cache *c = new_cache(0, 0, 0);
	struct ibv_mr *a, *b, *other;

	a = get(c, 5, 4, 0);
	other = get(c, 20, 2, 0);
	rdmad_mr_cache_put(c, a);
	rdmad_mr_cache_put(c, other);
	change(6, 1);
	b = get(c, 5, 4, 0);
	CHECK(b && fresh(b, 5, 4), "%s: stale MR returned", what);
	CHECK(stats(c).invalidations == 1, "%s: %llu invalidated", what,
	      (unsigned long long)stats(c).invalidations);
	CHECK(get(c, 20, 2, 0) == other, "%s: an untouched range went", what);
	rdmad_mr_cache_put(c, b);
	rdmad_mr_cache_put(c, other);
	rdmad_mr_cache_flush(c);
	CHECK(rdmad_mr_cache_destroy(c) == 0);
}

static void test_changes(void)
{
	check_change("munmap then mmap", unmap_then_map);
	check_change("mmap MAP_FIXED", remap_fixed);
	check_change("mremap away", mremap_away);
	check_change("MADV_DONTNEED", dontneed);
	check_change("MADV_DONTNEED_LOCKED", dontneed_locked);
	check_change("MADV_FREE", lazy_free);
	check_change("mremap MREMAP_DONTUNMAP", mremap_dontunmap);
	check_change("mremap shrinking", mremap_shrink);
}

/* The heap's top, shrunk and grown again with sbrk() (glibc trims the
 * heap so).  malloc is first given room so that it needs no brk of its
 * own while the test moves it. */
static void test_brk(void)
{
	struct rdmad_mr_cache *c = new_cache(0, 0, 0);
	struct ibv_mr *a, *b;
	char *top;

	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	free(malloc(8 << 20));
	top = sbrk(0);
	top = sbrk((intptr_t)((ps - (uintptr_t)top % ps) % ps + 4 * ps));
	top = (char *)(((uintptr_t)top + ps - 1) & ~(ps - 1));
	memset(top, 1, 4 * ps);
	a = rdmad_mr_cache_get(c, top, 4 * ps, 0);
	rdmad_mr_cache_put(c, a);
	CHECK(sbrk(-(intptr_t)(4 * ps)) != (void *)-1);
	CHECK(sbrk((intptr_t)(4 * ps)) != (void *)-1);
	b = rdmad_mr_cache_get(c, top, 4 * ps, 0);
	CHECK(b && stats(c).invalidations == 1 && stats(c).misses == 2,
	      "brk shrinking invalidates: %llu",
	      (unsigned long long)stats(c).invalidations);
	rdmad_mr_cache_put(c, b);
	rdmad_mr_cache_flush(c);
	rdmad_mr_cache_destroy(c);
}

/* A child asking the cache it inherited never gets the parent's MR. */
static void test_fork(void)
{
	struct rdmad_mr_cache *c = new_cache(0, 0, 0);
	struct ibv_mr *a = get(c, 30, 2, 0), *b;
	int status;
	pid_t pid;

	rdmad_mr_cache_put(c, a);
	pid = fork();
	if (pid == 0) {
		b = get(c, 30, 2, 0);
		_exit(b && b != a && stats(c).bypassed == 1 &&
				      !rdmad_mr_cache_is_caching(c)
			      ? 0
			      : 1);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0,
	      "the child got the parent's MR");
	CHECK(get(c, 30, 2, 0) == a, "the parent keeps its entry");
	rdmad_mr_cache_put(c, a);
}

/* ---- threads, and a random run against the model ------------------------ */

struct worker {
	struct rdmad_mr_cache *cache;
	unsigned int seed;
	unsigned int stale;
	bool stop;
};

/* Not stale for a get that began when the model said @before: pages a
 * change had finished with before the get may not come from older pages
 * (changes racing with the get may). */
static bool fresh_since(const struct ibv_mr *mr, size_t first, size_t n,
			const unsigned int *before)
{
	const struct fake_mr *f = (const struct fake_mr *)mr;
	size_t i;
	bool ok = true;

	pthread_mutex_lock(&fake_lock);
	for (i = 0; i < n; i++)
		ok &= f->epoch[first + i] >= before[i];
	pthread_mutex_unlock(&fake_lock);
	return ok;
}

/* Pages [100, 164) are the threads'; a remapper changes [100, 132).
 * Half the gets ask for one buffer again and again (the lock-free hit of
 * the thread's last entry), half for random ranges. */
static void *getter(void *arg)
{
	struct worker *w = arg;
	unsigned int before[4];
	struct ibv_mr *mr;
	size_t i, k, first, n;

	for (i = 0; i < 20000; i++) {
		first = i % 2 ? 104 : 100 + rand_r(&w->seed) % 60;
		n = i % 2 ? 4 : 1 + rand_r(&w->seed) % 4;
		pthread_mutex_lock(&fake_lock);
		for (k = 0; k < n; k++)
			before[k] = done[first + k];
		pthread_mutex_unlock(&fake_lock);
		mr = get(w->cache, first, n, 0);
		if (mr && !fresh_since(mr, first, n, before))
			__atomic_add_fetch(&w->stale, 1, __ATOMIC_RELAXED);
		if (mr)
			rdmad_mr_cache_put(w->cache, mr);
	}
	return NULL;
}

static void *remapper(void *arg)
{
	struct worker *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED))
		remap_fixed(100 + rand_r(&w->seed) % 28, 4);
	return NULL;
}

/* Four getters and a remapper on one cache: how many stale MRs. */
static unsigned int threads_run(struct rdmad_mr_cache *c)
{
	struct worker w[5];
	pthread_t t[5];
	unsigned int stale = 0;
	int i;

	for (i = 0; i < 5; i++)
		w[i] = (struct worker){.cache = c, .seed = (unsigned int)i};
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, getter, &w[i]);
	pthread_create(&t[4], NULL, remapper, &w[4]);
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		stale += w[i].stale;
	}
	__atomic_store_n(&w[4].stop, true, __ATOMIC_RELAXED);
	pthread_join(t[4], NULL);
	return stale;
}

static void test_threads(void)
{
	struct rdmad_mr_cache *c = new_cache(16, 0, 0);
	unsigned int stale;

	stale = threads_run(c);
	CHECK(stale == 0, "%u stale MRs", stale);
	CHECK(stats(c).in_use == 0 && stats(c).entries <= 16);
	CHECK(stats(c).hits + stats(c).misses + stats(c).bypassed == 80000);
	rdmad_mr_cache_flush(c);
	CHECK(rdmad_mr_cache_destroy(c) == 0);
	/* What the same finds without the monitor, for the log: how often
	 * the remapper overlaps the getters varies from run to run, so it is
	 * no check (random_run()'s is). */
	c = new_cache(16, 0, 0);
	mrc_cache_unmonitored(c);
	stale = threads_run(c);
	printf("threads: 0 stale MRs in 80000 gets; %u without the monitor\n",
	       stale);
}

/* @steps random gets, puts and changes over pages [0, 64); how many gets
 * returned a stale MR. */
static unsigned int random_run(struct rdmad_mr_cache *c, unsigned int steps,
			       unsigned int seed)
{
	static void (*const change[])(size_t, size_t) = {
		remap_fixed, unmap_then_map, dontneed, mremap_away};
	struct ibv_mr *held[8] = {0};
	size_t first[8], n[8], k, f, len;
	unsigned int step, stale = 0;

	for (step = 0; step < steps; step++) {
		k = rand_r(&seed) % 8;
		f = rand_r(&seed) % 60;
		len = 1 + rand_r(&seed) % 4;
		switch (rand_r(&seed) % 4) {
		case 0:
		case 1:
			if (held[k])
				rdmad_mr_cache_put(c, held[k]);
			held[k] = get(c, f, len, rand_r(&seed) % 2);
			first[k] = f;
			n[k] = len;
			if (held[k] && !fresh(held[k], f, len))
				stale++;
			break;
		case 2:
			if (held[k])
				rdmad_mr_cache_put(c, held[k]);
			held[k] = NULL;
			break;
		default:
			change[rand_r(&seed) % 4](f, len);
			break;
		}
	}
	for (k = 0; k < 8; k++)
		if (held[k])
			rdmad_mr_cache_put(c, held[k]);
	(void)first;
	(void)n;
	return stale;
}

static void test_random(void)
{
	struct rdmad_mr_cache *c = new_cache(32, 0, 0);
	unsigned int stale;

	stale = random_run(c, 20000, 1);
	CHECK(stale == 0, "%u stale MRs in 20000 steps", stale);
	printf("random run: %llu hits, %llu misses, %llu invalidations, "
	       "%llu evictions, 0 stale\n",
	       (unsigned long long)stats(c).hits,
	       (unsigned long long)stats(c).misses,
	       (unsigned long long)stats(c).invalidations,
	       (unsigned long long)stats(c).evictions);
	rdmad_mr_cache_flush(c);
	rdmad_mr_cache_destroy(c);
	/* The check can fail: the same run without the monitor. */
	c = new_cache(32, 0, 0);
	mrc_cache_unmonitored(c);
	stale = random_run(c, 20000, 1);
	CHECK(stale > 0, "without the monitor nothing was stale");
	printf("random run without the monitor: %u stale MRs\n", stale);
}

int main(void)
{
	struct rdmad_mr_cache *probe;

	ps = (size_t)sysconf(_SC_PAGESIZE);
	region = anon(NULL, PAGES * ps, 0);
	probe = mrc_cache_new_ops(NULL, NULL, &fake_ops, "probe0");
	monitored = rdmad_mr_cache_is_caching(probe) == 1;
	test_index();
	test_vma();
	test_hit_merge_pass();
	test_bounds();
	test_remote_and_env();
	if (monitored) {
		test_changes();
		test_brk();
		test_fork();
		test_threads();
		test_random();
	} else {
		printf("SKIP (monitor cases): %s\n",
		       rdmad_mr_cache_get_reason(probe));
	}
	test_leaving();
	return failures ? 1 : 0;
}
