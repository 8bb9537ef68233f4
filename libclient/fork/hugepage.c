/* SPDX-License-Identifier: MIT */
/*
 * The page size of the mapping holding an address, for
 * RDMAV_HUGEPAGES_SAFE.  libibverbs parses /proc/self/smaps on every
 * registration.  We ask the kernel for one mapping with the PROCMAP_QUERY
 * ioctl on /proc/self/maps (Linux >= 6.11: a few hundred nanoseconds, never
 * stale).  Older kernels get a table of every mapping parsed from smaps
 * once and parsed again only when an address falls outside it or a
 * madvise failed on what the table said (hugepage_invalidate()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fork.h"
#include "procmap.h"

struct vma {
	uintptr_t start;
	uintptr_t end;
	size_t page_size;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int maps_fd = -1; /* -2: PROCMAP_QUERY unsupported */
static struct vma *table;
static size_t table_len;

static size_t base_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* 0 and the size, -ENOTTY when the kernel lacks the ioctl, -errno else. */
static int query_ioctl(uintptr_t addr, size_t *ret_size)
{
	struct rdmad_procmap_query q = {.size = sizeof(q)};
	int fd = __atomic_load_n(&maps_fd, __ATOMIC_ACQUIRE);

	if (fd == -2)
		return -ENOTTY;
	if (fd == -1) {
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		int expected = -1;
		if (!__atomic_compare_exchange_n(&maps_fd, &expected, fd, false,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			close(fd);
			fd = expected;
		}
	}
	q.query_addr = addr;
	if (ioctl(fd, RDMAD_PROCMAP_QUERY, &q) == 0) {
		*ret_size = q.vma_page_size;
		return 0;
	}
	if (errno == ENOTTY || errno == EINVAL)
		__atomic_store_n(&maps_fd, -2, __ATOMIC_RELEASE);
	return -errno;
}

static int table_add(struct vma **v, size_t *n, size_t *cap, struct vma e)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct vma *nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = e;
	return 0;
}

/* Read every mapping and its KernelPageSize from smaps. */
static void table_load(void)
{
	struct vma *v = NULL, cur = {0};
	size_t n = 0, cap = 0;
	unsigned long kb;
	char line[512];
	FILE *f;

	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &cur.start,
			   &cur.end) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			cur.page_size = base_page();
		else if (sscanf(line, "KernelPageSize: %lu kB", &kb) == 1 &&
			 table_add(&v, &n, &cap, cur) == 0)
			v[n - 1].page_size = kb * 1024;
	}
	fclose(f);
	free(table);
	table = v;
	table_len = n;
}

static const struct vma *table_find(uintptr_t addr)
{
	size_t lo = 0, hi = table_len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < table[mid].start)
			hi = mid;
		else if (addr >= table[mid].end)
			lo = mid + 1;
		else
			return &table[mid];
	}
	return NULL;
}

static size_t query_table(uintptr_t addr)
{
	const struct vma *vma;
	size_t size = base_page();

	pthread_mutex_lock(&lock);
	vma = table_find(addr);
	if (!vma) {
		table_load();
		vma = table_find(addr);
	}
	if (vma)
		size = vma->page_size;
	pthread_mutex_unlock(&lock);
	return size;
}

size_t hugepage_size(uintptr_t addr)
{
	size_t size = 0;
	int r;

	r = query_ioctl(addr, &size);
	if (r == 0)
		return size;
	if (r == -ENOENT)
		return base_page();
	return query_table(addr);
}

void hugepage_invalidate(void)
{
	pthread_mutex_lock(&lock);
	free(table);
	table = NULL;
	table_len = 0;
	pthread_mutex_unlock(&lock);
}

void hugepage_child(void)
{
	/* The inherited /proc/self/maps describes the parent's mappings, and
	 * another thread of the parent may have held the lock at fork. */
	if (maps_fd >= 0)
		close(maps_fd);
	if (maps_fd != -2)
		maps_fd = -1;
	pthread_mutex_init(&lock, NULL);
	hugepage_invalidate();
}
