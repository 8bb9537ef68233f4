/* SPDX-License-Identifier: MIT */
/*
 * The registration cache (librdmad(3), "Memory registration cache").
 *
 *   bench-mrcache native
 *     No device needed: a hit among 10,000 cached entries (fake MRs),
 *     beside its floor measured in the same run (a binary search over
 *     10,000 sorted starts plus an uncontended mutex), and what the
 *     monitor adds to munmap() of a cached range (and of one announced
 *     with rdmad_mr_cache_begin_change()), of a range whose entry was
 *     flushed (unwatched since), and of one it never saw; a 4 KiB miss
 *     with a fake MR and its floor counted instruction by instruction
 *     (ptrace single-steps, "figure steps-..." lines: counts, not ns).
 *   bench-mrcache verbs DEVICE
 *     Real MRs: per size, ibv_reg_mr() + ibv_dereg_mr(), ibv_reg_mr()
 *     alone, a miss and a hit of the cache, the miss in turns with its
 *     floor (the watch, the kind and the registration as one call);
 *     invalidation of a cached buffer (munmap, mmap MAP_FIXED, the next
 *     registration) beside the same without a cache; munmap() (4 KiB,
 *     64 KiB, 1 MiB) of a cached range, of one announced, of one whose
 *     entry was flushed, of one never cached.
 *   bench-mrcache fabric DEVICE
 *     The same through libfabric's verbs provider (fi_mr_reg + fi_close,
 *     its ofi_mr_cache under FI_MR_CACHE_MONITOR), where built with it;
 *     last, its hit and librdmad's taking turns in the one process.
 *
 * Every figure is the median of ROUNDS rounds, ns per operation, printed
 * as "figure NAME SIZE NS" lines that bench/run-bench-mrcache.sh puts
 * side by side; ratios are between figures of one run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "bench-util.h"
#include "mrcache/mrcache.h"

#ifdef HAVE_LIBFABRIC
#include "fabric-domain.h"
#endif

#define ROUNDS 5
#define ENTRIES 10000
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

static size_t ps;

static void *anon(void *at, size_t len, int flags)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (p == MAP_FAILED) {
		perror("bench-mrcache: mmap");
		exit(1);
	}
	return p;
}

/* Median over ROUNDS of @fn's ns per operation. */
static double median(double (*fn)(void *), void *arg)
{
	double r[ROUNDS];
	int i;

	for (i = 0; i < ROUNDS; i++)
		r[i] = fn(arg);
	qsort(r, ROUNDS, sizeof(r[0]), cmp_double);
	return r[ROUNDS / 2];
}

/* Medians over ROUNDS of @fa's and @fb's ns per operation, taking turns
 * round by round, so that both see the same load. */
static void median_beside(double (*fa)(void *), void *a, double (*fb)(void *),
			  void *b, double *ret_a, double *ret_b)
{
	double ra[ROUNDS], rb[ROUNDS];
	int i;

	for (i = 0; i < ROUNDS; i++) {
		ra[i] = fa(a);
		rb[i] = fb(b);
	}
	qsort(ra, ROUNDS, sizeof(ra[0]), cmp_double);
	qsort(rb, ROUNDS, sizeof(rb[0]), cmp_double);
	*ret_a = ra[ROUNDS / 2];
	*ret_b = rb[ROUNDS / 2];
}

static void figure(const char *name, size_t size, double ns)
{
	printf("figure %s %zu %.1f\n", name, size, ns);
}

/* A ratio of two figures taken in turns, as a figure line. */
static void figure_ratio(const char *name, size_t size, double ratio)
{
	printf("figure %s %zu %.3f\n", name, size, ratio);
}

/* ---- native: a hit among 10,000 entries, and munmap ---------------------- */

/* A hit's floor's entry: its count, alone in a cache line. */
struct count_line {
	unsigned int refcnt;
	char line[60];
};

static struct {
	char *region; /* ENTRIES slots of two pages; entries on the first */
	struct rdmad_mr_cache *cache;
	unsigned int *order;	   /* random slots */
	uintptr_t *starts;	   /* the floor's sorted array */
	struct count_line *counts; /* and its entries */
	pthread_mutex_t lock;
} nat = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct ibv_mr *fake_reg(struct ibv_pd *pd, void *addr, size_t length,
			       int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	(void)pd;
	(void)access;
	mr->addr = addr;
	mr->length = length;
	return mr;
}

static int fake_dereg(struct ibv_mr *mr)
{
	free(mr);
	return 0;
}

static char *slot(unsigned int i)
{
	return nat.region + (size_t)i * 2 * ps;
}

static double hits(void *arg)
{
	uint64_t t0 = now_ns();
	struct ibv_mr *mr;
	unsigned int i;

	(void)arg;
	for (i = 0; i < ENTRIES; i++) {
		mr = rdmad_mr_cache_get(nat.cache, slot(nat.order[i]) + 64, 256,
					IBV_ACCESS_LOCAL_WRITE);
		rdmad_mr_cache_put(nat.cache, mr);
	}
	return (double)(now_ns() - t0) / ENTRIES;
}

/* The same buffer again and again: the thread's last entry, taken
 * without the lock (what bench-mrcache verbs' cache-hit measures). */
static double hits_again(void *arg)
{
	unsigned int i, n = 1000000;
	struct ibv_mr *mr;
	uint64_t t0;

	(void)arg;
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		mr = rdmad_mr_cache_get(nat.cache, slot(0) + 64, 256,
					IBV_ACCESS_LOCAL_WRITE);
		rdmad_mr_cache_put(nat.cache, mr);
	}
	return (double)(now_ns() - t0) / n;
}

/* The floor of a hit: the search a hit does (index.c's, without a branch
 * on the comparison), the lock it takes and a count on its entry. */
static double floor_of_hit(void *arg)
{
	uint64_t t0 = now_ns();
	const uintptr_t *base;
	uintptr_t key;
	size_t n, half;
	unsigned int i;

	(void)arg;
	for (i = 0; i < ENTRIES; i++) {
		key = (uintptr_t)slot(nat.order[i]) + 64;
		pthread_mutex_lock(&nat.lock);
		for (base = nat.starts, n = ENTRIES; n > 1; n -= half) {
			half = n / 2;
			base = base[half] <= key ? base + half : base;
		}
		nat.counts[base - nat.starts].refcnt++;
		pthread_mutex_unlock(&nat.lock);
	}
	return (double)(now_ns() - t0) / ENTRIES;
}

/* munmap() of one page, timed alone, then mapped back. */
struct unmaps {
	char *base;
	unsigned int n;
	bool recache; /* cache each page before it is unmapped */
	bool gone;    /* cache each page, then flush its entry */
	bool told;    /* announce the munmap (rdmad_mr_cache_begin_change) */
	bool raw;     /* by a raw syscall, past the hooks (glibc's own) */
};

/* munmap() through libc (librdmad's hooks), or the system call alone, as
 * glibc makes it inside free(): the kernel's event is then the monitor. */
static void unmap(void *addr, size_t len, bool raw)
{
	if (raw)
		syscall(SYS_munmap, addr, len);
	else
		munmap(addr, len);
}

static double unmap_pages(void *arg)
{
	struct unmaps *u = arg;
	uint64_t spent = 0, t0;
	struct ibv_mr *mr;
	unsigned int i;

	for (i = 0; i < u->n; i++) {
		if (u->recache || u->gone) {
			mr = rdmad_mr_cache_get(nat.cache, u->base + i * 2 * ps,
						ps, IBV_ACCESS_LOCAL_WRITE);
			rdmad_mr_cache_put(nat.cache, mr);
		}
		if (u->gone)
			rdmad_mr_cache_flush(nat.cache);
		t0 = now_ns();
		if (u->told)
			rdmad_mr_cache_begin_change(u->base + i * 2 * ps, ps);
		unmap(u->base + i * 2 * ps, ps, u->raw);
		if (u->told)
			rdmad_mr_cache_end_change(u->base + i * 2 * ps, ps);
		spent += now_ns() - t0;
		anon(u->base + i * 2 * ps, ps, MAP_FIXED_NOREPLACE);
	}
	return (double)spent / u->n;
}

/* What a miss adds to the registration, part by part, for the range
 * @arg (a struct span): watching it (UFFDIO_REGISTER, after fstat() checks
 * the descriptor; the unwatch at the entry's end is not timed) and asking
 * what memory it is (PROCMAP_QUERY, after fstat() checks
 * /proc/self/maps). */
struct span {
	char *buf;
	size_t len;
	unsigned int n;
};

static double miss_watch(void *arg)
{
	const struct span *r = arg;
	uintptr_t s = (uintptr_t)r->buf, e = s + r->len;
	uint64_t spent = 0, t0, id = 0;
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		t0 = now_ns();
		mrc_monitor_watch(s, e, &id);
		spent += now_ns() - t0;
		mrc_monitor_unwatch(id);
	}
	return (double)spent / r->n;
}

static double miss_kind(void *arg)
{
	const struct span *r = arg;
	uintptr_t s = (uintptr_t)r->buf;
	uint64_t t0 = now_ns();
	unsigned int i;

	for (i = 0; i < r->n; i++)
		mrc_vma_private_anon(s, s + r->len);
	return (double)(now_ns() - t0) / r->n;
}

/* The kind as a kernel without PROCMAP_QUERY gives it (6.1): the maps
 * file read up to the range. */
static double kind_maps(void *arg)
{
	const struct span *r = arg;
	uintptr_t s = (uintptr_t)r->buf;
	uint64_t t0 = now_ns();
	unsigned int i;
	int fd;

	for (i = 0; i < r->n; i++) {
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		mrc_vma_parse(fd, s, s + r->len);
		close(fd);
	}
	return (double)(now_ns() - t0) / r->n;
}

/* What a miss pays to learn whether the hooks are reached. */
static double probe(void *arg)
{
	uint64_t t0 = now_ns();
	unsigned int i;

	(void)arg;
	for (i = 0; i < 100000; i++)
		mrc_monitor_hooks_reached();
	return (double)(now_ns() - t0) / 100000;
}

/* What a hook that announces, and a get that misses, adds for its
 * guard: signals blocked and cancellation disabled, and back
 * (monitor.h). */
static double guard(void *arg)
{
	uint64_t t0 = now_ns();
	struct mrc_hush h;
	unsigned int i;

	(void)arg;
	for (i = 0; i < 10000; i++) {
		mrc_monitor_hush(&h);
		mrc_monitor_unhush(&h);
	}
	return (double)(now_ns() - t0) / 10000;
}

/* A miss with a fake MR (the registration is a calloc()), timed alone:
 * the get of a range not cached; its put and the flush that lets it go
 * are not timed.  Beside miss-watch and miss-kind, what a miss adds of
 * its own. */
static double miss_fake(void *arg)
{
	const struct span *r = arg;
	uint64_t spent = 0, t0;
	struct ibv_mr *mr;
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		t0 = now_ns();
		mr = rdmad_mr_cache_get(nat.cache, r->buf, r->len, ACCESS);
		spent += now_ns() - t0;
		rdmad_mr_cache_put(nat.cache, mr);
		rdmad_mr_cache_flush(nat.cache);
	}
	return (double)spent / r->n;
}

/* ---- counted: a miss and its floor, instruction by instruction ---------- */

/* What one operation executes on the calling thread, counted by
 * single-stepping it (ptrace) in a child: exact and the same run after
 * run, where a time under the emulator moves by a third between runs.
 * System calls are counted as instructions and apart (each one costs
 * what the kernel makes it cost: about 1 us here, under PTI). */
struct counted {
	unsigned long insns;
	unsigned long syscalls;
};

enum counted_op { COUNT_NOTHING, COUNT_FLOOR, COUNT_MISS };

/* The floor's parts as the miss makes them: the watch, the kind, the
 * (fake) registration; undone by the caller. */
static struct ibv_mr *floor_fake(const struct span *r, uint64_t *id)
{
	uintptr_t s = (uintptr_t)r->buf;

	mrc_monitor_watch(s, s + r->len, id);
	mrc_vma_private_anon(s, s + r->len);
	return fake_reg(NULL, r->buf, r->len, ACCESS);
}

static void counted_once(enum counted_op op, struct rdmad_mr_cache *cache,
			 const struct span *r, bool stop)
{
	struct ibv_mr *mr = NULL;
	uint64_t id = 0;

	if (stop)
		raise(SIGSTOP);
	if (op == COUNT_FLOOR)
		mr = floor_fake(r, &id);
	else if (op == COUNT_MISS)
		mr = rdmad_mr_cache_get(cache, r->buf, r->len, ACCESS);
	if (stop)
		raise(SIGSTOP);
	if (op == COUNT_FLOOR) {
		fake_dereg(mr);
		mrc_monitor_unwatch(id);
	} else if (op == COUNT_MISS) {
		rdmad_mr_cache_put(cache, mr);
		rdmad_mr_cache_flush(cache);
	}
}

/* The child: a cache of its own (a forked child's is not used), warmed
 * up (10 rounds, so that the counted miss is not one of the every-64th
 * that checks the hooks in full), then the operation between two stops;
 * exits 3 where its cache does not cache. */
static void counted_child(enum counted_op op)
{
	static const struct mrc_ops ops = {fake_reg, fake_dereg};
	struct rdmad_mr_cache *cache =
		mrc_cache_new_ops(NULL, NULL, &ops, "count0");
	struct span r = {anon(NULL, ps, 0), ps, 1};
	unsigned int i;

	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		_exit(2);
	if (!rdmad_mr_cache_is_caching(cache))
		_exit(3);
	memset(r.buf, 1, ps);
	for (i = 0; i < 10; i++)
		counted_once(op, cache, &r, false);
	counted_once(op, cache, &r, true);
	_exit(0);
}

#ifdef __x86_64__
/* Steps the child from its first stop to its second; false where it
 * cannot be traced (no ptrace, or the child ended first). */
static bool step_between_stops(pid_t pid, struct counted *n)
{
	long word;
	int st, sig;

	for (;;) {
		if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
			return false;
		if (WSTOPSIG(st) == SIGSTOP)
			break;
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(st));
	}
	*n = (struct counted){0, 0};
	for (sig = 0;; sig = WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st)) {
		struct user_regs_struct regs;

		if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
			return false;
		errno = 0;
		word = ptrace(PTRACE_PEEKTEXT, pid, (void *)regs.rip, NULL);
		if (!sig && !errno && (word & 0xffff) == 0x050f) /* syscall */
			n->syscalls++;
		/* A signal's stop is no instruction: delivered on this step. */
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, (void *)(long)sig) ||
		    waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
			return false;
		if (WSTOPSIG(st) == SIGSTOP)
			break;
		n->insns += WSTOPSIG(st) == SIGTRAP;
	}
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	return true;
}
#else
/* The syscall instruction above is x86-64's. */
static bool step_between_stops(pid_t pid, struct counted *n)
{
	(void)pid;
	(void)n;
	return false;
}
#endif

static bool count(enum counted_op op, struct counted *n)
{
	pid_t pid = fork();
	bool ok;
	int st;

	if (pid < 0)
		return false;
	if (!pid)
		counted_child(op);
	ok = step_between_stops(pid, n);
	if (!ok)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return ok;
}

/* A 4 KiB miss and its floor, counted, less what the two stops around
 * them execute; "figure steps-..." lines (counts, not ns). */
static void counted(void)
{
	struct counted none, floor, miss;

	if (!count(COUNT_NOTHING, &none) || !count(COUNT_FLOOR, &floor) ||
	    !count(COUNT_MISS, &miss)) {
		printf("bench-mrcache: no counts: x86-64 only, and the "
		       "child must be traceable and its cache caching\n");
		return;
	}
	figure("steps-floor", ps, (double)(floor.insns - none.insns));
	figure("steps-miss", ps, (double)(miss.insns - none.insns));
	figure("syscalls-floor", ps, (double)(floor.syscalls - none.syscalls));
	figure("syscalls-miss", ps, (double)(miss.syscalls - none.syscalls));
}

static void kinds(size_t len, struct span *r)
{
	figure("kind-maps", len, median(kind_maps, r));
}

static int native(void)
{
	static const struct mrc_ops ops = {fake_reg, fake_dereg};
	struct rdmad_mr_cache_attr attr = {.max_entries = ENTRIES,
					   .max_bytes = (size_t)1 << 40};
	struct unmaps plain = {.n = 2000}, cached = {.n = 2000, .recache = 1},
		      gone = {.n = 2000, .gone = 1},
		      told = {.n = 2000, .recache = 1, .told = 1},
		      kernel = {.n = 2000, .recache = 1, .raw = 1};
	struct span parts;
	double hit, floor, base;
	unsigned int i, j, t;

	counted(); /* first: its children fork from a process with no cache */
	nat.region = anon(NULL, (size_t)ENTRIES * 2 * ps, 0);
	nat.cache = mrc_cache_new_ops(NULL, &attr, &ops, "bench0");
	if (!rdmad_mr_cache_is_caching(nat.cache)) {
		printf("bench-mrcache: no monitor: %s\n",
		       rdmad_mr_cache_get_reason(nat.cache));
		return 77;
	}
	nat.order = malloc(ENTRIES * sizeof(*nat.order));
	nat.starts = malloc(ENTRIES * sizeof(*nat.starts));
	nat.counts = calloc(ENTRIES, sizeof(*nat.counts));
	for (i = 0; i < ENTRIES; i++) {
		nat.order[i] = i;
		nat.starts[i] = (uintptr_t)slot(i);
	}
	for (i = ENTRIES - 1; i > 0; i--) {
		j = (unsigned int)rand() % (i + 1);
		t = nat.order[i];
		nat.order[i] = nat.order[j];
		nat.order[j] = t;
	}
	hits(NULL); /* registers all 10,000 */
	hit = median(hits, NULL);
	floor = median(floor_of_hit, NULL);
	figure("hit-10000", 256, hit);
	figure("hit-floor", 256, floor);
	figure("hit-again", 256, median(hits_again, NULL));
	printf("hit among %d entries: %.1f ns, floor %.1f ns (%.2fx)\n",
	       ENTRIES, hit, floor, hit / floor);
	plain.base = anon(NULL, 2 * plain.n * ps, 0);
	cached.base = anon(NULL, 2 * cached.n * ps, 0);
	/* Cached once, its entry flushed (and its range unwatched). */
	gone.base = anon(NULL, 2 * gone.n * ps, 0);
	told.base = anon(NULL, 2 * told.n * ps, 0);
	kernel.base = anon(NULL, 2 * kernel.n * ps, 0);
	base = median(unmap_pages, &plain);
	figure("munmap-unwatched", ps, base);
	figure("munmap-cached", ps, median(unmap_pages, &cached));
	figure("munmap-gone", ps, median(unmap_pages, &gone));
	figure("munmap-announced", ps, median(unmap_pages, &told));
	figure("munmap-kernel", ps, median(unmap_pages, &kernel));
	parts = (struct span){plain.base, ps, 2000};
	figure("miss-watch", ps, median(miss_watch, &parts));
	figure("miss-kind", ps, median(miss_kind, &parts));
	figure("miss-fake", ps, median(miss_fake, &parts));
	kinds(ps, &parts);
	figure("hooks-probe", 0, median(probe, NULL));
	figure("hooks-guard", 0, median(guard, NULL));
	return 0;
}

/* ---- verbs: real MRs -------------------------------------------------- */

static struct {
	struct ibv_pd *pd;
	struct rdmad_mr_cache *cache;
	char *buf;
	size_t len;
	unsigned int n;
#ifdef HAVE_LIBFABRIC
	struct fid_domain *domain;
#endif
} v;

static struct ibv_pd *open_pd(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx ? ibv_alloc_pd(ctx) : NULL;
}

static double pair(void *arg)
{
	uint64_t t0 = now_ns();
	unsigned int i;

	(void)arg;
	for (i = 0; i < v.n; i++)
		ibv_dereg_mr(ibv_reg_mr(v.pd, v.buf, v.len, ACCESS));
	return (double)(now_ns() - t0) / v.n;
}

/* One way of registering the buffer and letting it go: plain verbs, the
 * cache (put, or put and flush for a miss each time), libfabric. */
struct registrar {
	void *(*reg)(void);
	void (*undo)(void *mr);
};

static void *verbs_reg(void)
{
	return ibv_reg_mr(v.pd, v.buf, v.len, ACCESS);
}

static void verbs_dereg(void *mr)
{
	ibv_dereg_mr(mr);
}

static void *cache_get(void)
{
	return rdmad_mr_cache_get(v.cache, v.buf, v.len, ACCESS);
}

static void cache_put(void *mr)
{
	rdmad_mr_cache_put(v.cache, mr);
}

static void cache_put_flush(void *mr)
{
	cache_put(mr);
	rdmad_mr_cache_flush(v.cache);
}

static const struct registrar verbs_mr = {verbs_reg, verbs_dereg},
			      cached_mr = {cache_get, cache_put},
			      missed_mr = {cache_get, cache_put_flush};

/* The buffer's memory replaced: unmapped and mapped again, zeroed. */
static void replace_buffer(void)
{
	munmap(v.buf, v.len);
	anon(v.buf, v.len, MAP_FIXED_NOREPLACE);
	memset(v.buf, 0, v.len);
}

/* The registration alone, timed (what undoes it is not): @n samples. */
static uint64_t reg_once(const struct registrar *r)
{
	uint64_t t0 = now_ns(), spent;
	void *mr = r->reg();

	spent = now_ns() - t0;
	r->undo(mr);
	return spent;
}

/* The miss's floor as one operation, timed whole: what the contract
 * makes a miss do at the least, in its order (watch the range, ask what
 * memory it is, register the watched range), through the same calls the
 * cache makes; the undoing (deregistration, unwatch) is not timed. */
static uint64_t floor_once(void)
{
	uintptr_t s = (uintptr_t)v.buf, e = s + v.len;
	uint64_t t0 = now_ns(), spent, id = 0;
	struct ibv_mr *mr;

	mrc_monitor_watch(s, e, &id);
	mrc_vma_private_anon(s, e);
	mr = ibv_reg_mr(v.pd, v.buf, v.len, ACCESS);
	spent = now_ns() - t0;
	ibv_dereg_mr(mr);
	mrc_monitor_unwatch(id);
	return spent;
}

/* The same history before each of the three, untimed: the buffer
 * watched and unwatched, then every page written.  The floor's undoing
 * and a flushed miss's end with an unwatch, after which a registration
 * of the same pages costs more on 6.1, writing every page first or not
 * (at 1 MiB, in turns in a 6.1 guest: 1.26-1.41x the registration after
 * a plain deregistration); so without this the miss, which follows the
 * floor, paid for it and the floor, which follows ibv_reg_mr() alone,
 * never did. */
static void settle(void)
{
	uintptr_t s = (uintptr_t)v.buf;
	uint64_t id = 0;
	size_t off;

	if (!mrc_monitor_watch(s, s + v.len, &id))
		mrc_monitor_unwatch(id);
	for (off = 0; off < v.len; off += ps)
		((volatile char *)v.buf)[off] = 0;
}

static double median_u64(uint64_t *x, unsigned int n)
{
	qsort(x, n, sizeof(*x), cmp_u64);
	return (double)x[n / 2];
}

/* A miss beside its floor and beside ibv_reg_mr() alone, the three in
 * turns sample by sample, so that all see the same load (under the
 * emulator a loop's cost drifts by a third between loops): the median
 * sample of each, and the median of the per-turn ratios of a miss to
 * the floor measured next to it. */
static void miss_floor_reg(double *miss, double *floor, double *reg,
			   double *ratio)
{
	uint64_t *m = calloc(v.n, sizeof(*m)), *f = calloc(v.n, sizeof(*f)),
		 *r = calloc(v.n, sizeof(*r));
	double *q = calloc(v.n, sizeof(*q));
	unsigned int i;

	for (i = 0; i < v.n; i++) {
		settle();
		r[i] = reg_once(&verbs_mr);
		settle();
		f[i] = floor_once();
		settle();
		m[i] = reg_once(&missed_mr);
		q[i] = (double)m[i] / (double)(f[i] ? f[i] : 1);
	}
	qsort(q, v.n, sizeof(*q), cmp_double);
	*ratio = q[v.n / 2];
	*miss = median_u64(m, v.n);
	*floor = median_u64(f, v.n);
	*reg = median_u64(r, v.n);
	free(m);
	free(f);
	free(r);
	free(q);
}

/* Register and let go, again and again (a hit, for a cache). */
static double again(void *arg)
{
	const struct registrar *r = arg;
	unsigned int i, n = 100000;
	uint64_t t0;

	r->undo(r->reg());
	t0 = now_ns();
	for (i = 0; i < n; i++)
		r->undo(r->reg());
	return (double)(now_ns() - t0) / n;
}

/* Let go, munmap, mmap at the same address, register again. */
static double remap_then(void *arg)
{
	const struct registrar *r = arg;
	void *mr = r->reg();
	unsigned int i;
	uint64_t t0;

	t0 = now_ns();
	for (i = 0; i < v.n; i++) {
		r->undo(mr);
		replace_buffer();
		mr = r->reg();
	}
	t0 = now_ns() - t0;
	r->undo(mr);
	return (double)t0 / v.n;
}

/* munmap() of a range registered and let go (cached), timed alone, this
 * many times a round (each munmap's own cost moves with the guest's
 * scheduling: at 50 the ratios moved by 1.5x between runs). */
#define UNMAP_N 200
/* munmap() of a range registered and let go (cached), timed alone. */
struct unmap_case {
	const struct registrar *r; /* NULL: never registered */
	bool flush;		   /* the entry flushed before the munmap */
	bool told;		   /* announced (rdmad_mr_cache_begin_change) */
	bool raw;		   /* by a raw syscall (the kernel's event) */
	bool alone;		   /* only the announcement timed, not munmap */
};

static double unmap_after(void *arg)
{
	const struct unmap_case *u = arg;
	uint64_t spent = 0, t0;
	unsigned int i;

	for (i = 0; i < v.n; i++) {
		if (u->r)
			u->r->undo(u->r->reg());
		if (u->flush)
			rdmad_mr_cache_flush(v.cache);
		t0 = now_ns();
		if (u->told)
			rdmad_mr_cache_begin_change(v.buf, v.len);
		if (!u->alone)
			unmap(v.buf, v.len, u->raw);
		if (u->told)
			rdmad_mr_cache_end_change(v.buf, v.len);
		spent += now_ns() - t0;
		if (u->alone)
			unmap(v.buf, v.len, true);
		anon(v.buf, v.len, MAP_FIXED_NOREPLACE);
		memset(v.buf, 0, v.len);
	}
	return (double)spent / v.n;
}

static const size_t sizes[] = {4096, 65536, 1 << 20, 16 << 20};

/* The sizes whose munmap() is measured: a page, 16 pages, 1 MiB. */
static bool unmapped(size_t len)
{
	return len == 4096 || len == 65536 || len == 1 << 20;
}

static unsigned int rounds_for(size_t len)
{
	return len >= (16 << 20) ? 20 : len >= (1 << 20) ? 100 : 400;
}

/* munmap() of v.buf: cached (through the hooks), announced, by a raw
 * syscall (the kernel's event), its entry gone, never cached, and
 * registered and deregistered by plain verbs; and the announcement of a
 * cached range alone (what the hooks add to its munmap: the range
 * unregistered from userfaultfd, so that the munmap raises no event). */
static void unmaps(void)
{
	const struct unmap_case cached = {.r = &cached_mr},
				told = {.r = &cached_mr, .told = true},
				alone = {.r = &cached_mr,
					 .told = true,
					 .alone = true},
				gone = {.r = &cached_mr, .flush = true},
				never = {.r = NULL},
				kernel = {.r = &cached_mr, .raw = true},
				dereg = {.r = &verbs_mr};

	v.n = UNMAP_N;
	figure("munmap-cached", v.len, median(unmap_after, (void *)&cached));
	figure("munmap-announced", v.len, median(unmap_after, (void *)&told));
	figure("announce-alone", v.len, median(unmap_after, (void *)&alone));
	figure("munmap-gone", v.len, median(unmap_after, (void *)&gone));
	figure("munmap-never", v.len, median(unmap_after, (void *)&never));
	figure("munmap-kernel", v.len, median(unmap_after, (void *)&kernel));
	/* Registered and deregistered without a cache: what a gone entry's
	 * memory went through, less the cache. */
	figure("munmap-dereg", v.len, median(unmap_after, (void *)&dereg));
}

/* ibv_reg_mr() alone of a range the monitor watches (watched and
 * unwatched untimed): what pinning costs on a write-protect-registered
 * mapping beside an unregistered one. */
static double reg_watched(void *arg)
{
	uintptr_t s = (uintptr_t)v.buf, e = s + v.len;
	uint64_t spent = 0, t0, id = 0;
	struct ibv_mr *mr;
	unsigned int i;

	(void)arg;
	for (i = 0; i < v.n; i++) {
		mrc_monitor_watch(s, e, &id);
		t0 = now_ns();
		mr = ibv_reg_mr(v.pd, v.buf, v.len, ACCESS);
		spent += now_ns() - t0;
		ibv_dereg_mr(mr);
		mrc_monitor_unwatch(id);
	}
	return (double)spent / v.n;
}

static int verbs(const char *device)
{
	struct span span;
	double miss, floor, reg, ratio;
	size_t k;

	v.pd = open_pd(device);
	if (!v.pd) {
		printf("bench-mrcache: no %s: %s\n", device, strerror(errno));
		return 77;
	}
	v.cache = rdmad_mr_cache_new(v.pd, NULL);
	printf("monitor: %s\n", rdmad_mr_cache_get_reason(v.cache));
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		v.len = sizes[k];
		v.n = rounds_for(v.len);
		v.buf = anon(NULL, v.len, 0);
		memset(v.buf, 0, v.len);
		figure("verbs-pair", v.len, median(pair, NULL));
		miss_floor_reg(&miss, &floor, &reg, &ratio);
		figure("verbs-reg", v.len, reg);
		figure("cache-miss", v.len, miss);
		figure("miss-floor", v.len, floor);
		figure_ratio("miss-per-floor", v.len, ratio);
		span = (struct span){v.buf, v.len, v.n};
		figure("miss-watch", v.len, median(miss_watch, &span));
		figure("miss-kind", v.len, median(miss_kind, &span));
		kinds(v.len, &span);
		if (v.len == 4096)
			figure("hooks-guard", 0, median(guard, NULL));
		figure("reg-watched", v.len, median(reg_watched, NULL));
		figure("cache-hit", v.len, median(again, (void *)&cached_mr));
		if (v.len == 1 << 20) {
			v.n = 50;
			figure("remap-nocache", v.len,
			       median(remap_then, (void *)&verbs_mr));
			figure("remap-cache", v.len,
			       median(remap_then, (void *)&cached_mr));
		}
		if (unmapped(v.len))
			unmaps();
		rdmad_mr_cache_flush(v.cache);
		munmap(v.buf, v.len);
	}
	return 0;
}

/* ---- libfabric: fi_mr_reg on the verbs provider ------------------------- */

#ifdef HAVE_LIBFABRIC
static void *fi_reg(void)
{
	struct fid_mr *mr = NULL;

	if (fi_mr_reg(v.domain, v.buf, v.len, FI_REMOTE_WRITE | FI_WRITE, 0, 0,
		      0, &mr, NULL))
		return NULL;
	return mr;
}

static void fi_unreg(void *mr)
{
	fi_close(&((struct fid_mr *)mr)->fid);
}

static const struct registrar fabric_mr = {fi_reg, fi_unreg};

/* A hit of @r on a buffer of its own: under libfabric's userfaultfd
 * monitor, a mapping one cache watches cannot be watched by the other (a
 * mapping has one userfaultfd), and the second passes it through. */
struct hit_case {
	const struct registrar *r;
	char *buf;
};

static double again_on(void *arg)
{
	const struct hit_case *h = arg;

	v.buf = h->buf;
	return again((void *)h->r);
}

/* libfabric's hit and librdmad's, taking turns in this process: made
 * after the munmaps above, which librdmad's hooks then leave alone. */
static int fabric_hits(const char *device)
{
	struct hit_case theirs_on = {&fabric_mr}, ours_on = {&cached_mr};
	double ours, theirs;
	size_t k;

	v.pd = open_pd(device);
	v.cache = v.pd ? rdmad_mr_cache_new(v.pd, NULL) : NULL;
	if (!v.cache) {
		printf("bench-mrcache: no cache on %s: %s\n", device,
		       strerror(errno));
		return 1;
	}
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		v.len = sizes[k];
		theirs_on.buf = anon(NULL, v.len, 0);
		ours_on.buf = anon(NULL, v.len, 0);
		memset(theirs_on.buf, 0, v.len);
		memset(ours_on.buf, 0, v.len);
		median_beside(again_on, &theirs_on, again_on, &ours_on, &theirs,
			      &ours);
		figure("fabric-hit", v.len, theirs);
		figure("fabric-ours-hit", v.len, ours);
		rdmad_mr_cache_flush(v.cache);
		munmap(theirs_on.buf, v.len);
		munmap(ours_on.buf, v.len);
	}
	return 0;
}

static int fabric(const char *device)
{
	const char *monitor = getenv("FI_MR_CACHE_MONITOR");
	struct fi_info *info;
	size_t k;

	if (fabric_verbs_domain(device, &v.domain, &info)) {
		printf("bench-mrcache: no libfabric verbs domain on %s\n",
		       device);
		return 77;
	}
	printf("libfabric %s, FI_MR_CACHE_MONITOR=%s\n",
	       fi_tostr(&info->fabric_attr->api_version, FI_TYPE_VERSION),
	       monitor ? monitor : "(default)");
	fi_freeinfo(info);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		v.len = sizes[k];
		v.buf = anon(NULL, v.len, 0);
		memset(v.buf, 0, v.len);
		if (v.len == 1 << 20) {
			v.n = 50;
			figure("fabric-remap", v.len,
			       median(remap_then, (void *)&fabric_mr));
		}
		if (unmapped(v.len)) {
			const struct unmap_case u = {.r = &fabric_mr};

			v.n = UNMAP_N;
			figure("fabric-munmap-cached", v.len,
			       median(unmap_after, (void *)&u));
		}
		munmap(v.buf, v.len);
	}
	return fabric_hits(device);
}
#else
static int fabric(const char *device)
{
	(void)device;
	printf("bench-mrcache: built without libfabric (Debian: "
	       "libfabric-dev)\n");
	return 77;
}
#endif

int main(int argc, char **argv)
{
	ps = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "native"))
		return native();
	if (argc == 3 && !strcmp(argv[1], "verbs"))
		return verbs(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "fabric"))
		return fabric(argv[2]);
	fprintf(stderr, "usage: %s native | verbs DEVICE | fabric DEVICE\n",
		argv[0]);
	return 2;
}
