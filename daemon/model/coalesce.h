/* SPDX-License-Identifier: MIT */
/*
 * Coalescing of rescan requests: a set of pending ib device names, or
 * "everything" once a storm passes the threshold.  No timers here; scan.c
 * owns the timer and drains the set.
 */
#ifndef RDMAD_COALESCE_H
#define RDMAD_COALESCE_H

#include <stdbool.h>
#include <stddef.h>

struct coalesce;

struct coalesce *coalesce_new(size_t storm_threshold);
void coalesce_free(struct coalesce *c);
/* Add @name (NULL: full rescan).  Duplicates collapse.  -ENOMEM. */
int coalesce_add(struct coalesce *c, const char *name);
bool coalesce_pending(const struct coalesce *c);
/* Take what is pending and reset.  If *ret_full, rescan everything and
 * ignore the names; else @ret_names is a malloc'd array of @*ret_n
 * malloc'd names (free with coalesce_names_free()). */
int coalesce_take(struct coalesce *c, bool *ret_full, char ***ret_names,
		  size_t *ret_n);
void coalesce_names_free(char **names, size_t n);

#endif
