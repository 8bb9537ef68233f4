/* SPDX-License-Identifier: MIT */
/*
 * Whether each net device is up, as rtnetlink last said (netdevs.c).  The
 * device table consults it when a scan brings a port whose netdev it
 * knows: sysfs does not say whether a link is up.
 */
#ifndef RDMAD_NETDEVS_H
#define RDMAD_NETDEVS_H

#include <stdbool.h>
#include <stddef.h>

struct netdevs;

struct netdevs *netdevs_new(void);
void netdevs_free(struct netdevs *nd);
/* Remember @name as up or down: 0, -EINVAL (empty or longer than a
 * netdev name), -ENOMEM. */
int netdevs_set(struct netdevs *nd, const char *name, bool up);
/* @name is gone: forget it (nothing if unknown). */
void netdevs_forget(struct netdevs *nd, const char *name);
size_t netdevs_count(const struct netdevs *nd);
/* What is known of @name: true and *ret_up, or false when nothing is. */
bool netdevs_get(const struct netdevs *nd, const char *name, bool *ret_up);

#endif
