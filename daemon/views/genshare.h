/* SPDX-License-Identifier: MIT */
/*
 * The daemon's side of the generation page (proto/genpage.h): a sealed
 * memfd it maps read-write, and the read-only descriptor it passes to
 * every client with Welcome.
 */
#ifndef RDMAD_GENSHARE_H
#define RDMAD_GENSHARE_H

#include <stdint.h>

#include "genpage.h"

struct genshare {
	int fd;	   /* read-write, ours; -1 when closed */
	int ro_fd; /* what clients get; -1 when closed */
	struct genpage *page;
};

/* Create the page (or take over @fd, a memfd of one, when >= 0), write
 * @generation into it and seal it.  0 or -errno; genshare_close() after
 * either. */
int genshare_open(struct genshare *g, int fd, uint64_t generation);
void genshare_close(struct genshare *g);

static inline void genshare_publish(struct genshare *g, uint64_t generation)
{
	genpage_store(g->page, generation);
}

#endif
