/* SPDX-License-Identifier: MIT */
/*
 * Per-client output queues and the shared, refcounted encoded frames in
 * them (outq.h).  Everything here runs on the daemon's single event loop
 * thread, so reference counts are plain integers.
 */
#include <errno.h>
#include <stdlib.h>

#include "outq.h"

struct outbuf *outbuf_encode(const Rdmad__Frame *frame, bool event, int pass_fd)
{
	struct outbuf *ob = malloc(sizeof(*ob));

	if (!ob)
		return NULL;
	if (wire_encode(frame, WIRE_MAX_FRAME, &ob->data, &ob->len) < 0) {
		free(ob);
		return NULL;
	}
	ob->refs = 1;
	ob->event = event;
	ob->pass_fd = pass_fd;
	ob->bare = NULL;
	return ob;
}

void outbuf_unref(struct outbuf *ob)
{
	if (--ob->refs)
		return;
	if (ob->bare)
		outbuf_unref(ob->bare);
	free(ob->data);
	free(ob);
}

static struct outbuf **slot(const struct outq *q, unsigned int i)
{
	return &q->ring[(q->head + i) % q->cap];
}

static int grow(struct outq *q)
{
	unsigned int cap = q->cap ? q->cap * 2 : 4;
	struct outbuf **ring = malloc(cap * sizeof(*ring));

	if (!ring)
		return -ENOMEM;
	for (unsigned int i = 0; i < q->count; i++)
		ring[i] = *slot(q, i);
	free(q->ring);
	q->ring = ring;
	q->cap = cap;
	q->head = 0;
	return 0;
}

int outq_append(struct outq *q, struct outbuf *ob)
{
	if (q->count == q->cap && grow(q) < 0)
		return -ENOMEM;
	ob->refs++;
	*slot(q, q->count++) = ob;
	return 0;
}

struct outbuf *outq_peek(const struct outq *q)
{
	return q->count ? q->ring[q->head] : NULL;
}

void outq_pop(struct outq *q)
{
	outbuf_unref(q->ring[q->head]);
	q->head = (q->head + 1) % q->cap;
	q->count--;
}

unsigned int outq_drop_events(struct outq *q)
{
	unsigned int kept = 0, dropped = 0;

	for (unsigned int i = 0; i < q->count; i++) {
		struct outbuf *ob = *slot(q, i);

		if (ob->event) {
			outbuf_unref(ob);
			dropped++;
		} else {
			*slot(q, kept++) = ob;
		}
	}
	q->count = kept;
	return dropped;
}

void outq_clear(struct outq *q)
{
	while (q->count)
		outq_pop(q);
	free(q->ring);
	q->ring = NULL;
	q->cap = 0;
	q->head = 0;
}
