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
 * program's munmap@GLIBC_2.2.5 to the first object in the lookup order
 * that defines it, which is librdmad wherever a program links it (it
 * comes before libc), while the static linker never binds a new program
 * to a non-default version, so no program records that it needs these
 * from librdmad and a librdmad without them would break nothing.  Where
 * librdmad comes after libc (dlopen()), they are simply not called.
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
#define VERSIONED(name, version)                                               \
	__asm__(".symver mrc_hook_" #name ", " #name "@" version)
#endif
#define EXPORT __attribute__((visibility("default")))

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

/* next_NAME(): the next definition of NAME under libc's version
 * (MRC_LIBC_UPPER), looked up once; NULL leaves the raw syscall. */
#define NEXT(name, upper)                                                      \
	static name##_fn *next_##name(void)                                    \
	{                                                                      \
		static name##_fn *fn;                                          \
		name##_fn *f = __atomic_load_n(&fn, __ATOMIC_RELAXED);         \
                                                                               \
		if (!f) {                                                      \
			f = (name##_fn *)next(#name, MRC_LIBC_##upper);        \
			__atomic_store_n(&fn, f, __ATOMIC_RELAXED);            \
		}                                                              \
		return f;                                                      \
	}

#ifdef MRC_LIBC_MUNMAP
NEXT(munmap, MUNMAP)
#endif
#ifdef MRC_LIBC_MADVISE
NEXT(madvise, MADVISE)
#endif
#ifdef MRC_LIBC_MREMAP
NEXT(mremap, MREMAP)
#endif
#ifdef MRC_LIBC_PROCESS_MADVISE
NEXT(process_madvise, PROCESS_MADVISE)
#endif

/* ---- the bracket around a call ------------------------------------------- */

struct bracket {
	uintptr_t start;
	uintptr_t end;
	bool on;
};

/* Announce the change of the pages of [addr, addr + len) when the monitor
 * wants it (mrc_monitor_hooked()). */
static void begin(struct bracket *b, const void *addr, size_t len, bool always)
{
	uintptr_t mask = (uintptr_t)getpagesize() - 1;

	b->start = (uintptr_t)addr & ~mask;
	b->end = ((uintptr_t)addr + len + mask) & ~mask;
	b->on = len && b->end > b->start &&
		mrc_monitor_hooked(b->start, b->end, always);
	if (b->on)
		mrc_monitor_changing(b->start, b->end);
}

static void end(const struct bracket *b)
{
	int saved = errno;

	if (b->on)
		mrc_monitor_changed(b->start, b->end);
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

/* ---- the calls ------------------------------------------------------------
 */

#ifdef MRC_LIBC_MUNMAP
EXPORT int HOOK(munmap)(void *addr, size_t len)
{
	munmap_fn *real = next_munmap();
	struct bracket b;
	int r;

	begin(&b, addr, len, false);
	r = real ? real(addr, len) : (int)syscall(SYS_munmap, addr, len);
	end(&b);
	return r;
}
#ifndef MRC_HOOKS_PLAIN
VERSIONED(munmap, MRC_LIBC_MUNMAP);
#endif
#endif

#ifdef MRC_LIBC_MADVISE
EXPORT int HOOK(madvise)(void *addr, size_t len, int advice)
{
	madvise_fn *real = next_madvise();
	struct bracket b = {0};
	int r;

	if (discards(advice))
		begin(&b, addr, len, true);
	r = real ? real(addr, len, advice)
		 : (int)syscall(SYS_madvise, addr, len, advice);
	end(&b);
	return r;
}
#ifndef MRC_HOOKS_PLAIN
VERSIONED(madvise, MRC_LIBC_MADVISE);
#endif
#endif

#ifdef MRC_LIBC_MREMAP
/* The source changes (moved, shrunk, or emptied with MREMAP_DONTUNMAP);
 * with MREMAP_FIXED the destination is unmapped first. */
EXPORT void *HOOK(mremap)(void *old, size_t old_len, size_t new_len, int flags,
			  ...)
{
	mremap_fn *real = next_mremap();
	struct bracket src, dst = {0};
	void *to = NULL, *r;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		to = va_arg(ap, void *);
		va_end(ap);
		begin(&dst, to, new_len, false);
	}
	begin(&src, old, old_len, false);
	r = real ? real(old, old_len, new_len, flags, to)
		 : (void *)syscall(SYS_mremap, old, old_len, new_len, flags,
				   to);
	end(&src);
	end(&dst);
	return r;
}
#ifndef MRC_HOOKS_PLAIN
VERSIONED(mremap, MRC_LIBC_MREMAP);
#endif
#endif

#ifdef MRC_LIBC_PROCESS_MADVISE
/* Only this process's own pages can be discarded through it (a remote
 * process_madvise() takes none of the discarding advice), so each range
 * is announced as madvise()'s is.  Past the ranges the bracket holds the
 * call goes unannounced and the kernel's events cover it. */
#define PM_BRACKETS 16
EXPORT ssize_t HOOK(process_madvise)(int pidfd, const struct iovec *iov,
				     size_t n, int advice, unsigned int flags)
{
	process_madvise_fn *real = next_process_madvise();
	struct bracket b[PM_BRACKETS] = {0};
	size_t i, k = discards(advice) && iov && n <= PM_BRACKETS ? n : 0;
	ssize_t r;

	for (i = 0; i < k; i++)
		begin(&b[i], iov[i].iov_base, iov[i].iov_len, true);
	r = real ? real(pidfd, iov, n, advice, flags)
		 : syscall(SYS_process_madvise, pidfd, iov, n, advice, flags);
	for (i = 0; i < k; i++)
		end(&b[i]);
	return r;
}
#ifndef MRC_HOOKS_PLAIN
VERSIONED(process_madvise, MRC_LIBC_PROCESS_MADVISE);
#endif
#endif
