/* SPDX-License-Identifier: MIT */
/*
 * The connection and protocol state of a client (session.c): connecting
 * lazily with backoff, the Hello/Welcome handshake and the first snapshot,
 * requests and their replies, the devices held and their re-announcement
 * on a new connection, the reports of refused devices (report.c), and
 * what other threads read without a lock (the
 * generation, the pollable fd, the reconnect timeout, the cached
 * snapshot).  Below the public API (client.c, holds.c), above the wire
 * (conn.c, poller.c, genview.c) and the device list (sync.c).
 *
 * Locking: every function runs with the client's lock held, except those
 * marked lock-free.  The lock is never held while waiting: a new
 * connection is built without it, in a session of its own that only its
 * thread sees, and swapped in under it; a request waiting for its reply
 * and a snapshot waiting for announced events poll the socket without it.
 * Frames are read and applied under it, a bounded number at a time.  Not
 * installed.
 */
#ifndef RDMAD_SESSION_H
#define RDMAD_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conn.h"
#include "genview.h"
#include "poller.h"
#include "report.h"
#include "sync.h"
#include "wire.h"

/* Reconnect backoff: first retry after 50 ms, doubling up to 2 s. */
#define SESSION_BACKOFF_MIN_MS 50
#define SESSION_BACKOFF_MAX_MS 2000
/* How long each step of a connect (the Welcome, each hold, the whole first
 * snapshot) and each request wait for the daemon; checked after every
 * frame, so a peer that never stops sending cannot stretch it. */
#define SESSION_REPLY_TIMEOUT_MS 2000
/* The longest pause between tries of a connect that a full listen backlog
 * refused (EAGAIN), within SESSION_REPLY_TIMEOUT_MS (session.c). */
#define SESSION_CONNECT_PAUSE_MAX_MS 50
/* Frames one call reads at most while the lock is held. */
#define SESSION_DRAIN_BUDGET 256

/* A device held: by rdmad_client_hold(), and by each context that
 * rdmad_client_open_device() opened; the daemon's hold lasts while any
 * of them does. */
struct session_hold {
	char *name;
	unsigned int opens;
	bool explicit;
};

enum session_connect {
	SESSION_CONNECT_NOW,	     /* connect(): now, after any in progress */
	SESSION_CONNECT_DUE,	     /* if the backoff allows; may wait */
	SESSION_CONNECT_DUE_NO_WAIT, /* the same, but never waits */
};

struct session {
	const char *path;      /* the socket; owned by the caller */
	pthread_mutex_t *lock; /* the client's; NULL: no other thread */
	pthread_cond_t cond;   /* a connect or request finished */
	struct conn conn;
	struct poller poller;
	struct sync sync;
	struct genview view;
	bool connected;
	bool connecting; /* a thread builds a connection */
	bool requesting; /* a thread sends a request and waits */
	int pending_fd;	 /* the socket being connected, for fork */
	uint64_t epoch;	 /* bumped whenever a connection goes */
	unsigned int backoff_ms;
	int last_error;

	/* The reply awaited, put aside by whichever thread read it. */
	uint64_t await_seq;
	Rdmad__Frame *reply;
	int reply_fd;

	struct session_hold *holds;
	size_t n_holds;

	/* The daemon speaks views (its Welcome had one, PROTOCOL.md 8b):
	 * only such a daemon is sent reports. */
	bool views;
	struct reports reports;

	/* Read by other threads without the lock. */
	atomic_bool up;
	atomic_int poll_fd;
	_Atomic uint64_t next_attempt_ms;
	pthread_mutex_t cache_lock; /* guards @cached only, never waits */
	struct rdmad_snapshot *cached;
};

uint64_t session_now_ms(void);

/* @session must be zeroed; @path and @lock must outlive it. */
int session_init(struct session *session, const char *path,
		 pthread_mutex_t *lock);
void session_fini(struct session *session);
/* fork(): around it, the cache lock is taken and let go; in the child,
 * forget the parent's connection, the one being built and the holds,
 * closing only our copies of the fds. */
void session_fork_prepare(struct session *session);
void session_fork_parent(struct session *session);
void session_reset_in_child(struct session *session);

/* Connect unless connected (see enum session_connect); the lock is let
 * go while connecting.  0, the error, or -ENOTCONN while not due. */
int session_ensure_connected(struct session *session, enum session_connect how);
/* Read and handle what is pending without waiting, at most
 * SESSION_DRAIN_BUDGET frames; with @events_only, stop once the list is
 * caught up with the page.  -ECONNRESET (connection dropped) or 0. */
int session_drain(struct session *session, bool events_only);

/* Hold @name (@explicit: for rdmad_client_hold(), else for an opened
 * context), asking the daemon on the first use; -EALREADY for a second
 * explicit hold. */
int session_hold(struct session *session, const char *name, bool explicit);
/* Let go of one use; the last one releases the daemon's hold. -ENOENT
 * when @name has no such use. */
int session_unhold(struct session *session, const char *name, bool explicit);
void session_holds_clear(struct session *session);

/* Tell the daemon that @name's life @incarnation refused to open with
 * @error (EPERM or EACCES), once per life: sent now if connected to a
 * daemon that speaks views, without waiting for the reply, and again on
 * each new connection.  Never connects, never waits.  0, -EINVAL, or
 * -ENOMEM; a failed send is retried later. */
int session_report_unusable(struct session *session, const char *name,
			    uint64_t incarnation, int error);

/* Connected, and the list is as new as the page says the daemon is. */
bool session_current(const struct session *session);
/* Connect if due and apply what is pending, waiting up to @wait_ms for the
 * events the page already announced. */
int session_catch_up(struct session *session, int wait_ms);
/* Make the pollable fd readable if events are queued. */
void session_wake(struct session *session);
/* Offer the list's snapshot to session_cached() (a reference is taken). */
void session_publish(struct session *session, struct rdmad_snapshot *snap);

/* Lock-free: the newest generation known (the page, else what frames
 * said); the pollable fd or -ENOTCONN; milliseconds until the next
 * connection attempt, -1 when connected; a new reference to the cached
 * snapshot while it is as new as the page, else NULL. */
uint64_t session_generation(const struct session *session);
int session_poll_fd(const struct session *session);
int session_timeout_ms(const struct session *session);
struct rdmad_snapshot *session_cached(struct session *session);

#endif
