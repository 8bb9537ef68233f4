/* SPDX-License-Identifier: MIT */
/*
 * Every metric family rdmad exposes, and where its samples come from
 * (metrics-families.c); metrics.c serves them.  rdmad(8) METRICS lists
 * the same families: add to both, rename none.
 */
#ifndef RDMAD_METRICS_FAMILIES_H
#define RDMAD_METRICS_FAMILIES_H

#include <stdint.h>
#include <time.h>

#include "devices.h"
#include "metrics-expo.h"

struct server;
struct scan;
struct netlink_source;

#define METRICS_N_EVENTS DEVICES_EVENT_COUNT

/* What the metrics report on; any but @table may be NULL. */
struct metrics_sources {
	const struct devices *table;
	const struct server *srv;
	const struct scan *scan;
	const struct netlink_source *netlink;
	struct timespec start_time; /* CLOCK_REALTIME when rdmad started */
};

struct metrics_state {
	struct metrics_sources src;
	uint64_t events[METRICS_N_EVENTS]; /* table events, by type */
};

/* Write every family of @st into @e (without the end). */
void metrics_families_render(const struct metrics_state *st, struct expo *e);

#endif
