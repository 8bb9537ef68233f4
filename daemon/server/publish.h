/* SPDX-License-Identifier: MIT */
/*
 * The server's publishing (server-int.h names its files): snapshots
 * and events to the views and their subscribers.  Its public half, for
 * main.c and the metrics: publish_table_listener() with its relay,
 * publish_device_event() and publish_count_views().
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

/* A table event: push it to every subscriber. */
void publish_device_event(struct server *srv, enum devices_event event,
			  const struct device *dev, const char *old_name);

/*
 * The device table's listener: devices_set_listener(table,
 * publish_table_listener, relay).  Each change is logged, its generation
 * goes to @note_generation before anything is published, it goes to the
 * clients once a server listens, and then to @then, in that order.
 * @then is main.c's: the verbs source, the metrics and its timers
 * (main.c includes this header: publishing calls it by no name).
 */
struct publish_relay {
	struct devices *table;
	struct server *server; /* NULL until it listens */
	void (*note_generation)(void *userdata, uint64_t generation);
	void (*then)(void *userdata, enum devices_event event,
		     const struct device *dev);
	void *userdata;
};
void publish_table_listener(void *relay, enum devices_event event,
			    const struct device *dev, const char *old_name);

/* Views (views.h) by kind: @counts has VIEW_KIND_COUNT entries. */
void publish_count_views(const struct server *srv, unsigned int *counts);

#endif
