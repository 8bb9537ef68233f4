/* SPDX-License-Identifier: MIT */
/*
 * Fork diagnostics, off unless the environment asks for them when the
 * tracker starts:
 *
 * - RDMAD_FORK_AUDIT=1: at each fork the prepare handler (every shard
 *   locked and flushed) counts the pages a child will not inherit and the
 *   bytes of them that lie outside every registration (data that shares a
 *   page with a registered buffer: open-mpi/ompi PR #1378), and writes one
 *   line to stderr when that finding differs from the last one written.
 * - RDMAD_FORK_EXPLAIN=1: the child handler installs a SIGSEGV handler (on
 *   an alternate stack) that names the registration which hid the faulting
 *   page, then chains to the handler installed before, or dies of the
 *   signal's default action as it would have.
 *
 * Both need the registrations' exact byte ranges, which the tracker's map
 * of pages does not keep: a record per live registration, sorted by
 * address, with its caller, kept only while a diagnostic is on.  The
 * library does not log; these lines are the one exception, asked for by
 * name, each a single write(2) to fd 2 formatted here without malloc or
 * stdio, so that they are safe in a fork handler and in a signal handler.
 * The caller's symbol is found with dladdr(3) when a new call site first
 * registers, never in the signal handler.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fork.h"

/* A live registration. */
struct record {
	uintptr_t base;	 /* its first byte */
	uintptr_t end;	 /* one past its last byte */
	uintptr_t start; /* the pages marked for it */
	uintptr_t stop;
	const void *caller;
	unsigned int site; /* in sites[], or SITES_MAX */
};

/* Call sites seen, with their description: written once each, before
 * the count that publishes them, so the child reads them without a lock. */
#define SITES_MAX 64
#define SITE_TEXT 120

struct site {
	const void *addr;
	char text[SITE_TEXT];
};

static struct site sites[SITES_MAX];
static unsigned int nsites;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct record *records; /* sorted by base */
static size_t count, cap;
static size_t pending; /* reserved by registrations under way */
/* The records as a fork found them: the child's copy is what its signal
 * handler reads, whatever the child registers itself afterwards. */
static struct record *snap;
static size_t snap_count;

static bool audit_on, explain_on;
static size_t page_size;

/* The last finding written, so that a loop of forks writes it once. */
static struct {
	bool valid;
	uint64_t pages, outside, regs;
} last;

#define ALTSTACK_SIZE (128 * 1024)
static void *altstack;
static struct sigaction prev_segv;
static volatile sig_atomic_t explained;

/* ---- formatting without malloc or stdio ---------------------------------- */

struct line {
	char buf[1024];
	size_t len;
};

static void put_str(struct line *l, const char *s)
{
	while (*s && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = *s++;
}

static void put_num(struct line *l, uint64_t v, unsigned int base)
{
	char d[24];
	int n = 0;

	do {
		d[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = d[--n];
}

static void put_dec(struct line *l, uint64_t v)
{
	put_num(l, v, 10);
}

static void put_hex(struct line *l, uintptr_t v)
{
	put_str(l, "0x");
	put_num(l, v, 16);
}

static void put_prefix(struct line *l, const char *what)
{
	put_str(l, "rdmad: fork ");
	put_str(l, what);
	put_str(l, ": pid ");
	put_dec(l, (uint64_t)getpid());
	put_str(l, ": ");
}

/* One write: lines from several processes do not interleave. */
static void emit(const struct line *l)
{
	int saved = errno;
	ssize_t r = write(STDERR_FILENO, l->buf, l->len);

	(void)r;
	errno = saved;
}

/* ---- call sites ---------------------------------------------------------- */

static void describe(const void *addr, char *buf, size_t len)
{
	const char *obj;
	Dl_info info;

	if (!dladdr(addr, &info) || !info.dli_fname) {
		snprintf(buf, len, "%p", addr);
		return;
	}
	obj = strrchr(info.dli_fname, '/');
	obj = obj ? obj + 1 : info.dli_fname;
	if (info.dli_sname)
		snprintf(buf, len, "%s+0x%lx (%s)", info.dli_sname,
			 (unsigned long)((uintptr_t)addr -
					 (uintptr_t)info.dli_saddr),
			 obj);
	else
		snprintf(buf, len, "%s+0x%lx", obj,
			 (unsigned long)((uintptr_t)addr -
					 (uintptr_t)info.dli_fbase));
}

static unsigned int find_site(const void *caller)
{
	for (unsigned int i = 0; i < nsites; i++)
		if (sites[i].addr == caller)
			return i;
	return SITES_MAX;
}

/* The site of @caller, described the first time with no lock held: dladdr
 * takes the loader's lock, which a registering constructor may hold. */
static unsigned int site_of(const void *caller)
{
	char text[SITE_TEXT];
	unsigned int i;

	pthread_mutex_lock(&lock);
	i = find_site(caller);
	pthread_mutex_unlock(&lock);
	if (i < SITES_MAX || !caller)
		return i;
	describe(caller, text, sizeof(text));
	pthread_mutex_lock(&lock);
	i = find_site(caller);
	if (i == SITES_MAX && nsites < SITES_MAX) {
		i = nsites;
		sites[i].addr = caller;
		memcpy(sites[i].text, text, sizeof(text));
		__atomic_store_n(&nsites, i + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return i;
}

/* ---- records ------------------------------------------------------------- */

/* Room for twice as many records, and a snapshot as large. */
static int grow(void)
{
	size_t ncap = cap ? 2 * cap : 64;
	struct record *r, *s = NULL;

	r = realloc(records, ncap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	records = r;
	if (explain_on) {
		s = malloc(ncap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		free(snap);
		snap = s;
		snap_count = 0;
	}
	cap = ncap;
	return 0;
}

int audit_reserve(const void *caller, unsigned int *ret_site)
{
	int r = 0;

	*ret_site = site_of(caller);
	pthread_mutex_lock(&lock);
	if (count + pending + 1 > cap)
		r = grow();
	if (!r)
		pending++;
	pthread_mutex_unlock(&lock);
	return r;
}

void audit_unreserve(void)
{
	pthread_mutex_lock(&lock);
	pending--;
	pthread_mutex_unlock(&lock);
}

/* The first record whose base is at or above @base. */
static size_t lower_bound(uintptr_t base)
{
	size_t lo = 0, hi = count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (records[mid].base < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void insert(const struct record *rec)
{
	size_t i = lower_bound(rec->base);

	memmove(&records[i + 1], &records[i], (count - i) * sizeof(*rec));
	records[i] = *rec;
	count++;
}

static void remove_at(size_t i)
{
	memmove(&records[i], &records[i + 1],
		(count - i - 1) * sizeof(records[0]));
	count--;
}

void audit_add(uintptr_t base, size_t size, uintptr_t start, uintptr_t end,
	       const void *caller, unsigned int site)
{
	struct record rec = {base, base + size, start, end, caller, site};

	pthread_mutex_lock(&lock);
	pending--;
	insert(&rec);
	pthread_mutex_unlock(&lock);
}

static uintptr_t page_down(uintptr_t a)
{
	return a & ~(uintptr_t)(page_size - 1);
}

static uintptr_t page_up(uintptr_t a)
{
	return page_down(a + page_size - 1);
}

/* A release that matches no registration exactly (libibverbs counts
 * pages, not registrations): drop what it covers of each record.  One
 * that the release cuts in two keeps both parts' pages held, and stays. */
static void clip(uintptr_t b, uintptr_t e)
{
	size_t i = 0;

	while (i < count && records[i].base < e) {
		struct record *r = &records[i], moved;

		if (r->end <= b || (r->base < b && r->end > e)) {
			i++;
		} else if (r->base >= b && r->end <= e) {
			remove_at(i);
		} else if (r->base < b) {
			r->end = b;
			if (r->stop > page_up(b))
				r->stop = page_up(b);
			i++;
		} else {
			moved = *r;
			moved.base = e;
			if (moved.start < page_down(e))
				moved.start = page_down(e);
			remove_at(i);
			insert(&moved); /* at or after i, and past e */
		}
	}
}

void audit_remove(uintptr_t base, size_t size)
{
	uintptr_t end = base + size;

	pthread_mutex_lock(&lock);
	for (size_t i = lower_bound(base); i < count && records[i].base == base;
	     i++) {
		if (records[i].end == end) {
			remove_at(i);
			pthread_mutex_unlock(&lock);
			return;
		}
	}
	clip(base, end);
	pthread_mutex_unlock(&lock);
}

/* ---- at fork: the audit -------------------------------------------------- */

/* Bytes inside at least one registration (records are sorted by base). */
static uint64_t registered_bytes(void)
{
	uint64_t bytes = 0;
	uintptr_t reach = 0;

	for (size_t i = 0; i < count; i++) {
		uintptr_t from =
			records[i].base > reach ? records[i].base : reach;

		if (records[i].end > from) {
			bytes += records[i].end - from;
			reach = records[i].end;
		}
	}
	return bytes;
}

static void report(uint64_t pages)
{
	uint64_t bytes = pages * page_size, inside = registered_bytes();
	uint64_t outside = bytes > inside ? bytes - inside : 0;
	struct line l = {.len = 0};

	if (last.valid && last.pages == pages && last.outside == outside &&
	    last.regs == count)
		return;
	last.valid = true;
	last.pages = pages;
	last.outside = outside;
	last.regs = count;
	put_prefix(&l, "audit");
	put_str(&l, "a child will not inherit ");
	put_dec(&l, pages);
	put_str(&l, " pages (");
	put_dec(&l, bytes);
	put_str(&l, " bytes) of ");
	put_dec(&l, count);
	put_str(&l, " registrations; ");
	put_dec(&l, outside);
	put_str(&l, " bytes of them lie outside any registration\n");
	emit(&l);
}

void audit_fork_prepare(uint64_t pages)
{
	pthread_mutex_lock(&lock);
	if (explain_on && snap) {
		memcpy(snap, records, count * sizeof(*snap));
		snap_count = count;
	}
	if (audit_on)
		report(pages);
	pthread_mutex_unlock(&lock);
}

/* ---- in the child: the explanation --------------------------------------- */

static void put_site(struct line *l, const struct record *r)
{
	unsigned int n = __atomic_load_n(&nsites, __ATOMIC_ACQUIRE);

	if (r->site < n)
		put_str(l, sites[r->site].text);
	else if (r->caller)
		put_hex(l, (uintptr_t)r->caller);
	else
		put_str(l, "an unknown caller");
}

static void put_record(struct line *l, const struct record *r)
{
	put_str(l, "the registration [");
	put_hex(l, r->base);
	put_str(l, ", ");
	put_hex(l, r->end);
	put_str(l, ") (pages [");
	put_hex(l, r->start);
	put_str(l, ", ");
	put_hex(l, r->stop);
	put_str(l, ")) from ");
	put_site(l, r);
	put_str(l, "\n");
}

#define EXPLAIN_MAX 4

/* Name the registrations whose pages hold @addr, if any. */
static void explain(uintptr_t addr)
{
	struct line l = {.len = 0};
	unsigned int found = 0;

	for (size_t i = 0; i < snap_count; i++) {
		const struct record *r = &snap[i];

		if (addr < r->start || addr >= r->stop)
			continue;
		if (++found > EXPLAIN_MAX)
			continue;
		put_prefix(&l, "explain");
		if (found == 1) {
			put_str(&l, "SIGSEGV at ");
			put_hex(&l, addr);
			put_str(&l, ": the parent marked this page "
				    "MADV_DONTFORK, so this child did not "
				    "inherit it, for ");
		} else {
			put_str(&l, "and for ");
		}
		put_record(&l, r);
	}
	if (found > EXPLAIN_MAX) {
		put_prefix(&l, "explain");
		put_str(&l, "and ");
		put_dec(&l, found - EXPLAIN_MAX);
		put_str(&l, " more registrations\n");
	}
	if (found)
		emit(&l);
}

/* What the signal would have done without us: the handler installed
 * before, else the default action.  A fault returns to the faulting
 * instruction, which faults again and dies of the signal as it would
 * have; a signal sent by someone is raised again. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	struct sigaction prev = prev_segv;

	if (prev.sa_flags & SA_RESETHAND)
		sigaction(sig, &dfl, NULL);
	if (prev.sa_flags & SA_SIGINFO) {
		prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
		return;
	}
	sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (si->si_code == SEGV_MAPERR && !explained) {
		explained = 1;
		explain((uintptr_t)si->si_addr);
	}
	errno = saved;
	chain(sig, si, uc);
}

/* Our alternate stack for the forking thread, unless it has one: a
 * registration may have hidden the page the stack was growing into. */
static void use_altstack(void)
{
	stack_t cur, ss = {.ss_sp = altstack, .ss_size = ALTSTACK_SIZE};

	if (altstack && !sigaltstack(NULL, &cur) && (cur.ss_flags & SS_DISABLE))
		sigaltstack(&ss, NULL);
}

void audit_fork_child(void)
{
	struct sigaction sa = {.sa_flags = SA_SIGINFO | SA_ONSTACK}, old;

	if (!explain_on)
		return;
	use_altstack();
	sa.sa_sigaction = on_segv;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &old))
		return;
	/* A child of a child has ours already: keep what was before it. */
	if (!(old.sa_flags & SA_SIGINFO) || old.sa_sigaction != on_segv)
		prev_segv = old;
	explained = 0;
}

/* ---- set-up and counts --------------------------------------------------- */

int audit_init(const struct policy *policy, size_t page)
{
	void *p;

	page_size = page;
	audit_on = policy->audit;
	explain_on = policy->explain;
	if (!explain_on || altstack)
		return 0;
	p = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	altstack = p;
	return 0;
}

/* Lines of @path read in blocks, without malloc; -errno. */
static int64_t count_lines(const char *path)
{
	char buf[4096];
	int64_t lines = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	if (n < 0)
		lines = -errno;
	close(fd);
	return lines;
}

static uint64_t read_number(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtoull(buf, NULL, 10) : 0;
}

void audit_map_counts(uint64_t *ret_maps, uint64_t *ret_max)
{
	int64_t lines = count_lines("/proc/self/maps");

	*ret_maps = lines > 0 ? (uint64_t)lines : 0;
	*ret_max = read_number("/proc/sys/vm/max_map_count");
}
