/* SPDX-License-Identifier: MIT */
/*
 * The libc calls that change the pages under a mapping, announced to the
 * monitor around the call (docs/mrcache.md, "The hooks"): munmap(),
 * mremap(), madvise() with a discarding advice and process_madvise().
 * Announced, every cache drops its entries over the range before the call
 * and admits none until it has returned, and the range is unregistered
 * first, so the kernel raises no event and the call does not wait for the
 * monitor thread: a munmap() of cached memory costs what libfabric's
 * memhooks' does, and madvise()'s REMOVE-before-zap window and guard
 * regions (no event at all) are closed for every call that comes through
 * libc's symbols.  The userfaultfd stays the monitor for the rest:
 * glibc's own unmaps inside free(), raw syscalls, other libraries' inline
 * system calls.
 *
 * How they are found.  librdmad defines each call under the version glibc
 * gives it (GLIBC_2.2.5 on x86_64, generated from this machine's libc by
 * libc-versions.sh) as a non-default version: the dynamic linker binds a
 * program's or a library's munmap@GLIBC_2.2.5 to the first object in the
 * lookup order that defines it, which is librdmad wherever a program
 * links it (it comes before libc).  A lookup by name (dlsym() without a
 * version: ctypes, JITs) skips a non-default version, so each is also
 * defined under librdmad's own default version RDMAD_HOOKS_1, which such
 * a lookup finds and to which the static linker binds a program linked
 * with librdmad.  Where librdmad comes after libc (dlopen()), they are
 * simply not called, and reach.c says so.
 *
 * Two libraries hooking one process (libfabric #6474, Open MPI #8822)
 * broke each other by patching glibc's code, the second patch overwriting
 * the first.  Symbol interposition patches nothing: each definition calls
 * the next one in the lookup order (RTLD_NEXT), so librdmad, a sanitizer's
 * interceptors, an LD_PRELOAD library and libfabric's GOT patches chain
 * instead of replacing each other.  RDMAD_MR_CACHE_HOOKS=off leaves every
 * call to the kernel's events (monitor.c).
 *
 * Built twice: into librdmad as above, and with MRC_HOOKS_PLAIN under
 * libc's own names for the test programs that link the cache statically.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "monitor.h"
#include "rdmad-config.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#ifdef MRC_HOOKS_PLAIN
#define HOOK(name) name
#else
#define HOOK(name) mrc_hook_##name
/* Under libc's version for the program's calls, and under librdmad's own
 * default version for a lookup by name (dlsym(RTLD_DEFAULT) skips a
 * symbol whose version is not the default one): an alias of the same
 * function, since one symbol takes one default version. */
#define VERSIONED(name, version)                                               \
	__asm__(".symver mrc_hook_" #name ", " #name "@" version);             \
	extern __typeof__(mrc_hook_##name) mrc_hook_##name##_by_name           \
		__attribute__((alias("mrc_hook_" #name),                       \
			       visibility("default")));                        \
	__asm__(".symver mrc_hook_" #name "_by_name, " #name "@@RDMAD_HOOKS_"  \
		"1")
#endif
#define EXPORT __attribute__((visibility("default")))
/* A call's announced half, apart: the call a program makes with no
 * monitor running pays for none of its frame. */
#define NOINLINE __attribute__((noinline))

#ifndef MRC_HOOKS_PLAIN
int mrc_hook_munmap(void *addr, size_t len);
int mrc_hook_madvise(void *addr, size_t len, int advice);
void *mrc_hook_mremap(void *old, size_t old_len, size_t new_len, int flags,
		      ...);
ssize_t mrc_hook_process_madvise(int pidfd, const struct iovec *iov, size_t n,
				 int advice, unsigned int flags);
#endif

/* ---- the next definition ------------------------------------------------- */

static void *next(const char *name, const char *version)
{
	void *fn = dlvsym(RTLD_NEXT, name, version);

	return fn ? fn : dlsym(RTLD_NEXT, name);
}

typedef int munmap_fn(void *, size_t);
typedef int madvise_fn(void *, size_t, int);
typedef void *mremap_fn(void *, size_t, size_t, int, ...);
typedef ssize_t process_madvise_fn(int, const struct iovec *, size_t, int,
				   unsigned int);

/* The next definition of NAME under libc's version, looked up once into
 * the monitor's hook line (slot @i) by first_NAME(), whose call the
 * hooks' fast path only makes while the slot is empty; NULL leaves the
 * raw syscall. */
static void *next_fn(int i)
{
	return __atomic_load_n(&mrc_hook_line.next[i], __ATOMIC_RELAXED);
}

static void *resolve(int i, const char *name, const char *version)
{
	void *fn = next(name, version);

	__atomic_store_n(&mrc_hook_line.next[i], fn, __ATOMIC_RELAXED);
	return fn;
}

/* ---- the bracket around a call ------------------------------------------- */

/* One bracket's pages, and whether it is announced.  A thread announcing
 * keeps its signals blocked and its cancellation disabled from its first
 * lock to the end of the bracket (mrc_monitor_hush()): a handler that
 * runs on it then finds nothing half done (no claimed ring slot, no
 * lock, no range marked changing), a siglongjmp() out of that handler
 * leaves nothing behind, and an asynchronous pthread_cancel() waits. */
struct bracket {
	uintptr_t start;
	uintptr_t end;
	bool on;
};

/* Signals blocked for the brackets of one call.  Set up with m.on =
 * false alone: an initialiser would zero the 128-byte set first. */
struct masked {
	struct mrc_hush hush;
	bool on;
};

static void mask(struct masked *m)
{
	if (!m->on)
		mrc_monitor_hush(&m->hush);
	m->on = true;
}

static void unmask(struct masked *m)
{
	if (m->on)
		mrc_monitor_unhush(&m->hush);
	m->on = false;
}

/* Announce the change of the pages of [addr, addr + len) when the monitor
 * wants it (mrc_monitor_hooked()). */
static void begin(struct bracket *b, struct masked *m, const void *addr,
		  size_t len, bool always)
{
	uintptr_t mask_ = (uintptr_t)getpagesize() - 1;

	b->start = (uintptr_t)addr & ~mask_;
	b->end = ((uintptr_t)addr + len + mask_) & ~mask_;
	b->on = false;
	if (!len || b->end <= b->start ||
	    !mrc_monitor_wanted(b->start, b->end, always))
		return;
	mask(m);
	b->on = mrc_monitor_hooked(b->start, b->end, always);
	if (b->on)
		mrc_monitor_changing(b->start, b->end);
}

static void end(const struct bracket *b)
{
	if (b->on)
		mrc_monitor_changed(b->start, b->end);
}

/* After the call: the brackets ended, errno as the call left it. */
static void done(const struct bracket *b, size_t n, struct masked *m)
{
	int saved = errno;
	size_t i;

	for (i = 0; i < n; i++)
		end(&b[i]);
	unmask(m);
	errno = saved;
}

/* The advice that takes pages away from a mapping (docs/mrcache.md's
 * contract): the kernel tells those late (REMOVE before the zap) or not
 * at all (guard regions), so they are announced whatever is watched. */
static bool discards(int advice)
{
	switch (advice) {
	case MADV_DONTNEED:
	case MADV_DONTNEED_LOCKED:
	case MADV_FREE:
	case MADV_REMOVE:
	case MADV_GUARD_INSTALL:
		return true;
	default:
		return false;
	}
}

/* The advice the kernel refuses over a range the monitor watches
 * (MADV_COLLAPSE: a userfaultfd-armed mapping is never collapsed): it is
 * announced where a watched range overlaps, so the range is unwatched
 * first and the call returns what libc returns; the entries over it go,
 * as for any change of its pages (a collapse copies them). */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
static bool unwatches(int advice)
{
	return advice == MADV_COLLAPSE;
}

/* ---- the calls ------------------------------------------------------------
 *
 * Each answers mrc_monitor_hooks_reached()'s probe first, without the
 * next definition: the probe asks whether the program's calls come here.
 */

static bool probe(const void *addr, size_t len)
{
	return addr == MRC_PROBE_ADDR && len == 0;
}

#ifdef MRC_LIBC_MUNMAP
static NOINLINE int first_munmap(void *addr, size_t len)
{
	munmap_fn *real = resolve(MRC_NEXT_MUNMAP, "munmap", MRC_LIBC_MUNMAP);

	return real ? real(addr, len) : (int)syscall(SYS_munmap, addr, len);
}

static int call_munmap(void *addr, size_t len)
{
	munmap_fn *real = next_fn(MRC_NEXT_MUNMAP);

	return real ? real(addr, len) : first_munmap(addr, len);
}

static NOINLINE int announce_munmap(void *addr, size_t len)
{
	struct masked m;
	struct bracket b;
	int r;

	m.on = false;
	begin(&b, &m, addr, len, false);
	r = call_munmap(addr, len);
	done(&b, 1, &m);
	return r;
}

EXPORT int HOOK(munmap)(void *addr, size_t len)
{
	if (probe(addr, len))
		return MRC_PROBE_ANSWER;
	if (!mrc_monitor_armed())
		return call_munmap(addr, len);
	return announce_munmap(addr, len);
}
#ifndef MRC_HOOKS_PLAIN
VERSIONED(munmap, MRC_LIBC_MUNMAP);
#endif
#endif

#ifdef MRC_LIBC_MADVISE
static NOINLINE int first_madvise(void *addr, size_t len, int advice)
{
	madvise_fn *real =
		resolve(MRC_NEXT_MADVISE, "madvise", MRC_LIBC_MADVISE);

	return real ? real(addr, len, advice)
		    : (int)syscall(SYS_madvise, addr, len, advice);
}

static int call_madvise(void *addr, size_t len, int advice)
{
	madvise_fn *real = next_fn(MRC_NEXT_MADVISE);

	return real ? real(addr, len, advice)
		    : first_madvise(addr, len, advice);
}

static NOINLINE int announce_madvise(void *addr, size_t len, int advice)
{
	struct masked m;
	struct bracket b;
	int r;

	m.on = false;
	begin(&b, &m, addr, len, discards(advice));
	r = call_madvise(addr, len, advice);
	done(&b, 1, &m);
	return r;
}

EXPORT int HOOK(madvise)(void *addr, size_t len, int advice)
{
	if (probe(addr, len) && advice == MRC_PROBE_ADVICE)
		return MRC_PROBE_ANSWER;
	if (!(discards(advice) || unwatches(advice)) || !mrc_monitor_armed())
		return call_madvise(addr, len, advice);
	return announce_madvise(addr, len, advice);
}
#ifndef MRC_HOOKS_PLAIN
VERSIONED(madvise, MRC_LIBC_MADVISE);
#endif
#endif

#ifdef MRC_LIBC_MREMAP
static NOINLINE void *first_mremap(void *old, size_t old_len, size_t new_len,
				   int flags, void *to)
{
	mremap_fn *real = resolve(MRC_NEXT_MREMAP, "mremap", MRC_LIBC_MREMAP);

	return real ? real(old, old_len, new_len, flags, to)
		    : (void *)syscall(SYS_mremap, old, old_len, new_len, flags,
				      to);
}

static void *call_mremap(void *old, size_t old_len, size_t new_len, int flags,
			 void *to)
{
	mremap_fn *real = next_fn(MRC_NEXT_MREMAP);

	return real ? real(old, old_len, new_len, flags, to)
		    : first_mremap(old, old_len, new_len, flags, to);
}

/* The source changes (moved, shrunk, or emptied with MREMAP_DONTUNMAP);
 * with MREMAP_FIXED the destination is unmapped first. */
static NOINLINE void *announce_mremap(void *old, size_t old_len, size_t new_len,
				      int flags, void *to)
{
	struct bracket b[2] = {{0}};
	struct masked m;
	void *r;

	m.on = false;
	if (flags & MREMAP_FIXED)
		begin(&b[1], &m, to, new_len, false);
	begin(&b[0], &m, old, old_len, false);
	r = call_mremap(old, old_len, new_len, flags, to);
	done(b, 2, &m);
	return r;
}

EXPORT void *HOOK(mremap)(void *old, size_t old_len, size_t new_len, int flags,
			  ...)
{
	void *to = NULL;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		to = va_arg(ap, void *);
		va_end(ap);
	}
	if (!mrc_monitor_armed())
		return call_mremap(old, old_len, new_len, flags, to);
	return announce_mremap(old, old_len, new_len, flags, to);
}
#ifndef MRC_HOOKS_PLAIN
VERSIONED(mremap, MRC_LIBC_MREMAP);
#endif
#endif

#ifdef MRC_LIBC_PROCESS_MADVISE
/*
 * Only this process's own pages can be discarded through it (a remote
 * process_madvise() takes none of the discarding advice), so its ranges
 * are announced as madvise()'s are: each of them up to PM_BRACKETS, past
 * that one bracket over all of them (more pages than the call changes
 * stop being cached for its length, none is missed).  The program's
 * vector is read as the kernel reads it, by a system call
 * (process_vm_readv() of this process), so a bad pointer makes this
 * return EFAULT as libc's does instead of faulting here; where that call
 * is refused (a seccomp filter), the whole address space is announced.
 */
#define PM_BRACKETS 16
#define PM_IOV_MAX 1024 /* the kernel's UIO_MAXIOV */

/* Read @n iovecs at @iov into @ret: 0, -EFAULT, or another -errno. */
static int read_iov(const struct iovec *iov, size_t n, struct iovec *ret)
{
	struct iovec local = {ret, n * sizeof(*ret)};
	struct iovec remote = {(void *)iov, n * sizeof(*ret)};
	ssize_t r = syscall(SYS_process_vm_readv, getpid(), &local, 1UL,
			    &remote, 1UL, 0UL);

	if (r == (ssize_t)(n * sizeof(*ret)))
		return 0;
	return r < 0 ? -errno : -EFAULT;
}

/* Widen [*lo, *hi) over @v's pages (empty ones add nothing). */
static void widen(const struct iovec *v, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t s = (uintptr_t)v->iov_base, e = s + v->iov_len;

	if (!v->iov_len || e < s)
		return;
	*lo = s < *lo ? s : *lo;
	*hi = e > *hi ? e : *hi;
}

/* The brackets for @n ranges at @iov: how many were begun; 0 when the
 * vector cannot be read (the call then fails as it does without the
 * hook). */
static size_t begin_ranges(struct bracket *b, struct masked *m,
			   const struct iovec *iov, size_t n)
{
	struct iovec v[PM_BRACKETS];
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	size_t i, j, k;
	int err;

	for (i = 0; i < n; i += k) {
		k = n - i < PM_BRACKETS ? n - i : PM_BRACKETS;
		err = read_iov(iov + i, k, v);
		if (err == -EFAULT)
			return 0;
		if (err < 0) { /* unreadable here: everything changes */
			lo = 0;
			hi = UINTPTR_MAX - (uintptr_t)getpagesize();
			break;
		}
		if (n <= PM_BRACKETS) {
			for (j = 0; j < n; j++)
				begin(&b[j], m, v[j].iov_base, v[j].iov_len,
				      true);
			return n;
		}
		for (j = 0; j < k; j++)
			widen(&v[j], &lo, &hi);
	}
	if (hi <= lo)
		return 0;
	begin(&b[0], m, (void *)lo, hi - lo, true);
	return 1;
}

static NOINLINE ssize_t first_process_madvise(int pidfd,
					      const struct iovec *iov, size_t n,
					      int advice, unsigned int flags)
{
	process_madvise_fn *real =
		resolve(MRC_NEXT_PROCESS_MADVISE, "process_madvise",
			MRC_LIBC_PROCESS_MADVISE);

	return real ? real(pidfd, iov, n, advice, flags)
		    : syscall(SYS_process_madvise, pidfd, iov, n, advice,
			      flags);
}

static ssize_t call_process_madvise(int pidfd, const struct iovec *iov,
				    size_t n, int advice, unsigned int flags)
{
	process_madvise_fn *real = next_fn(MRC_NEXT_PROCESS_MADVISE);

	return real ? real(pidfd, iov, n, advice, flags)
		    : first_process_madvise(pidfd, iov, n, advice, flags);
}

static NOINLINE ssize_t announce_process_madvise(int pidfd,
						 const struct iovec *iov,
						 size_t n, int advice,
						 unsigned int flags)
{
	struct bracket b[PM_BRACKETS];
	struct masked m;
	size_t k = 0;
	ssize_t r;

	m.on = false;
	if (n && n <= PM_IOV_MAX && mrc_monitor_wanted(0, 1, true))
		k = begin_ranges(b, &m, iov, n);
	r = call_process_madvise(pidfd, iov, n, advice, flags);
	done(b, k, &m);
	return r;
}

EXPORT ssize_t HOOK(process_madvise)(int pidfd, const struct iovec *iov,
				     size_t n, int advice, unsigned int flags)
{
	if (!(discards(advice) || unwatches(advice)) || !mrc_monitor_armed())
		return call_process_madvise(pidfd, iov, n, advice, flags);
	return announce_process_madvise(pidfd, iov, n, advice, flags);
}
#ifndef MRC_HOOKS_PLAIN
VERSIONED(process_madvise, MRC_LIBC_PROCESS_MADVISE);
#endif
#endif
