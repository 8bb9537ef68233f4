/* SPDX-License-Identifier: MIT */
/*
 * Unit test of daemon/server/outq.c: a table of append/pop/drop sequences, each
 * checked for the frames left in the queue, their order, and every
 * frame's reference count (ours plus one a queue slot) before and after
 * the queue is cleared.  Growth past the first ring size and wrap-around
 * are among the rows.
 */
#include <string.h>

#include "check.h"
#include "outq.h"

#define MAX_BUFS 64

static struct outbuf *bufs[MAX_BUFS];
static unsigned int nbufs;

/* A new frame whose seq is its 1-based number in this row. */
static struct outbuf *new_buf(bool event)
{
	Rdmad__Frame frame;
	struct outbuf *ob;

	wire_frame_init(&frame, nbufs + 1);
	ob = outbuf_encode(&frame, event, -1);
	if (ob)
		bufs[nbufs++] = ob;
	return ob;
}

/* Ops: 'e' append an event, 'r' append a reply, 'p' pop, 'd' drop the
 * events.  Returns the number of events 'd' dropped in all. */
static unsigned int run_ops(struct outq *q, const char *ops)
{
	unsigned int dropped = 0;
	struct outbuf *ob;

	for (; *ops; ops++) {
		switch (*ops) {
		case 'e':
		case 'r':
			ob = new_buf(*ops == 'e');
			CHECK(ob && outq_append(q, ob) == 0, "append");
			break;
		case 'p':
			outq_pop(q);
			break;
		case 'd':
			dropped += outq_drop_events(q);
			break;
		}
	}
	return dropped;
}

static unsigned int queued_times(const struct outq *q, const struct outbuf *ob)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < q->count; i++)
		n += q->ring[(q->head + i) % q->cap] == ob;
	return n;
}

static void check_row(const char *ops, const unsigned int *want,
		      unsigned int nwant, unsigned int want_dropped)
{
	struct outq q = {0};
	unsigned int dropped, i;

	nbufs = 0;
	dropped = run_ops(&q, ops);
	CHECK(q.count == nwant, "%s: %u queued, want %u", ops, q.count, nwant);
	CHECK(dropped == want_dropped, "%s: %u dropped", ops, dropped);
	for (i = 0; i < nwant && i < q.count; i++) {
		struct outbuf *ob = outq_peek(&q);

		CHECK(ob == bufs[want[i] - 1], "%s: #%u is not frame %u", ops,
		      i, want[i]);
		ob->refs++; /* keep it for the refcount checks */
		outq_pop(&q);
		CHECK(queued_times(&q, ob) == 0, "%s: frame queued twice", ops);
		outbuf_unref(ob);
	}
	for (i = 0; i < nbufs; i++)
		CHECK(bufs[i]->refs == 1 + queued_times(&q, bufs[i]),
		      "%s: frame %u has %u refs", ops, i + 1, bufs[i]->refs);
	outq_clear(&q);
	CHECK(q.count == 0 && q.ring == NULL && outq_peek(&q) == NULL,
	      "%s: not empty after clear", ops);
	for (i = 0; i < nbufs; i++) {
		CHECK(bufs[i]->refs == 1, "%s: frame %u leaks a ref", ops,
		      i + 1);
		outbuf_unref(bufs[i]);
	}
}

int main(void)
{
	static const struct {
		const char *ops;
		unsigned int want[16];
		unsigned int nwant, dropped;
	} rows[] = {
		{"", {0}, 0, 0},
		{"e", {1}, 1, 0},
		{"erp", {2}, 1, 0},
		{"eeeee", {1, 2, 3, 4, 5}, 5, 0}, /* grows past 4 */
		{"erered", {2, 4}, 2, 3},
		{"reeerd", {1, 5}, 2, 3},
		{"eeppeeee", {3, 4, 5, 6}, 4, 0}, /* wraps around */
		{"eeppeerrd", {5, 6}, 2, 2},	  /* drop across the wrap */
		{"eeppeeeeeree", {3, 4, 5, 6, 7, 8, 9, 10}, 8, 0},
		{"ddd", {0}, 0, 0},
		{"eeed", {0}, 0, 3},
		{"rrrrrrrrrd", {1, 2, 3, 4, 5, 6, 7, 8, 9}, 9, 0},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		check_row(rows[i].ops, rows[i].want, rows[i].nwant,
			  rows[i].dropped);
	if (failures)
		fprintf(stderr, "%u failures\n", failures);
	return failures ? 1 : 0;
}
