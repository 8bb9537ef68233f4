/* SPDX-License-Identifier: MIT */
/*
 * The up/down state of net devices, as rtnetlink last said: a chained hash
 * table of names, grown by doubling.  A net device that goes (or is
 * renamed) is forgotten, so containers creating and deleting veths by the
 * thousand leave nothing behind.  Pure data, no descriptors; the
 * device table (devices.c) owns one.
 */
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "netdevs.h"

struct netdev_state {
	struct netdev_state *next;
	char name[IFNAMSIZ];
	bool up;
};

struct netdevs {
	struct netdev_state **buckets;
	size_t nbuckets; /* a power of two, or 0 */
	size_t n;
};

struct netdevs *netdevs_new(void)
{
	return calloc(1, sizeof(struct netdevs));
}

void netdevs_free(struct netdevs *nd)
{
	struct netdev_state *s;

	if (!nd)
		return;
	for (size_t i = 0; i < nd->nbuckets; i++) {
		while ((s = nd->buckets[i])) {
			nd->buckets[i] = s->next;
			free(s);
		}
	}
	free(nd->buckets);
	free(nd);
}

static struct netdev_state **slot(const struct netdevs *nd, const char *name)
{
	return &nd->buckets[hash_str(name) & (nd->nbuckets - 1)];
}

/* Double the buckets once the chains would average more than one. */
static int grow(struct netdevs *nd)
{
	struct netdevs bigger = {.nbuckets =
					 nd->nbuckets ? nd->nbuckets * 2 : 64};
	struct netdev_state *s, **to;

	bigger.buckets = calloc(bigger.nbuckets, sizeof(*bigger.buckets));
	if (!bigger.buckets)
		return -ENOMEM;
	for (size_t i = 0; i < nd->nbuckets; i++) {
		while ((s = nd->buckets[i])) {
			nd->buckets[i] = s->next;
			to = slot(&bigger, s->name);
			s->next = *to;
			*to = s;
		}
	}
	free(nd->buckets);
	nd->buckets = bigger.buckets;
	nd->nbuckets = bigger.nbuckets;
	return 0;
}

static struct netdev_state *find(const struct netdevs *nd, const char *name)
{
	struct netdev_state *s;

	if (!nd->nbuckets)
		return NULL;
	for (s = *slot(nd, name); s; s = s->next)
		if (!strcmp(s->name, name))
			return s;
	return NULL;
}

int netdevs_set(struct netdevs *nd, const char *name, bool up)
{
	struct netdev_state *s;
	struct netdev_state **to;

	if (!name[0] || strlen(name) >= IFNAMSIZ)
		return -EINVAL;
	s = find(nd, name);
	if (!s) {
		if (nd->n >= nd->nbuckets && grow(nd) < 0)
			return -ENOMEM;
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		strcpy(s->name, name);
		to = slot(nd, name);
		s->next = *to;
		*to = s;
		nd->n++;
	}
	s->up = up;
	return 0;
}

void netdevs_forget(struct netdevs *nd, const char *name)
{
	struct netdev_state **to, *s;

	if (!nd->nbuckets)
		return;
	for (to = slot(nd, name); (s = *to); to = &s->next) {
		if (strcmp(s->name, name) == 0) {
			*to = s->next;
			free(s);
			nd->n--;
			return;
		}
	}
}

size_t netdevs_count(const struct netdevs *nd)
{
	return nd->n;
}

bool netdevs_get(const struct netdevs *nd, const char *name, bool *ret_up)
{
	const struct netdev_state *s = find(nd, name);

	if (s)
		*ret_up = s->up;
	return s != NULL;
}
