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
 * So rdmad never drops the last reference to a client's file itself:
 * - a socket (what a client may pass with Hello, and every connection
 *   rdmad closes, with whatever is queued on it) goes to the closer
 *   (closer.h), a process with a descriptor table of its own;
 * - any other file goes to the remover, a helper process that shares
 *   rdmad's descriptor table (clone(CLONE_FILES) without CLONE_THREAD):
 *   a file system's ->flush runs on every close(2), the last or not
 *   (filp_close() in fs/open.c; FUSE sends FLUSH and waits for the
 *   answer, in state D), so only a process that shares rdmad's table can
 *   take such a file out of it without rdmad waiting.  Only misbehaving
 *   clients pass any.
 * A close that hangs holds a helper, never the loop; rdmad itself still
 * exits on SIGTERM and dies on SIGKILL.  Both helpers die with rdmad
 * (PR_SET_PDEATHSIG), once a close they are in returns.
 *
 * What waits is counted per uid of the client that passed it: the server
 * (client.c, server.c) reads no datagram of a uid that has REAPER_MAX_PENDING
 * descriptors waiting and admits no new connection of it, so a client that
 * makes closes hang holds at most that many (and one datagram's worth) of
 * rdmad's descriptors, and nobody else's; reaper_held() says how many
 * are in rdmad's table, for the server's ceiling.
 */
#ifndef RDMAD_REAPER_H
#define RDMAD_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>

/* Descriptors of one uid that may wait in rdmad's table for a helper
 * before that uid is read from no more (reaper_held_by()), and that may
 * wait anywhere (reaper_waiting(), the closer's queue too) before its new
 * connections are refused: one Hello's worth (wire.h). */
#define REAPER_MAX_PENDING 253

/* Nothing of a uid's let go of for this long while its descriptors
 * wait: behind, for that uid. */
#define REAPER_BEHIND_MS 1000

struct reaper;

/* Called after descriptors were let go of (room again). */
typedef void (*reaper_progress_fn)(void *arg);

/* Start the helpers.  NULL and errno on failure. */
struct reaper *reaper_new(struct event_base *base, reaper_progress_fn progress,
			  void *arg);
/* Stop them (SIGKILL; never waits for one stuck in a close). */
void reaper_free(struct reaper *r);

/* Hand over @fd, passed by a client of @uid: closed by the reaper, never
 * by the caller.  Never blocks. */
void reaper_put(struct reaper *r, int fd, uid_t uid);
/* Descriptors of @uid handed over and still in rdmad's table: what
 * REAPER_MAX_PENDING bounds. */
unsigned int reaper_held_by(const struct reaper *r, uid_t uid);
/* Descriptors of @uid handed over and not let go of yet, wherever they
 * wait (rdmad's table, or the closer's queue or table). */
unsigned int reaper_waiting(const struct reaper *r, uid_t uid);
/* Descriptors handed over that are still in rdmad's table. */
unsigned int reaper_held(const struct reaper *r);
/* Close the connection @fd of a client of @uid: shut at once, then to the
 * closer whole, with whatever is still queued on it (see the top). */
void reaper_close_connection(struct reaper *r, int fd, uid_t uid);

/* Whose descriptors wait, none of them let go of for REAPER_BEHIND_MS. */
struct reaper_behind {
	uid_t uid;
	unsigned int pending;
	uint64_t quiet_ms; /* since the uid's last one was let go of */
};
/* Fills at most @max; returns how many (0: not behind). */
size_t reaper_behind(const struct reaper *r, struct reaper_behind *ret,
		     size_t max);

#endif
