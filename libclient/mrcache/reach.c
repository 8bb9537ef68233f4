/* SPDX-License-Identifier: MIT */
/*
 * Whether the program's own calls of madvise() and munmap() reach the
 * hooks (hooks.c): the cache caches on the hooks only while they do
 * (docs/mrcache.md, "Whether the hooks are reached").  Each way a program
 * calls is asked, by calling it with the probe's arguments (monitor.h:
 * the hooks answer without a system call, libc with EINVAL, and a
 * definition that chains to the hooks passes the answer back):
 *
 *   librdmad's own call slots, bound as every library's are;
 *   the first definition of the global scope, as a lookup by name finds
 *   it (dlsym(RTLD_DEFAULT), as ctypes' CDLL(None), LuaJIT's ffi.C and
 *   JITs call; librdmad's default-version hooks, hooks.c): librdmad's
 *   only where librdmad comes before libc in the global scope, as it
 *   does for every program and library linked with it, so not where it
 *   was opened with dlopen() after libc, RTLD_LOCAL or RTLD_DEEPBIND, or
 *   where a library before it defines the calls without chaining;
 *   the main program's own call slots for the two calls, where a
 *   GOT-rewriting library may have put a function of its own.
 *
 * And a namespace of the dynamic linker's other than the default one
 * (dlmopen()) has a libc of its own, whose calls nothing here sees.
 *
 * A full check (is_caching(), a miss that finds anything changed, and
 * every 64th miss) redoes the lookups when an object was loaded or
 * unloaded since (dl_iterate_phdr()'s counts) and makes the probe calls.
 * It leaves what it saw for the next miss (steady()): each way's definition
 * (the value in its call slot, or what the lookup by name found) and the first
 * bytes at that definition, which a patcher that overwrites a function's entry,
 * as libfabric's memhooks overwrites libc's, changes.  A miss that finds
 * them all as they were, and no second namespace, takes the full check's
 * answer without a lock, a lookup or a call: an object loaded since
 * cannot change where the call slots are, nor what a lookup by name finds
 * first (the global scope grows at its end).  Between misses, a hit reads
 * one slot (mrc_reach_steady()): the main program's madvise slot, else
 * librdmad's own, whose value the last check accepted; a slot rewritten
 * since sends the get to the miss's path.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "monitor.h"

/* The relocations that fill a call slot. */
#if defined(__x86_64__)
#define REL_JUMP_SLOT R_X86_64_JUMP_SLOT
#define REL_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define REL_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define REL_GLOB_DAT R_AARCH64_GLOB_DAT
#else /* no slot is found: the other ways are still asked */
#define REL_JUMP_SLOT (~0ul)
#define REL_GLOB_DAT (~0ul)
#endif

/* get_reason()'s words. */
#define NOT_REACHED(way)                                                       \
	"the hooks are not reached: " way "; RDMAD_MR_CACHE_EVENTS_ONLY "      \
	"caches on the kernel's events alone"

typedef int madvise_fn(void *, size_t, int);
typedef int munmap_fn(void *, size_t);

/* What a hit reads: a slot, and the value the last check accepted. */
struct mrc_reach mrc_reach = {&mrc_reach.steady_value, 0, 0};

/* A way in as the last full check saw it: its call slot (NULL for a
 * lookup by name), the definition it led to, and that definition's first
 * bytes. */
struct way {
	void **slot;
	void *fn;
	uint64_t entry;
};

/* The ways: a lookup by name, the main program's slots, librdmad's own;
 * madvise and munmap each. */
#define WAYS 6

static struct {
	pthread_mutex_t lock;
	unsigned long long adds; /* dl_iterate_phdr()'s, at the lookups */
	unsigned long long subs;
	bool looked;
	void *program;	  /* dlopen(NULL) */
	void *by_name[2]; /* madvise, munmap: a lookup by name */
	void **main_slots[2];
	void **own_slots[2]; /* librdmad's */
	/* What the last full check saw and answered (steady()), written
	 * under the lock with seq odd, read without it; seq 0: none yet. */
	unsigned int seq;
	struct way seen[WAYS];
	const char *seen_why;
} reach = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool answers_madvise(void *fn)
{
	return fn && ((madvise_fn *)fn)(MRC_PROBE_ADDR, 0, MRC_PROBE_ADVICE) ==
			     MRC_PROBE_ANSWER;
}

static bool answers_munmap(void *fn)
{
	return fn && ((munmap_fn *)fn)(MRC_PROBE_ADDR, 0) == MRC_PROBE_ANSWER;
}

/* ---- the objects loaded ----------------------------------------------------
 */

static int counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;

	(void)size;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1;
}

/* The slot of @name among relocations [rel, rel + size) of an object at
 * @base, or NULL. */
static void **slot_in(ElfW(Addr) base, const ElfW(Rela) * rel, size_t size,
		      const ElfW(Sym) * syms, const char *strs,
		      const char *name)
{
	size_t i;
	unsigned long type;

	for (i = 0; rel && i < size / sizeof(*rel); i++) {
		type = ELF64_R_TYPE(rel[i].r_info);
		if (type != REL_JUMP_SLOT && type != REL_GLOB_DAT)
			continue;
		if (!strcmp(strs + syms[ELF64_R_SYM(rel[i].r_info)].st_name,
			    name))
			return (void **)(base + rel[i].r_offset);
	}
	return NULL;
}

/* A dynamic entry's address: relocated in place by the dynamic linker on
 * x86_64, an offset from @base where it was not. */
static uintptr_t dyn_ptr(ElfW(Addr) base, ElfW(Addr) p)
{
	return p < base ? base + p : p;
}

struct object_slots {
	const void *inside; /* an address of the object sought */
	void **slots[2];    /* madvise, munmap */
	bool found;
};

static void find_slots(struct dl_phdr_info *info, const ElfW(Dyn) * dyn,
		       struct object_slots *o)
{
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	const ElfW(Sym) *syms = NULL;
	const char *strs = NULL;
	size_t jmpsz = 0, relasz = 0;
	static const char *const names[2] = {"madvise", "munmap"};
	ElfW(Addr) base = info->dlpi_addr;
	int i;

	for (; dyn->d_tag != DT_NULL; dyn++)
		switch (dyn->d_tag) {
		case DT_JMPREL:
			jmprel = (const void *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			jmpsz = dyn->d_un.d_val;
			break;
		case DT_RELA:
			rela = (const void *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			relasz = dyn->d_un.d_val;
			break;
		case DT_SYMTAB:
			syms = (const void *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strs = (const void *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		default:
			break;
		}
	if (!syms || !strs)
		return;
	for (i = 0; i < 2; i++) {
		o->slots[i] =
			slot_in(base, jmprel, jmpsz, syms, strs, names[i]);
		if (!o->slots[i])
			o->slots[i] = slot_in(base, rela, relasz, syms, strs,
					      names[i]);
	}
}

/* The object holding o->inside (NULL: the main program, the first). */
static int object_slots(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_slots *o = arg;
	const ElfW(Dyn) *dyn = NULL;
	bool inside = !o->inside;
	uintptr_t a = (uintptr_t)o->inside, s;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		s = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const void *)s;
		if (info->dlpi_phdr[i].p_type == PT_LOAD && a >= s &&
		    a < s + info->dlpi_phdr[i].p_memsz)
			inside = true;
	}
	if (!inside)
		return 0;
	o->found = true;
	if (dyn)
		find_slots(info, dyn, o);
	return 1;
}

/* Another namespace of the dynamic linker (dlmopen()): glibc sets
 * r_version to 2 and links the namespaces' r_debug once there is one. */
static bool other_namespace(void)
{
#ifdef __GLIBC__
	/* The default namespace's r_debug is an r_debug_extended once
	 * r_version is 2; read through a pointer the compiler cannot
	 * bound by the declared struct r_debug. */
	const struct r_debug *base = &_r_debug;
	const struct r_debug_extended *d;

	__asm__("" : "+r"(base));
	d = (const struct r_debug_extended *)base;
	return base->r_version >= 2 && d->r_next;
#else
	return false;
#endif
}

/* With reach.lock held: look everything up again when an object was
 * loaded or unloaded since. */
static void look_up(void)
{
	unsigned long long c[2] = {0, 0};
	struct object_slots main = {0}, own = {.inside = (void *)look_up};

	dl_iterate_phdr(counts, c);
	if (reach.looked && c[0] == reach.adds && c[1] == reach.subs)
		return;
	reach.adds = c[0];
	reach.subs = c[1];
	/* The main program's handle, not RTLD_DEFAULT: that one searches
	 * the caller's scope, which for librdmad opened with
	 * RTLD_DEEPBIND is librdmad first. */
	if (!reach.program)
		reach.program = dlopen(NULL, RTLD_LAZY);
	reach.by_name[0] = dlsym(reach.program, "madvise");
	reach.by_name[1] = dlsym(reach.program, "munmap");
	dl_iterate_phdr(object_slots, &main);
	dl_iterate_phdr(object_slots, &own);
	reach.main_slots[0] = main.slots[0];
	reach.main_slots[1] = main.slots[1];
	/* The executable that links the cache itself is both. */
	reach.own_slots[0] = own.slots[0];
	reach.own_slots[1] = own.slots[1];
	reach.looked = true;
}

/* With reach.lock held: NULL when every way reaches the hooks, else
 * which one does not. */
static const char *ask(void)
{
	int i;

	if (!mrc_monitor_hooks_reached())
		return NOT_REACHED("librdmad's own calls do not reach its "
				   "hooks (a library "
				   "patched its call slots)");
	if (!answers_madvise(reach.by_name[0]) ||
	    !answers_munmap(reach.by_name[1]))
		return NOT_REACHED(
			"the program's calls and a lookup by name "
			"(dlsym(RTLD_DEFAULT)) find another definition first "
			"(librdmad opened with dlopen() after libc, "
			"RTLD_LOCAL or RTLD_DEEPBIND, or a library before it "
			"that does not chain)");
	for (i = 0; i < 2; i++)
		if (reach.main_slots[i] &&
		    !(i == 0 ? answers_madvise(*reach.main_slots[i])
			     : answers_munmap(*reach.main_slots[i])))
			return NOT_REACHED(
				"the program's call slots were rewritten to a "
				"definition that does not reach librdmad");
	if (other_namespace())
		return NOT_REACHED(
			"a library loaded with dlmopen() into a namespace of "
			"its own calls a libc of its own");
	return NULL;
}

/* ---- what the last full check saw ------------------------------------------
 */

/* The first bytes at @fn: a patch of the entry changes them.  Every
 * definition is longer than this (functions are aligned and padded). */
static uint64_t entry_of(const void *fn)
{
	uint64_t v = 0;

	if (fn)
		memcpy(&v, fn, sizeof(v));
	return v;
}

static void *way_fn(void **slot, void *fn)
{
	return slot ? __atomic_load_n(slot, __ATOMIC_RELAXED) : fn;
}

/* With reach.lock held, before ask() probes them: where each way leads
 * now (a slot rewritten after this differs at the next miss). */
static void capture(struct way *seen)
{
	void **slots[WAYS] = {NULL,
			      NULL,
			      reach.main_slots[0],
			      reach.main_slots[1],
			      reach.own_slots[0],
			      reach.own_slots[1]};
	void *fns[WAYS] = {reach.by_name[0], reach.by_name[1]};
	int i;

	for (i = 0; i < WAYS; i++) {
		seen[i].slot = slots[i];
		seen[i].fn = way_fn(slots[i], fns[i]);
		seen[i].entry = entry_of(seen[i].fn);
	}
}

/* With reach.lock held: @seen and ask()'s answer, for steady(). */
static void publish(const struct way *seen, const char *why)
{
	struct way *w;
	int i;

	/* A seqlock: seq odd first; each store a release, so that a reader
	 * that sees one also sees seq odd when it reads seq again. */
	__atomic_store_n(&reach.seq, reach.seq + 1, __ATOMIC_RELAXED);
	for (i = 0; i < WAYS; i++) {
		w = &reach.seen[i];
		__atomic_store_n(&w->slot, seen[i].slot, __ATOMIC_RELEASE);
		__atomic_store_n(&w->fn, seen[i].fn, __ATOMIC_RELEASE);
		__atomic_store_n(&w->entry, seen[i].entry, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&reach.seen_why, why, __ATOMIC_RELEASE);
	__atomic_store_n(&reach.seq, reach.seq + 1, __ATOMIC_RELEASE);
}

/* Without a lock: whether every way leads where the last full check
 * found it, its entry unpatched, and no second namespace came; then
 * *@why is that check's answer. */
static bool steady(const char **why)
{
	unsigned int seq = __atomic_load_n(&reach.seq, __ATOMIC_ACQUIRE);
	bool same = seq && !(seq & 1);
	const struct way *w;
	void *fn;

	/* Acquires: the second read of seq comes after them all. */
	for (w = reach.seen; same && w < reach.seen + WAYS; w++) {
		fn = way_fn(__atomic_load_n(&w->slot, __ATOMIC_ACQUIRE),
			    __atomic_load_n(&w->fn, __ATOMIC_ACQUIRE));
		same = fn == __atomic_load_n(&w->fn, __ATOMIC_ACQUIRE) &&
		       entry_of(fn) ==
			       __atomic_load_n(&w->entry, __ATOMIC_ACQUIRE);
	}
	*why = __atomic_load_n(&reach.seen_why, __ATOMIC_ACQUIRE);
	return same && __atomic_load_n(&reach.seq, __ATOMIC_RELAXED) == seq &&
	       !other_namespace();
}

/* Every FULL_EVERY-th miss is sent to the full check, steady or not: a
 * definition in the chain that starts forwarding elsewhere through a
 * pointer of its own changes no slot and no entry. */
#define FULL_EVERY 64
static bool due(void)
{
	static unsigned int asked;

	return __atomic_add_fetch(&asked, 1, __ATOMIC_RELAXED) % FULL_EVERY ==
	       0;
}

bool mrc_reach_known(const char **why)
{
	return !due() && steady(why);
}

/* A child: another thread of the parent may have held the lock. */
void mrc_reach_forget(void)
{
	pthread_mutex_init(&reach.lock, NULL);
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, mrc_reach_forget);
}

const char *mrc_reach_check(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct way seen[WAYS];
	void **slot;
	const char *why;
	int saved = errno;

	pthread_once(&once, install_atfork);
	pthread_mutex_lock(&reach.lock);
	look_up();
	capture(seen);
	why = ask();
	publish(seen, why);
	/* The slot a hit reads: the program's, else librdmad's own. */
	slot = reach.main_slots[0] ? reach.main_slots[0] : reach.own_slots[0];
	if (!slot)
		slot = (void **)&mrc_reach.steady_value;
	__atomic_store_n(&mrc_reach.seen,
			 (uintptr_t)__atomic_load_n(slot, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&mrc_reach.slot, (uintptr_t *)slot, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reach.lock);
	errno = saved;
	return why;
}
