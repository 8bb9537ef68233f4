/* SPDX-License-Identifier: MIT */
/*
 * What kind of memory a range is, asked of the kernel on every miss
 * (docs/mrcache.md, "The contract").  Only private anonymous memory is
 * cached: a shared, file-backed or hugetlb mapping can lose its pages to
 * a truncate, a hole punch or another process's madvise(), which raise
 * no userfaultfd event, whatever the kernel accepts to register.
 *
 * PROCMAP_QUERY (Linux 6.11) answers for one mapping with one ioctl on a
 * /proc/self/maps descriptor.  Before it, the file is read and parsed up
 * to the range.  No advice is used as a question: the one the kernel
 * refuses on every mapping but private anonymous ones, MADV_WIPEONFORK,
 * changes what a child gets while it is on, and a child made meanwhile
 * without fork()'s handlers (_Fork(), a raw clone()) would find those
 * pages zeroed.  Every way takes the kernel's word for the mapping (its
 * flags, its file) and none allocates.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procmap.h"
#include "vma.h"

static bool anon_private(bool shared, uint64_t inode, unsigned int major,
			 unsigned int minor)
{
	return !shared && !inode && !major && !minor;
}

int mrc_vma_query(int fd, uintptr_t start, uintptr_t end)
{
	struct rdmad_procmap_query q;
	uintptr_t at = start;

	while (at < end) {
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_addr = at;
		if (ioctl(fd, RDMAD_PROCMAP_QUERY, &q) < 0)
			return errno == ENOENT ? 0 : -errno;
		if (!anon_private(q.vma_flags & RDMAD_PROCMAP_QUERY_VMA_SHARED,
				  q.inode, q.dev_major, q.dev_minor) ||
		    q.vma_page_size != (uint64_t)sysconf(_SC_PAGESIZE))
			return 0;
		at = (uintptr_t)q.vma_end;
	}
	return 1;
}

/* One line of /proc/self/maps, its first 127 bytes: 1 when it says
 * nothing against [*next, end) and moves *next past it, 0 when it shows
 * a hole or memory of another kind there, -1 when it lies before. */
static int check_line(const char *line, uintptr_t *next, uintptr_t end)
{
	unsigned long s, e, off, ino;
	unsigned int major, minor;
	char perms[5];

	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu", &s, &e, perms, &off,
		   &major, &minor, &ino) != 7)
		return 0;
	if (e <= *next)
		return -1;
	if (s > *next)
		return 0;
	if (!anon_private(perms[3] != 'p', ino, major, minor))
		return 0;
	*next = e < end ? e : end;
	return 1;
}

int mrc_vma_parse(int fd, uintptr_t start, uintptr_t end)
{
	char buf[16384], line[128];
	size_t len = 0;
	uintptr_t next = start;
	ssize_t n, i;
	int r;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof(line) - 1)
					line[len++] = buf[i];
				continue;
			}
			line[len] = '\0';
			len = 0;
			r = check_line(line, &next, end);
			if (r == 0)
				return 0;
			if (next >= end)
				return 1;
		}
	return n < 0 ? -errno : 0;
}

/* The process's /proc/self/maps for PROCMAP_QUERY, opened once (an open
 * costs 16 times the query) and checked before each use, since the
 * program may close or replace the number (fstat() against the file
 * opened); a forked child closes its copy, which shows the parent. */
static struct {
	pthread_mutex_t lock;
	int fd;
	dev_t dev;
	ino_t ino;
} maps = {PTHREAD_MUTEX_INITIALIZER, -1, 0, 0};

static pthread_once_t maps_once = PTHREAD_ONCE_INIT;

static void forget_in_child(void)
{
	if (maps.fd >= 0)
		close(maps.fd);
	maps.fd = -1;
	pthread_mutex_init(&maps.lock, NULL);
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_in_child);
}

void mrc_vma_cloned(void)
{
	forget_in_child();
}

/* With maps.lock held: the descriptor, or -errno. */
static int maps_fd(void)
{
	struct stat st;
	int fd;

	if (maps.fd >= 0 && fstat(maps.fd, &st) == 0 && st.st_dev == maps.dev &&
	    st.st_ino == maps.ino)
		return maps.fd;
	/* Not ours any more (the program's now): left alone. */
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	maps.fd = fd;
	maps.dev = st.st_dev;
	maps.ino = st.st_ino;
	return fd;
}

int mrc_vma_private_anon(uintptr_t start, uintptr_t end)
{
	int fd, r;

	pthread_once(&maps_once, install_atfork);
	pthread_mutex_lock(&maps.lock);
	fd = maps_fd();
	r = fd < 0 ? fd : mrc_vma_query(fd, start, end);
	/* Without the ioctl: the same kept descriptor, read from the
	 * start (an open and a close would cost more than the query). */
	if (r == -ENOTTY || r == -EINVAL || r == -EPERM || r == -ENOSYS)
		r = mrc_vma_parse(fd, start, end);
	pthread_mutex_unlock(&maps.lock);
	return r;
}
