/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's connection to rdmad: connect, the Hello/Welcome handshake,
 * requests with a reply timeout, and reassembly of split snapshots.  It
 * speaks proto/wire directly and prints nothing; failures are -errno
 * with a human reason kept in the session (session_error()).
 */
#ifndef RDMACTL_SESSION_H
#define RDMACTL_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct session;

/* A whole snapshot, reassembled from its parts by proto's assembler. */
struct session_snapshot {
	uint64_t generation;
	size_t n_devices;
	Rdmad__Device **devices; /* point into the parts */
	/* What this client sees (PROTOCOL.md 8b), from the first part;
	 * NULL from a daemon before views. */
	const Rdmad__View *view;
	/* Descriptors clients passed that rdmad has not closed yet, where
	 * it is behind (admins only; none from an older daemon). */
	Rdmad__Closing *const *closing;
	size_t n_closing;
	struct wire_assembly parts;
};

/*
 * Connect to @path and say Hello.  -ENOENT/-ECONNREFUSED/... when the
 * daemon cannot be reached, -ETIMEDOUT when it does not answer within
 * @timeout_ms, -EPROTONOSUPPORT for another protocol version.  On error
 * *ret_session is still set when a reason is available; free it.
 */
int session_open(const char *path, int timeout_ms,
		 struct session **ret_session);
void session_free(struct session *s);
const char *session_error(const struct session *s);
/* Whether connect() succeeded, to tell "cannot reach" from "refused". */
bool session_connected(const struct session *s);
int session_fd(const struct session *s);

/* Send a request with the next seq; *ret_seq gets it. */
int session_send(struct session *s, Rdmad__Frame *frame, uint64_t *ret_seq);
/* Next frame; waits up to @timeout_ms (-1: forever).  -ETIMEDOUT,
 * -ECONNRESET when the daemon closed the connection. */
int session_recv(struct session *s, int timeout_ms, Rdmad__Frame **ret_frame);
/* Send a body-less request such as Rescan and wait for its status:
 * 0, or the status mapped to -errno (reason in session_error()). */
int session_simple_request(struct session *s, Rdmad__Frame *frame);

/*
 * Collect a snapshot: the parts of the reply to @seq (0 for an
 * unsolicited one), starting with @first if it is part 0 of it (pass NULL
 * to wait for part 0).  Frames of other seqs are dropped.
 */
int session_collect(struct session *s, uint64_t seq, Rdmad__Frame *first,
		    struct session_snapshot *ret_snap);
/* GetStatus or Subscribe, then collect the snapshot. */
int session_get_snapshot(struct session *s, Rdmad__Frame__BodyCase body,
			 struct session_snapshot *ret_snap);
void session_snapshot_clear(struct session_snapshot *snap);

#endif
