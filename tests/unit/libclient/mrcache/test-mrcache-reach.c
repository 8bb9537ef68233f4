/* SPDX-License-Identifier: MIT */
/*
 * libclient/mrcache/: the cache knows whether its hooks are reached.  This
 * program does not link librdmad: it opens it with dlopen() after libc,
 * as Python's ctypes or an MPI's plugin loader does, so its madvise() and
 * munmap() are libc's and never come to librdmad's hooks.
 *
 * With the real librdmad (argv[1]) on a PD that registers nothing: a
 * cache says it is not caching and why, and caches with
 * RDMAD_MR_CACHE_EVENTS_ONLY, the opt-in.  With the cache's own static
 * library and hooks built into a module of fake MRs (argv[2], the same
 * objects as librdmad's, fake-mrcache.h's MRs): a guard region put on a
 * cached page by the program's madvise() and taken off leaves no stale
 * MR, and the statistics count the gets passed through; opted in, the
 * same guard region is the program's to announce (stale unannounced, as
 * librdmad(3) says; fresh announced).
 *
 * Then, each in a process of its own, where the program calls from (the
 * module of fake MRs stands for librdmad): the module opened with
 * RTLD_DEEPBIND binds its own calls to its own hooks while the
 * program's go to libc (not caching, and why); preloaded, as a program
 * linked with librdmad has it, a lookup by name (dlsym(RTLD_DEFAULT), as
 * ctypes calls) reaches the hooks and its guard region leaves no stale
 * MR; the program's own call slot rewritten to libc's madvise() (a GOT
 * patcher that does not chain) stops the caching, the hit served from
 * the thread's last entry included; so does the entry of the hooks
 * overwritten with a jump to libc's (no slot changed, nothing loaded:
 * what a miss checks without a lock); a GOT patcher's function that
 * turns from the hooks to libc's through a pointer of its own (no slot,
 * no entry changed) is found within 64 misses; a second libc loaded by
 * dlmopen() stops it too.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rdmad.h"

#ifndef RDMAD_MR_CACHE_EVENTS_ONLY
#define RDMAD_MR_CACHE_EVENTS_ONLY 0x2
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
#define W IBV_ACCESS_LOCAL_WRITE

static size_t ps;

/* The calls, from whichever module was opened. */
static struct {
	struct rdmad_mr_cache *(*new)(struct ibv_pd *,
				      const struct rdmad_mr_cache_attr *);
	int (*destroy)(struct rdmad_mr_cache *);
	struct ibv_mr *(*get)(struct rdmad_mr_cache *, void *, size_t, int);
	int (*put)(struct rdmad_mr_cache *, struct ibv_mr *);
	int (*flush)(struct rdmad_mr_cache *);
	int (*is_caching)(struct rdmad_mr_cache *);
	const char *(*reason)(const struct rdmad_mr_cache *);
	int (*stats)(struct rdmad_mr_cache *, struct rdmad_mr_cache_stats *,
		     size_t);
	int (*begin)(void *, size_t);
	int (*end)(void *, size_t);
	/* the module of fake MRs only */
	void (*fake_init)(void);
	struct rdmad_mr_cache *(*fake_new)(const struct rdmad_mr_cache_attr *);
	bool (*fresh)(const struct ibv_mr *);
} api;

static bool open_api_flags(const char *path, bool fake, int flags)
{
	void *h = dlopen(path, RTLD_NOW | flags);

	CHECK(h, "dlopen(%s): %s", path, dlerror());
	if (!h)
		return false;
	*(void **)&api.new = dlsym(h, "rdmad_mr_cache_new");
	*(void **)&api.destroy = dlsym(h, "rdmad_mr_cache_destroy");
	*(void **)&api.get = dlsym(h, "rdmad_mr_cache_get");
	*(void **)&api.put = dlsym(h, "rdmad_mr_cache_put");
	*(void **)&api.flush = dlsym(h, "rdmad_mr_cache_flush");
	*(void **)&api.is_caching = dlsym(h, "rdmad_mr_cache_is_caching");
	*(void **)&api.reason = dlsym(h, "rdmad_mr_cache_get_reason");
	*(void **)&api.stats = dlsym(h, "rdmad_mr_cache_get_stats");
	*(void **)&api.begin = dlsym(h, "rdmad_mr_cache_begin_change");
	*(void **)&api.end = dlsym(h, "rdmad_mr_cache_end_change");
	if (fake) {
		*(void **)&api.fake_init = dlsym(h, "fake_mrcache_init");
		*(void **)&api.fake_new = dlsym(h, "fake_mrcache_new_attr");
		*(void **)&api.fresh = dlsym(h, "fake_mrcache_fresh");
		api.fake_init();
	}
	return true;
}

static bool open_api(const char *path, bool fake)
{
	return open_api_flags(path, fake, RTLD_LOCAL);
}

static bool says_unhooked(struct rdmad_mr_cache *c)
{
	int caching = api.is_caching(c);
	const char *why = api.reason(c);

	return caching == 0 && why && strstr(why, "hooks are not reached");
}

/* A PD the cache is made for and never registers with. */
static struct ibv_device dev = {.name = "fake0"};
static struct ibv_context ctx = {.device = &dev};
static struct ibv_pd pd = {.context = &ctx};

static void test_librdmad(const char *path)
{
	struct rdmad_mr_cache_attr attr = {.flags = RDMAD_MR_CACHE_EVENTS_ONLY};
	struct rdmad_mr_cache *c, *opted;

	if (!open_api(path, false))
		return;
	c = api.new(&pd, NULL);
	CHECK(c);
	if (!c)
		return;
	if (api.is_caching(c) == 0 && !strstr(api.reason(c), "hooks")) {
		printf("SKIP librdmad opened late: %s\n", api.reason(c));
		api.destroy(c);
		return;
	}
	CHECK(says_unhooked(c),
	      "librdmad opened after libc: caching %d, \"%s\"",
	      api.is_caching(c), api.reason(c));
	opted = api.new(&pd, &attr);
	CHECK(opted && api.is_caching(opted) == 1,
	      "RDMAD_MR_CACHE_EVENTS_ONLY: %s",
	      opted ? api.reason(opted) : strerror(errno));
	if (opted)
		api.destroy(opted);
	api.destroy(c);
}

/* Cache 4 pages, a guard region on page 1 by the program's madvise()
 * (libc's), announced or not, off again, get: 1 fresh, 0 stale, -1
 * without guard regions (before 6.13). */
static int guard_case(unsigned int flags, bool announced,
		      struct rdmad_mr_cache_stats *ret_stats)
{
	struct rdmad_mr_cache_attr attr = {.flags = flags};
	struct rdmad_mr_cache *c = api.fake_new(&attr);
	char *m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *a = api.get(c, m, 4 * ps, W), *b;
	int r = -1;

	api.put(c, a);
	if (announced)
		api.begin(m + ps, ps);
	if (madvise(m + ps, ps, MADV_GUARD_INSTALL) == 0) {
		CHECK(madvise(m + ps, ps, MADV_GUARD_REMOVE) == 0);
		r = 0;
	}
	if (announced)
		api.end(m + ps, ps);
	b = api.get(c, m, 4 * ps, W);
	if (r == 0 && b && api.fresh(b))
		r = 1;
	if (b)
		api.put(c, b);
	api.stats(c, ret_stats, sizeof(*ret_stats));
	api.destroy(c);
	munmap(m, 4 * ps);
	return r;
}

static void test_fake_module(const char *path)
{
	struct rdmad_mr_cache_stats s;
	int r;

	if (!open_api(path, true))
		return;
	r = guard_case(0, false, &s);
	if (r < 0) {
		printf("SKIP guard regions: %s (Linux 6.13 and later)\n",
		       strerror(errno));
		return;
	}
	CHECK(r == 1, "a guard region by the program's madvise() left a "
		      "stale MR (the hooks are not reached)");
	CHECK(s.unhooked == 2 && s.misses == 0,
	      "%llu gets passed through for the hooks, %llu cached",
	      (unsigned long long)s.unhooked, (unsigned long long)s.misses);
	r = guard_case(RDMAD_MR_CACHE_EVENTS_ONLY, false, &s);
	CHECK(r == 0 && s.misses == 1,
	      "opted in, an unannounced guard region: %d (%llu cached); "
	      "librdmad(3) says it is stale",
	      r, (unsigned long long)s.misses);
	CHECK(guard_case(RDMAD_MR_CACHE_EVENTS_ONLY, true, &s) == 1,
	      "opted in, an announced guard region left a stale MR");
}

/* ---- where the program calls from ---------------------------------------- */

typedef int madvise_fn(void *, size_t, int);

/* The module opened with RTLD_DEEPBIND: its own calls reach its hooks,
 * the program's do not. */
static void test_deepbind(const char *module)
{
	struct rdmad_mr_cache *c;

	if (!open_api_flags(module, true, RTLD_LOCAL | RTLD_DEEPBIND))
		return;
	c = api.fake_new(NULL);
	CHECK(says_unhooked(c),
	      "opened with RTLD_DEEPBIND: caching %d, \"%s\" while the "
	      "program's madvise() is libc's",
	      api.is_caching(c), api.reason(c));
	api.destroy(c);
}

/* The main program's call slot of @name, or NULL. */
static int find_slot(struct dl_phdr_info *info, size_t size, void *arg)
{
	void ***ret = arg;
	const ElfW(Dyn) *d = NULL;
	const ElfW(Rela) *rel = NULL;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	size_t n = 0, i;
	int k;

	(void)size;
	for (k = 0; k < info->dlpi_phnum; k++)
		if (info->dlpi_phdr[k].p_type == PT_DYNAMIC)
			d = (const void *)(info->dlpi_addr +
					   info->dlpi_phdr[k].p_vaddr);
	for (; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_JMPREL)
			rel = (const void *)d->d_un.d_ptr;
		if (d->d_tag == DT_PLTRELSZ)
			n = d->d_un.d_val / sizeof(*rel);
		if (d->d_tag == DT_SYMTAB)
			sym = (const void *)d->d_un.d_ptr;
		if (d->d_tag == DT_STRTAB)
			str = (const void *)d->d_un.d_ptr;
	}
	for (i = 0; rel && sym && str && i < n; i++)
		if (!strcmp(str + sym[ELF64_R_SYM(rel[i].r_info)].st_name,
			    "madvise"))
			*ret = (void **)(info->dlpi_addr + rel[i].r_offset);
	return 1;
}

/* Rewrite the program's madvise slot to @fn (read-only after relocation
 * with -z now: made writable for the store); the old value. */
static void *patch_slot(void **slot, void *fn)
{
	uintptr_t page = (uintptr_t)slot & ~(uintptr_t)(ps - 1);
	void *old = *slot;

	mprotect((void *)page, ps, PROT_READ | PROT_WRITE);
	*slot = fn;
	return old;
}

/* The entry of @fn overwritten with a jump to @to (x86_64: movabs, jmp),
 * as libfabric's memhooks overwrites libc's; @saved keeps the bytes.
 * False where the page cannot be made writable. */
#define JUMP_LEN 12
static bool patch_entry(void *fn, void *to, unsigned char *saved)
{
	static const unsigned char movabs_rax[2] = {0x48, 0xb8},
				   jmp_rax[2] = {0xff, 0xe0};
	uintptr_t page = (uintptr_t)fn & ~(uintptr_t)(ps - 1);
	unsigned char jump[JUMP_LEN];

	if (mprotect((void *)page, 2 * ps, PROT_READ | PROT_WRITE | PROT_EXEC))
		return false;
	memcpy(jump, movabs_rax, 2);
	memcpy(jump + 2, &to, sizeof(to));
	memcpy(jump + 10, jmp_rax, 2);
	memcpy(saved, fn, JUMP_LEN);
	memcpy(fn, jump, JUMP_LEN);
	return true;
}

/* A miss after the entry of the definition a lookup by name finds (the
 * hooks) was overwritten to jump to libc's: no call slot changed and no
 * object was loaded, yet the miss passes through; with the bytes put
 * back, it caches again. */
static void test_entry_patched(struct rdmad_mr_cache *c, void *libc, char *m)
{
#ifdef __x86_64__
	void *by_name = dlsym(RTLD_DEFAULT, "madvise");
	unsigned char saved[JUMP_LEN];
	struct rdmad_mr_cache_stats s0, s1;
	struct ibv_mr *mr;

	api.put(c, api.get(c, m, ps, W)); /* the last full check: reached */
	api.stats(c, &s0, sizeof(s0));
	if (!patch_entry(by_name, dlvsym(libc, "madvise", "GLIBC_2.2.5"),
			 saved)) {
		printf("SKIP an entry overwritten: mprotect(): %s\n",
		       strerror(errno));
		return;
	}
	mr = api.get(c, m + 2 * ps, ps, W);
	api.stats(c, &s1, sizeof(s1));
	CHECK(mr && s1.misses == s0.misses && s1.unhooked == s0.unhooked + 1,
	      "a miss after the hooks' entry was overwritten: %s (misses "
	      "%llu -> %llu, passed through unhooked %llu -> %llu)",
	      mr ? "got an MR" : "no MR", (unsigned long long)s0.misses,
	      (unsigned long long)s1.misses, (unsigned long long)s0.unhooked,
	      (unsigned long long)s1.unhooked);
	api.put(c, mr);
	memcpy(by_name, saved, JUMP_LEN);
	mr = api.get(c, m + 3 * ps, ps, W);
	api.stats(c, &s0, sizeof(s0));
	CHECK(s0.misses == s1.misses + 1,
	      "the entry put back: the next miss is not cached (%s)",
	      api.reason(c));
	api.put(c, mr);
#else
	(void)c;
	(void)libc;
	(void)m;
	printf("SKIP an entry overwritten: the patch is x86_64's\n");
#endif
}

/* A GOT patcher's function in the program's madvise slot, forwarding
 * through a pointer of its own. */
static madvise_fn *forward_to;
static int forwarder(void *addr, size_t len, int advice)
{
	return forward_to(addr, len, advice);
}

/* The program's slot rewritten to forwarder(), which first forwards to
 * the hooks (caching) and then to libc's madvise() with no slot and no
 * entry changed: within 64 misses one passes through, and the cache
 * says why. */
static void test_forward_changed(struct rdmad_mr_cache *c, void *libc,
				 void **slot, char *m)
{
	struct rdmad_mr_cache_stats s0, s1;
	void *old;
	int i;

	forward_to = (madvise_fn *)dlsym(RTLD_DEFAULT, "madvise");
	old = patch_slot(slot, (void *)forwarder);
	CHECK(api.is_caching(c) == 1,
	      "a forwarder to the hooks in the program's slot: %s",
	      api.reason(c));
	api.stats(c, &s0, sizeof(s0));
	forward_to = (madvise_fn *)dlvsym(libc, "madvise", "GLIBC_2.2.5");
	for (i = 0; i < 65; i++) {
		api.put(c, api.get(c, m, ps, W));
		api.flush(c);
	}
	api.stats(c, &s1, sizeof(s1));
	CHECK(s1.unhooked > s0.unhooked && says_unhooked(c),
	      "65 misses after the forwarder turned to libc's madvise(): "
	      "%llu passed through unhooked, caching %d",
	      (unsigned long long)(s1.unhooked - s0.unhooked),
	      api.is_caching(c));
	patch_slot(slot, old);
	CHECK(api.is_caching(c) == 1, "the slot put back: %s", api.reason(c));
}

/* Preloaded, as a program linked with librdmad has it. */
static void test_preloaded(void)
{
	struct rdmad_mr_cache_stats s0, s1;
	struct rdmad_mr_cache *c;
	madvise_fn *by_name = (madvise_fn *)dlsym(RTLD_DEFAULT, "madvise");
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), *old;
	char *m = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *a, *b;
	void **slot = NULL;

	if (!open_api_flags(NULL, true, 0))
		return;
	c = api.fake_new(NULL);
	CHECK(api.is_caching(c) == 1, "preloaded: %s", api.reason(c));
	/* A lookup by name reaches the hooks: they answer the probe. */
	CHECK(by_name && by_name((void *)0x52, 0, -0x5244) == 0x5244,
	      "dlsym(RTLD_DEFAULT, \"madvise\") does not reach the hooks "
	      "while the cache says it caches");
	a = api.get(c, m, 4 * ps, W);
	api.put(c, a);
	if (by_name(m + ps, ps, MADV_GUARD_INSTALL) == 0) {
		by_name(m + ps, ps, MADV_GUARD_REMOVE);
		b = api.get(c, m, 4 * ps, W);
		CHECK(b && api.fresh(b), "a guard region through "
					 "dlsym(RTLD_DEFAULT) left a stale MR");
		api.put(c, b);
	} else {
		printf("SKIP a guard region by name: %s (Linux 6.13 and "
		       "later)\n",
		       strerror(errno));
	}
	/* The program's slot rewritten to libc's madvise(). */
	dl_iterate_phdr(find_slot, &slot);
	if (!slot || !libc) {
		printf("SKIP a rewritten call slot: no slot of madvise()\n");
		goto out;
	}
	a = api.get(c, m, 4 * ps, W); /* the thread's hint now */
	api.put(c, a);
	api.stats(c, &s0, sizeof(s0));
	old = patch_slot(slot, dlvsym(libc, "madvise", "GLIBC_2.2.5"));
	b = api.get(c, m, 4 * ps, W);
	api.put(c, b);
	api.stats(c, &s1, sizeof(s1));
	CHECK(s1.hits == s0.hits,
	      "a hit from the thread's last entry after the program's call "
	      "slot was rewritten");
	CHECK(says_unhooked(c),
	      "the program's slot rewritten: caching %d, "
	      "\"%s\"",
	      api.is_caching(c), api.reason(c));
	patch_slot(slot, old);
	CHECK(api.is_caching(c) == 1, "the slot put back: %s", api.reason(c));
	test_entry_patched(c, libc, m);
	test_forward_changed(c, libc, slot, m);
out:
	/* Last: a namespace cannot be taken back. */
	CHECK(dlmopen(LM_ID_NEWLM, "libm.so.6", RTLD_NOW), "dlmopen: %s",
	      dlerror());
	CHECK(says_unhooked(c), "a second libc (dlmopen()): caching %d, \"%s\"",
	      api.is_caching(c), api.reason(c));
	api.destroy(c);
}

/* Run this program again with REACH_MODE=@mode (and LD_PRELOAD=@preload):
 * whether it passed. */
static bool again(char **argv, const char *mode, const char *preload)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setenv("REACH_MODE", mode, 1);
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	const char *mode = getenv("REACH_MODE");

	ps = (size_t)sysconf(_SC_PAGESIZE);
	if (argc != 3) {
		fprintf(stderr, "usage: %s LIBRDMAD FAKE-MODULE\n", argv[0]);
		return 2;
	}
	if (mode && !strcmp(mode, "deepbind"))
		test_deepbind(argv[2]);
	else if (mode && !strcmp(mode, "preloaded"))
		test_preloaded();
	if (mode)
		return failures ? 1 : 0;
	test_librdmad(argv[1]);
	test_fake_module(argv[2]);
#ifdef UNDER_ASAN
	printf("SKIP deepbind: AddressSanitizer's runtime refuses dlopen() "
	       "with RTLD_DEEPBIND (google/sanitizers#611)\n");
#else
	CHECK(again(argv, "deepbind", NULL), "opened with RTLD_DEEPBIND");
#endif
	CHECK(again(argv, "preloaded", argv[2]), "preloaded");
	return failures ? 1 : 0;
}
