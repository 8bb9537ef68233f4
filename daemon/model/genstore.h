/* SPDX-License-Identifier: MIT */
/*
 * A generation that never goes back, not even across daemon restarts or
 * kill -9: the daemon reserves blocks of generations in a small file under
 * the state directory (default /run/rdmad) and starts after the last
 * reserved block.  One write per half block, not per change.
 */
#ifndef RDMAD_GENSTORE_H
#define RDMAD_GENSTORE_H

#include <stdint.h>

struct genstore;

/* Open (creating @dir if needed) and reserve the first block.
 * *ret_start is the generation to start from (the next change is +1).
 * Returns 0, or 1 when the stored ceiling was unreadable (garbage, not a
 * file): then the start is a clock-based floor above any ceiling the file
 * can have held, so the generation still never goes back; or -errno. */
int genstore_open(const char *dir, struct genstore **ret_store,
		  uint64_t *ret_start);
/* Note that @generation is about to be published; reserves and persists
 * a further block when needed.  -errno if it cannot be persisted. */
int genstore_note(struct genstore *store, uint64_t generation);
void genstore_close(struct genstore *store);

#endif
