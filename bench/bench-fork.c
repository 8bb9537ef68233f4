/* SPDX-License-Identifier: MIT */
/*
 * The fork tracker against rdma-core's (ibv_fork_init() plus libibverbs'
 * exported ibv_dontfork_range()/ibv_dofork_range(), called directly: do not
 * run this under the LD_PRELOAD shim) and against bare madvise(2), in one
 * run.  Cases: churn of one buffer (also with munmap + mmap in between,
 * checked with a real fork), 20,000 scattered live ranges, huge pages with
 * RDMAV_HUGEPAGES_SAFE (reserved through /proc/sys/vm/nr_hugepages when
 * run as root, restored at exit), 8 threads registering at once, and
 * fork() itself with 1,000 live ranges (what the atfork handlers add).
 * Each figure is the median of ROUNDS rounds, in ns per operation; in each
 * round every implementation runs once, after an untimed warm-up, and the
 * one that goes first rotates from round to round, so that load from
 * elsewhere on the machine and the faults after a fork hit all alike.
 * Every ratio is between figures of this run.
 *
 * Both trackers are forced on (RDMAD_FORK_COPY_ON_FORK=0, and
 * RDMAV_USE_MADVISE=1 for rdma-core >= 45), so that the rows measure
 * tracking also on a kernel that copies pinned pages at fork, where
 * neither would mark anything.  The last row is what a process pays on
 * such a kernel with nothing forced, measured in a child started with
 * RDMAD_FORK_COPY_ON_FORK=1.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rdmad.h"

int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

enum impl {
	IMPL_OURS,
	IMPL_RDMA_CORE,
	IMPL_RAW,
	IMPL_COUNT,
};

static size_t pg;
static const size_t huge = 2 << 20;

static int reg(enum impl impl, void *p, size_t n)
{
	switch (impl) {
	case IMPL_OURS:
		return rdmad_dontfork_range(p, n);
	case IMPL_RDMA_CORE:
		return ibv_dontfork_range(p, n);
	case IMPL_RAW:
		return madvise(p, n, MADV_DONTFORK);
	case IMPL_COUNT:
		break;
	}
	return -EINVAL;
}

static int unreg(enum impl impl, void *p, size_t n)
{
	switch (impl) {
	case IMPL_OURS:
		return rdmad_dofork_range(p, n);
	case IMPL_RDMA_CORE:
		return ibv_dofork_range(p, n);
	case IMPL_RAW:
		return madvise(p, n, MADV_DOFORK);
	case IMPL_COUNT:
		break;
	}
	return -EINVAL;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *map(size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 1, len);
	return p;
}

static void die(const char *what)
{
	fprintf(stderr, "bench-fork: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A fork, so that our prepare handler flushes deferred ranges: each
 * repetition then starts from unmarked memory, as the others do. */
static void fork_flush(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
}

/* 1 if a child can read @p. */
static int child_reads(volatile char *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		(void)*p;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- cases: each returns ns per operation -------------------------------- */

static double churn(enum impl impl, long n, bool remap, int *ret_correct)
{
	const size_t len = 16 * pg;
	char *area = map(4 * len, 0), *buf = area + len;
	double t0, t;

	if (!area)
		die("mmap");
	/* Untimed: the first cycles fault in what a fork left shared. */
	for (long i = 0; i < n / 100; i++)
		if (reg(impl, buf, len) || unreg(impl, buf, len))
			die("churn");
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (reg(impl, buf, len) || unreg(impl, buf, len))
			die("churn");
		if (remap && (munmap(buf, len) ||
			      mmap(buf, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				   0) != buf))
			die("remap");
	}
	t = (now_ns() - t0) / n;
	if (ret_correct) {
		reg(impl, buf, len);
		*ret_correct = !child_reads(buf) && child_reads(area);
		unreg(impl, buf, len);
	}
	munmap(area, 4 * len);
	fork_flush();
	return t;
}

static unsigned int *shuffled(unsigned int n)
{
	unsigned int *v = malloc(n * sizeof(*v));
	unsigned int seed = 12345;

	if (!v)
		die("malloc");
	for (unsigned int i = 0; i < n; i++)
		v[i] = i;
	for (unsigned int i = n - 1; i > 0; i--) {
		unsigned int j = rand_r(&seed) % (i + 1), x = v[i];

		v[i] = v[j];
		v[j] = x;
	}
	return v;
}

static bool interleave = true; /* false: not enough VMAs for all at once */

/* After a fork every page the parent writes first faults (copy-on-write
 * bookkeeping): touch each implementation's structures once, untimed, so
 * that a case of few operations measures them and not the faults. */
static void warm_up(void)
{
	static char *scratch;

	if (!scratch)
		scratch = map(2 * pg * IMPL_COUNT, 0);
	for (int k = 0; k < IMPL_COUNT; k++) {
		reg(k, scratch + 2 * k * pg, pg);
		unreg(k, scratch + 2 * k * pg, pg);
	}
}

static void scatter_one(enum impl impl, char *area, unsigned int n, size_t size,
			double *ret_reg, double *ret_unreg)
{
	unsigned int *order = shuffled(n);
	double t0;

	t0 = now_ns();
	for (unsigned int i = 0; i < n; i++)
		if (reg(impl, area + 2 * (size_t)order[i] * size, size))
			die("register");
	*ret_reg = (now_ns() - t0) / n;
	t0 = now_ns();
	for (unsigned int i = 0; i < n; i++)
		if (unreg(impl, area + 2 * (size_t)order[i] * size, size))
			die("release");
	*ret_unreg = (now_ns() - t0) / n;
	free(order);
	fork_flush();
}

/* Register @n ranges of @size, every other one of each implementation's
 * mapping, in one random order, then release them.  The implementations
 * take turns every SCATTER_BLOCK operations, so that load from elsewhere
 * on the machine hits them alike while each runs its own loop (turns op
 * by op would measure cold caches for everybody).  Fills ns per
 * registration and per release. */
#define SCATTER_BLOCK 500

static void scatter(char *const area[IMPL_COUNT], unsigned int n, size_t size,
		    double ret_reg[IMPL_COUNT], double ret_unreg[IMPL_COUNT])
{
	static unsigned int turn; /* who goes first, right after a fork */
	unsigned int *order = shuffled(n);
	double sum[2][IMPL_COUNT] = {{0}};

	turn++;
	warm_up();
	if (!interleave) {
		for (int j = 0; j < IMPL_COUNT; j++) {
			int k = (j + turn) % IMPL_COUNT;

			scatter_one(k, area[k], n, size, &ret_reg[k],
				    &ret_unreg[k]);
		}
		free(order);
		return;
	}
	for (int phase = 0; phase < 2; phase++)
		for (unsigned int b = 0; b < n; b += SCATTER_BLOCK)
			for (int k = 0; k < IMPL_COUNT; k++) {
				int impl = (b / SCATTER_BLOCK + k + turn) %
					   IMPL_COUNT;
				unsigned int e = b + SCATTER_BLOCK < n
							 ? b + SCATTER_BLOCK
							 : n;
				double t0 = now_ns();

				for (unsigned int i = b; i < e; i++) {
					char *p = area[impl] +
						  2 * (size_t)order[i] * size;

					if (phase ? unreg(impl, p, size)
						  : reg(impl, p, size))
						die("scatter");
				}
				sum[phase][impl] += now_ns() - t0;
			}
	for (int k = 0; k < IMPL_COUNT; k++) {
		ret_reg[k] = sum[0][k] / n;
		ret_unreg[k] = sum[1][k] / n;
	}
	free(order);
	fork_flush();
}

struct thread_arg {
	enum impl impl;
	long n;
	pthread_barrier_t *barrier;
};

static void *thread_churn(void *p)
{
	struct thread_arg *a = p;
	char *buf = map(64 * pg, 0);

	if (!buf)
		die("mmap");
	pthread_barrier_wait(a->barrier);
	for (long i = 0; i < a->n; i++) {
		char *r = buf + (1 + i % 32) * pg;

		if (reg(a->impl, r, 4 * pg) || unreg(a->impl, r, 4 * pg))
			die("thread churn");
	}
	munmap(buf, 64 * pg);
	return NULL;
}

static double threads(enum impl impl, int nthreads, long n)
{
	pthread_t t[16];
	struct thread_arg a;
	pthread_barrier_t barrier;
	double t0, dt;

	pthread_barrier_init(&barrier, NULL, nthreads + 1);
	a = (struct thread_arg){impl, n, &barrier};
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, thread_churn, &a);
	pthread_barrier_wait(&barrier);
	t0 = now_ns();
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	dt = now_ns() - t0;
	pthread_barrier_destroy(&barrier);
	fork_flush();
	return dt / ((double)n * nthreads);
}

/* ---- table --------------------------------------------------------------- */

#define ROUNDS 7

/* The implementation that runs @j-th in round @k. */
static enum impl impl_at(int k, int j)
{
	return (enum impl)((k + j) % IMPL_COUNT);
}

static double median(const double *v, int n)
{
	double s[ROUNDS];

	for (int i = 0; i < n; i++) {
		int j = i;

		for (; j > 0 && s[j - 1] > v[i]; j--)
			s[j] = s[j - 1];
		s[j] = v[i];
	}
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Fill a row's figures with the medians of @v. */
static void medians(double r[IMPL_COUNT], double v[IMPL_COUNT][ROUNDS], int n)
{
	for (int i = 0; i < IMPL_COUNT; i++)
		r[i] = median(v[i], n);
}

struct row {
	const char *name;
	double ns[IMPL_COUNT];
	const char *target;
	bool pass;
	const char *note;
};

static void print_row(const struct row *r)
{
	printf("%-26s %10.0f %10.0f %10.0f %9.2fx %9.2fx  %-22s %s%s%s\n",
	       r->name, r->ns[IMPL_OURS], r->ns[IMPL_RDMA_CORE],
	       r->ns[IMPL_RAW], r->ns[IMPL_RDMA_CORE] / r->ns[IMPL_OURS],
	       r->ns[IMPL_OURS] / r->ns[IMPL_RAW], r->target,
	       r->pass ? "PASS" : "MISS", r->note ? "  " : "",
	       r->note ? r->note : "");
}

/* What one MADV_DONTFORK on an already marked range costs here: the
 * floor of a re-registration that re-issues the mark. */
static double remark_ns(void)
{
	const size_t len = 16 * pg;
	char *area = map(4 * len, 0);
	double t0, t;

	if (!area)
		die("mmap");
	madvise(area + len, len, MADV_DONTFORK);
	t0 = now_ns();
	for (int i = 0; i < 100000; i++)
		madvise(area + len, len, MADV_DONTFORK);
	t = (now_ns() - t0) / 100000;
	munmap(area, 4 * len);
	return t;
}

static void row_churn(const char *name)
{
	static char note[2][80];
	static int rows;
	char *text = note[rows++ % 2];
	struct row r = {name, {0}, "rdma/ours >= 10x", false, text};
	double v[IMPL_COUNT][ROUNDS], floor[ROUNDS], remark;

	for (int k = 0; k < ROUNDS; k++) {
		for (int j = 0; j < IMPL_COUNT; j++) {
			enum impl i = impl_at(k, j);

			v[i][k] = churn(i, i == IMPL_OURS ? 100000 : 20000,
					false, NULL);
		}
		floor[k] = remark_ns();
	}
	medians(r.ns, v, ROUNDS);
	remark = median(floor, ROUNDS);
	r.pass = r.ns[IMPL_RDMA_CORE] / r.ns[IMPL_OURS] >= 10;
	snprintf(text, sizeof(note[0]),
		 "(a bare re-issued DONTFORK: %.0f ns, rdma/that %.1fx)",
		 remark, r.ns[IMPL_RDMA_CORE] / remark);
	print_row(&r);
}

static void row_churn_remap(const char *name)
{
	static char note[64];
	struct row r = {name, {0}, "child misses new map", true, note};
	double v[IMPL_COUNT][ROUNDS];
	int ok[IMPL_COUNT] = {1, 1, 1};

	for (int k = 0; k < ROUNDS; k++)
		for (int j = 0; j < IMPL_COUNT; j++) {
			enum impl i = impl_at(k, j);
			int correct;

			v[i][k] = churn(i, 5000, true, &correct);
			ok[i] &= correct;
		}
	medians(r.ns, v, ROUNDS);
	r.pass = ok[IMPL_OURS];
	snprintf(note, sizeof(note), "(correct: ours %s, rdma-core %s)",
		 ok[IMPL_OURS] ? "yes" : "NO",
		 ok[IMPL_RDMA_CORE] ? "yes" : "NO");
	print_row(&r);
}

/* Interleaving three implementations' 20,000 split ranges needs about
 * 120,000 VMAs: raise vm.max_map_count for the run when root. */
static long max_map_old = -1;

static void max_map_restore(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "w");

	if (f) {
		fprintf(f, "%ld\n", max_map_old);
		fclose(f);
	}
}

static void max_map_raise(long want)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	long old;

	interleave = false;
	if (!f)
		return;
	if (fscanf(f, "%ld", &old) != 1) {
		fclose(f);
		return;
	}
	fclose(f);
	if (old >= want) {
		interleave = true;
		return;
	}
	f = fopen("/proc/sys/vm/max_map_count", "w");
	if (!f)
		return;
	interleave = fprintf(f, "%ld\n", want) > 0;
	if (fclose(f) || !interleave) {
		interleave = false;
		return;
	}
	max_map_old = old;
	atexit(max_map_restore);
}

static void rows_scatter(void)
{
	const unsigned int n = 20000;
	struct row reg_row = {"20000 scattered: register",
			      {0},
			      "ours/raw <= 1.05x",
			      false,
			      NULL};
	struct row unreg_row = {"20000 scattered: release",
				{0},
				"(info: deferred)",
				true,
				NULL};
	double vr[IMPL_COUNT][ROUNDS], vu[IMPL_COUNT][ROUNDS];
	char *area[IMPL_COUNT];

	max_map_raise(200000);
	if (!interleave)
		reg_row.note = "(one implementation at a time)";
	for (int i = 0; i < IMPL_COUNT; i++) {
		area[i] = mmap(NULL, 2 * n * pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area[i] == MAP_FAILED)
			die("mmap");
	}
	for (int k = 0; k < ROUNDS; k++) {
		double r[IMPL_COUNT], u[IMPL_COUNT];

		scatter(area, n, pg, r, u);
		for (int i = 0; i < IMPL_COUNT; i++) {
			vr[i][k] = r[i];
			vu[i][k] = u[i];
		}
	}
	medians(reg_row.ns, vr, ROUNDS);
	medians(unreg_row.ns, vu, ROUNDS);
	reg_row.pass = reg_row.ns[IMPL_OURS] / reg_row.ns[IMPL_RAW] <= 1.05;
	print_row(&reg_row);
	print_row(&unreg_row);
	for (int i = 0; i < IMPL_COUNT; i++)
		munmap(area[i], 2 * n * pg);
}

static void row_threads(void)
{
	struct row r = {
		"8 threads churn 16 KiB", {0}, "rdma/ours >= 1x", false, NULL};
	double v[IMPL_COUNT][ROUNDS];

	for (int k = 0; k < 5; k++)
		for (int j = 0; j < IMPL_COUNT; j++) {
			enum impl i = impl_at(k, j);

			threads(i, 8, 400); /* warm-up */
			v[i][k] = threads(i, 8, i == IMPL_OURS ? 20000 : 4000);
		}
	medians(r.ns, v, 5);
	r.pass = r.ns[IMPL_RDMA_CORE] >= r.ns[IMPL_OURS];
	print_row(&r);
}

/* ---- fork itself ----------------------------------------------------------
 */

/* fork() + _exit() + waitpid() with @n single-page ranges of @impl live:
 * what the prepare and child handlers add to a fork (ours runs in every
 * column, since atfork handlers are process-wide; only the ranges held
 * differ). */
static double fork_cost(enum impl impl, unsigned int n, int forks)
{
	char *area = map(2 * (size_t)n * pg, 0);
	double t0, t;

	if (!area)
		die("mmap");
	for (unsigned int i = 0; i < n; i++)
		if (reg(impl, area + 2 * (size_t)i * pg, pg))
			die("register");
	fork_flush(); /* untimed: the first fork after a change */
	t0 = now_ns();
	for (int i = 0; i < forks; i++)
		fork_flush();
	t = (now_ns() - t0) / forks;
	for (unsigned int i = 0; i < n; i++)
		if (unreg(impl, area + 2 * (size_t)i * pg, pg))
			die("release");
	munmap(area, 2 * (size_t)n * pg);
	fork_flush();
	return t;
}

static void row_fork(void)
{
	static char note[80];
	struct row r = {
		"fork, 1000 live ranges", {0}, "(info: per fork)", true, note};
	double v[IMPL_COUNT][ROUNDS];

	for (int k = 0; k < ROUNDS; k++)
		for (int j = 0; j < IMPL_COUNT; j++) {
			enum impl i = impl_at(k, j);

			v[i][k] = fork_cost(i, 1000, 100);
		}
	medians(r.ns, v, ROUNDS);
	snprintf(note, sizeof(note), "(ours - raw: %+.0f ns a fork)",
		 r.ns[IMPL_OURS] - r.ns[IMPL_RAW]);
	print_row(&r);
}

/* ---- huge pages ---------------------------------------------------------- */

static long hugepages_old = -1;

static void hugepages_restore(void)
{
	FILE *f;

	if (hugepages_old < 0)
		return;
	f = fopen("/proc/sys/vm/nr_hugepages", "w");
	if (f) {
		fprintf(f, "%ld\n", hugepages_old);
		fclose(f);
	}
}

static void hugepages_reserve(long want)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r");
	long old;

	if (!f || fscanf(f, "%ld", &old) != 1 || geteuid() != 0) {
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	f = fopen("/proc/sys/vm/nr_hugepages", "w");
	if (!f)
		return;
	fprintf(f, "%ld\n", old + want);
	fclose(f);
	hugepages_old = old;
	atexit(hugepages_restore);
}

/* Fresh 2 MiB registrations: huge pages with RDMAV_HUGEPAGES_SAFE against
 * the same ranges on ordinary pages without it. */
static void rows_huge(void)
{
	const unsigned int n = 32;
	struct row r = {
		"huge pages: register", {0}, "huge/plain <= 1.5x", false, NULL};
	double plain[IMPL_COUNT], hp[IMPL_COUNT], t[IMPL_COUNT], u[IMPL_COUNT];
	double vp[IMPL_COUNT][ROUNDS], vh[IMPL_COUNT][ROUNDS];
	char *normal[IMPL_COUNT], *hmap[IMPL_COUNT];
	static char note[96];

	hugepages_reserve(2 * n * IMPL_COUNT + 2);
	for (int i = 0; i < IMPL_COUNT; i++) {
		normal[i] = map(2 * n * huge, 0);
		hmap[i] = map(2 * n * huge, MAP_HUGETLB);
		if (!normal[i] || !hmap[i]) {
			printf("%-26s skipped: no %u free 2 MiB huge pages "
			       "(run as root to reserve them)\n",
			       r.name, 2 * n * IMPL_COUNT);
			return;
		}
	}
	for (int k = 0; k < ROUNDS; k++) {
		scatter(normal, n, huge, t, u);
		for (int i = 0; i < IMPL_COUNT; i++)
			vp[i][k] = t[i];
	}
	medians(plain, vp, ROUNDS);
	setenv("RDMAV_HUGEPAGES_SAFE", "1", 1);
	rdmad_fork_init();
	ibv_fork_init(); /* rdma-core re-reads it too */
	for (int k = 0; k < ROUNDS; k++) {
		scatter(hmap, n, huge, t, u);
		for (int i = 0; i < IMPL_COUNT; i++)
			vh[i][k] = t[i];
	}
	medians(hp, vh, ROUNDS);
	for (int i = 0; i < IMPL_COUNT; i++)
		r.ns[i] = hp[i];
	r.pass = hp[IMPL_OURS] / plain[IMPL_OURS] <= 1.5;
	snprintf(note, sizeof(note),
		 "(huge/plain: ours %.2fx, rdma-core %.2fx, raw %.2fx)",
		 hp[IMPL_OURS] / plain[IMPL_OURS],
		 hp[IMPL_RDMA_CORE] / plain[IMPL_RDMA_CORE],
		 hp[IMPL_RAW] / plain[IMPL_RAW]);
	r.note = note;
	print_row(&r);
}

/* The child's side of row_copy_on_fork(): churn medians, one line. */
static int copy_on_fork_child(void)
{
	double v[IMPL_COUNT][ROUNDS], ns[IMPL_COUNT];

	if (ibv_fork_init() || rdmad_fork_init() ||
	    rdmad_is_fork_initialized() != RDMAD_FORK_UNNEEDED)
		return 1;
	for (int k = 0; k < ROUNDS; k++)
		for (int j = 0; j < IMPL_COUNT; j++) {
			enum impl i = impl_at(k, j);

			v[i][k] = churn(i, i == IMPL_RAW ? 20000 : 200000,
					false, NULL);
		}
	medians(ns, v, ROUNDS);
	printf("%f %f %f\n", ns[IMPL_OURS], ns[IMPL_RDMA_CORE], ns[IMPL_RAW]);
	return 0;
}

/* What registration costs a process on a kernel that copies pinned pages
 * at fork: ours with the kernel's answer forced to "copies" (the tracker
 * then does nothing), rdma-core as it is on this kernel without
 * RDMAV_USE_MADVISE (44 tracks anyway; later releases skip where the
 * kernel copies). */
static void row_copy_on_fork(void)
{
	struct row r = {"copy-on-fork: churn",
			{0},
			"ours/raw <= 0.02x",
			false,
			"(unforced, in a child)"};
	char self[4096], cmd[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	FILE *f;
	int ok;

	if (n <= 0)
		die("readlink");
	self[n] = 0;
	snprintf(cmd, sizeof(cmd),
		 "env -u RDMAV_USE_MADVISE "
		 "-u RDMAV_HUGEPAGES_SAFE RDMAD_FORK_COPY_ON_FORK=1 '%s' "
		 "--copy-on-fork",
		 self);
	f = popen(cmd, "r");
	if (!f)
		die("popen");
	ok = fscanf(f, "%lf %lf %lf", &r.ns[IMPL_OURS], &r.ns[IMPL_RDMA_CORE],
		    &r.ns[IMPL_RAW]) == 3;
	if (pclose(f) != 0 || !ok) {
		printf("%-26s failed: the child could not measure\n", r.name);
		return;
	}
	/* "Costs nothing": a fiftieth of the one madvise pair it saves,
	 * measured alike (about 10 ns here; under emulation all is slower). */
	r.pass = r.ns[IMPL_OURS] / r.ns[IMPL_RAW] <= 0.02;
	print_row(&r);
}

/* Does the kernel copy pinned pages at fork?  libibverbs' answer, asked
 * before anything is forced. */
static bool kernel_copies_at_fork(void)
{
	return ibv_is_fork_initialized() == IBV_FORK_UNNEEDED;
}

int main(int argc, char **argv)
{
	int r;

	pg = (size_t)sysconf(_SC_PAGESIZE);
	if (argc == 2 && !strcmp(argv[1], "--copy-on-fork"))
		return copy_on_fork_child();
	if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "preload")) {
		fprintf(stderr, "bench-fork: do not run under the shim: "
				"rdma-core's calls would be ours\n");
		return 1;
	}
	unsetenv("RDMAV_HUGEPAGES_SAFE");
	printf("kernel copies pinned pages at fork: %s; both trackers forced "
	       "on (RDMAD_FORK_COPY_ON_FORK=0, RDMAV_USE_MADVISE=1)\n",
	       kernel_copies_at_fork() ? "yes" : "no");
	setenv("RDMAD_FORK_COPY_ON_FORK", "0", 1);
	setenv("RDMAV_USE_MADVISE", "1", 1);
	r = ibv_fork_init();
	if (r) {
		fprintf(stderr, "bench-fork: ibv_fork_init: %s\n", strerror(r));
		return 1;
	}
	r = rdmad_fork_init();
	if (r) {
		fprintf(stderr, "bench-fork: rdmad_fork_init: %s\n",
			strerror(-r));
		return 1;
	}
	printf("%-26s %10s %10s %10s %10s %10s  %-22s %s\n", "case", "ours ns",
	       "rdma-core", "raw ns", "rdma/ours", "ours/raw", "target",
	       "result");
	/* First, while the process is small: a fork's cost grows with it. */
	row_fork();
	row_churn("churn 64 KiB");
	row_churn_remap("churn + munmap/mmap");
	/* The mark of a re-registered range re-issued at fork, not at
	 * registration. */
	setenv("RDMAD_FORK_REMARK", "fork", 1);
	rdmad_fork_init();
	row_churn("churn, REMARK=fork");
	row_churn_remap("churn+remap, REMARK=fork");
	unsetenv("RDMAD_FORK_REMARK");
	rdmad_fork_init();
	rows_scatter();
	row_threads();
	rows_huge();
	row_copy_on_fork();
	return 0;
}
