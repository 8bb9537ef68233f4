/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces of the registration cache (librdmad(3), "Memory
 * registration cache"), shared by its modules, lowest first: monitor.c
 * (monitor.h: the process's userfaultfd, the thread that reads it, the
 * watched ranges, its clients) and vma.c (vma.h: what kind of memory a
 * range is) call nothing above them; index.c (the cached entries of one
 * cache, sorted by address), owners.c (from an MR handed out to its
 * entry), entry.c (an entry's life), changes.c (a cache's ring of changes
 * the monitor told), cache.c (the public rdmad_mr_cache_* calls, devices
 * leaving, fork; it registers each cache with the monitor as a client).
 * hooks.c, beside them, is libc's munmap(), mremap(), madvise() and
 * process_madvise() as librdmad defines them: it calls only monitor.c,
 * which announces the change to the caches as rdmad_mr_cache_begin_change()
 * does; reach.c (monitor.h) asks whether the program's calls come to
 * them, every way a program calls.
 *
 * Locks, outermost first: the list of clients (monitor.c), then one
 * cache's lock, then the watched ranges' and the announced changes' locks
 * (monitor.c).  The monitor thread takes none of them: it hands each
 * change to the cache's ring (changes.c), which the next application
 * thread applies under the cache's lock.
 * A cache's lock is never held across a call that may unmap memory
 * (registering, deregistering, freeing): such a call may wait for the
 * monitor, and nothing the monitor does waits for it, so no thread can
 * wait for itself.  Memory that growing a table under the lock frees is
 * kept in a struct mrc_garbage and freed after the unlock.
 */
#ifndef RDMAD_MRCACHE_H
#define RDMAD_MRCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock.h"
#include "monitor.h"
#include "rdmad.h"
#include "vma.h"

struct ibv_pd;
struct ibv_mr;

/* ---- index.c: non-overlapping entries sorted by start ------------------- */

struct mrc_entry {
	uintptr_t start; /* page aligned; the MR covers [start, end) */
	uintptr_t end;
	int access;
	/* Users; atomic (a hit may take it without the lock).  MRC_CLAIMED
	 * and above: on the dead list or free, owned by no one (entry.c). */
	unsigned int refcnt;
	bool cached; /* false: outside the index, deregistered at its put */
	bool dead;   /* cached, but invalidated or replaced: out of the index */
	bool orphan; /* a parent's, in a child: never deregistered */
	bool recent; /* got since it last came to the LRU list's head */
	uint64_t watch; /* the monitor's watch of its range for it, or 0 */
	struct ibv_mr *mr;
	/* Cached entries, least recently used first (second chance). */
	struct mrc_entry *lru_prev;
	struct mrc_entry *lru_next;
	/* The cache's detached list (in use, out of the index), dead list
	 * (idle, to deregister) or pool of free entries. */
	struct mrc_entry *next;
};

/* Starts in their own array, for the search; entries beside them. */
struct mrc_index {
	uintptr_t *starts;
	struct mrc_entry **entries;
	size_t count;
	size_t cap;
	size_t hint; /* position of the last hit */
};

/* Blocks to free once the cache's lock is released. */
struct mrc_garbage {
	void *blocks[4];
	unsigned int count;
};
void mrc_garbage_free(struct mrc_garbage *garbage);

void mrc_index_free(struct mrc_index *index);
/* Room for @n more entries: 0 or -ENOMEM; the old arrays go to
 * @garbage. */
int mrc_index_reserve(struct mrc_index *index, size_t n,
		      struct mrc_garbage *garbage);
/* The entry that covers [start, end), or NULL. */
struct mrc_entry *mrc_index_covering(struct mrc_index *index, uintptr_t start,
				     uintptr_t end);
/* The entries overlapping [start, end) are [*first, *first + return). */
size_t mrc_index_overlapping(const struct mrc_index *index, uintptr_t start,
			     uintptr_t end, size_t *first);
/* Insert an entry that overlaps none (room reserved first). */
void mrc_index_insert(struct mrc_index *index, struct mrc_entry *entry);
/* Remove the @n entries at @first; allocates and frees nothing. */
void mrc_index_remove(struct mrc_index *index, size_t first, size_t n);
/* Position of @entry, or -1 when it is not in the index. */
long mrc_index_find(const struct mrc_index *index,
		    const struct mrc_entry *entry);

/* ---- owners.c: MR to entry, for the entries that may be put ------------- */

struct mrc_owners {
	struct mrc_entry **slots;
	size_t cap; /* a power of two, or 0 */
	size_t count;
};

/* 0 or -ENOMEM; a table outgrown goes to @garbage. */
int mrc_owners_add(struct mrc_owners *owners, struct mrc_entry *entry,
		   struct mrc_garbage *garbage);
struct mrc_entry *mrc_owners_find(const struct mrc_owners *owners,
				  const struct ibv_mr *mr);
/* Allocates and frees nothing. */
void mrc_owners_remove(struct mrc_owners *owners,
		       const struct mrc_entry *entry);
void mrc_owners_free(struct mrc_owners *owners);

/* ---- entry.c: an entry's life, under the cache's lock ------------------- */

#define MRC_CLAIMED (1u << 30)

/* How entries are registered: rdmad_reg_mr() and rdmad_dereg_mr(), or a
 * test's fake. */
struct mrc_ops {
	struct ibv_mr *(*reg)(struct ibv_pd *pd, void *addr, size_t length,
			      int access);
	int (*dereg)(struct ibv_mr *mr);
};

/* What a cache does with a get: cache.c's table. */
enum mrc_mode {
	MRC_CACHING,	/* watched by the monitor, then cached */
	MRC_UNWATCHED,	/* tests only: cached without watching, any kind */
	MRC_NO_MONITOR, /* no monitor could be had, or it was lost */
	MRC_UNHOOKED,	/* the hooks are not reached: until they are again */
	MRC_FORKED,	/* a child's copy: passes through */
	MRC_LEAVING,	/* its device began to leave: passes through */
};

#define MRC_CHANGES 64

struct rdmad_mr_cache {
	struct mrc_lock lock; /* lock.h */
	uint64_t id;  /* unique in the process: a thread's hint names it */
	uint64_t gen; /* atomic; +1 whenever an entry leaves the index */
	struct ibv_pd *pd;
	struct mrc_ops ops;
	char device[64];
	size_t max_entries;
	size_t max_bytes;
	unsigned int flags;
	enum mrc_mode mode;	  /* changed only by cache.c's set_mode() */
	const char *why;	  /* MRC_NO_MONITOR: the monitor's reason */
	const char *unhooked_why; /* MRC_UNHOOKED: the way not reached */
	struct mrc_index index;
	struct mrc_owners owners;   /* what may be put back */
	struct mrc_entry *lru_head; /* the index's entries, least recent */
	struct mrc_entry *lru_tail;
	struct mrc_entry *detached;
	struct mrc_entry *dead; /* read without the lock by mrc_reap() */
	struct mrc_entry *pool;
	/* Changes the monitor reported, not yet applied to the index: the
	 * monitor thread and threads announcing a change write them (a
	 * writer claims a slot, fills it, then publishes it in order: both
	 * counters atomic), application threads apply them under the lock
	 * (changes_tail), and a miss checks the ones that came while it
	 * registered unlocked. */
	struct mrc_change {
		uintptr_t start; /* atomic, relaxed */
		uintptr_t end;
	} changes[MRC_CHANGES];
	uint64_t changes_claimed;
	uint64_t changes_head;
	uint64_t changes_tail;
	/* hits atomic; entries and in_use counted when asked */
	struct rdmad_mr_cache_stats stats;
};

/* A free entry, claimed (refcnt MRC_CLAIMED), or NULL. */
struct mrc_entry *mrc_entry_alloc(struct rdmad_mr_cache *cache);
/* Hand a filled entry to its first user (refcnt 1). */
void mrc_entry_activate(struct mrc_entry *entry);
/* Back to the pool, never activated. */
void mrc_entry_unalloc(struct rdmad_mr_cache *cache, struct mrc_entry *entry);
void mrc_lru_append(struct rdmad_mr_cache *cache, struct mrc_entry *entry);
void mrc_lru_unlink(struct rdmad_mr_cache *cache, struct mrc_entry *entry);
void mrc_push(struct mrc_entry **list, struct mrc_entry *entry);
/* The @n entries of the index at @first leave it: idle ones to the dead
 * list, ones in use detached until their last put. */
void mrc_retire_range(struct rdmad_mr_cache *cache, size_t first, size_t n);
/* Without the lock: a user lets go; the last user of an entry out of the
 * index sends it to the dead list.  -EINVAL when it had no user. */
int mrc_entry_drop(struct rdmad_mr_cache *cache, struct mrc_entry *entry);
/* Without the lock: take back an increment a hit did not keep, whoever
 * owns the entry now. */
void mrc_entry_undo(struct rdmad_mr_cache *cache, struct mrc_entry *entry);
/* Without the lock: deregister the dead list and keep its entries
 * (mrc_reap_dead()); a load when the list is empty, as after most puts. */
void mrc_reap_dead(struct rdmad_mr_cache *cache);
static inline void mrc_reap(struct rdmad_mr_cache *cache)
{
	if (__atomic_load_n(&cache->dead, __ATOMIC_ACQUIRE))
		mrc_reap_dead(cache);
}
/* Users of the cache's entries now (the lock held). */
uint64_t mrc_in_use(const struct rdmad_mr_cache *cache);
/* Free every entry of the pool (destroy). */
void mrc_pool_free(struct rdmad_mr_cache *cache);

/* ---- changes.c: a cache's ring of changes ------------------------------- */

/* The monitor client's changed(): record [start, end) for cache @arg.
 * Takes no lock, allocates nothing. */
void mrc_changes_record(void *arg, uintptr_t start, uintptr_t end);
/* Changes published so far: what a miss saw when it began to watch. */
uint64_t mrc_changes_seen(const struct rdmad_mr_cache *cache);
/* Whether a change published since @seen may overlap [start, end). */
bool mrc_changes_since(const struct rdmad_mr_cache *cache, uint64_t seen,
		       uintptr_t start, uintptr_t end);
/* With the lock held: apply the changes that wait (the entries they
 * overlap leave the index, all when overrun). */
void mrc_changes_apply(struct rdmad_mr_cache *cache);
/* With the lock held: whether changes wait to be applied.  Inline: every
 * locked hit asks. */
static inline bool mrc_changes_pending(const struct rdmad_mr_cache *cache)
{
	return __atomic_load_n(&cache->changes_head, __ATOMIC_SEQ_CST) !=
	       cache->changes_tail;
}

/* ---- cache.c ------------------------------------------------------------ */

struct rdmad_mr_cache *mrc_cache_new_ops(struct ibv_pd *pd,
					 const struct rdmad_mr_cache_attr *attr,
					 const struct mrc_ops *ops,
					 const char *device);
/* Tests and the real-kernel proof only: cache without a monitor, so that
 * a case can be shown to corrupt.  Never reachable from the public API. */
void mrc_cache_unmonitored(struct rdmad_mr_cache *cache);

/* After fork, in the child: forget the parent's entries, never use them. */
void mrc_cache_forked(struct rdmad_mr_cache *cache);

/* The client library's hook (client.c): @device, a kernel name, began to
 * leave; every entry of its caches goes, idle ones deregistered now. */
void mrcache_device_leaving(const char *device);

#endif
