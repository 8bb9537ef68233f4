/* SPDX-License-Identifier: MIT */
/*
 * The fork diagnostics as a user meets them, with real fork() children:
 *
 *   audit      RDMAD_FORK_AUDIT=1: a buffer registered with an unrelated
 *              variable on its page; each fork writes one stderr line with
 *              the pages hidden and the bytes of them outside any
 *              registration, checked exactly, and only when they change.
 *   quiet      neither variable set: a fork writes nothing.
 *   cof        RDMAD_FORK_COPY_ON_FORK=1 (a kernel that copies pinned
 *              pages at fork): nothing hidden, nothing written.
 *   explain    RDMAD_FORK_EXPLAIN=1: a child touching the unrelated
 *              variable dies as a child without our handler does (by
 *              SIGSEGV, unless AddressSanitizer's handler was there
 *              first), having named the registration's range and the
 *              function that registered it; a fault elsewhere is not
 *              explained.
 *   chain      the same with a SIGSEGV handler of the program's own,
 *              installed before the fork: ours explains, then it runs.
 *   stats      rdmad_fork_get_stats(): marked runs against the kernel's
 *              count of DONTFORK mappings (VmFlags "dc" in
 *              /proc/self/smaps), mappings against /proc/self/maps, and
 *              vm.max_map_count.
 *
 *   test-fork-diag rdmad|shim [CASE]
 *
 * Each case runs in a fresh process with its own environment, tracking
 * forced on (RDMAD_FORK_COPY_ON_FORK=0) as in test-fork.c, except where
 * the case says otherwise.  "shim" registers through libibverbs' names
 * under LD_PRELOAD of the shim.  Linked with -rdynamic so that dladdr(3)
 * finds diag_register() in this executable.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rdmad.h"

int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

#define SKIP 77
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stdout, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

static bool shim;
static size_t pg;
static int err_fd = -1; /* where stderr goes while a case runs */

/* ---- registering, through the API under test ----------------------------- */

static void init(void)
{
	CHECK((shim ? -ibv_fork_init() : rdmad_fork_init()) == 0);
}

/* Not static, not inlined, and not a tail call: the registration's caller
 * that EXPLAIN names. */
int diag_register(void *base, size_t size);

__attribute__((noinline)) int diag_register(void *base, size_t size)
{
	int r = shim ? ibv_dontfork_range(base, size)
		     : rdmad_dontfork_range(base, size);

	__asm__ volatile("" ::: "memory");
	return r;
}

static void reg(void *base, size_t size)
{
	CHECK(diag_register(base, size) == 0);
}

static void unreg(void *base, size_t size)
{
	CHECK((shim ? ibv_dofork_range(base, size)
		    : rdmad_dofork_range(base, size)) == 0);
}

static char *map_pages(size_t n)
{
	char *p = mmap(NULL, n * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	memset(p, 0x5a, n * pg);
	return p;
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

/* ---- stderr, captured ---------------------------------------------------- */

/* Send fd 2 to a fresh file; what the library writes there is read back
 * with captured(). */
static void capture(void)
{
	char path[] = "/tmp/test-fork-diag.XXXXXX";

	err_fd = mkstemp(path);
	CHECK(err_fd >= 0);
	unlink(path);
	CHECK(dup2(err_fd, STDERR_FILENO) == STDERR_FILENO);
}

static const char *captured(void)
{
	static char buf[16384];
	ssize_t n = pread(err_fd, buf, sizeof(buf) - 1, 0);

	CHECK(n >= 0);
	buf[n] = 0;
	return buf;
}

static void clear_captured(void)
{
	CHECK(ftruncate(err_fd, 0) == 0);
	CHECK(lseek(STDERR_FILENO, 0, SEEK_SET) == 0);
}

/* ---- children ------------------------------------------------------------ */

/* Fork a child that exits at once; its status. */
static void fork_and_wait(void)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Fork a child that reads @p, with the SIGSEGV action @act if not NULL
 * (restoring the program's own drops ours); its wait status and pid. */
static int touch_in_child(volatile const char *p, const struct sigaction *act,
			  pid_t *ret_pid)
{
	struct rlimit no_core = {0, 0};
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		setrlimit(RLIMIT_CORE, &no_core);
		if (act)
			sigaction(SIGSEGV, act, NULL);
		(void)*p;
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	*ret_pid = pid;
	return status;
}

/* ---- cases --------------------------------------------------------------- */

static void expect_audit_line(char *out, size_t len, uint64_t pages,
			      unsigned int regs, uint64_t inside)
{
	size_t n = strlen(out);

	snprintf(out + n, len - n,
		 "rdmad: fork audit: pid %d: a child will not inherit %llu "
		 "pages (%llu bytes) of %u registrations; %llu bytes of them "
		 "lie outside any registration\n",
		 (int)getpid(), (unsigned long long)pages,
		 (unsigned long long)(pages * pg), regs,
		 (unsigned long long)(pages * pg - inside));
}

static int case_audit(void)
{
	char *p = map_pages(5), want[2048] = "";
	/* An unrelated variable on the registered buffer's page. */
	volatile char *unrelated = p + pg + 2000;

	capture();
	init();
	*unrelated = 1;
	reg(p + pg + 100, 1000); /* page 1 */
	fork_and_wait();
	expect_audit_line(want, sizeof(want), 1, 1, 1000);
	fork_and_wait(); /* the same finding: no line */
	/* Overlapping the first (their union counts once), and one across
	 * pages 2 and 3. */
	reg(p + pg + 500, 1000);
	reg(p + 3 * pg - 50, 100);
	fork_and_wait();
	expect_audit_line(want, sizeof(want), 3, 3, 1400 + 100);
	fork_and_wait();
	fork_and_wait();
	/* Released: deferred, flushed by the next fork before the audit. */
	unreg(p + 3 * pg - 50, 100);
	fork_and_wait();
	expect_audit_line(want, sizeof(want), 1, 2, 1400);
	fputs(captured(), stdout);
	CHECK(!strcmp(captured(), want));
	return 0;
}

static int case_quiet(void)
{
	char *p = map_pages(3);

	capture();
	init();
	reg(p + pg + 100, 1000);
	fork_and_wait();
	CHECK(!strcmp(captured(), ""));
	return 0;
}

static int case_cof(void)
{
	char *p = map_pages(3);
	pid_t pid;
	int status;

	capture();
	init();
	CHECK(rdmad_is_fork_initialized() == RDMAD_FORK_UNNEEDED);
	reg(p + pg + 100, 1000);
	status = touch_in_child(p + pg + 2000, NULL, &pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(!strcmp(captured(), ""));
	return 0;
}

/* The first explain line a child @pid writes for a fault at @addr on the
 * registration [base, base + size) of pages [start, stop). */
static void expect_explain(const char *out, pid_t pid, const char *addr,
			   const char *base, size_t size, const char *start,
			   const char *stop)
{
	char want[512];
	const char *at;

	snprintf(want, sizeof(want),
		 "rdmad: fork explain: pid %d: SIGSEGV at %p: the parent "
		 "marked this page MADV_DONTFORK, so this child did not "
		 "inherit it, for the registration [%p, %p) (pages [%p, %p)) "
		 "from diag_register+0x",
		 (int)pid, (const void *)addr, (const void *)base,
		 (const void *)(base + size), (const void *)start,
		 (const void *)stop);
	at = strstr(out, want);
	CHECK(at);
	at = strchr(at, '\n');
	CHECK(at && at - strlen(" (test-fork-diag)") >= out);
	CHECK(!strncmp(at - strlen(" (test-fork-diag)"), " (test-fork-diag)",
		       strlen(" (test-fork-diag)")));
}

/* A signal's effect on a child, for messages. */
static const char *status_text(int status)
{
	static char buf[64];

	if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "killed by signal %d",
			 WTERMSIG(status));
	else
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(status));
	return buf;
}

static int case_explain(void)
{
	char *p = map_pages(4), *gone = map_pages(1);
	const char *unrelated = p + pg + 2000;
	struct sigaction before;
	int without, with, other;
	pid_t pid;

	CHECK(sigaction(SIGSEGV, NULL, &before) == 0);
	capture();
	init();
	reg(p + pg + 100, 1000);
	CHECK(munmap(gone, pg) == 0);
	/* The baseline: the handler the program had, ours dropped. */
	without = touch_in_child(unrelated, &before, &pid);
	CHECK(!strstr(captured(), "rdmad: fork explain"));
	clear_captured();
	with = touch_in_child(unrelated, NULL, &pid);
	printf("  explain: without %s, ", status_text(without));
	printf("with %s\n", status_text(with));
	fputs(captured(), stdout);
	CHECK(with == without);
	if (!under_asan())
		CHECK(WIFSIGNALED(with) && WTERMSIG(with) == SIGSEGV);
	expect_explain(captured(), pid, unrelated, p + pg + 100, 1000, p + pg,
		       p + 2 * pg);
	/* A fault on memory no registration hid: not explained. */
	clear_captured();
	other = touch_in_child(gone, NULL, &pid);
	CHECK(other == without);
	CHECK(!strstr(captured(), "rdmad: fork explain"));
	return 0;
}

static void on_segv_own(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "own handler\n";

	(void)sig;
	(void)si;
	(void)uc;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(43);
	_exit(42);
}

static int case_chain(void)
{
	struct sigaction own = {.sa_flags = SA_SIGINFO};
	char *p = map_pages(4);
	const char *unrelated = p + 2 * pg - 1;
	const char *out;
	int status;
	pid_t pid;

	capture();
	init();
	own.sa_sigaction = on_segv_own;
	sigemptyset(&own.sa_mask);
	CHECK(sigaction(SIGSEGV, &own, NULL) == 0);
	reg(p + pg, 10);
	status = touch_in_child(unrelated, NULL, &pid);
	out = captured();
	fputs(out, stdout);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42);
	expect_explain(out, pid, unrelated, p + pg, 10, p + pg, p + 2 * pg);
	CHECK(strstr(out, "own handler\n") > strstr(out, "fork explain"));
	return 0;
}

/* ---- stats --------------------------------------------------------------- */

static long count_in(const char *path, const char *word)
{
	char line[512];
	long n = 0;
	FILE *f = fopen(path, "r");

	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (!word ||
		    (!strncmp(line, "VmFlags:", 8) && strstr(line + 8, word)))
			n++;
	fclose(f);
	return n;
}

/* DONTFORK mappings as the kernel has them: VmFlags "dc". */
static long dontfork_vmas(void)
{
	return count_in("/proc/self/smaps", " dc");
}

/* Lines of /proc/self/maps, read without malloc as the library does, so
 * that nothing maps memory between the two counts. */
static long maps_lines(void)
{
	char buf[4096];
	long n = 0;
	ssize_t got;
	int fd = open("/proc/self/maps", O_RDONLY);

	CHECK(fd >= 0);
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

static struct rdmad_fork_stats stats(void)
{
	struct rdmad_fork_stats s;

	CHECK(rdmad_fork_get_stats(&s, sizeof(s)) == 0);
	return s;
}

/* @n pages whose page @at starts a 4 MiB granule of the tracker. */
static char *map_across_granule(size_t n, size_t at)
{
	const uintptr_t granule = (uintptr_t)4 << 20;
	char *base = map_pages(n + granule / pg), *p;

	p = (char *)((((uintptr_t)base + at * pg + granule - 1) &
		      ~(granule - 1)) -
		     at * pg);
	return p;
}

static int case_stats(void)
{
	char *p = map_pages(10), *q = map_across_granule(4, 2);
	struct rdmad_fork_stats s0, s;
	long dc0, maps, max = 0;
	FILE *f;

	init();
	s0 = stats();
	dc0 = dontfork_vmas();
	reg(p + pg, pg);     /* run 1 */
	reg(p + 3 * pg, pg); /* run 2 */
	reg(p + 5 * pg, pg); /* run 3 ... */
	reg(p + 6 * pg, pg); /* ... continued */
	reg(q + pg, 2 * pg); /* run 4, across a granule: two nodes */
	s = stats();
	maps = maps_lines();
	printf("  stats: %llu marked runs, %ld DONTFORK mappings, %llu of "
	       "%llu mappings (maps: %ld)\n",
	       (unsigned long long)s.marked_runs, dontfork_vmas(),
	       (unsigned long long)s.map_count,
	       (unsigned long long)s.max_map_count, maps);
	CHECK(s.marked_runs - s0.marked_runs == 4);
	CHECK(dontfork_vmas() - dc0 == 4);
	CHECK((long)s.map_count == maps);
	f = fopen("/proc/sys/vm/max_map_count", "r");
	CHECK(f && fscanf(f, "%ld", &max) == 1);
	fclose(f);
	CHECK((long)s.max_map_count == max && s.map_count < s.max_map_count);
	/* A smaller size reads no /proc file. */
	memset(&s, 0xff, sizeof(s));
	CHECK(rdmad_fork_get_stats(&s, 7 * sizeof(uint64_t)) == 0);
	CHECK(s.marked_runs - s0.marked_runs == 4 && s.map_count == UINT64_MAX);
	unreg(p + 3 * pg, pg);
	fork_and_wait(); /* flushes the released run */
	CHECK(stats().marked_runs - s0.marked_runs == 3);
	CHECK(dontfork_vmas() - dc0 == 3);
	return 0;
}

/* ---- driver -------------------------------------------------------------- */

struct test_case {
	const char *name;
	int (*run)(void);
	const char *env; /* NAME=value to add, or NULL */
};

static const struct test_case cases[] = {
	{"audit", case_audit, "RDMAD_FORK_AUDIT=1"},
	{"quiet", case_quiet, NULL},
	{"cof", case_cof, "RDMAD_FORK_COPY_ON_FORK=1"},
	{"explain", case_explain, "RDMAD_FORK_EXPLAIN=1"},
	{"chain", case_chain, "RDMAD_FORK_EXPLAIN=1"},
	{"stats", case_stats, NULL},
};

extern char **environ;

/* Our environment less the variables the cases decide, plus the case's
 * own and tracking forced on unless the case decides it. */
static void case_env(const struct test_case *c, char **env, int cap)
{
	static const char *const owned[] = {
		"RDMAD_FORK_COPY_ON_FORK=", "RDMAD_FORK_AUDIT=",
		"RDMAD_FORK_EXPLAIN=", "RDMAV_FORK_SAFE=", "IBV_FORK_SAFE="};
	int n = 0;

	for (char **e = environ; *e && n < cap - 4; e++) {
		bool skip = false;

		for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
			skip |= !strncmp(*e, owned[i], strlen(owned[i]));
		if (!skip)
			env[n++] = *e;
	}
	if (c->env)
		env[n++] = (char *)c->env;
	if (!c->env || strncmp(c->env, owned[0], strlen(owned[0])))
		env[n++] = "RDMAD_FORK_COPY_ON_FORK=0";
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
		printf("%s: killed by signal %d\n", c->name, WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status);
}

static int run_all(const char *self, const char *mode)
{
	int failed = 0, passed = 0;

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
	if (!strcmp(argv[1], "shim"))
		shim = true;
	else if (strcmp(argv[1], "rdmad"))
		goto usage;
	if (shim && !getenv("LD_PRELOAD")) {
		printf("shim mode needs LD_PRELOAD=librdmad-preload.so\n");
		return SKIP;
	}
	if (argc == 2)
		return run_all(argv[0], argv[1]);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(argv[2], cases[i].name))
			return cases[i].run();
usage:
	fprintf(stderr, "usage: %s rdmad|shim [CASE]\n", argv[0]);
	return 2;
}
