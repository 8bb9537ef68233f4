/* SPDX-License-Identifier: MIT */
/*
 * The server's request table (server-int.h names its files): one row per
 * request type, with its access class and its handler.
 */
#ifndef RDMAD_REQUESTS_H
#define RDMAD_REQUESTS_H

#include <sys/types.h>

#include "wire.h"

struct client;

/* One datagram of @n bytes in the server's rxbuf (or -errno from the
 * receive) and the descriptors that came with it (server_hooks.handle):
 * 0, or -errno when the connection must go. */
int requests_handle(struct client *c, ssize_t n, const struct wire_fds *fds);

#endif
