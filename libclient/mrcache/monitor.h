/* SPDX-License-Identifier: MIT */
/*
 * The memory monitor (monitor.c): the process's userfaultfd, the thread
 * that reads it, the ranges it watches and the clients told of changes.
 * It knows nothing of caches: a cache registers a client (callbacks and
 * an argument), as UCX's rcache registers with ucm_set_event_handler(),
 * so the monitor calls no cache by name and includes nothing above it.
 */
#ifndef RDMAD_MRCACHE_MONITOR_H
#define RDMAD_MRCACHE_MONITOR_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mrc_monitor_client {
	/* On the monitor thread, or on a thread announcing a change: the
	 * pages of [start, end) change.  It must not block, take a lock,
	 * allocate or free (mrcache.h). */
	void (*changed)(void *arg, uintptr_t start, uintptr_t end);
	/* fork(): lock before, unlock after in the parent; in the child
	 * forked() (still locked), then unlock. */
	void (*lock)(void *arg);
	void (*unlock)(void *arg);
	void (*forked)(void *arg);
	/* In a child made without fork()'s handlers (a raw clone()), alone
	 * in its process: the lock may be held by a thread the child does
	 * not have; make it afresh, then as forked(), then unlock. */
	void (*cloned)(void *arg);
	/* mrc_monitor_release(): the entries over [start, end) leave the
	 * cache now, idle ones deregistered, and none of them unwatches its
	 * range later (the monitor already did). */
	void (*release)(void *arg, uintptr_t start, uintptr_t end);
};

/* Start the process's monitor once: 0, or -errno with @why telling the
 * reason in words (kept for the process's life). */
int mrc_monitor_start(const char **why);
/* Tell @client's callbacks (with @arg) of changes and forks from now on:
 * 0, or -ENOSPC past MRC_MONITOR_CLIENTS clients. */
#define MRC_MONITOR_CLIENTS 256
int mrc_monitor_add(const struct mrc_monitor_client *client, void *arg);
/* No callback with @arg runs once this returns. */
void mrc_monitor_remove(void *arg);
/* Call @fn(arg, data) for every client's argument, the list locked. */
void mrc_monitor_each(void (*fn)(void *arg, const void *data),
		      const void *data);

/* Watch [start, end) (page aligned) for one user: 0 and the watch's id
 * in *@id (never 0), or -errno when it cannot be watched: -ENOSPC past
 * the bound on watched ranges (each may split a mapping in three, so the
 * bound keeps the process below vm.max_map_count), -ESTALE when the
 * descriptor was lost, else the kernel's refusal. */
int mrc_monitor_watch(uintptr_t start, uintptr_t end, uint64_t *id);
/* The user of watch @id is done: the parts of its range no other user
 * watches are unregistered, so their mappings merge back and their
 * munmap() costs what an unwatched one does.  A watch that
 * mrc_monitor_release() already ended is left alone (another user may
 * watch the same range since). */
void mrc_monitor_unwatch(uint64_t id);

/* A change of the pages of [start, end) the program announces before it
 * makes it (rdmad_mr_cache_begin_change()): the clients hear of it at
 * once, the range stops being watched (so the kernel raises no event and
 * the call does not wait for the monitor), and it is in flight until
 * mrc_monitor_changed() with the same range, after the change, tells the
 * clients again.  Not async-signal-safe. */
#define MRC_MONITOR_FLYING 64
void mrc_monitor_changing(uintptr_t start, uintptr_t end);
void mrc_monitor_changed(uintptr_t start, uintptr_t end);
/* Whether an announced change not yet done overlaps [start, end). */
bool mrc_monitor_in_flight(uintptr_t start, uintptr_t end);

/* A thread that changes the monitor's shared state (a claimed ring slot,
 * a held lock, a range marked changing) does so with its signals
 * blocked, so that no handler on the same thread can wait for it,
 * siglongjmp() out of it half done, or find one of the monitor's locks
 * held and skip announcing its own call; and with cancellation disabled
 * and deferred, so that pthread_cancel() (deferred or asynchronous) never
 * ends the thread holding a lock the monitor thread or every get needs.
 * Nested calls restore what the outer one found. */
struct mrc_hush {
	sigset_t old;
	int cancel;
	int type;
};
void mrc_monitor_hush(struct mrc_hush *h);
void mrc_monitor_unhush(const struct mrc_hush *h);

/* Give [start, end) back to the program (rdmad_mr_cache_release()):
 * every client releases its entries over it and over whatever range
 * watched together with it, and the monitor stops watching all of that,
 * so the program may register it with a userfaultfd of its own. */
void mrc_monitor_release(uintptr_t start, uintptr_t end);

/* The probe hooks.c answers without a system call: madvise(PROBE_ADDR,
 * 0, PROBE_ADVICE) and munmap(PROBE_ADDR, 0) return PROBE_ANSWER when
 * the call came to librdmad's hook, directly or through whatever chains
 * to it; libc gives -1 with EINVAL (an unaligned address, an unknown
 * advice) and changes nothing. */
#define MRC_PROBE_ADDR ((void *)0x52)
#define MRC_PROBE_ADVICE (-0x5244)
#define MRC_PROBE_ANSWER 0x5244
/* Whether this process's madvise() and munmap() reach librdmad's hooks
 * now: false when librdmad came after libc in the lookup order
 * (dlopen()), or another library since patched the call slots to calls
 * of its own that do not chain.  Two calls, no system call when true. */
bool mrc_monitor_hooks_reached(void);
/* reach.c: whether the program's own calls reach the hooks, every way a
 * program calls (its versioned calls as the dynamic linker binds them, a
 * lookup by name as dlsym(RTLD_DEFAULT) does, the main program's call
 * slots, librdmad's own slots; no second libc in another namespace):
 * NULL when they do, else the way that does not, in words. */
const char *mrc_reach_check(void);
/* For a miss, without a lock or a call: the last check's answer in
 * *@why while every way still leads to the definition it found there,
 * that definition's entry unpatched, and no second namespace came; false
 * where only a full check can answer (and on every 64th miss). */
bool mrc_reach_known(const char **why);
/* In a child made without fork()'s handlers: its lock made afresh (a
 * forked child's is, by a handler of its own). */
void mrc_reach_forget(void);
/* What a hit reads between checks: one call slot and the value the last
 * check accepted there; a slot rewritten since sends the get to the
 * check. */
struct mrc_reach {
	uintptr_t *slot;
	uintptr_t seen;
	uintptr_t steady_value; /* the slot when no call slot was found */
};
extern struct mrc_reach mrc_reach;
static inline bool mrc_reach_steady(void)
{
	const uintptr_t *slot =
		__atomic_load_n(&mrc_reach.slot, __ATOMIC_ACQUIRE);

	return __atomic_load_n(slot, __ATOMIC_RELAXED) ==
	       __atomic_load_n(&mrc_reach.seen, __ATOMIC_RELAXED);
}

/* Whether the hooks announce (RDMAD_MR_CACHE_HOOKS is not off). */
bool mrc_monitor_hooks_on(void);

/* What a hooked call reads before anything else (hooks.c), on one cache
 * line of its own: whether a monitor runs with the hooks on (else no call
 * is announced, and a hook goes straight to the next definition), the
 * token page, and the next definitions of the calls, looked up once.  A
 * program that links librdmad and makes no cache pays for this line and
 * the hook's first instructions only.
 *
 * The token: a page that reads MRC_TOKEN in the process that armed the
 * hooks and zero in any child that no fork handler told (MADV_WIPEONFORK:
 * _Fork(), a raw clone() without CLONE_VM).  Such a child is alone in a
 * copy of the parent's memory, with the parent's locks as some parent
 * thread left them and a copy of the parent's userfaultfd, whose ioctls
 * act on the parent's address space; so a hook that reads anything but
 * MRC_TOKEN there goes straight to libc, before any lock or any blocked
 * signal, and the child's cache calls make everything afresh first
 * (mrc_monitor_adopt_clone()).  No monitor starts without the page. */
enum {
	MRC_NEXT_MUNMAP,
	MRC_NEXT_MADVISE,
	MRC_NEXT_MREMAP,
	MRC_NEXT_PROCESS_MADVISE,
	MRC_NEXT_CALLS
};
#define MRC_TOKEN 0x6d72630aULL
struct mrc_hook_line {
	bool armed;
	uint64_t *token;
	void *next[MRC_NEXT_CALLS];
};
extern struct mrc_hook_line mrc_hook_line;

/* Whether this process is a child that no fork handler told. */
static inline bool mrc_monitor_in_clone(void)
{
	const uint64_t *t =
		__atomic_load_n(&mrc_hook_line.token, __ATOMIC_RELAXED);

	return t && __atomic_load_n(t, __ATOMIC_RELAXED) != MRC_TOKEN;
}
void mrc_monitor_adopt_clone(void);

/* Whether a hook may announce: a monitor runs with the hooks on, in the
 * process that started it (the token reads MRC_TOKEN: one more load). */
static inline bool mrc_monitor_armed(void)
{
	const uint64_t *t;

	if (!__atomic_load_n(&mrc_hook_line.armed, __ATOMIC_ACQUIRE))
		return false;
	t = __atomic_load_n(&mrc_hook_line.token, __ATOMIC_RELAXED);
	return t && __atomic_load_n(t, __ATOMIC_RELAXED) == MRC_TOKEN;
}

/* For the hooks (hooks.c), without a lock or a system call: false when
 * the change of [start, end) is surely not to be announced (as below);
 * true when mrc_monitor_hooked() must be asked, signals blocked. */
bool mrc_monitor_wanted(uintptr_t start, uintptr_t end, bool always);
/* For the hooks (hooks.c): whether the program's change of [start, end)
 * is to be announced around its call.  @always for the calls the kernel
 * tells late (madvise()'s discards: REMOVE comes before the zap) or not at
 * all (guard regions); otherwise only when a watched range overlaps it,
 * since an unwatched range raises no event to wait for.  False when no
 * monitor runs, RDMAD_MR_CACHE_HOOKS=off, or this thread holds one of the
 * monitor's locks (a signal handler's call): the kernel's event, which
 * the thread reads without a lock, then covers the call. */
bool mrc_monitor_hooked(uintptr_t start, uintptr_t end, bool always);
/* Events the thread has read (UNMAP, REMOVE, REMAP), for the tests. */
unsigned long mrc_monitor_events(void);

/* Whether the descriptor is still the monitor's (fstat() of the number
 * against the file it opened): false once the program closed it or put
 * another file at its number; then nothing new is watched. */
bool mrc_monitor_alive(void);
/* Whether a check already found it lost (no syscall). */
bool mrc_monitor_lost(void);
/* The words for a lost descriptor (get_reason). */
extern const char mrc_monitor_lost_why[];

/* Wait until the monitor has handed every event it has read to its
 * clients: a change whose call returned is known once this returns. */
void mrc_monitor_quiesce(void);
/* Whether it is reading or handing out events now: set from before a
 * read to after its events are in every client's ring, read by every
 * get without a call. */
extern unsigned int mrc_monitor_reading;
static inline bool mrc_monitor_busy(void)
{
	return __atomic_load_n(&mrc_monitor_reading, __ATOMIC_SEQ_CST) != 0;
}

#endif
