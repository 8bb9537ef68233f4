/* SPDX-License-Identifier: MIT */
/*
 * The connection and protocol state of a client (channel.c): connecting
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
 * connection is built without it, in a channel of its own that only its
 * thread sees, and swapped in under it; a request waiting for its reply
 * and a snapshot waiting for announced events poll the socket without it.
 * Frames are read and applied under it, a bounded number at a time.  Not
 * installed.
 */
#ifndef RDMAD_CHANNEL_H
#define RDMAD_CHANNEL_H

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
#define CHANNEL_BACKOFF_MIN_MS 50
#define CHANNEL_BACKOFF_MAX_MS 2000
/* How long each step of a connect (the Welcome, each hold, the whole first
 * snapshot) and each request wait for the daemon; checked after every
 * frame, so a peer that never stops sending cannot stretch it. */
#define CHANNEL_REPLY_TIMEOUT_MS 2000
/* The longest pause between tries of a connect that a full listen backlog
 * refused (EAGAIN), within CHANNEL_REPLY_TIMEOUT_MS (channel.c). */
#define CHANNEL_CONNECT_PAUSE_MAX_MS 50
/* Frames one call reads at most while the lock is held. */
#define CHANNEL_DRAIN_BUDGET 256

/* A device held: by rdmad_client_hold(), and by each context that
 * rdmad_client_open_device() opened; the daemon's hold lasts while any
 * of them does. */
struct channel_hold {
	char *name;
	unsigned int opens;
	bool explicit;
};

enum channel_connect {
	CHANNEL_CONNECT_NOW,	     /* connect(): now, after any in progress */
	CHANNEL_CONNECT_DUE,	     /* if the backoff allows; may wait */
	CHANNEL_CONNECT_DUE_NO_WAIT, /* the same, but never waits */
};

struct channel {
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

	struct channel_hold *holds;
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

uint64_t channel_now_ms(void);

/* @channel must be zeroed; @path and @lock must outlive it. */
int channel_init(struct channel *channel, const char *path,
		 pthread_mutex_t *lock);
void channel_fini(struct channel *channel);
/* fork(): around it, the cache lock is taken and let go; in the child,
 * forget the parent's connection, the one being built and the holds,
 * closing only our copies of the fds. */
void channel_fork_prepare(struct channel *channel);
void channel_fork_parent(struct channel *channel);
void channel_reset_in_child(struct channel *channel);

/* Connect unless connected (see enum channel_connect); the lock is let
 * go while connecting.  0, the error, or -ENOTCONN while not due. */
int channel_ensure_connected(struct channel *channel, enum channel_connect how);
/* Read and handle what is pending without waiting, at most
 * CHANNEL_DRAIN_BUDGET frames; with @events_only, stop once the list is
 * caught up with the page.  -ECONNRESET (connection dropped) or 0. */
int channel_drain(struct channel *channel, bool events_only);

/* Hold @name (@explicit: for rdmad_client_hold(), else for an opened
 * context), asking the daemon on the first use; -EALREADY for a second
 * explicit hold. */
int channel_hold(struct channel *channel, const char *name, bool explicit);
/* Let go of one use; the last one releases the daemon's hold. -ENOENT
 * when @name has no such use. */
int channel_unhold(struct channel *channel, const char *name, bool explicit);
void channel_holds_clear(struct channel *channel);

/* Tell the daemon that @name's life @incarnation refused to open with
 * @error (EPERM or EACCES), once per life: sent now if connected to a
 * daemon that speaks views, without waiting for the reply, and again on
 * each new connection.  Never connects, never waits.  0, -EINVAL, or
 * -ENOMEM; a failed send is retried later. */
int channel_report_unusable(struct channel *channel, const char *name,
			    uint64_t incarnation, int error);

/* Connected, and the list is as new as the page says the daemon is. */
bool channel_current(const struct channel *channel);
/* Connect if due and apply what is pending, waiting up to @wait_ms for the
 * events the page already announced. */
int channel_catch_up(struct channel *channel, int wait_ms);
/* Make the pollable fd readable if events are queued. */
void channel_wake(struct channel *channel);
/* Offer the list's snapshot to channel_cached() (a reference is taken). */
void channel_publish(struct channel *channel, struct rdmad_snapshot *snap);

/* Lock-free: the newest generation known (the page, else what frames
 * said); the pollable fd or -ENOTCONN; milliseconds until the next
 * connection attempt, -1 when connected; a new reference to the cached
 * snapshot while it is as new as the page, else NULL. */
uint64_t channel_generation(const struct channel *channel);
int channel_poll_fd(const struct channel *channel);
int channel_timeout_ms(const struct channel *channel);
struct rdmad_snapshot *channel_cached(struct channel *channel);

#endif
