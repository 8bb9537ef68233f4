/* SPDX-License-Identifier: MIT */
/*
 * What kind of memory a range is (vma.c): the cache caches only private
 * anonymous memory, the one kind whose pages change only through calls
 * the monitor hears of (docs/mrcache.md, "The contract").
 */
#ifndef RDMAD_MRCACHE_VMA_H
#define RDMAD_MRCACHE_VMA_H

#include <stdbool.h>
#include <stdint.h>

/* 1 when every page of [start, end) lies in a private anonymous mapping
 * (no file, not shared, not hugetlb), 0 when one does not or a page is
 * unmapped, -errno when it cannot be told.  PROCMAP_QUERY on
 * /proc/self/maps where the kernel has it (6.11), else the file read.
 * Nothing about the memory changes, not even for a moment. */
int mrc_vma_private_anon(uintptr_t start, uintptr_t end);
/* The same by one method: tests compare them on one kernel. */
int mrc_vma_query(int fd, uintptr_t start, uintptr_t end);
int mrc_vma_parse(int fd, uintptr_t start, uintptr_t end);
/* In a child of a raw clone(), alone: the locks may be a parent
 * thread's, and the kept descriptor shows the parent. */
void mrc_vma_cloned(void);

#endif
