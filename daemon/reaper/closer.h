/* SPDX-License-Identifier: MIT */
/*
 * The closer: a process with a descriptor table of its own that lets go
 * of the sockets clients leave with rdmad: a socket passed with Hello, or
 * a connection rdmad drops, whatever is still queued on it included.
 *
 * Why a table of its own: a helper that shares rdmad's table keeps it
 * alive, and every client connection in it open, for as long as one of
 * its closes hangs, even after rdmad was killed.  This one holds only
 * what it was sent.
 *
 * How a socket gets there without rdmad ever dropping the last
 * reference: rdmad sends it over a SOCK_SEQPACKET pair (SCM_RIGHTS), so
 * the kernel holds the file in the closer's queue, and only then closes
 * its own descriptor, which drops no file (a socket has no ->flush, and
 * its release waits for the last reference).  The closer lets go of a
 * batch only after the datagram that follows it, which rdmad sends once
 * its copies are closed (a batch, or a marker of none): its release of
 * the file is then the last.
 *
 * What can make a release wait is a TCP socket lingering on unsent data
 * (tcp_close() waits in sk_stream_wait_close() until a signal is
 * pending) or such a socket queued on a unix socket: the closer keeps an
 * interval timer (SIGALRM, CLOSER_TICK_MS) running while it lets go, so
 * no such wait lasts longer than a tick.
 *
 * rdmad's side never blocks: a batch the socket cannot take waits in
 * rdmad's table (closer_held()) until it can; the server counts those
 * against its descriptor ceiling (server-int.h).  A closer that dies (killed
 * by hand) is started again; the batches it had not let go of are
 * released by its exit.  The new one is forked from rdmad as it is then
 * and closes its copy of rdmad's table first: should a file a client
 * passed wait there for the remover (a FUSE file whose FLUSH nobody
 * answers), the new closer waits in that FLUSH too before it starts.
 */
#ifndef RDMAD_CLOSER_H
#define RDMAD_CLOSER_H

#include <stdbool.h>
#include <sys/types.h>

#include <event2/event.h>

#define CLOSER_TICK_MS 50

struct closer;

/* What becomes of what was handed over, @n descriptors of @uid at a
 * time: out of rdmad's table into the closer's queue (sent), then let go
 * of by the closer, or lost with a dead one (done). */
struct closer_ops {
	void (*sent)(uid_t uid, unsigned int n, void *arg);
	void (*done)(uid_t uid, unsigned int n, void *arg);
};

/* Start the closer process.  NULL and errno on failure. */
struct closer *closer_new(struct event_base *base, const struct closer_ops *ops,
			  void *arg);
/* Stop it (SIGKILL).  Descriptors still held here are closed. */
void closer_free(struct closer *cl);

/* Hand over the socket @fd of a client of @uid; rdmad's descriptor is
 * closed once the closer's queue holds the file, when the loop turns
 * next (what a burst hands over goes in one batch).  Never blocks. */
void closer_put(struct closer *cl, int fd, uid_t uid);
/* Descriptors handed over that still wait in rdmad's table. */
unsigned int closer_held(const struct closer *cl);
/* The closer's pid (for logs and tests), or -1. */
pid_t closer_pid(const struct closer *cl);

/* In a helper process (after fork or clone, async-signal-safe): every
 * signal back to its default, SIGALRM to a handler that ends interruptible
 * waits, nothing blocked.  closer_tick(true) then starts the tick of
 * CLOSER_TICK_MS, closer_tick(false) stops it. */
void closer_tick_init(void);
void closer_tick(bool on);

#endif
