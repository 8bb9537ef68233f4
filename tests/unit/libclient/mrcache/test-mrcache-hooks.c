/* SPDX-License-Identifier: MIT */
/*
 * libclient/mrcache/hooks.c as a program gets it: linked with librdmad
 * like any user, this program's munmap(), madvise(), mremap() and
 * process_madvise() are librdmad's (the first definition under libc's
 * version in the lookup order), they still do what libc's do, errno
 * included, and the program records no libc version as needed from
 * librdmad (the hooks are non-default versions, which the static linker
 * never binds to), so a librdmad without them would break nothing.
 * What the hooks do for the cache is test-mrcache-contract's.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rdmad-config.h"
#include "rdmad.h"

static size_t ps;
/* A protection domain for a cache that registers nothing. */
static struct ibv_device fake_dev = {.name = "fake0"};
static struct ibv_context fake_ctx = {.device = &fake_dev};
static struct ibv_pd fake_pd = {.context = &fake_ctx};
/* A sanitizer's interceptors come first and call libc past librdmad. */
static bool sanitized;

/* Where @name under @version resolves for this program. */
static void check_owner(const char *name, const char *version)
{
	void *fn = dlvsym(RTLD_DEFAULT, name, version);
	const char *base;
	Dl_info info;

	CHECK(fn && dladdr(fn, &info) && info.dli_fname,
	      "%s@%s does not resolve", name, version);
	if (!fn || !dladdr(fn, &info) || !info.dli_fname)
		return;
	/* A sanitizer's runtime comes first and interposes these itself;
	 * its interceptor then calls libc's default version, past ours. */
	base = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1
					    : info.dli_fname;
	if (strstr(base, "asan") || strstr(base, "tsan") ||
	    strstr(base, "clang_rt")) {
		printf("SKIP %s: a sanitizer's runtime (%s) interposes it "
		       "first\n",
		       name, info.dli_fname);
		sanitized = true;
		return;
	}
	CHECK(!strncmp(base, "librdmad.so", 11),
	      "%s@%s is %s's, not librdmad's", name, version, info.dli_fname);
}

static void test_resolved_to_librdmad(void)
{
#ifdef MRC_LIBC_MUNMAP
	check_owner("munmap", MRC_LIBC_MUNMAP);
#endif
#ifdef MRC_LIBC_MADVISE
	check_owner("madvise", MRC_LIBC_MADVISE);
#endif
#ifdef MRC_LIBC_MREMAP
	check_owner("mremap", MRC_LIBC_MREMAP);
#endif
#ifdef MRC_LIBC_PROCESS_MADVISE
	check_owner("process_madvise", MRC_LIBC_PROCESS_MADVISE);
#endif
}

static char *page(void)
{
	char *p = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	return p;
}

/* Whether [p, p + len) is mapped (mincore() fails with ENOMEM if not). */
static bool mapped(void *p, size_t len)
{
	unsigned char vec[4];

	return mincore(p, len, vec) == 0;
}

static void test_calls_do_what_libc_does(void)
{
	char *p = page(), *q;
	struct iovec iov;

	p[0] = 1;
	CHECK(madvise(p, ps, MADV_DONTNEED) == 0 && p[0] == 0,
	      "MADV_DONTNEED through the hook kept the page");
	errno = 0;
	CHECK(madvise(p, ps, 12345) == -1 && errno == EINVAL,
	      "a bad advice gave errno %d", errno);
	q = mremap(p, 2 * ps, 4 * ps, MREMAP_MAYMOVE);
	CHECK(q != MAP_FAILED && mapped(q, 4 * ps), "mremap() failed: %s",
	      strerror(errno));
	CHECK(munmap(q, 4 * ps) == 0 && !mapped(q, ps),
	      "munmap() left the pages mapped");
	errno = 0;
	CHECK(munmap((char *)q + 1, ps) == -1 && errno == EINVAL,
	      "an unaligned munmap() gave errno %d", errno);
	iov = (struct iovec){q, ps};
	errno = 0;
	CHECK(process_madvise(-1, &iov, 1, MADV_DONTNEED, 0) == -1 &&
		      errno == EBADF,
	      "process_madvise() on no pidfd gave errno %d", errno);
}

/* This program's own version needs (DT_VERNEED), read from its dynamic
 * section: librdmad's entry names librdmad's versions only. */
static void test_no_libc_version_from_librdmad(void)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	size_t n = getauxval(AT_PHNUM), i;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Verneed) *vn = NULL;
	const ElfW(Vernaux) * va;
	const char *strtab = NULL, *file;
	uintptr_t base = 0;
	unsigned int count = 0, k, seen = 0;

	for (i = 0; i < n; i++)
		if (ph[i].p_type == PT_PHDR)
			base = (uintptr_t)ph - ph[i].p_vaddr;
	for (i = 0; i < n; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + ph[i].p_vaddr);
	CHECK(dyn, "no dynamic section");
	for (; dyn && dyn->d_tag != DT_NULL; dyn++)
		if (dyn->d_tag == DT_STRTAB)
			strtab = (const char *)dyn->d_un.d_ptr;
		else if (dyn->d_tag == DT_VERNEED)
			vn = (const ElfW(Verneed) *)(base + dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_VERNEEDNUM)
			count = (unsigned int)dyn->d_un.d_val;
	CHECK(strtab && vn && count, "no version needs");
	for (k = 0; strtab && vn && k < count; k++) {
		file = strtab + vn->vn_file;
		va = (const ElfW(Vernaux) *)((const char *)vn + vn->vn_aux);
		for (i = 0; strstr(file, "librdmad") && i < vn->vn_cnt; i++) {
			CHECK(!strncmp(strtab + va->vna_name, "RDMAD_", 6),
			      "this program needs %s from %s",
			      strtab + va->vna_name, file);
			seen++;
			va = (const ElfW(Vernaux) *)((const char *)va +
						     va->vna_next);
		}
		vn = (const ElfW(Verneed) *)((const char *)vn + vn->vn_next);
	}
	CHECK(seen > 0, "no version needed from librdmad was found");
}

/* Linked as a user links it, the cache finds its hooks reached (where a
 * monitor can be had at all). */
static void test_cache_finds_hooks(void)
{
	struct rdmad_mr_cache *c = rdmad_mr_cache_new(&fake_pd, NULL);
	const char *why = c ? rdmad_mr_cache_get_reason(c) : "";

	CHECK(c);
	if (c && rdmad_mr_cache_is_caching(c) != 1 &&
	    (sanitized || !strstr(why, "hooks")))
		printf("SKIP the cache's view of the hooks: %s\n", why);
	else if (c)
		CHECK(rdmad_mr_cache_is_caching(c) == 1,
		      "linked with librdmad: %s", rdmad_mr_cache_get_reason(c));
	rdmad_mr_cache_destroy(c);
}

static void test_calls_do_what_libc_does_with_a_cache(void)
{
	struct rdmad_mr_cache *c = rdmad_mr_cache_new(&fake_pd, NULL);

	CHECK(c);
	test_calls_do_what_libc_does();
	rdmad_mr_cache_destroy(c);
}

int main(void)
{
	ps = (size_t)sysconf(_SC_PAGESIZE);
	/* A call into librdmad, so that it is needed as a user's is. */
	CHECK(rdmad_mr_cache_begin_change(NULL, 0) == -EINVAL);
	test_resolved_to_librdmad();
	/* No cache yet: each hook goes straight to libc's call. */
	test_calls_do_what_libc_does();
	test_no_libc_version_from_librdmad();
	test_cache_finds_hooks();
	/* A cache's monitor running: the hooks take their announcing half
	 * (a discard, a munmap of what the monitor may watch), and still do
	 * what libc does. */
	test_calls_do_what_libc_does_with_a_cache();
	return failures ? 1 : 0;
}
