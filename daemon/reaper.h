/* SPDX-License-Identifier: MIT */
/*
 * Where rdmad lets go of what clients hand it.
 *
 * A descriptor that a client passes (SCM_RIGHTS) is a file the client
 * chose, and closing it can block for as long as the client likes: a TCP
 * socket with SO_LINGER whose peer never reads waits in its last close, a
 * FUSE file waits for a FLUSH its server never answers (in state D, deaf
 * even to SIGKILL), a socket carries more such files in its queue.  The
 * kernel drops such a file's last reference in whichever task lets go of
 * it: rdmad's loop must never be that task.
 *
 * So every descriptor a client passed and rdmad does not keep goes to the
 * reaper: a helper process that shares rdmad's descriptor table
 * (clone(CLONE_FILES) without CLONE_THREAD) and does nothing but close
 * what it is given, in order.  A close that hangs holds the reaper, never
 * the loop; and as the reaper is a process of its own, rdmad itself still
 * exits on SIGTERM and dies on SIGKILL while its reaper sleeps in the
 * kernel (exit only drops rdmad's share of the table).  The reaper dies
 * with rdmad (PR_SET_PDEATHSIG) once its close returns.
 *
 * What waits for the reaper is counted per uid of the client that passed
 * it: server.c admits no new connection of a uid that has
 * REAPER_MAX_PENDING descriptors waiting, so a client that makes closes
 * hang holds at most that many of rdmad's descriptors, and nobody else's.
 *
 * A connection socket itself is closed on the loop by
 * reaper_close_connection(): shut for reading first, so that nothing more
 * can be queued on it, then drained, each descriptor still queued going
 * to the reaper; its close then drops no file of the client's.
 */
#ifndef RDMAD_REAPER_H
#define RDMAD_REAPER_H

#include <stdbool.h>
#include <sys/types.h>

#include <event2/event.h>

/* Descriptors of one uid that may wait for the reaper before its new
 * connections are refused: one Hello's worth (wire.h). */
#define REAPER_MAX_PENDING 253

struct reaper;

/* Start the reaper process.  NULL and errno on failure. */
struct reaper *reaper_new(struct event_base *base);
/* Stop it (SIGKILL; never waits for a reaper stuck in a close). */
void reaper_free(struct reaper *r);

/* Hand over @fd, passed by a client of @uid: closed by the reaper, never
 * by the caller.  Never blocks. */
void reaper_put(struct reaper *r, int fd, uid_t uid);
/* Descriptors of @uid handed over and not closed yet. */
unsigned int reaper_pending(const struct reaper *r, uid_t uid);
/* Close the connection @fd of a client of @uid without dropping any file
 * still queued on it on this thread (see the top). */
void reaper_close_connection(struct reaper *r, int fd, uid_t uid);

#endif
