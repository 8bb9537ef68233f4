/* SPDX-License-Identifier: MIT */
/*
 * PROCMAP_QUERY (Linux 6.11): one mapping of /proc/self/maps by one ioctl
 * on that file, without parsing it.  The fork tracker (huge page sizes)
 * and the registration cache (which memory may be cached) both ask it.
 * Debian 12's headers predate it, so its layout from <linux/fs.h> is
 * here, under a name of rdmad's.
 */
#ifndef RDMAD_PROCMAP_H
#define RDMAD_PROCMAP_H

#include <stdint.h>
#include <sys/ioctl.h>

struct rdmad_procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define RDMAD_PROCMAP_QUERY _IOWR('f', 17, struct rdmad_procmap_query)
#define RDMAD_PROCMAP_QUERY_VMA_SHARED 0x08

#endif
