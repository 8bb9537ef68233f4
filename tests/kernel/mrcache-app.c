/* SPDX-License-Identifier: MIT */
/*
 * The registration cache on a real kernel and a real soft RDMA device
 * (test_kernel.py's TestMrCache): for each way a program changes the
 * pages behind a buffer, cache the buffer's MR, change the pages, ask the
 * cache again and RDMA WRITE a pattern through the MR it returns (an RC
 * QP connected to itself); the program must then read the pattern in its
 * buffer.  With --unmonitored the cache runs without its monitor (and
 * caches memory of any kind) nor librdmad's hooks (linked here as a
 * program linked with librdmad gets them), and every case must corrupt
 * instead (the
 * data lands in the old pages), which shows that the check can fail.  Then a
 * forked child asks the cache it inherited and must not get the parent's MR.
 *
 *   mrcache-app DEVICE [--unmonitored]
 * prints "case NAME: ok|corrupt|error ..." lines and "fork: ok|...";
 * exits 0 when every line says what the mode expects.
 *
 * Built a second time as mrcache-fabric-app, linked with librdmad.so as a
 * program gets it and with Debian's libfabric, for a process with both
 * caches (TestMrCache's libfabric test):
 *
 *   mrcache-fabric-app DEVICE --libfabric
 * first opens a libfabric verbs domain on DEVICE with its memhooks monitor
 * and says where memhooks' patches of libc's calls jump ("memhooks: ..."),
 * then runs the cases with libfabric's cache beside librdmad's: each case
 * also caches the buffer with fi_mr_reg() (asked twice: the second must be
 * a hit, the same key) and after the change asks again, printing
 * "libfabric NAME: fresh|stale|error ...": fresh when libfabric made a new
 * registration (rxe gives MRs indices cyclically, so a new registration
 * never carries a recent key), stale when it handed out the old one.
 * Last, librdmad's statistics ("stats: ...").
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#ifdef MRCACHE_APP_SHARED
#include "rdmad.h"
#else
#include "mrcache/mrcache.h"
#endif
#ifdef HAVE_LIBFABRIC
#include <dlfcn.h>

#include "fabric-domain.h"
#endif
#include <sys/syscall.h>

#define LEN (64 * 1024)

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct rdmad_mr_cache *cache;
	char *src;
	struct ibv_mr *src_mr;
	bool option;	  /* the build's option was given */
	bool unmonitored; /* --unmonitored */
	size_t ps;
} app;

/* ---- verbs: an RC QP connected to itself -------------------------------- */

static int open_device(const char *name)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			app.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!app.ctx)
		return -ENODEV;
	app.pd = ibv_alloc_pd(app.ctx);
	app.cq = ibv_create_cq(app.ctx, 16, NULL, NULL, 0);
	return app.pd && app.cq ? 0 : -errno;
}

static int connect_to_self(void)
{
	struct ibv_qp_init_attr init = {
		.send_cq = app.cq,
		.recv_cq = app.cq,
		.cap = {.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags =
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	};
	union ibv_gid gid;

	app.qp = ibv_create_qp(app.pd, &init);
	if (!app.qp || ibv_query_gid(app.ctx, 1, 0, &gid))
		return -EIO;
	if (ibv_modify_qp(app.qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return -EIO;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = app.qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(app.qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		return -EIO;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(app.qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC)
		       ? -EIO
		       : 0;
}

/* RDMA WRITE @len bytes of the source into @dst through @mr. */
static int rdma_write(void *dst, struct ibv_mr *mr, size_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)app.src,
			      .length = (uint32_t)len,
			      .lkey = app.src_mr->lkey};
	struct ibv_send_wr wr =
				   {
					   .sg_list = &sge,
					   .num_sge = 1,
					   .opcode = IBV_WR_RDMA_WRITE,
					   .send_flags = IBV_SEND_SIGNALED,
					   .wr.rdma = {.remote_addr =
							       (uintptr_t)dst,
						       .rkey = mr->rkey},
				   },
			   *bad;
	struct ibv_wc wc;
	time_t deadline = time(NULL) + 10;
	int n;

	if (ibv_post_send(app.qp, &wr, &bad))
		return -EIO;
	while ((n = ibv_poll_cq(app.cq, 1, &wc)) == 0 && time(NULL) < deadline)
		usleep(100);
	if (n != 1 || wc.status != IBV_WC_SUCCESS)
		return -EIO;
	return 0;
}

/* ---- the cases ---------------------------------------------------------- */

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

static void *anon(void *at, size_t len, int flags)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Each case makes a buffer (make), and then changes its pages (change),
 * returning where the program's buffer is now (the same address, else
 * NULL when the case could not bring the old address back). */
struct mrcase {
	const char *name;
	void *(*make)(void);
	void *(*change)(void *buf);
};

static void *make_mmap(void)
{
	return anon(NULL, LEN, 0);
}

static void *munmap_then_mmap(void *buf)
{
	munmap(buf, LEN);
	return anon(buf, LEN, MAP_FIXED_NOREPLACE);
}

/* The kernel's UNMAP event alone: no hook of librdmad's nor libfabric's
 * sees a raw system call. */
static void *raw_munmap_then_mmap(void *buf)
{
	syscall(SYS_munmap, buf, LEN);
	return anon(buf, LEN, MAP_FIXED_NOREPLACE);
}

static void *mmap_fixed(void *buf)
{
	return anon(buf, LEN, MAP_FIXED);
}

static void *mremap_away(void *buf)
{
	void *away = anon(NULL, LEN, 0);

	if (!away ||
	    mremap(buf, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, away) != away)
		return NULL;
	/* Keep the moved pages mapped (at @away): they are what a stale MR
	 * still pins, and where its data lands. */
	return anon(buf, LEN, MAP_FIXED_NOREPLACE);
}

static void *dontneed(void *buf)
{
	return madvise(buf, LEN, MADV_DONTNEED) ? NULL : buf;
}

/* The heap's top: grown with sbrk(), shrunk and grown again as glibc's
 * trimming does.  malloc gets room first so it needs no brk meanwhile. */
static void *make_brk(void)
{
	char *top;

	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	free(malloc(8 << 20));
	top = sbrk(0);
	if (sbrk((intptr_t)(app.ps - (uintptr_t)top % app.ps) % app.ps + LEN) ==
	    (void *)-1)
		return NULL;
	return (void *)(((uintptr_t)top + app.ps - 1) & ~(app.ps - 1));
}

static void *brk_shrink_grow(void *buf)
{
	if (sbrk(-(intptr_t)LEN) == (void *)-1 ||
	    sbrk((intptr_t)LEN) == (void *)-1)
		return NULL;
	return buf;
}

/* glibc's mmapped chunks: above M_MMAP_THRESHOLD (fixed, so that freeing
 * one does not raise it), free() unmaps and malloc() maps again. */
static void *make_mmapped_chunk(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	return malloc(4 * LEN);
}

/* free() and malloc() of the same size: the same address, or NULL. */
static void *free_then_malloc(void *buf)
{
	void *again;

	free(buf);
	again = malloc(4 * LEN);
	return again == buf ? again : NULL;
}

/* The heap's top chunk: below the threshold, free() trims the heap with
 * a negative sbrk and malloc() grows it again. */
static void *make_heap_chunk(void)
{
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 * 1024);
	mallopt(M_TOP_PAD, 0);
	malloc_trim(0);
	return malloc(4 * LEN);
}

/* A shared memfd: 6.1 and 6.12 let userfaultfd register it, yet a hole
 * punched or a truncate replaces its pages without an event; the cache
 * must pass it through. */
static int memfd = -1;

static void *make_memfd(void)
{
	if (memfd >= 0)
		close(memfd);
	memfd = memfd_create("mrcache-app", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, LEN) < 0)
		return NULL;
	return mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
}

static void *punch_hole(void *buf)
{
	return fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			 LEN)
		       ? NULL
		       : buf;
}

static void *truncate_grow(void *buf)
{
	return ftruncate(memfd, 0) || ftruncate(memfd, LEN) ? NULL : buf;
}

static const struct mrcase cases[] = {
	{"munmap-mmap", make_mmap, munmap_then_mmap},
	{"munmap-raw", make_mmap, raw_munmap_then_mmap},
	{"mmap-fixed", make_mmap, mmap_fixed},
	{"mremap", make_mmap, mremap_away},
	{"madv-dontneed", make_mmap, dontneed},
	{"brk", make_brk, brk_shrink_grow},
	{"free-malloc-mmapped", make_mmapped_chunk, free_then_malloc},
	{"free-malloc-trimmed", make_heap_chunk, free_then_malloc},
	{"memfd-punch", make_memfd, punch_hole},
	{"memfd-truncate", make_memfd, truncate_grow},
};

/* Page-aligned LEN bytes inside @buf (malloc's chunks are not). */
static char *aligned(void *buf)
{
	return (char *)(((uintptr_t)buf + app.ps - 1) & ~(app.ps - 1));
}

/* ---- the worker: the cache's calls, away from the main arena ------------ */

/* What the cache and the provider allocate (entries, struct ibv_mr) would
 * otherwise sit in the main heap above a case's chunk and keep glibc from
 * trimming it: the cache is called from a thread started before any case,
 * which has an arena of its own. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int (*job)(char *dst);
	char *dst;
	int result;
	bool done;
} worker = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void *work(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&worker.lock);
	for (;;) {
		while (!worker.job)
			pthread_cond_wait(&worker.cond, &worker.lock);
		worker.result = worker.job(worker.dst);
		worker.job = NULL;
		worker.done = true;
		pthread_cond_broadcast(&worker.cond);
	}
	return NULL;
}

static int on_worker(int (*job)(char *), char *dst)
{
	pthread_mutex_lock(&worker.lock);
	worker.job = job;
	worker.dst = dst;
	worker.done = false;
	pthread_cond_broadcast(&worker.cond);
	while (!worker.done)
		pthread_cond_wait(&worker.cond, &worker.lock);
	pthread_mutex_unlock(&worker.lock);
	errno = worker.result < 0 ? -worker.result : 0;
	return worker.result;
}

/* Get and put back, twice: the entry is cached, and the second get is a
 * hit where the cache takes the memory (the statistics count them). */
static int cache_it(char *dst)
{
	struct ibv_mr *mr;
	int i, err = 0;

	for (i = 0; i < 2 && !err; i++) {
		mr = rdmad_mr_cache_get(app.cache, dst, LEN, ACCESS);
		err = mr ? rdmad_mr_cache_put(app.cache, mr) : -errno;
	}
	return err;
}

/* Get, RDMA WRITE the pattern through what the cache returned, put. */
static int write_through_cache(char *dst)
{
	struct ibv_mr *mr = rdmad_mr_cache_get(app.cache, dst, LEN, ACCESS);
	int err;

	if (!mr)
		return -errno;
	err = rdma_write(dst, mr, LEN);
	rdmad_mr_cache_put(app.cache, mr);
	rdmad_mr_cache_flush(app.cache);
	return err;
}

/* ---- libfabric's cache beside librdmad's (--libfabric) ------------------ */

#ifdef HAVE_LIBFABRIC
static struct {
	struct fid_domain *domain;
	bool on;
	uint64_t key; /* the case's buffer's key before the change */
	uint64_t again, after;
	int err;
} fab;

/* A verbs domain on @device with libfabric's registration cache and its
 * memhooks monitor. */
static int fab_open(const char *device)
{
	struct fi_info *info;
	int err;

	setenv("FI_MR_CACHE_MONITOR", "memhooks", 1);
	err = fabric_verbs_domain(device, &fab.domain, &info);
	if (err)
		return err;
	fi_freeinfo(info);
	fab.on = true;
	return 0;
}

/* The object libc's @name jumps into now, NULL when its code is libc's
 * own.  memhooks overwrites the start of the function that
 * dlsym(RTLD_NEXT) finds from libfabric, libc's, with "movabs $intercept,
 * %r11; jmp *%r11" (util_mem_hooks.c, x86_64). */
static const char *jumps_into(const char *name)
{
#ifdef __x86_64__
	static const unsigned char head[] = {0x49, 0xbb},
				   tail[] = {0x41, 0xff, 0xe3};
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	const unsigned char *code = libc ? dlsym(libc, name) : NULL;
	uint64_t target;
	Dl_info info;

	if (!code || memcmp(code, head, sizeof(head)) ||
	    memcmp(code + 10, tail, sizeof(tail)))
		return NULL;
	memcpy(&target, code + 2, sizeof(target));
	if (!dladdr((void *)(uintptr_t)target, &info) || !info.dli_fname)
		return "an object dladdr() does not know";
	return info.dli_fname;
#else
	(void)name;
	return NULL;
#endif
}

/* "memhooks: munmap -> OBJECT, ..." for the calls the cases make. */
static void say_memhooks(void)
{
	static const char *const calls[] = {"munmap", "mremap", "madvise",
					    "brk"};
	const char *into;
	size_t i;

	printf("memhooks:");
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		into = jumps_into(calls[i]);
		printf("%s %s -> %s", i ? "," : "", calls[i],
		       into ? into : "libc's own code");
	}
	printf("\n");
}

/* fi_mr_reg() of @dst and fi_close(): libfabric's cache keeps it. */
static int fab_reg(char *dst, uint64_t *key)
{
	struct fid_mr *mr;
	int err = fi_mr_reg(fab.domain, dst, LEN, FI_REMOTE_WRITE | FI_WRITE, 0,
			    0, 0, &mr, NULL);

	if (err)
		return err;
	*key = fi_mr_key(mr);
	return fi_close(&mr->fid);
}

static int fab_cache(char *dst)
{
	int err = fab_reg(dst, &fab.key);

	return err ? err : fab_reg(dst, &fab.again);
}

static int fab_ask(char *dst)
{
	return fab_reg(dst, &fab.after);
}

/* Before the change: the buffer in libfabric's cache, asked twice. */
static void fab_before(char *dst)
{
	if (fab.on)
		fab.err = on_worker(fab_cache, dst);
}

/* After the change: "libfabric NAME: fresh|stale|error (why)". */
static void fab_after(const char *name, char *dst)
{
	const char *got = "error";
	char why[96];

	if (!fab.on)
		return;
	if (!fab.err)
		fab.err = on_worker(fab_ask, dst);
	if (fab.err)
		snprintf(why, sizeof(why), "fi_mr_reg: %s",
			 fi_strerror(-fab.err));
	else if (fab.again != fab.key)
		snprintf(why, sizeof(why),
			 "not cached: the second ask registered again");
	else if (fab.after == fab.key)
		got = "stale", snprintf(why, sizeof(why),
					"key %#llx again, the old registration",
					(unsigned long long)fab.key);
	else
		got = "fresh",
		snprintf(why, sizeof(why), "key %#llx, was %#llx",
			 (unsigned long long)fab.after,
			 (unsigned long long)fab.key);
	printf("libfabric %s: %s (%s)\n", name, got, why);
}
#else
static void fab_before(char *dst)
{
	(void)dst;
}

static void fab_after(const char *name, char *dst)
{
	(void)name;
	(void)dst;
}
#endif

/* ---- a case ------------------------------------------------------------- */

static const char *run_case(const struct mrcase *c, char *why, size_t size)
{
	char *buf = c->make(), *dst;
	size_t i;

	if (!buf)
		return snprintf(why, size, "no buffer: %s", strerror(errno)),
		       "error";
	dst = aligned(buf);
	memset(dst, 0, LEN);
	if (on_worker(cache_it, dst))
		return snprintf(why, size, "first get: %s", strerror(errno)),
		       "error";
	fab_before(dst);
	buf = c->change(buf);
	if (!buf)
		return snprintf(why, size, "the old address did not return"),
		       "error";
	dst = aligned(buf);
	fab_after(c->name, dst);
	memset(dst, 0, LEN);
	if (on_worker(write_through_cache, dst))
		return snprintf(why, size, "get or write: %s", strerror(errno)),
		       "error";
	for (i = 0; i < LEN; i++)
		if (dst[i] != app.src[i])
			return snprintf(why, size,
					"byte %zu reads %d, not %d: the data "
					"landed in the old pages",
					i, dst[i], app.src[i]),
			       "corrupt";
	return snprintf(why, size, "the program reads what was written"), "ok";
}

/* ---- fork --------------------------------------------------------------- */

static bool fork_case(void)
{
	char *buf = anon(NULL, LEN, 0);
	struct ibv_mr *mr = rdmad_mr_cache_get(app.cache, buf, LEN, ACCESS);
	struct ibv_mr *child;
	int status;
	pid_t pid;

	if (!mr)
		return false;
	rdmad_mr_cache_put(app.cache, mr);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		child = rdmad_mr_cache_get(app.cache, buf, LEN, ACCESS);
		printf("fork: the child's get %s\n",
		       child == mr ? "returned the parent's MR"
		       : child	   ? "registered its own MR"
				   : "failed (the parent's PD)");
		_exit(child == mr ? 1 : 0);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

static void say_stats(void)
{
	struct rdmad_mr_cache_stats st;

	if (rdmad_mr_cache_get_stats(app.cache, &st, sizeof(st)))
		return;
	printf("stats: hits %llu, misses %llu, bypassed %llu, unhooked %llu, "
	       "invalidations %llu\n",
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.bypassed, (unsigned long long)st.unhooked,
	       (unsigned long long)st.invalidations);
}

/* The option this build takes: --unmonitored linked statically (the
 * cache's test-only mode), --libfabric linked with librdmad.so. */
#ifdef MRCACHE_APP_SHARED
#define OPTION "--libfabric"
#else
#define OPTION "--unmonitored"
#endif

static int setup(const char *device)
{
	size_t i;

	if (open_device(device) || connect_to_self()) {
		printf("error: %s: no loopback QP: %s\n", device,
		       strerror(errno));
		return -1;
	}
	app.src = anon(NULL, LEN, 0);
	for (i = 0; i < LEN; i++)
		app.src[i] = (char)(1 + i % 251);
	app.src_mr = ibv_reg_mr(app.pd, app.src, LEN, IBV_ACCESS_LOCAL_WRITE);
#ifdef HAVE_LIBFABRIC
	/* libfabric first: librdmad's cache is made after memhooks patched
	 * libc's calls, and its probe runs through them. */
	if (app.option) {
		if (fab_open(device) || fab_reg(app.src, &fab.key)) {
			printf("error: no libfabric verbs domain on %s\n",
			       device);
			return -1;
		}
		say_memhooks();
	}
#endif
	app.cache = rdmad_mr_cache_new(app.pd, NULL);
	if (!app.src_mr || !app.cache) {
		printf("error: %s\n", strerror(errno));
		return -1;
	}
#ifndef MRCACHE_APP_SHARED
	if (app.option)
		mrc_cache_unmonitored(app.cache);
#endif
	return 0;
}

int main(int argc, char **argv)
{
	const char *expect, *got;
	pthread_t thread;
	char why[160];
	size_t i;
	int bad = 0;

	if (argc < 2 || (argc > 2 && strcmp(argv[2], OPTION)))
		return fprintf(stderr, "usage: %s DEVICE [" OPTION "]\n",
			       argv[0]),
		       2;
	app.option = argc > 2;
	app.unmonitored = app.option && strcmp(OPTION, "--libfabric");
	if (app.unmonitored)
		setenv("RDMAD_MR_CACHE_HOOKS", "off", 1);
	app.ps = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	rdmad_fork_init();
	if (setup(argv[1]) || pthread_create(&thread, NULL, work, NULL))
		return 1;
	printf("monitor: %s\n", rdmad_mr_cache_get_reason(app.cache));
	if (!rdmad_mr_cache_is_caching(app.cache))
		return 1;
	expect = app.unmonitored ? "corrupt" : "ok";
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = run_case(&cases[i], why, sizeof(why));
		printf("case %s: %s (%s)\n", cases[i].name, got, why);
		bad += strcmp(got, expect) != 0;
	}
	say_stats();
	if (!app.unmonitored && !fork_case()) {
		printf("fork: the child got the parent's MR\n");
		bad++;
	}
	return bad ? 1 : 0;
}
