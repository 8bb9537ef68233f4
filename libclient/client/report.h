/* SPDX-License-Identifier: MIT */
/*
 * Reports of devices this process may not open (report.c): the Unusable
 * requests of PROTOCOL.md 8b, sent without waiting for their replies and
 * sent again on each new connection, as the held names are.  Connection
 * state below the channel, beside sync.c: it calls only conn.c.  Not
 * installed.
 */
#ifndef RDMAD_REPORT_H
#define RDMAD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct conn;

/* Reports kept at most; a new one takes the place of the oldest. */
#define REPORT_MAX 64

/* One life refused with @error (EPERM or EACCES). */
struct report {
	char name[WIRE_MAX_NAME];
	uint64_t incarnation;
	int error;
	uint64_t seq; /* the request on this connection; 0: not sent yet */
};

/* All zeroes is none. */
struct reports {
	struct report *list; /* REPORT_MAX entries once the first comes */
	size_t n;
};

/* The one rule of what a refused open is (PROTOCOL.md 8b): EPERM (the
 * device cgroup) or EACCES (the node's permissions).  ENODEV, ENXIO, a
 * device without a driver and the rest say nothing of permission. */
bool reports_refusal(int error);

/* Note that @name's life @incarnation was refused with @error (a positive
 * errno).  0, -EALREADY when it is noted already, -EINVAL for a name the
 * daemon would refuse or an error that is no refusal. */
int reports_add(struct reports *r, const char *name, uint64_t incarnation,
		int error);
/* Send every report not sent on @conn yet, without waiting: 0, or the
 * error that stopped it (-EAGAIN: the socket is full; the rest waits). */
int reports_send(struct reports *r, struct conn *conn);
/* The connection went: every report is to be sent on the next one. */
void reports_unsend(struct reports *r);
/* Whether a report waits to be sent. */
bool reports_pending(const struct reports *r);
void reports_clear(struct reports *r);
/* Whether @frame is the reply to a report; then it is noted: a report
 * that the daemon did not take (no such life, a bad request) is
 * forgotten rather than sent again. */
bool reports_take_reply(struct reports *r, const Rdmad__Frame *frame);

#endif
