/* SPDX-License-Identifier: MIT */
/*
 * The generation page, daemon side.  A 4 KiB memfd, sealed against
 * growing and shrinking (a client reading past its end would get SIGBUS),
 * against writes through any mapping made after ours, and against further
 * seals; clients get an O_RDONLY re-open of it through /proc/self/fd, so
 * they can map it only read-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "genshare.h"
#include "log.h"

static int create(void)
{
	int fd = memfd_create("rdmad-generation",
			      MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, GENPAGE_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* From here on nobody may write the page but through our mapping, and
 * nobody add a seal (a client could add F_SEAL_SEAL or others through
 * /proc/self/fd otherwise). */
static void seal(int fd)
{
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) < 0)
		log_warn("cannot seal the generation page against writes "
			 "(Linux >= 5.1 can): a client could reopen it "
			 "writable and mislead the others");
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL) < 0)
		log_warn("cannot seal the generation page's seals");
}

int genshare_open(struct genshare *g, int fd, uint64_t generation)
{
	char path[64];
	void *p;

	g->page = NULL;
	g->ro_fd = -1;
	g->fd = fd >= 0 ? fd : create();
	if (g->fd < 0)
		return g->fd;
	p = mmap(NULL, GENPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd,
		 0);
	if (p == MAP_FAILED)
		return -errno;
	g->page = p;
	g->page->magic = GENPAGE_MAGIC;
	g->page->layout = GENPAGE_LAYOUT;
	genpage_store(g->page, generation);
	seal(g->fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", g->fd);
	g->ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	return g->ro_fd < 0 ? -errno : 0;
}

void genshare_close(struct genshare *g)
{
	if (g->page)
		munmap(g->page, GENPAGE_SIZE);
	if (g->ro_fd >= 0)
		close(g->ro_fd);
	if (g->fd >= 0)
		close(g->fd);
	g->page = NULL;
	g->fd = g->ro_fd = -1;
}
