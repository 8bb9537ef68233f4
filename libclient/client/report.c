/* SPDX-License-Identifier: MIT */
/*
 * Reports of refused devices (PROTOCOL.md 8b): when ibv_open_device()
 * gets EPERM or EACCES, the daemon is told with an Unusable request, so
 * it can flag that life unusable in this client's view.  A report is a
 * request with a seq like any other, but nobody waits for its reply: it
 * is sent with the socket's MSG_DONTWAIT and the reply, whoever reads
 * it, only settles the bookkeeping.  The reports are connection state:
 * like the held names, they are sent again on each new connection (a
 * restarted daemon forgot them).  At most REPORT_MAX are kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "report.h"

bool reports_refusal(int error)
{
	return error == EPERM || error == EACCES;
}

static ssize_t find_report(const struct reports *r, const char *name,
			   uint64_t incarnation)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->list[i].incarnation == incarnation &&
		    strcmp(r->list[i].name, name) == 0)
			return (ssize_t)i;
	return -1;
}

static void remove_report(struct reports *r, size_t index)
{
	r->n--;
	memmove(&r->list[index], &r->list[index + 1],
		(r->n - index) * sizeof(r->list[0]));
}

int reports_add(struct reports *r, const char *name, uint64_t incarnation,
		int error)
{
	if (!rdmad_name_valid_str(name) || !reports_refusal(error))
		return -EINVAL;
	if (find_report(r, name, incarnation) >= 0)
		return -EALREADY;
	if (!r->list) {
		r->list = calloc(REPORT_MAX, sizeof(r->list[0]));
		if (!r->list)
			return -ENOMEM;
	}
	/* The oldest goes first: its life most likely ended. */
	if (r->n == REPORT_MAX)
		remove_report(r, 0);
	r->list[r->n] = (struct report){
		.incarnation = incarnation,
		.error = error,
	};
	strcpy(r->list[r->n].name, name);
	r->n++;
	return 0;
}

static int send_one(struct report *report, struct conn *conn)
{
	Rdmad__Unusable unusable = RDMAD__UNUSABLE__INIT;
	Rdmad__Frame frame;

	wire_frame_init(&frame, 0);
	unusable.name = report->name;
	unusable.incarnation = report->incarnation;
	unusable.error = report->error;
	frame.body_case = RDMAD__FRAME__BODY_UNUSABLE;
	frame.unusable = &unusable;
	return conn_send(conn, &frame, &report->seq);
}

int reports_send(struct reports *r, struct conn *conn)
{
	size_t i;
	int err;

	for (i = 0; i < r->n; i++) {
		if (r->list[i].seq)
			continue;
		err = send_one(&r->list[i], conn);
		if (err < 0)
			return err;
	}
	return 0;
}

void reports_unsend(struct reports *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		r->list[i].seq = 0;
}

bool reports_pending(const struct reports *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!r->list[i].seq)
			return true;
	return false;
}

void reports_clear(struct reports *r)
{
	free(r->list);
	r->list = NULL;
	r->n = 0;
}

bool reports_take_reply(struct reports *r, const Rdmad__Frame *frame)
{
	size_t i;

	if (frame->seq == 0 || frame->body_case != RDMAD__FRAME__BODY__NOT_SET)
		return false;
	for (i = 0; i < r->n; i++) {
		if (r->list[i].seq != frame->seq)
			continue;
		/* OK: flagged, to be told again to a restarted daemon.
		 * Anything else: that life is not the daemon's to flag. */
		if (frame->status != RDMAD__STATUS__STATUS_OK)
			remove_report(r, i);
		return true;
	}
	return false;
}
