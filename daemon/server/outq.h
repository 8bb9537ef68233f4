/* SPDX-License-Identifier: MIT */
/*
 * Per-client output queues of the server (client.c) and the encoded
 * frames they hold.  A frame is encoded once into a refcounted outbuf
 * that any number of queues share, so a broadcast costs one encoding
 * whatever the number of subscribers.  A queue is a ring that starts
 * empty, grows by doubling and never allocates while it has room.
 */
#ifndef RDMAD_OUTQ_H
#define RDMAD_OUTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* One encoded frame, shared by every queue it sits in. */
struct outbuf {
	unsigned int refs;
	bool event;  /* droppable on overflow (replies never are) */
	int pass_fd; /* sent with SCM_RIGHTS, or -1 */
	size_t len;
	uint8_t *data;
	/* The same reply saying it carries no descriptor, sent instead
	 * where the kernel will not carry pass_fd (client.c); or NULL. */
	struct outbuf *bare;
};

/* Encode @frame into a new outbuf with one reference; NULL on failure. */
struct outbuf *outbuf_encode(const Rdmad__Frame *frame, bool event,
			     int pass_fd);
void outbuf_unref(struct outbuf *ob);

struct outq {
	struct outbuf **ring;
	unsigned int head, count, cap;
};

/* Append @ob, taking a reference; 0 or -ENOMEM. */
int outq_append(struct outq *q, struct outbuf *ob);
/* The oldest frame, NULL when empty. */
struct outbuf *outq_peek(const struct outq *q);
/* Drop the oldest frame. */
void outq_pop(struct outq *q);
/* Drop every event, keeping the other frames in order; returns how many
 * were dropped. */
unsigned int outq_drop_events(struct outq *q);
/* Drop everything and free the ring. */
void outq_clear(struct outq *q);

#endif
