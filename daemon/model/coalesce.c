/* SPDX-License-Identifier: MIT */
/*
 * Coalescing of rescan requests.  Names are kept in a small array and
 * deduplicated by a linear search: the array never holds more than the
 * storm threshold (tens), since past it the set collapses to "rescan
 * everything" and the names are dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coalesce.h"

struct coalesce {
	size_t threshold;
	bool full;
	char **names;
	size_t n, cap;
};

struct coalesce *coalesce_new(size_t storm_threshold)
{
	struct coalesce *c = calloc(1, sizeof(*c));

	if (c)
		c->threshold = storm_threshold;
	return c;
}

static void drop_names(struct coalesce *c)
{
	coalesce_names_free(c->names, c->n);
	c->names = NULL;
	c->n = c->cap = 0;
}

void coalesce_free(struct coalesce *c)
{
	if (!c)
		return;
	drop_names(c);
	free(c);
}

static bool contains(const struct coalesce *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->names[i], name))
			return true;
	return false;
}

static int append(struct coalesce *c, const char *name)
{
	char *copy, **grown;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;

		grown = realloc(c->names, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		c->names = grown;
		c->cap = cap;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	c->names[c->n++] = copy;
	return 0;
}

/* More than the threshold pending is a storm: one full rescan is cheaper
 * than many single ones and catches whatever the storm did. */
int coalesce_add(struct coalesce *c, const char *name)
{
	if (c->full || (name && contains(c, name)))
		return 0;
	if (!name || c->n + 1 > c->threshold) {
		c->full = true;
		drop_names(c);
		return 0;
	}
	return append(c, name);
}

bool coalesce_pending(const struct coalesce *c)
{
	return c->full || c->n > 0;
}

int coalesce_take(struct coalesce *c, bool *ret_full, char ***ret_names,
		  size_t *ret_n)
{
	*ret_full = c->full;
	*ret_names = c->names;
	*ret_n = c->n;
	c->full = false;
	c->names = NULL;
	c->n = c->cap = 0;
	return 0;
}

void coalesce_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
