/* SPDX-License-Identifier: MIT */
/*
 * The verbs async event source (async.c).
 * Constructors return NULL with errno set on failure.
 */
#ifndef RDMAD_ASYNC_H
#define RDMAD_ASYNC_H

struct event_base;
struct devices;
struct device;
struct scan;
enum devices_event;

/* async.c: opens each present device through libibverbs and listens to
 * its async events (port, GID, DEVICE_FATAL); degrades quietly where a
 * device cannot be opened.  main.c forwards table events to it. */
struct async_source;
struct async_source *async_source_new(struct event_base *base,
				      struct devices *table, struct scan *scan);
void async_source_free(struct async_source *src);
void async_source_device_event(struct async_source *src,
			       enum devices_event event,
			       const struct device *dev);
/* Devices currently open with a verbs context. */
unsigned int async_source_open_count(const struct async_source *src);

#endif
