/* SPDX-License-Identifier: MIT */
/*
 * The generation page (PROTOCOL.md, section 4): a 4 KiB memfd the daemon
 * maps read-write and passes read-only with Welcome, so that a client
 * learns whether anything changed without a syscall.  Its layout is a
 * contract between two processes: defined here once, for the daemon, the
 * library and the tests, and checked at compile time.
 */
#ifndef RDMAD_GENPAGE_H
#define RDMAD_GENPAGE_H

#include <stddef.h>
#include <stdint.h>

#define GENPAGE_SIZE 4096
#define GENPAGE_MAGIC 0x52444d47u /* "RDMG" */
#define GENPAGE_LAYOUT 1u

/* Host byte order.  Only the daemon writes, only through genpage_store(). */
struct genpage {
	uint32_t magic;	     /* GENPAGE_MAGIC */
	uint32_t layout;     /* GENPAGE_LAYOUT; another layout: do not use */
	uint64_t generation; /* the daemon's generation, 8-byte aligned */
};

_Static_assert(offsetof(struct genpage, magic) == 0, "magic at 0");
_Static_assert(offsetof(struct genpage, layout) == 4, "layout at 4");
_Static_assert(offsetof(struct genpage, generation) == 8, "generation at 8");
_Static_assert(sizeof(struct genpage) == 16, "16 bytes used");
_Static_assert(sizeof(struct genpage) <= GENPAGE_SIZE, "fits the page");

/* Publish @generation: everything the daemon sent before is visible to a
 * reader that sees it. */
static inline void genpage_store(struct genpage *page, uint64_t generation)
{
	__atomic_store_n(&page->generation, generation, __ATOMIC_RELEASE);
}

static inline uint64_t genpage_load(const struct genpage *page)
{
	return __atomic_load_n(&page->generation, __ATOMIC_ACQUIRE);
}

#endif
