/* SPDX-License-Identifier: MIT */
/*
 * Fork safety, proven with real fork() children: a registered page is
 * absent in a child (it gets SIGSEGV touching it), its neighbours are not.
 * One source, run against three implementations of the same semantics:
 *
 *   test-fork ibverbs   libibverbs' own tracker (ibv_fork_init and the
 *                       exported ibv_dontfork_range/ibv_dofork_range)
 *   test-fork shim      the same ibv_ calls, under LD_PRELOAD of
 *                       librdmad-preload.so (our tracker)
 *   test-fork rdmad     our tracker through librdmad's rdmad_ calls
 *
 * Each case runs in a fresh process (this program re-executed with the
 * case name and, for some, extra environment), since the trackers' state
 * is process-wide and some cases need "init not called yet".  Cases that
 * check what only our tracker promises (deferral, statistics, strict
 * policy, unneeded) are skipped for libibverbs.
 *
 * Kernels >= 5.13 copy pinned pages at fork and say so through RDMA
 * netlink; there both trackers would rightly do nothing.  So the driver
 * forces tracking on where tracking is under test: RDMAD_FORK_COPY_ON_FORK=0
 * for ours, RDMAV_USE_MADVISE=1 for libibverbs (rdma-core >= 45 skips its
 * tracker on such kernels without it; 44 tracks anyway).  libibverbs'
 * status still says UNNEEDED there, and the cases expect that.  The
 * "unneeded" case forces the opposite (=1), and "kernel" overrides
 * nothing: ours must then agree with what libibverbs reads from the
 * kernel.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rdmad.h"

/* Exported by libibverbs, declared only in its driver header. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

#define SKIP 77
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

enum impl {
	IMPL_IBVERBS,
	IMPL_SHIM,
	IMPL_RDMAD,
};

static enum impl impl;
static size_t pg;
/* Does the running kernel copy pinned pages at fork (libibverbs' answer)? */
static bool kernel_cof;

/* ---- the implementation under test, as 0 / -errno ------------------------ */

static int do_init(void)
{
	switch (impl) {
	case IMPL_IBVERBS:
	case IMPL_SHIM:
		return -ibv_fork_init();
	case IMPL_RDMAD:
		return rdmad_fork_init();
	}
	return -EINVAL;
}

static int do_status(void)
{
	switch (impl) {
	case IMPL_IBVERBS:
	case IMPL_SHIM:
		return (int)ibv_is_fork_initialized();
	case IMPL_RDMAD:
		return (int)rdmad_is_fork_initialized();
	}
	return -1;
}

static int ibv_result(int r)
{
	return r ? -(errno ? errno : EIO) : 0;
}

static int reg(void *base, size_t size)
{
	switch (impl) {
	case IMPL_IBVERBS:
	case IMPL_SHIM:
		errno = 0;
		return ibv_result(ibv_dontfork_range(base, size));
	case IMPL_RDMAD:
		return rdmad_dontfork_range(base, size);
	}
	return -EINVAL;
}

static int unreg(void *base, size_t size)
{
	switch (impl) {
	case IMPL_IBVERBS:
	case IMPL_SHIM:
		errno = 0;
		return ibv_result(ibv_dofork_range(base, size));
	case IMPL_RDMAD:
		return rdmad_dofork_range(base, size);
	}
	return -EINVAL;
}

static bool ours(void)
{
	return impl != IMPL_IBVERBS;
}

/* libibverbs' own ibv_is_fork_initialized(), also under the shim (which
 * interposes it): UNNEEDED when the kernel copies pinned pages at fork. */
static bool ibverbs_says_unneeded(void)
{
	void *lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	enum ibv_fork_status (*status)(void);
	bool unneeded;

	CHECK(lib);
	status = (enum ibv_fork_status(*)(void))dlsym(
		lib, "ibv_is_fork_initialized");
	CHECK(status);
	unneeded = status() == IBV_FORK_UNNEEDED;
	dlclose(lib);
	return unneeded;
}

/* The status a tracker forced on reports: libibverbs says UNNEEDED on a
 * copy-on-fork kernel whatever it does; ours follows its override. */
static int tracking_status(enum ibv_fork_status s)
{
	return !ours() && kernel_cof ? IBV_FORK_UNNEEDED : (int)s;
}

static struct rdmad_fork_stats stats(void)
{
	struct rdmad_fork_stats s;

	CHECK(rdmad_fork_get_stats(&s, sizeof(s)) == 0);
	return s;
}

/* AddressSanitizer, as gcc says it (__SANITIZE_ADDRESS__) or clang. */
static bool under_asan(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return true;
#endif
#endif
	return false;
}

/* ---- probing a child ----------------------------------------------------- */

static sigjmp_buf probe_jmp;

static void on_segv(int sig)
{
	siglongjmp(probe_jmp, 1);
}

static char touch(volatile const char *p)
{
	if (sigsetjmp(probe_jmp, 1))
		return 0;
	(void)*p;
	return 1;
}

/* Fork; in the child, try to read each address; ret[i] = 1 if readable. */
static void probe(char *const *addrs, int n, char *ret)
{
	int fds[2], status;
	pid_t pid;

	CHECK(pipe(fds) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, on_segv);
		signal(SIGBUS, on_segv);
		for (int i = 0; i < n; i++)
			ret[i] = touch(addrs[i]);
		_exit(write(fds[1], ret, n) == n ? 0 : 1);
	}
	close(fds[1]);
	CHECK(read(fds[0], ret, n) == n);
	close(fds[0]);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static bool in_child(void *addr)
{
	char r;

	probe((char *[]){addr}, 1, &r);
	return r;
}

static char *map_pages(size_t n)
{
	char *p = mmap(NULL, n * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	memset(p, 0x5a, n * pg);
	return p;
}

/* @n pages that do not straddle a 4 MiB boundary: our tracker keeps
 * ranges apart at such boundaries (its granules), so counts of ranges
 * depend on it.  Maps a larger area and gives back what is not used. */
static char *map_pages_unsplit(size_t n)
{
	const uintptr_t granule = (uintptr_t)4 << 20;
	size_t len = n * pg + granule;
	char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;

	CHECK(base != MAP_FAILED);
	p = (char *)(((uintptr_t)base + granule - 1) & ~(granule - 1));
	if (p > base)
		munmap(base, p - base);
	munmap(p + n * pg, base + len - (p + n * pg));
	memset(p, 0x5a, n * pg);
	return p;
}

/* ---- cases --------------------------------------------------------------- */

static int case_basic(void)
{
	char *p = map_pages(3), r[3];

	CHECK(do_init() == 0);
	CHECK(reg(p + pg, pg) == 0);
	probe((char *[]){p, p + pg, p + 2 * pg}, 3, r);
	CHECK(r[0] == 1 && r[1] == 0 && r[2] == 1);
	CHECK(unreg(p + pg, pg) == 0);
	CHECK(in_child(p + pg));
	return 0;
}

static int case_refcount(void)
{
	char *p = map_pages(4), r[4];
	char *const all[] = {p, p + pg, p + 2 * pg, p + 3 * pg};

	CHECK(do_init() == 0);
	CHECK(reg(p, 2 * pg) == 0);	 /* pages 0-1 */
	CHECK(reg(p + pg, 2 * pg) == 0); /* pages 1-2 */
	CHECK(reg(p + pg, pg) == 0);	 /* page 1 again */
	probe(all, 4, r);
	CHECK(!r[0] && !r[1] && !r[2] && r[3]);
	CHECK(unreg(p, 2 * pg) == 0);
	probe(all, 4, r);
	CHECK(r[0] && !r[1] && !r[2] && r[3]);
	CHECK(unreg(p + pg, 2 * pg) == 0);
	probe(all, 4, r);
	CHECK(r[0] && !r[1] && r[2] && r[3]);
	CHECK(unreg(p + pg, pg) == 0);
	probe(all, 4, r);
	CHECK(r[0] && r[1] && r[2] && r[3]);
	return 0;
}

static int case_unaligned(void)
{
	char *p = map_pages(3), r[3];
	struct rdmad_fork_stats before, after;

	CHECK(do_init() == 0);
	if (ours())
		before = stats();
	/* 10 bytes in page 1: round marks all of page 1, nothing else. */
	CHECK(reg(p + pg + 100, 10) == 0);
	probe((char *[]){p, p + pg, p + 2 * pg}, 3, r);
	CHECK(r[0] && !r[1] && r[2]);
	if (ours()) {
		after = stats();
		CHECK(after.unaligned_bytes - before.unaligned_bytes ==
		      pg - 10);
	}
	CHECK(unreg(p + pg + 100, 10) == 0);
	CHECK(in_child(p + pg));
	return 0;
}

static int case_churn(void)
{
	char *p = map_pages(16);
	struct rdmad_fork_stats s;

	CHECK(do_init() == 0);
	for (int i = 0; i < 5000; i++) {
		CHECK(reg(p, 16 * pg) == 0);
		if (i == 2500)
			CHECK(!in_child(p + 7 * pg));
		CHECK(unreg(p, 16 * pg) == 0);
	}
	CHECK(in_child(p) && in_child(p + 15 * pg));
	if (ours() && !getenv("RDMAD_FORK_DEFER")) {
		s = stats();
		CHECK(s.madvise_saved >= 4999);
		CHECK(s.deferred_ranges == 0 && s.pages_marked == 0);
	}
	return 0;
}

/* Register, release, then let @remap replace the memory, register again:
 * the new mapping must be absent in a child. */
static void remap_check(char *(*remap)(char *old, size_t len), size_t len)
{
	char *p = map_pages(len / pg), *q;

	CHECK(do_init() == 0);
	CHECK(reg(p, len) == 0);
	CHECK(unreg(p, len) == 0);
	q = remap(p, len);
	memset(q, 1, len);
	CHECK(reg(q, len) == 0);
	CHECK(!in_child(q) && !in_child(q + len - 1));
	CHECK(unreg(q, len) == 0);
	CHECK(in_child(q));
}

static char *remap_munmap(char *old, size_t len)
{
	char *q;

	CHECK(munmap(old, len) == 0);
	q = mmap(old, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(q == old);
	return q;
}

static char *remap_mremap(char *old, size_t len)
{
	char *tmp = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0),
	     *q;

	/* Move the old pages away and put a fresh mapping where they were. */
	CHECK(tmp != MAP_FAILED);
	CHECK(mremap(old, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, tmp) == tmp);
	q = mmap(old, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(q == old);
	return q;
}

static int case_remap_mmap(void)
{
	remap_check(remap_munmap, 16 * pg);
	return 0;
}

static int case_remap_mremap(void)
{
	remap_check(remap_mremap, 16 * pg);
	return 0;
}

/* free() + malloc() of a 1 MiB chunk: glibc unmaps and maps it with its
 * own internal calls, which no PLT hook would see. */
static int case_remap_malloc(void)
{
	const size_t len = 1 << 20;
	char *p, *q;
	int same = 0;

	CHECK(do_init() == 0);
	p = malloc(len);
	CHECK(p);
	for (int i = 0; i < 20; i++) {
		memset(p, 1, len);
		CHECK(reg(p, len) == 0);
		CHECK(unreg(p, len) == 0);
		free(p);
		q = malloc(len);
		CHECK(q);
		same += q == p;
		memset(q, 2, len);
		CHECK(reg(q, len) == 0);
		CHECK(!in_child(q) && !in_child(q + len - 1));
		CHECK(unreg(q, len) == 0);
		p = q;
	}
	free(p);
	printf("  remap_malloc: the same address came back %d/20 times\n",
	       same);
	return 0;
}

static int case_system_popen(void)
{
	char *p = map_pages(4), line[16] = "";
	FILE *f;

	CHECK(do_init() == 0);
	CHECK(reg(p, 4 * pg) == 0);
	CHECK(system("exit 3") != -1);
	CHECK(WEXITSTATUS(system("exit 3")) == 3);
	f = popen("echo hello", "r");
	CHECK(f);
	CHECK(fgets(line, sizeof(line), f));
	CHECK(pclose(f) == 0);
	CHECK(!strcmp(line, "hello\n"));
	CHECK(!in_child(p));
	CHECK(unreg(p, 4 * pg) == 0);
	return 0;
}

static int case_too_late(void)
{
	char *p = map_pages(1);

	CHECK(do_status() == tracking_status(IBV_FORK_DISABLED));
	CHECK(reg(p, pg) == 0);
	CHECK(unreg(p, pg) == 0);
	CHECK(do_init() == -EINVAL);
	CHECK(do_status() == tracking_status(IBV_FORK_DISABLED));
	CHECK(in_child(p));
	return 0;
}

static int case_status(void)
{
	CHECK(do_status() == tracking_status(IBV_FORK_DISABLED));
	CHECK(do_init() == 0);
	CHECK(do_status() == tracking_status(IBV_FORK_ENABLED));
	CHECK(do_init() == 0);
	return 0;
}

/* Run with RDMAV_FORK_SAFE or IBV_FORK_SAFE set: libibverbs honours them
 * when it initialises (first device list), ours at the first call. */
static int case_env_fork_safe(void)
{
	char *p = map_pages(2);
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	CHECK(do_status() == tracking_status(IBV_FORK_ENABLED));
	CHECK(reg(p, pg) == 0);
	CHECK(!in_child(p) && in_child(p + pg));
	CHECK(unreg(p, pg) == 0);
	CHECK(in_child(p));
	return 0;
}

static int case_strict(void)
{
	char *p = map_pages(2);

	if (!ours())
		return SKIP;
	CHECK(do_init() == 0);
	CHECK(reg(p + 1, pg) == -EINVAL);
	CHECK(reg(p, pg + 1) == -EINVAL);
	CHECK(stats().ranges == 0 && stats().pages_marked == 0);
	CHECK(in_child(p));
	CHECK(reg(p, pg) == 0);
	CHECK(!in_child(p));
	CHECK(unreg(p, pg) == 0);
	return 0;
}

/* Run with RDMAD_FORK_COPY_ON_FORK=1, as on a kernel that copies pinned
 * pages at fork: no marking, no syscall. */
static int case_unneeded(void)
{
	char *p = map_pages(1);

	if (!ours())
		return SKIP;
	CHECK(do_status() == IBV_FORK_UNNEEDED);
	CHECK(do_init() == 0);
	CHECK(do_status() == IBV_FORK_UNNEEDED);
	CHECK(reg(p, pg) == 0);
	CHECK(in_child(p));
	CHECK(stats().madvise_calls == 0);
	CHECK(unreg(p, pg) == 0);
	return 0;
}

/* Nothing overridden: ours says what the kernel says, as libibverbs reads
 * it.  On a copy-on-fork kernel ours marks nothing (the child sees the
 * page); elsewhere it tracks.  For libibverbs this prints what it does. */
static int case_kernel(void)
{
	char *p = map_pages(1);
	int want = kernel_cof ? IBV_FORK_UNNEEDED : IBV_FORK_DISABLED;

	printf("  kernel: copies pinned pages at fork: %s\n",
	       kernel_cof ? "yes" : "no");
	CHECK(do_status() == want);
	CHECK(do_init() == 0);
	CHECK(do_status() == (kernel_cof ? want : IBV_FORK_ENABLED));
	CHECK(reg(p, pg) == 0);
	if (!ours() && kernel_cof)
		printf("  kernel: libibverbs %s registered pages\n",
		       in_child(p) ? "does not mark" : "still marks");
	else
		CHECK(in_child(p) == kernel_cof);
	if (ours() && kernel_cof)
		CHECK(stats().madvise_calls == 0);
	CHECK(unreg(p, pg) == 0);
	CHECK(in_child(p));
	return 0;
}

static int case_stats(void)
{
	char *p = map_pages_unsplit(8);
	struct rdmad_fork_stats s;

	if (!ours())
		return SKIP;
	CHECK(do_init() == 0);
	CHECK(reg(p, 2 * pg) == 0);
	CHECK(reg(p + 2 * pg, 2 * pg) == 0); /* adjacent: coalesced */
	CHECK(reg(p + 6 * pg, pg) == 0);
	s = stats();
	CHECK(s.ranges == 3 && s.pages_marked == 5 && s.deferred_ranges == 0);
	CHECK(unreg(p, 2 * pg) == 0);
	CHECK(unreg(p + 2 * pg, 2 * pg) == 0);
	s = stats();
	CHECK(s.ranges == 1 && s.pages_marked == 5);
	CHECK(s.deferred_ranges == 1 && s.madvise_saved == 2);
	CHECK(in_child(p)); /* the fork flushed the deferred range */
	s = stats();
	CHECK(s.deferred_ranges == 0 && s.pages_marked == 1);
	CHECK(rdmad_fork_get_stats(NULL, sizeof(s)) == -EINVAL);
	CHECK(rdmad_fork_get_stats(&s, sizeof(s) + 8) == -EINVAL);
	CHECK(rdmad_fork_get_stats(&s, 16) == 0);
	errno = 0;
	CHECK(!rdmad_reg_mr(NULL, p, pg, 0) && errno == EINVAL);
	return 0;
}

/* Exhaust vm.max_map_count with single pages of alternating protection,
 * then register three pages whose marking needs a VMA split at the end:
 * [guard][0 rw][1 r][2-3 rw][guard].  The kernel marks 0 and 1 (whole
 * VMAs, no split) and then fails to split 2-3: the madvise call fails
 * having marked part of its range.  A failed registration must leave every
 * page as it was.  The PROT_NONE guards keep page 0 from merging with a
 * neighbouring mapping; without them the first split needed could be at
 * page 0, nothing would be marked, and the case would prove nothing (it
 * passed or failed with the process's memory layout). */
static int case_vma_exhaustion(void)
{
	char *g = map_pages(6), *p = g + pg, r[4];
	struct rdmad_fork_stats before = {0}, after;
	long mapped = 0;
	int e;

	if (under_asan()) {
		printf("  vma_exhaustion: ASan needs mappings of its own; "
		       "skipped\n");
		return SKIP;
	}
	CHECK(do_init() == 0);
	CHECK(mprotect(g, pg, PROT_NONE) == 0);
	CHECK(mprotect(g + 5 * pg, pg, PROT_NONE) == 0);
	CHECK(mprotect(p + pg, pg, PROT_READ) == 0);
	if (ours())
		before = stats();
	for (;; mapped++) {
		int prot = mapped & 1 ? PROT_READ : PROT_READ | PROT_WRITE;

		if (mmap(NULL, pg, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
		    MAP_FAILED)
			break;
	}
	e = reg(p, 3 * pg);
	printf("  vma_exhaustion: %ld mappings, then register: %s\n", mapped,
	       strerror(-e));
	/* Linux reports the failed VMA split as EAGAIN since 5.x, ENOMEM
	 * before. */
	CHECK(e == -ENOMEM || e == -EAGAIN);
	probe((char *[]){p, p + pg, p + 2 * pg, p + 3 * pg}, 4, r);
	if (!ours()) {
		/* rdma-core rolls back the calls before the failing one, not
		 * what the failing call marked (libibverbs/memory.c,
		 * ibv_madvise_range): pages 0-1 may stay hidden. */
		printf("  vma_exhaustion: libibverbs left %d of 2 pages hidden "
		       "from the child\n",
		       !r[0] + !r[1]);
		CHECK(r[2] && r[3]);
		return 0;
	}
	CHECK(r[0] && r[1] && r[2] && r[3]);
	after = stats();
	CHECK(after.ranges == before.ranges);
	CHECK(after.pages_marked == before.pages_marked);
	return 0;
}

struct worker {
	pthread_t thread;
	char *buf; /* 64 pages: page 0 held, 1..63 churned */
	bool *stop;
	long cycles;
	int error;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	while (!__atomic_load_n(w->stop, __ATOMIC_RELAXED)) {
		size_t i = 1 + w->cycles % 60, n = 1 + w->cycles % 3;

		char *r = w->buf + i * pg;

		if (reg(r, n * pg) || unreg(r, n * pg))
			w->error = 1;
		w->cycles++;
	}
	return NULL;
}

static int case_threads(void)
{
	struct worker w[8];
	bool stop = false;
	char *never = map_pages(1);

	CHECK(do_init() == 0);
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){.buf = map_pages(64), .stop = &stop};
		CHECK(reg(w[i].buf, pg) == 0);
		CHECK(!pthread_create(&w[i].thread, NULL, worker_run, &w[i]));
	}
	for (int f = 0; f < 50; f++) {
		char *addrs[9], r[9];

		for (int i = 0; i < 8; i++)
			addrs[i] = w[i].buf;
		addrs[8] = never;
		probe(addrs, 9, r);
		for (int i = 0; i < 8; i++)
			CHECK(!r[i]);
		CHECK(r[8]);
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	for (int i = 0; i < 8; i++) {
		CHECK(pthread_join(w[i].thread, NULL) == 0);
		CHECK(!w[i].error && w[i].cycles > 0);
		CHECK(unreg(w[i].buf, pg) == 0);
		CHECK(in_child(w[i].buf + 5 * pg));
	}
	return 0;
}

/* Run with RDMAV_HUGEPAGES_SAFE=1 on a 2 MiB huge page: a small range
 * marks the whole huge page. */
static int case_hugepages(void)
{
	const size_t huge = 2 << 20;
	char *p;

	p = mmap(NULL, 2 * huge, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p == MAP_FAILED) {
		printf("  hugepages: no 2 MiB huge page to map (%s)%s\n",
		       strerror(errno),
		       geteuid() ? "; reserving one needs root" : "");
		return SKIP;
	}
	memset(p, 1, 2 * huge);
	CHECK(do_init() == 0);
	CHECK(reg(p + huge + 3 * pg, pg) == 0);
	CHECK(in_child(p) && !in_child(p + huge) &&
	      !in_child(p + 2 * huge - 1));
	CHECK(unreg(p + huge + 3 * pg, pg) == 0);
	CHECK(in_child(p + huge));
	munmap(p, 2 * huge);
	return 0;
}

/* Mirrors struct verbs_mr of rdma-core's driver.h (mr_type 0: plain MR). */
struct fake_verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type;
	int access;
};

/* libibverbs itself calls ibv_dontfork_range (through its PLT) in
 * ibv_rereg_mr() before touching the device; with an unmapped range the
 * marking fails and it returns without going further.  Under the shim,
 * our tracker must be the one that tried. */
static int case_interpose(void)
{
	struct fake_verbs_mr mr = {.ibv_mr.addr = (void *)1};
	/* Below vm.mmap_min_addr: never mapped, not even by ASan. */
	char *hole = (char *)(4 * pg);
	uint64_t calls;
	int r;

	/* Without the shim libibverbs' tracker is off and would go on to
	 * the (fake) device. */
	if (impl == IMPL_RDMAD)
		return SKIP;
	CHECK(do_init() == 0);
	/* The fake MR must never reach a provider: go on only when the
	 * tracker under test fails to mark a hole, as rereg's will.  Another
	 * hole: libibverbs 44 counts a failed range as registered, and its
	 * next registration there succeeds without marking. */
	if (reg(hole + 4 * pg, pg) == 0) {
		printf("  interpose: the tracker marks nothing here; "
		       "skipped\n");
		return SKIP;
	}
	calls = stats().madvise_calls;
	r = ibv_rereg_mr(&mr.ibv_mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			 hole, pg, 0);
	CHECK(r == IBV_REREG_MR_ERR_DONT_FORK_NEW);
	if (impl == IMPL_SHIM)
		CHECK(stats().madvise_calls > calls);
	else
		CHECK(stats().madvise_calls == calls);
	return 0;
}

/* Random registrations and releases on 64 pages across a 4 MiB boundary,
 * checked against a model (per-page counts) by a child after every few
 * steps: splits, merges and
 * deferral must never leave a page marked or unmarked wrongly.  With
 * @reuse, half the registrations take exactly a range released earlier,
 * as buffer pools do (the tracker's fast paths). */
static void model(bool reuse)
{
	enum { PAGES = 64, LIVE = 24, FREED = 8 };
	const uintptr_t granule = 4 << 20; /* the tracker's: see rangemap.c */
	char *area = map_pages(2 * granule / pg + PAGES), *addrs[PAGES];
	/* Half below a 4 MiB boundary, half above: two granules, two shards. */
	char *p = (char *)((((uintptr_t)area + PAGES / 2 * pg + granule - 1) &
			    ~(granule - 1)) -
			   PAGES / 2 * pg),
	     r[PAGES];
	int count[PAGES] = {0}, live = 0, freed = 0;
	struct {
		int first, n;
	} held[LIVE], gone[FREED];
	unsigned int seed = 42;

	CHECK(do_init() == 0);
	for (int i = 0; i < PAGES; i++)
		addrs[i] = p + i * pg;
	for (int step = 0; step < 3000; step++) {
		if (live < LIVE && (live == 0 || rand_r(&seed) % 2)) {
			int first = rand_r(&seed) % PAGES;
			int n = 1 +
				rand_r(&seed) %
					(PAGES - first < 8 ? PAGES - first : 8);

			if (reuse && freed && rand_r(&seed) % 2) {
				int k = rand_r(&seed) % freed;

				first = gone[k].first;
				n = gone[k].n;
			}
			CHECK(reg(p + first * pg, n * pg) == 0);
			held[live].first = first;
			held[live++].n = n;
			for (int i = first; i < first + n; i++)
				count[i]++;
		} else {
			int k = rand_r(&seed) % live, slot;
			int first = held[k].first, n = held[k].n;

			CHECK(unreg(p + first * pg, n * pg) == 0);
			for (int i = first; i < first + n; i++)
				count[i]--;
			slot = freed < FREED ? freed++ : step % FREED;
			gone[slot].first = first;
			gone[slot].n = n;
			held[k] = held[--live];
		}
		if (step % 150 != 0)
			continue;
		probe(addrs, PAGES, r);
		for (int i = 0; i < PAGES; i++)
			CHECK(r[i] == (count[i] == 0));
	}
}

static int case_model(void)
{
	model(false);
	return 0;
}

static int case_model_reuse(void)
{
	model(true);
	return 0;
}

/* A released range whose memory is gone, registered again: an error, as
 * for any unmapped memory; once mapped again it registers and a child
 * misses it. */
static int case_remap_gap(void)
{
	char *p = map_pages(16), *q;

	/* libibverbs 44 fails as well, but its next registration of the
	 * range marks nothing (seen here: the child reads it). */
	if (!ours())
		return SKIP;
	CHECK(do_init() == 0);
	CHECK(reg(p, 16 * pg) == 0);
	CHECK(unreg(p, 16 * pg) == 0);
	CHECK(munmap(p, 16 * pg) == 0);
	CHECK(reg(p, 16 * pg) == -ENOMEM);
	q = mmap(p, 16 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(q == p);
	memset(q, 1, 16 * pg);
	CHECK(reg(q, 16 * pg) == 0);
	CHECK(!in_child(q) && !in_child(q + 15 * pg));
	CHECK(unreg(q, 16 * pg) == 0);
	CHECK(in_child(q));
	return 0;
}

/* ---- driver -------------------------------------------------------------- */

struct test_case {
	const char *name;
	int (*run)(void);
	const char *env; /* NAME=value to add, or NULL */
	bool kernel;	 /* leave tracking as the kernel has it */
};

static const struct test_case cases[] = {
	{"basic", case_basic, NULL},
	{"refcount", case_refcount, NULL},
	{"unaligned", case_unaligned, NULL},
	{"churn", case_churn, NULL},
	{"remap_mmap", case_remap_mmap, NULL},
	{"remap_mremap", case_remap_mremap, NULL},
	{"remap_malloc", case_remap_malloc, NULL},
	{"remap_mmap_at_fork", case_remap_mmap, "RDMAD_FORK_REMARK=fork"},
	{"remap_mremap_at_fork", case_remap_mremap, "RDMAD_FORK_REMARK=fork"},
	{"remap_malloc_at_fork", case_remap_malloc, "RDMAD_FORK_REMARK=fork"},
	{"churn_at_fork", case_churn, "RDMAD_FORK_REMARK=fork"},
	{"system_popen", case_system_popen, NULL},
	{"too_late", case_too_late, NULL},
	{"status", case_status, NULL},
	{"env_rdmav_fork_safe", case_env_fork_safe, "RDMAV_FORK_SAFE=1"},
	{"env_ibv_fork_safe", case_env_fork_safe, "IBV_FORK_SAFE=yes"},
	{"strict", case_strict, "RDMAD_FORK_UNALIGNED=strict"},
	{"unneeded", case_unneeded, "RDMAD_FORK_COPY_ON_FORK=1"},
	{"kernel", case_kernel, NULL, true},
	{"stats", case_stats, NULL},
	{"no_defer", case_churn, "RDMAD_FORK_DEFER=0"},
	{"vma_exhaustion", case_vma_exhaustion, NULL},
	{"threads", case_threads, NULL},
	{"model", case_model, NULL},
	{"model_no_defer", case_model, "RDMAD_FORK_DEFER=0"},
	{"model_remark_at_fork", case_model, "RDMAD_FORK_REMARK=fork"},
	{"model_reuse", case_model_reuse, NULL},
	{"model_reuse_no_defer", case_model_reuse, "RDMAD_FORK_DEFER=0"},
	{"model_reuse_at_fork", case_model_reuse, "RDMAD_FORK_REMARK=fork"},
	{"remap_gap", case_remap_gap, NULL},
	{"hugepages", case_hugepages, "RDMAV_HUGEPAGES_SAFE=1"},
	{"interpose", case_interpose, NULL},
};

extern char **environ;

/* What forces the tracker under test on, even on a copy-on-fork kernel. */
static const char *force_tracking(void)
{
	return ours() ? "RDMAD_FORK_COPY_ON_FORK=0" : "RDMAV_USE_MADVISE=1";
}

/* Is @var (NAME=value) one of the variables this driver decides? */
static bool driver_owned(const char *var)
{
	static const char *const names[] = {"RDMAD_FORK_COPY_ON_FORK=",
					    "RDMAV_USE_MADVISE="};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(var, names[i], strlen(names[i])))
			return true;
	return false;
}

/* The case's environment: ours, less what the driver decides, plus the
 * case's own variable and, unless the case sets it or asks for the
 * kernel's answer, tracking forced on. */
static void case_env(const struct test_case *c, char **env, int cap)
{
	int n = 0;

	for (char **e = environ; *e && n < cap - 3; e++)
		if (!driver_owned(*e))
			env[n++] = *e;
	if (c->env)
		env[n++] = (char *)c->env;
	if (!c->kernel && !(c->env && driver_owned(c->env)))
		env[n++] = (char *)force_tracking();
	env[n] = NULL;
}

static int run_case(const char *self, const char *mode,
		    const struct test_case *c)
{
	char *argv[] = {(char *)self, (char *)mode, (char *)c->name, NULL};
	char *env[512];
	int status;
	pid_t pid;

	case_env(c, env, 512);
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, env))
		return 1;
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "%s: killed by signal %d\n", c->name,
			WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status);
}

/* Reserve 2 MiB huge pages for the hugepages case when we may; returns
 * the old count to restore, or -1. */
static long reserve_hugepages(void)
{
	const char *path = "/proc/sys/vm/nr_hugepages";
	long old = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &old) != 1)
		old = -1;
	fclose(f);
	if (old < 0 || old >= 4 || geteuid() != 0)
		return -1;
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%ld\n", old + 4);
	fclose(f);
	return old;
}

static void restore_hugepages(long old)
{
	FILE *f;

	if (old < 0)
		return;
	f = fopen("/proc/sys/vm/nr_hugepages", "w");
	if (f) {
		fprintf(f, "%ld\n", old);
		fclose(f);
	}
}

static int run_all(const char *self, const char *mode)
{
	int failed = 0, passed = 0;
	long huge = reserve_hugepages();

	printf("# kernel copies pinned pages at fork: %s; tracking forced on "
	       "with %s but in case kernel\n",
	       kernel_cof ? "yes" : "no", force_tracking());
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = run_case(self, mode, &cases[i]);

		printf("%-4s %s/%s\n",
		       r == 0	   ? "ok"
		       : r == SKIP ? "SKIP"
				   : "FAIL",
		       mode, cases[i].name);
		failed += r != 0 && r != SKIP;
		passed += r == 0;
	}
	restore_hugepages(huge);
	if (failed)
		return 1;
	return passed ? 0 : SKIP;
}

int main(int argc, char **argv)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || argc > 3)
		goto usage;
	if (!strcmp(argv[1], "ibverbs"))
		impl = IMPL_IBVERBS;
	else if (!strcmp(argv[1], "shim"))
		impl = IMPL_SHIM;
	else if (!strcmp(argv[1], "rdmad"))
		impl = IMPL_RDMAD;
	else
		goto usage;
	if (impl == IMPL_SHIM && !getenv("LD_PRELOAD")) {
		printf("shim mode needs LD_PRELOAD=librdmad-preload.so\n");
		return SKIP;
	}
	kernel_cof = ibverbs_says_unneeded();
	if (argc == 2)
		return run_all(argv[0], argv[1]);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(argv[2], cases[i].name))
			return cases[i].run();
usage:
	fprintf(stderr, "usage: %s ibverbs|shim|rdmad [CASE]\n", argv[0]);
	return 2;
}
