/* SPDX-License-Identifier: MIT */
/*
 * The metrics endpoint (GET /metrics) on libevent's evhttp, off unless
 * [metrics] listen is set: the Prometheus text format by default,
 * OpenMetrics for scrapers that ask for it.  Read-only: it reports the
 * device table, the server's, the scanner's and the kernel's state and
 * accepts nothing else.  The families are listed in metrics-families.c.
 */
#ifndef RDMAD_METRICS_H
#define RDMAD_METRICS_H

#include <stddef.h>

#include "metrics-expo.h"
#include "metrics-families.h"

struct event_base;
struct metrics;
enum devices_event;

/* Listen on @host (a name, an IPv4 or IPv6 address) and @port.  NULL
 * with errno set. */
struct metrics *metrics_new(struct event_base *base, const char *host,
			    unsigned int port,
			    const struct metrics_sources *sources);
void metrics_free(struct metrics *m);
/* Count one table event (called from main.c's listener glue). */
void metrics_note_event(struct metrics *m, enum devices_event event);
/* The server may come and go (it is created after metrics could be). */
void metrics_set_server(struct metrics *m, const struct server *srv);
/* Render the exposition in @format into @buf (for the endpoint and for
 * tests); returns the length, truncated at @size like snprintf. */
size_t metrics_render(const struct metrics *m, enum metrics_format format,
		      char *buf, size_t size);

#endif
