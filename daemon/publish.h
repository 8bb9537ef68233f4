/* SPDX-License-Identifier: MIT */
/*
 * The server's publishing room (server-int.h names the rooms): snapshots
 * and events to the views and their subscribers.  Its public half is in
 * server.h: server_device_event(), server_table_listener(),
 * server_count_views().
 */
#ifndef RDMAD_PUBLISH_H
#define RDMAD_PUBLISH_H

#include <stdint.h>

#include "devices.h"
#include "nstable.h"
#include "views.h"
#include "rdmad.pb-c.h"

struct client;
struct publish;
struct server;

/* The fan-out's state, one per server.  NULL on ENOMEM. */
struct publish *publish_new(void);
void publish_free(struct publish *p);

/* A snapshot for @c, answering @seq (0: unsolicited). */
int publish_snapshot(struct client *c, uint64_t seq);
/* The snapshot an overflowed subscriber is owed (server_hooks.resync). */
int publish_resync(struct client *c);
/* Welcome.view and Snapshot.view: what rdmad found (PROTOCOL.md 8b). */
void publish_fill_view(const struct client *c, Rdmad__View *msg);
/* One view's own event (entering or leaving it, flagged unusable): its
 * clients only. */
void publish_view_event(struct server *srv, struct view *v,
			const struct device *dev, enum view_change change);
/* Events of other network namespaces' tables (views_new()'s listener). */
void publish_ns_event(void *srv, struct nstable *t, enum devices_event event,
		      const struct device *dev, const char *old_name);

#endif
