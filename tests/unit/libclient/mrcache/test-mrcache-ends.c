/* SPDX-License-Identifier: MIT */
/*
 * libclient/mrcache/: the cache where a process's children and threads
 * end up, on this machine's kernel with fake MRs (fake-mrcache.h), each
 * case as a program meets it:
 *
 *   a child made without fork()'s handlers (glibc's _Fork(), a raw
 *   clone() without CLONE_VM) that unmaps or discards a page its parent
 *   caches: the parent still hears of its own next change there, so its
 *   next get is fresh ("child-calls");
 *   such children made while three parent threads are inside the hooks:
 *   none of them hangs ("child-hang");
 *   such children made while another thread misses, with the maps file
 *   refused (as a kernel before 6.11 answers without PROCMAP_QUERY) and
 *   as the kernel is: none of them finds its memory zeroed
 *   ("child-memory");
 *   pthread_cancel() of a thread inside a get (deferred, and
 *   asynchronous inside the hooks), and pthread_exit() from a handler
 *   that lands in a get: the monitor and the cache keep serving
 *   ("cancel", "exit");
 *   a signal handler's guard region while its thread is inside a miss:
 *   announced, no stale MR ("handler-guard", 6.13 and later);
 *   each advice the contract lets pass: on cached memory it returns what
 *   it returns on the same memory uncached ("advice", MADV_COLLAPSE
 *   among them);
 *   rdmad_mr_cache_release() racing a get: no entry stays cached
 *   unwatched ("release-race").
 *
 * Whatever may hang runs in a child killed after a deadline (a child
 * hung with its signals blocked would not take its own alarm).  The
 * library comes in statically, with the hooks under libc's own names.
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
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake-mrcache.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/* glibc 2.34: fork() without its handlers. */
pid_t _Fork(void);
#pragma weak _Fork

static size_t ps;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Run @fn in a forked child, killed past @seconds: whether it exited 0. */
static bool in_child(int (*fn)(void), double seconds, const char *what)
{
	double t0 = now();
	int status = 0;
	pid_t pid, r;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		status = fn();
		fflush(stdout);
		_exit(status);
	}
	while ((r = waitpid(pid, &status, WNOHANG)) == 0 &&
	       now() - t0 < seconds)
		usleep(10000);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fprintf(stderr, "%s: hung (killed after %.0f s)\n", what,
			seconds);
		return false;
	}
	if (WIFSIGNALED(status))
		fprintf(stderr, "%s: died of signal %d\n", what,
			WTERMSIG(status));
	else if (WEXITSTATUS(status))
		fprintf(stderr, "%s: check %d failed\n", what,
			WEXITSTATUS(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- children made without fork()'s handlers ----------------------------- */

enum way { RAW_CLONE, UNDERSCORE_FORK, WAYS };
static const char *const way_names[WAYS] = {"raw clone()", "_Fork()"};

/* A child made @way: 0 in the child, its pid in the parent, -1. */
static pid_t make_child(enum way way)
{
	fflush(stdout);
	if (way == RAW_CLONE)
		return (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, NULL,
				      NULL, NULL, 0);
	return _Fork ? _Fork() : -1;
}

/* Wait for @pid up to @seconds, then kill it: 0 exited 0, 1 failed, 2
 * hung. */
static int reap(pid_t pid, double seconds)
{
	double t0 = now();
	int status = 0;
	pid_t r;

	while ((r = waitpid(pid, &status, WNOHANG)) == 0 &&
	       now() - t0 < seconds)
		usleep(2000);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return 2;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* The parent caches a page; a child made @way unmaps it (@unmap) or
 * discards it through libc; the parent then maps new memory over the
 * page (mmap(MAP_FIXED): only the kernel's event tells) and gets again:
 * 1 fresh, 0 stale, -1 when the child could not be made. */
static int child_calls_once(enum way way, bool unmap)
{
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	char *m = fake_mrcache_anon(NULL, ps, 0);
	struct ibv_mr *a = rdmad_mr_cache_get(c, m, ps, W), *b;
	pid_t pid;
	int r;

	rdmad_mr_cache_put(c, a);
	pid = make_child(way);
	if (pid == 0)
		_exit(unmap ? munmap(m, ps) : madvise(m, ps, MADV_DONTNEED));
	if (pid < 0)
		return -1;
	if (reap(pid, 10) == 2)
		return 0;
	fake_mrcache_anon(m, ps, MAP_FIXED);
	b = rdmad_mr_cache_get(c, m, ps, W);
	r = b && fake_mrcache_fresh(b);
	if (b)
		rdmad_mr_cache_put(c, b);
	rdmad_mr_cache_destroy(c);
	munmap(m, ps);
	return r;
}

static int child_calls(void)
{
	unsigned int stale[WAYS] = {0}, i;
	int w, r, failed = 0;

	for (w = 0; w < WAYS; w++)
		for (i = 0; i < 6; i++) {
			r = child_calls_once((enum way)w, i % 2 == 0);
			if (r < 0) {
				printf("SKIP %s: %s\n", way_names[w],
				       strerror(errno));
				break;
			}
			stale[w] += r == 0;
		}
	for (w = 0; w < WAYS; w++) {
		printf("a child's munmap()/madvise() of the parent's cached "
		       "page, %s: %u of 6 stale\n",
		       way_names[w], stale[w]);
		failed += stale[w] != 0;
	}
	return failed ? 3 : 0;
}

static void test_child_calls(void)
{
	CHECK(in_child(child_calls, 60, "a child's calls"),
	      "a child made without fork()'s handlers changed what the "
	      "parent's cache watches");
}

/* Threads in the hooks while the children are made: each child's call
 * finds the locks and ring slots as those threads left them. */
#define CACHES 32
static bool looping;
static unsigned int loopers;

static void *discard_loop(void *arg)
{
	char *m = fake_mrcache_anon(NULL, ps, 0);

	(void)arg;
	__atomic_add_fetch(&loopers, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&looping, __ATOMIC_RELAXED))
		madvise(m, ps, MADV_DONTNEED);
	return NULL;
}

static void start_loops(pthread_t *t, int n)
{
	int i;

	__atomic_store_n(&looping, true, __ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		pthread_create(&t[i], NULL, discard_loop, NULL);
	while (__atomic_load_n(&loopers, __ATOMIC_SEQ_CST) < (unsigned int)n)
		sched_yield();
}

static void stop_loops(pthread_t *t, int n)
{
	int i;

	__atomic_store_n(&looping, false, __ATOMIC_SEQ_CST);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	loopers = 0;
}

static int child_hang(void)
{
	struct rdmad_mr_cache *many[CACHES];
	char *m = fake_mrcache_anon(NULL, 2 * ps, 0);
	unsigned int hung[WAYS] = {0}, i;
	pthread_t t[3];
	int w, r;
	pid_t pid;

	for (i = 0; i < CACHES; i++)
		many[i] = fake_mrcache_new(0);
	rdmad_mr_cache_put(many[0], rdmad_mr_cache_get(many[0], m, ps, W));
	start_loops(t, 3);
	for (w = 0; w < WAYS; w++)
		for (i = 0; i < 20; i++) {
			pid = make_child((enum way)w);
			if (pid == 0) {
				madvise(m + ps, ps, MADV_DONTNEED);
				munmap(m, ps);
				_exit(0);
			}
			if (pid < 0)
				break;
			r = reap(pid, 5);
			hung[w] += r == 2;
		}
	stop_loops(t, 3);
	for (w = 0; w < WAYS; w++)
		printf("children made while three threads are in the hooks, "
		       "%s: %u of 20 hung\n",
		       way_names[w], hung[w]);
	return hung[0] || hung[1] ? 3 : 0;
}

static void test_child_hang(void)
{
	CHECK(in_child(child_hang, 240, "children amid hooks"),
	      "a child made without fork()'s handlers hung in a hook");
}

/* ---- the kind of memory, asked while children are made ------------------ */

static char *pattern_buf;
#define PATTERN_PAGES 4

/* Misses over the patterned buffer again and again (each flushed). */
static void *miss_loop(void *arg)
{
	struct rdmad_mr_cache *c = arg;
	struct ibv_mr *mr;

	__atomic_add_fetch(&loopers, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&looping, __ATOMIC_RELAXED)) {
		mr = rdmad_mr_cache_get(c, pattern_buf, PATTERN_PAGES * ps, W);
		if (mr)
			rdmad_mr_cache_put(c, mr);
		rdmad_mr_cache_flush(c);
	}
	return NULL;
}

static bool pattern_intact(void)
{
	size_t i;

	for (i = 0; i < PATTERN_PAGES; i++)
		if (pattern_buf[i * ps + 8] != 0x5a)
			return false;
	return true;
}

/* Use up every descriptor, so that /proc/self/maps cannot be opened:
 * the cache must then tell the kind without it. */
static void refuse_maps(void)
{
	struct rlimit rl = {64, 64};

	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	while (dup(0) >= 0)
		;
}

static bool maps_refused;

static int child_memory(void)
{
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	unsigned int zeroed[WAYS] = {0}, made[WAYS] = {0}, i;
	pthread_t t;
	pid_t pid;
	int w;

	pattern_buf = fake_mrcache_anon(NULL, PATTERN_PAGES * ps, 0);
	for (i = 0; i < PATTERN_PAGES; i++)
		pattern_buf[i * ps + 8] = 0x5a;
	if (maps_refused)
		refuse_maps();
	__atomic_store_n(&looping, true, __ATOMIC_SEQ_CST);
	pthread_create(&t, NULL, miss_loop, c);
	while (!__atomic_load_n(&loopers, __ATOMIC_SEQ_CST))
		sched_yield();
	for (w = 0; w < WAYS; w++)
		for (i = 0; i < 150; i++) {
			pid = make_child((enum way)w);
			if (pid == 0)
				_exit(pattern_intact() ? 0 : 1);
			if (pid < 0)
				break;
			made[w]++;
			zeroed[w] += reap(pid, 5) != 0;
		}
	__atomic_store_n(&looping, false, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	loopers = 0;
	for (w = 0; w < WAYS; w++)
		printf("children made amid misses%s, %s: %u of %u found their "
		       "memory changed\n",
		       maps_refused ? " (maps refused)" : "", way_names[w],
		       zeroed[w], made[w]);
	return zeroed[0] || zeroed[1] ? 3 : 0;
}

static void test_child_memory(void)
{
	maps_refused = true;
	CHECK(in_child(child_memory, 120, "children amid misses"),
	      "asking what memory a range is zeroed a child's memory (maps "
	      "refused)");
	maps_refused = false;
	CHECK(in_child(child_memory, 120, "children amid misses"),
	      "asking what memory a range is zeroed a child's memory");
}

/* ---- threads that end inside the cache ------------------------------------
 */

/* Keeps the monitor busy: caches a page and unmaps it by a raw system
 * call (only the kernel's event tells), again and again. */
static void *raw_unmaps(void *arg)
{
	struct rdmad_mr_cache *c = arg;
	char *m;

	__atomic_add_fetch(&loopers, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&looping, __ATOMIC_RELAXED)) {
		m = fake_mrcache_anon(NULL, ps, 0);
		rdmad_mr_cache_put(c, rdmad_mr_cache_get(c, m, ps, W));
		syscall(SYS_munmap, m, ps);
	}
	return NULL;
}

static struct rdmad_mr_cache *victim_cache;
static bool async_cancel;
static bool getting; /* the getter is in its loop, past its thread's start */

/* Gets and puts over a page whose hint the other thread's changes keep
 * moving: most gets take the lock, many wait for the monitor. */
static void *getter(void *arg)
{
	char *m = arg;
	struct ibv_mr *mr;

	/* Asynchronous: only the hooks, which allocate nothing (an
	 * asynchronous cancel inside malloc() would hang libc, not us). */
	if (async_cancel) {
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
		for (;;)
			madvise(m + ps, ps, MADV_DONTNEED);
	}
	__atomic_store_n(&getting, true, __ATOMIC_SEQ_CST);
	for (;;) {
		mr = rdmad_mr_cache_get(victim_cache, m, ps, W);
		if (mr)
			rdmad_mr_cache_put(victim_cache, mr);
		pthread_testcancel();
	}
	return NULL;
}

/* After the ends: a watched page unmapped by a raw system call returns
 * (the monitor thread reads), and a get over it completes and is fresh. */
static int still_serving(struct rdmad_mr_cache *c)
{
	char *m = fake_mrcache_anon(NULL, ps, 0);
	struct ibv_mr *a = rdmad_mr_cache_get(c, m, ps, W), *b;

	if (!a || rdmad_mr_cache_put(c, a))
		return 4;
	syscall(SYS_munmap, m, ps);
	fake_mrcache_anon(m, ps, MAP_FIXED);
	b = rdmad_mr_cache_get(c, m, ps, W);
	if (!b || !fake_mrcache_fresh(b) || rdmad_mr_cache_put(c, b))
		return 5;
	madvise(m, ps, MADV_DONTNEED);
	return 0;
}

static int cancel_gets(void)
{
	struct rdmad_mr_cache *busy = fake_mrcache_new(0);
	char *m = fake_mrcache_anon(NULL, 2 * ps, 0);
	pthread_t u, t;
	int i;

	victim_cache = fake_mrcache_new(0);
	/* Asynchronous: many rings, so that an announcement is long. */
	for (i = 0; async_cancel && i < CACHES; i++)
		fake_mrcache_new(0);
	__atomic_store_n(&looping, true, __ATOMIC_SEQ_CST);
	pthread_create(&u, NULL, raw_unmaps, busy);
	for (i = 0; i < (async_cancel ? 200 : 40); i++) {
		pthread_create(&t, NULL, getter, m);
		usleep((useconds_t)(rand() % (async_cancel ? 300 : 3000)));
		pthread_cancel(t);
		pthread_join(t, NULL);
	}
	__atomic_store_n(&looping, false, __ATOMIC_SEQ_CST);
	pthread_join(u, NULL);
	loopers = 0;
	return still_serving(victim_cache) || still_serving(busy) ? 3 : 0;
}

static void test_cancel(void)
{
	async_cancel = false;
	CHECK(in_child(cancel_gets, 60, "pthread_cancel() in a get"),
	      "a thread cancelled inside a get stopped the cache");
#ifdef UNDER_ASAN
	/* Asynchronous cancellation is defined in async-cancel-safe code
	 * only, which AddressSanitizer's instrumentation is not: a thread
	 * cancelled between a frame's poisoning of its stack and the
	 * epilogue that clears it leaves the poison, and ASan's own thread
	 * teardown then reports a stack-buffer-overflow in its sigaltstack
	 * interceptor (30 of 30 runs; never in the plain build). */
	printf("SKIP asynchronous cancel: AddressSanitizer's interceptors "
	       "are not async-cancel-safe\n");
	return;
#endif
	async_cancel = true;
	CHECK(in_child(cancel_gets, 60, "asynchronous pthread_cancel()"),
	      "a thread cancelled asynchronously inside the cache stopped "
	      "it");
}

static void exit_thread(int sig)
{
	(void)sig;
	pthread_exit(NULL);
}

/* Threads whose handler ends them wherever a signal lands in a get. */
static int exit_in_gets(void)
{
	struct rdmad_mr_cache *busy = fake_mrcache_new(0);
	char *m = fake_mrcache_anon(NULL, 2 * ps, 0);
	pthread_t u, t;
	int i;

	victim_cache = fake_mrcache_new(0);
	async_cancel = false;
	signal(SIGUSR2, exit_thread);
	__atomic_store_n(&looping, true, __ATOMIC_SEQ_CST);
	pthread_create(&u, NULL, raw_unmaps, busy);
	for (i = 0; i < 40; i++) {
		/* The signal lands in a get, not in the thread's start (libc's
		 * and a sanitizer's, which allocate: a thread ended there
		 * leaves their allocator's lock held). */
		__atomic_store_n(&getting, false, __ATOMIC_SEQ_CST);
		pthread_create(&t, NULL, getter, m);
		while (!__atomic_load_n(&getting, __ATOMIC_SEQ_CST))
			sched_yield();
		usleep((useconds_t)(rand() % 3000));
		pthread_kill(t, SIGUSR2);
		pthread_join(t, NULL);
	}
	__atomic_store_n(&looping, false, __ATOMIC_SEQ_CST);
	pthread_join(u, NULL);
	loopers = 0;
	return still_serving(victim_cache) || still_serving(busy) ? 3 : 0;
}

static void test_exit(void)
{
	CHECK(in_child(exit_in_gets, 60, "pthread_exit() from a handler"),
	      "a thread ended by its handler inside a get stopped the cache");
}

/* ---- a handler's guard region ----------------------------------------------
 */

static struct rdmad_mr_cache *guard_cache;
static char *guard_page;
static volatile sig_atomic_t guarded; /* the handler put one on and off */

static void guard_in_handler(int sig)
{
	int saved = errno;

	(void)sig;
	if (madvise(guard_page, ps, MADV_GUARD_INSTALL) == 0 &&
	    madvise(guard_page, ps, MADV_GUARD_REMOVE) == 0)
		guarded = 1;
	errno = saved;
}

struct pelter {
	pthread_t target;
	bool stop;
};

static void *pelt(void *arg)
{
	struct pelter *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
		pthread_kill(p->target, SIGUSR1);
		usleep(50);
	}
	return NULL;
}

/* Misses on this thread, a handler's guard region landing anywhere in
 * them; after each, the guarded page's MR must be fresh. */
static int handler_guard(void)
{
	struct pelter p = {.target = pthread_self()};
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	char *q = fake_mrcache_anon(NULL, 16 * ps, 0);
	unsigned long checks = 0, stale = 0, i = 0;
	struct ibv_mr *mr;
	sigset_t usr1;
	pthread_t t;
	double t0;

	guard_cache = fake_mrcache_new(0);
	guard_page = fake_mrcache_anon(NULL, ps, 0);
	if (madvise(guard_page, ps, MADV_GUARD_INSTALL) < 0) {
		printf("SKIP a handler's guard region: %s (Linux 6.13 and "
		       "later)\n",
		       strerror(errno));
		return 0;
	}
	madvise(guard_page, ps, MADV_GUARD_REMOVE);
	rdmad_mr_cache_put(guard_cache,
			   rdmad_mr_cache_get(guard_cache, guard_page, ps, W));
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	signal(SIGUSR1, guard_in_handler);
	pthread_create(&t, NULL, pelt, &p);
	for (t0 = now(); now() - t0 < 2; i++) {
		mr = rdmad_mr_cache_get(c, q + (i % 16) * ps, ps, W);
		if (mr)
			rdmad_mr_cache_put(c, mr);
		rdmad_mr_cache_flush(c);
		if (!guarded)
			continue;
		pthread_sigmask(SIG_BLOCK, &usr1, NULL);
		guarded = 0;
		mr = rdmad_mr_cache_get(guard_cache, guard_page, ps, W);
		checks++;
		stale += !mr || !fake_mrcache_fresh(mr);
		if (mr)
			rdmad_mr_cache_put(guard_cache, mr);
		pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	}
	__atomic_store_n(&p.stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	printf("a handler's guard region while its thread misses: %lu stale "
	       "of %lu\n",
	       stale, checks);
	return checks && !stale ? 0 : 3;
}

static void test_handler_guard(void)
{
	CHECK(in_child(handler_guard, 60, "a handler's guard region"),
	      "a handler's guard region during a miss was missed");
}

/* ---- advice that passes ------------------------------------------------- */

/* 2 MiB, aligned, private anonymous (a collapse needs a whole huge
 * page's range). */
static char *huge_range(void)
{
	size_t huge = 2u << 20;
	char *m = fake_mrcache_anon(NULL, 2 * huge, 0);
	char *a = (char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));

	memset(a, 1, huge);
	return a;
}

static const struct {
	const char *name;
	int advice;
} passing[] = {
	{"MADV_NORMAL", MADV_NORMAL},
	{"MADV_RANDOM", MADV_RANDOM},
	{"MADV_SEQUENTIAL", MADV_SEQUENTIAL},
	{"MADV_WILLNEED", MADV_WILLNEED},
	{"MADV_DONTDUMP", MADV_DONTDUMP},
	{"MADV_DODUMP", MADV_DODUMP},
	{"MADV_POPULATE_READ", MADV_POPULATE_READ},
	{"MADV_POPULATE_WRITE", MADV_POPULATE_WRITE},
	{"MADV_DONTFORK", MADV_DONTFORK},
	{"MADV_DOFORK", MADV_DOFORK},
	{"MADV_WIPEONFORK", MADV_WIPEONFORK},
	{"MADV_KEEPONFORK", MADV_KEEPONFORK},
	{"MADV_COLD", MADV_COLD},
	{"MADV_PAGEOUT", MADV_PAGEOUT},
	{"MADV_MERGEABLE", MADV_MERGEABLE},
	{"MADV_UNMERGEABLE", MADV_UNMERGEABLE},
	{"MADV_HUGEPAGE", MADV_HUGEPAGE},
	{"MADV_NOHUGEPAGE", MADV_NOHUGEPAGE},
	{"MADV_COLLAPSE", MADV_COLLAPSE},
	{"MADV_GUARD_REMOVE", MADV_GUARD_REMOVE},
};

/* The advice over a range holding a buffer the cache holds (an idle
 * entry: its watch splits the mapping) and over the same kind of range
 * it never saw: the same answer, errno included. */
static void test_advice(void)
{
	struct rdmad_mr_cache *c = fake_mrcache_new(0);
	size_t huge = 2u << 20, i;
	char *cached, *plain;
	int r1, e1, r2, e2;

	for (i = 0; i < sizeof(passing) / sizeof(passing[0]); i++) {
		cached = huge_range();
		plain = huge_range();
		/* A buffer inside the range, as a program caches one. */
		rdmad_mr_cache_put(
			c, rdmad_mr_cache_get(c, cached + 64 * ps, 16 * ps, W));
		errno = 0;
		r1 = madvise(plain, huge, passing[i].advice);
		e1 = errno;
		errno = 0;
		r2 = madvise(cached, huge, passing[i].advice);
		e2 = errno;
		CHECK(r1 == r2 && (r1 == 0 || e1 == e2),
		      "%s on cached memory: %d (%s), uncached: %d (%s)",
		      passing[i].name, r2, strerror(e2), r1, strerror(e1));
		rdmad_mr_cache_flush(c);
		munmap(cached, huge);
		munmap(plain, huge);
	}
	rdmad_mr_cache_destroy(c);
}

/* ---- release racing a get --------------------------------------------------
 */

static pthread_barrier_t both;
static struct rdmad_mr_cache *race_cache;
static char *race_page;

static void *race_get(void *arg)
{
	struct ibv_mr *mr;

	(void)arg;
	pthread_barrier_wait(&both);
	mr = rdmad_mr_cache_get(race_cache, race_page, ps, W);
	if (mr)
		rdmad_mr_cache_put(race_cache, mr);
	return NULL;
}

static int release_race(void)
{
	unsigned int stale = 0, i, spin;
	struct ibv_mr *mr;
	pthread_t t;

	race_cache = fake_mrcache_new(0);
	pthread_barrier_init(&both, NULL, 2);
	for (i = 0; i < 300; i++) {
		race_page = fake_mrcache_anon(NULL, ps, 0);
		pthread_create(&t, NULL, race_get, NULL);
		pthread_barrier_wait(&both);
		for (spin = (unsigned int)(rand() % 2000); spin; spin--)
			__asm__ volatile("" ::: "memory");
		rdmad_mr_cache_release(race_page, ps);
		pthread_join(t, NULL);
		/* New memory at the address: only the kernel's event tells
		 * the cache. */
		fake_mrcache_anon(race_page, ps, MAP_FIXED);
		mr = rdmad_mr_cache_get(race_cache, race_page, ps, W);
		stale += !mr || !fake_mrcache_fresh(mr);
		if (mr)
			rdmad_mr_cache_put(race_cache, mr);
		rdmad_mr_cache_flush(race_cache);
		munmap(race_page, ps);
	}
	printf("rdmad_mr_cache_release() racing a get: %u stale of 300\n",
	       stale);
	return stale ? 3 : 0;
}

static void test_release_race(void)
{
	CHECK(in_child(release_race, 60, "release racing a get"),
	      "a release racing a get left an entry cached unwatched");
}

static const struct fake_mrcache_case cases[] = {
	{"child-calls", test_child_calls},
	{"child-hang", test_child_hang},
	{"child-memory", test_child_memory},
	{"cancel", test_cancel},
	{"exit", test_exit},
	{"handler-guard", test_handler_guard},
	{"advice", test_advice},
	{"release-race", test_release_race},
};

/* With an argument, only the cases whose name holds it. */
int main(int argc, char **argv)
{
	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (fake_mrcache_run_cases(cases, sizeof(cases) / sizeof(cases[0]),
				   argc, argv) == 77)
		return 77;
	return failures ? 1 : 0;
}
