/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces of the fork tracker, shared by its modules:
 * rangemap.c (an index of page ranges with refcounts), madv.c (the
 * madvise calls and their rollback), hugepage.c (page size of a mapping),
 * policy.c (environment variables), cof.c (does the kernel copy pinned
 * pages at fork), tracker.c (sharded state, mark/release/flush), audit.c
 * (fork diagnostics), api.c (the public rdmad_ calls) and shim.c
 * (libibverbs' names for them).
 */
#ifndef RDMAD_FORK_H
#define RDMAD_FORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

/* ---- rangemap.c: ordered map of [start, end) page ranges ----------------- */

/* The address space is cut into granules that no node crosses; each
 * granule with nodes has an index of their starts, one slot per 4 KiB
 * (node starts are page aligned), in chunks of 64 slots allocated as
 * needed, and a list of its nodes in address order. */
#define RANGEMAP_GRANULE_SHIFT 22
#define RANGEMAP_SLOT_SHIFT 12
#define RANGEMAP_CHUNK_SLOTS 64
#define RANGEMAP_CHUNKS                                                        \
	((1 << (RANGEMAP_GRANULE_SHIFT - RANGEMAP_SLOT_SHIFT)) /               \
	 RANGEMAP_CHUNK_SLOTS)

struct rangemap_node {
	uintptr_t start;     /* first byte, page aligned */
	uintptr_t end;	     /* one past the last byte, page aligned */
	unsigned int refcnt; /* 0: released but still marked (deferred) */
	bool unverified;     /* re-registered, mark re-issued at fork */
	/* Neighbours in the same granule, in address order. */
	struct rangemap_node *prev;
	struct rangemap_node *next;
	struct rangemap_node *pool_next; /* free list while unused */
};

struct rangemap_chunk {
	uint64_t bits; /* which slots hold a node */
	struct rangemap_node *slot[RANGEMAP_CHUNK_SLOTS];
};

struct rangemap_granule {
	size_t count;		     /* nodes */
	struct rangemap_node *first; /* lowest */
	struct rangemap_chunk *chunk[RANGEMAP_CHUNKS];
	struct rangemap_granule *spare_next; /* while kept unused */
};

/* Granules by number (address >> RANGEMAP_GRANULE_SHIFT), open
 * addressing. */
struct rangemap_entry {
	uintptr_t number;
	struct rangemap_granule *granule; /* NULL: never used; see .c */
};

struct rangemap {
	struct rangemap_entry *table;
	size_t cap;   /* a power of two, or 0 */
	size_t used;  /* entries ever used since the last rehash */
	size_t live;  /* granules */
	size_t count; /* nodes */
	/* Emptied granules kept with their (empty) chunks for the next one:
	 * a fork empties them all, and the first registrations after it
	 * would otherwise allocate and zero them again. */
	struct rangemap_granule *spare;
	unsigned int spares;
	/* The node the last search ended before, and its start (a node's
	 * start never changes): the same buffer is often asked for again. */
	struct rangemap_node *hint;
	uintptr_t hint_start;
};

int rangemap_init(struct rangemap *map);
/* Free every node and the index (tests). */
void rangemap_clear(struct rangemap *map);
struct rangemap_node *rangemap_node_new(void);
/* Make sure a node starting at @addr can be inserted without allocating:
 * 0 or -ENOMEM, the map's contents unchanged either way. */
int rangemap_reserve(struct rangemap *map, uintptr_t addr);
/* Free the index of @addr's granule when it holds no node any more, or of
 * every such granule. */
void rangemap_trim(struct rangemap *map, uintptr_t addr);
void rangemap_trim_all(struct rangemap *map);

/* A position between two nodes of one granule, with both: a search finds
 * them in the index side by side, without loading either. */
struct rangemap_cursor {
	struct rangemap *map;
	struct rangemap_granule *granule; /* NULL until it has nodes */
	struct rangemap_node *prev;	  /* NULL at the granule's start */
	struct rangemap_node *next;	  /* NULL at its end */
};

/* Position before the first node starting at or above @key (page
 * aligned), in @key's granule. */
void rangemap_seek(struct rangemap *map, struct rangemap_cursor *c,
		   uintptr_t key);
/* Position at the start of the @i-th entry of the map's table; false when
 * it holds no granule.  Walks every node, granule by granule, for i from 0
 * to map->cap. */
bool rangemap_seek_entry(struct rangemap *map, struct rangemap_cursor *c,
			 size_t i);

/* The node starting at @key if it is the map's hint, with no search and
 * without loading any node; else NULL (it may still exist). */
static inline struct rangemap_node *rangemap_hint(const struct rangemap *map,
						  uintptr_t key)
{
	return map->hint && map->hint_start == key ? map->hint : NULL;
}

/* The node just before the cursor (NULL at the start) and just after;
 * rangemap_next() is the node after @node in its granule. */
static inline struct rangemap_node *
rangemap_cursor_prev(const struct rangemap_cursor *c)
{
	return c->prev;
}

static inline struct rangemap_node *
rangemap_cursor_next(const struct rangemap_cursor *c)
{
	return c->next;
}

static inline struct rangemap_node *
rangemap_next(const struct rangemap_node *node)
{
	return node->next;
}

/* Move past @node, which must be the cursor's next. */
static inline void rangemap_cursor_advance(struct rangemap_cursor *c,
					   struct rangemap_node *node)
{
	c->prev = node;
	c->next = node->next;
}

/* Insert @node at the cursor (it becomes next; its start was reserved),
 * or remove and free next.  Neither frees a granule's index: see
 * rangemap_trim(). */
void rangemap_cursor_insert(struct rangemap_cursor *c,
			    struct rangemap_node *node);
void rangemap_cursor_remove_next(struct rangemap_cursor *c);

/* ---- madv.c: runs of pages to madvise ------------------------------------ */

enum madv_kind {
	MADV_KIND_FRESH,  /* not marked before: undo on failure */
	MADV_KIND_REMARK, /* deferred, re-marked in case it was remapped */
};

struct madv_run {
	uintptr_t start;
	uintptr_t end;
	enum madv_kind kind;
};

struct madv_runs {
	struct madv_run *v;
	size_t n;
	size_t cap;
	struct madv_run inline_runs[4];
};

void madv_runs_init(struct madv_runs *runs);
void madv_runs_free(struct madv_runs *runs);
/* Append, merging with the last run when adjacent and of the same kind. */
int madv_runs_add(struct madv_runs *runs, uintptr_t start, uintptr_t end,
		  enum madv_kind kind);
/* MADV_DONTFORK every run; on failure un-mark the fresh ones already done
 * and return -errno.  Adds the syscalls made to @calls. */
int madv_mark_all(const struct madv_runs *runs, uint64_t *calls);
/* MADV_DOFORK, tolerating failure as libibverbs does (page by page). */
void madv_unmark(uintptr_t start, uintptr_t end, size_t page_size,
		 uint64_t *calls);
/* ibv_fork_init's probe: -ENOSYS when madvise cannot mark. */
int madv_probe(size_t page_size);

/* ---- hugepage.c ---------------------------------------------------------- */

/* Page size backing @addr (the base page size when unmapped or unknown). */
size_t hugepage_size(uintptr_t addr);
/* Forget cached mappings, after a madvise failed on what they said. */
void hugepage_invalidate(void);
/* In a fork child: the parent's /proc/self/maps is not ours. */
void hugepage_child(void);

/* ---- policy.c: environment ----------------------------------------------- */

enum policy_unaligned {
	POLICY_UNALIGNED_ROUND,
	POLICY_UNALIGNED_STRICT,
};

enum policy_remark {
	POLICY_REMARK_REGISTER, /* re-issue DONTFORK when re-registered */
	POLICY_REMARK_FORK,	/* ... only in the fork prepare handler */
};

/* What the environment asks for (see policy.c for the variables). */
struct policy {
	bool fork_safe;	     /* RDMAV_FORK_SAFE or IBV_FORK_SAFE */
	bool hugepages_safe; /* RDMAV_HUGEPAGES_SAFE */
	bool defer;	     /* RDMAD_FORK_DEFER, default on */
	/* RDMAD_FORK_UNALIGNED and RDMAD_FORK_REMARK */
	enum policy_unaligned unaligned;
	enum policy_remark remark;
	/* RDMAD_FORK_COPY_ON_FORK: 0 or 1, -1 to ask the kernel */
	int copy_on_fork;
	bool audit;   /* RDMAD_FORK_AUDIT */
	bool explain; /* RDMAD_FORK_EXPLAIN */
};

void policy_read(struct policy *ret_policy);

/* ---- cof.c --------------------------------------------------------------- */

/* Whether the kernel copies pinned pages at fork, asked once through RDMA
 * netlink (false when the kernel has no RDMA netlink). */
bool cof_kernel_copies(void);

/* ---- audit.c: fork diagnostics, while RDMAD_FORK_AUDIT/EXPLAIN are on ---- */

/* Once, at the tracker's init: 0 or -ENOMEM. */
int audit_init(const struct policy *policy, size_t page_size);
/* Before marking a registration: its call site, and room for its record
 * so that audit_add() cannot fail once it is marked (0 or -ENOMEM);
 * audit_unreserve() when the marking failed.  Takes no tracker lock. */
int audit_reserve(const void *caller, unsigned int *ret_site);
void audit_unreserve(void);
/* A registration of [base, base + size) marked as [start, end), from
 * @caller, and a release; both under the tracker's shard lock. */
void audit_add(uintptr_t base, size_t size, uintptr_t start, uintptr_t end,
	       const void *caller, unsigned int site);
void audit_remove(uintptr_t base, size_t size);
/* In the fork prepare handler, every shard locked and flushed, with the
 * number of (base) pages marked: the child's snapshot, and the audit. */
void audit_fork_prepare(uint64_t pages);
/* In the fork child handler: the SIGSEGV handler of EXPLAIN. */
void audit_fork_child(void);
/* Lines of /proc/self/maps now and vm.max_map_count (0 when unreadable). */
void audit_map_counts(uint64_t *ret_maps, uint64_t *ret_max);

/* ---- tracker.c ----------------------------------------------------------- */

struct tracker_stats {
	uint64_t ranges;
	uint64_t pages_marked;
	uint64_t madvise_calls;
	uint64_t madvise_saved;
	uint64_t deferred_ranges;
	uint64_t unaligned_bytes;
	uint64_t marked_runs;
};

int tracker_init(const struct policy *policy);
void tracker_set_policy(const struct policy *policy);
bool tracker_has_ranges(void);
/* @caller: the return address of the entry point, for diagnostics. */
int tracker_mark(void *base, size_t size, const void *caller);
int tracker_release(void *base, size_t size);
/* Un-mark every deferred range now. */
void tracker_flush(void);
void tracker_get_stats(struct tracker_stats *ret_stats);

/* ---- api.c --------------------------------------------------------------- */

struct fork_api_ops {
	int (*init)(void);
	int (*status)(void);
	int (*dontfork)(void *base, size_t size, const void *caller);
	int (*dofork)(void *base, size_t size);
	void (*stats)(struct tracker_stats *ret_stats);
};

/* This copy's tracker; the shim exports a pointer to its own. */
extern const struct fork_api_ops fork_api_self;

int fork_api_init(void);
int fork_api_status(void);
int fork_api_dontfork(void *base, size_t size, const void *caller);
/* rdmad_dontfork_range() through the process's one tracker, on behalf of
 * @caller (rdmad_reg_mr()'s). */
int fork_api_route_dontfork(void *base, size_t size, const void *caller);
int fork_api_dofork(void *base, size_t size);

#endif /* RDMAD_FORK_H */
