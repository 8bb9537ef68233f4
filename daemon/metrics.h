/* SPDX-License-Identifier: MIT */
/*
 * OpenMetrics endpoint (GET /metrics) on libevent's evhttp, off unless
 * [metrics] listen is set.  Read-only: it reports the device table and the
 * server's counters and accepts nothing else.
 */
#ifndef RDMAD_METRICS_H
#define RDMAD_METRICS_H

struct event_base;
struct devices;
struct server;
struct metrics;
enum devices_event;

/* @listen is "host:port" or "[v6]:port".  NULL with errno set. */
struct metrics *metrics_new(struct event_base *base, const char *listen,
			    const struct devices *table,
			    const struct server *srv);
void metrics_free(struct metrics *m);
/* Count one table event (called from main.c's listener glue). */
void metrics_note_event(struct metrics *m, enum devices_event event);
/* The server may come and go (it is created after metrics could be). */
void metrics_set_server(struct metrics *m, const struct server *srv);
/* Render the exposition into @buf (for the endpoint and for tests);
 * returns the length, truncated at @size like snprintf. */
size_t metrics_render(const struct metrics *m, char *buf, size_t size);

#endif
