/* SPDX-License-Identifier: MIT */
/*
 * The connection and protocol state of a client (session.c): connecting
 * lazily with backoff, the Hello/Welcome handshake and the first snapshot,
 * requests and their replies, the names of the held devices and their
 * re-announcement on a new connection.  Below the public API (client.c,
 * holds.c), above the wire (conn.c, poller.c) and the device list
 * (sync.c).  Every function runs with the client's lock held.  Not
 * installed.
 */
#ifndef RDMAD_SESSION_H
#define RDMAD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conn.h"
#include "poller.h"
#include "sync.h"
#include "wire.h"

/* Reconnect backoff: first retry after 50 ms, doubling up to 2 s. */
#define SESSION_BACKOFF_MIN_MS 50
#define SESSION_BACKOFF_MAX_MS 2000
/* How long a request waits for its reply, the handshake for its snapshot. */
#define SESSION_REPLY_TIMEOUT_MS 2000

struct session {
	const char *path; /* the socket; owned by the caller */
	struct conn conn;
	struct poller poller;
	struct sync sync;
	bool connected;
	unsigned int backoff_ms;
	uint64_t next_attempt_ms;
	int last_error;

	/* The devices held: announced again on every new connection. */
	char **holds;
	size_t n_holds;
};

uint64_t session_now_ms(void);

/* @session must be zeroed; @path must outlive it. */
void session_init(struct session *session, const char *path);
void session_fini(struct session *session);
/* In a forked child: forget the parent's connection and holds, closing
 * only our copies of the fds. */
void session_reset_in_child(struct session *session);

/* Connect unless connected; without @force, not before the backoff says
 * so (then the last error, or -ENOTCONN). */
int session_ensure_connected(struct session *session, bool force);
/* Read and handle what is pending, waiting up to @timeout_ms for the first
 * frame; with @events_only, stop once the list is caught up with the
 * page.  -ECONNRESET (connection dropped) or 0. */
int session_drain(struct session *session, int timeout_ms, bool events_only);
/* Send a request and wait for its reply, handling everything else that
 * arrives meanwhile; returns the -errno of the reply's status. */
int session_request(struct session *session, Rdmad__Frame__BodyCase body,
		    const char *name);

/* Connected, and the list is as new as the page says the daemon is. */
bool session_current(const struct session *session);
/* Connect if due and apply what is pending, waiting up to @wait_ms for the
 * events the page already announced. */
int session_catch_up(struct session *session, int wait_ms);
/* The daemon's generation if connected, else the list's. */
uint64_t session_generation(const struct session *session);
/* Milliseconds until the next connection attempt; -1 when connected. */
int session_timeout_ms(const struct session *session);
/* The pollable fd, or -ENOTCONN. */
int session_poll_fd(const struct session *session);
/* Make the pollable fd readable if events are queued. */
void session_wake(struct session *session);

/* The held names: index or -1, 0 or -ENOMEM, and removal by index. */
ssize_t session_hold_find(const struct session *session, const char *name);
int session_hold_add(struct session *session, const char *name);
void session_hold_remove(struct session *session, size_t index);
void session_holds_clear(struct session *session);

#endif
