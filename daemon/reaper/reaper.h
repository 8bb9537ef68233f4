/* SPDX-License-Identifier: MIT */
/*
 * Where rdmad lets go of what clients hand it.
 *
 * A descriptor that a client passes (SCM_RIGHTS) is a file the client
 * chose, and closing it can block for as long as the client likes: a TCP
 * socket with SO_LINGER whose peer never reads waits in its last close, a
 * FUSE file waits for a FLUSH its server never answers (in state D, deaf
 * even to SIGKILL), an AF_PACKET socket waits for an RCU grace period
 * (synchronize_net() in packet_release(), uninterruptible), a socket
 * carries more such files in its queue.  The kernel drops such a file's
 * last reference in whichever task lets go of it: rdmad's loop must never
 * be that task.
 *
 * So rdmad never drops the last reference to a client's file itself.
 * Helpers that share its descriptor table (removers, remover.h) close
 * them there, in REAPER_LANES lanes of two each: a socket (what a client
 * may pass with Hello, and a connection rdmad closes with something still
 * queued on it) goes to the lane's closer, whose tick ends any lingering
 * wait (closer.h; a passed socket first gets SO_LINGER {1, 0}, so a TCP
 * socket's close resets at once); any other file goes to the lane's
 * remover, because a file system's ->flush runs on every close(2).
 * Nothing is ever sent to a helper with SCM_RIGHTS: no client's file, and
 * no connection, is ever in flight on rdmad's user, whose quota of files
 * in flight (RLIMIT_NOFILE, too_many_unix_fds()) stays for the generation
 * pages of its Welcomes alone.
 *
 * Each owner's descriptors go to its own lane while it has any waiting:
 * one owner's slow closes hold its lane, nobody else's, until more owners
 * than lanes are slow at once.  A close that hangs holds a helper, never
 * the loop; rdmad itself still exits on SIGTERM and dies on SIGKILL.  The
 * helpers die with rdmad (PR_SET_PDEATHSIG), once a close they are in
 * returns; the undertaker (reaper.c) then closes the sockets of rdmad's
 * table that a remover stuck in a FLUSH keeps alive.
 *
 * A connection rdmad closes with nothing queued on it is closed at once,
 * by rdmad, charged to nobody (reaper_close_connection()).
 *
 * What waits is counted per owner (owner.h: a user and its subordinate
 * uids are one) until its close has returned; all of it is in rdmad's
 * table meanwhile (reaper_held()).  The server (client.c, server.c)
 * reads no datagram of an owner that has REAPER_MAX_PENDING descriptors
 * waiting and admits no new connection of it, and keeps a budget for all
 * owners together (server-int.h).
 */
#ifndef RDMAD_REAPER_H
#define RDMAD_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>

/* Descriptors of one owner that may wait, anywhere, before that owner is
 * read from no more and its new connections are refused: one Hello's
 * worth (wire.h). */
#define REAPER_MAX_PENDING 253

/* Sockets of one owner with its closer (passed ones, and connections
 * that ended with something queued, refused ones included) past which
 * the server accepts no connection on the public socket until they are
 * fewer (reaper_flooded()): an owner that floods connections, each with
 * something queued, holds that many descriptors of rdmad's table at
 * most while its closer catches up, never the public room.  A closer's
 * job is short (no ->flush; a lingering wait ends within a tick), so
 * the pause is too, unlike a remover's, which a FUSE FLUSH holds. */
#define REAPER_MAX_CLOSING (2 * REAPER_MAX_PENDING)

/* Nothing of an owner's let go of for this long while its descriptors
 * wait: behind, for that owner. */
#define REAPER_BEHIND_MS 1000

/* Lanes: owners slow at once before two of them share a lane. */
#define REAPER_LANES 8

struct reaper;

/* Called after descriptors were let go of (room again). */
typedef void (*reaper_progress_fn)(void *arg);

/* Start the helpers.  NULL and errno on failure. */
struct reaper *reaper_new(struct event_base *base, reaper_progress_fn progress,
			  void *arg);
/* Stop them (SIGKILL; never waits for one stuck in a close). */
void reaper_free(struct reaper *r);

/* Hand over @fd, passed by a client of @owner: closed in @owner's lane,
 * never by the caller.  Never blocks. */
void reaper_put(struct reaper *r, int fd, uid_t owner);
/* Descriptors of @owner handed over and not let go of yet, wherever they
 * wait: what REAPER_MAX_PENDING bounds. */
unsigned int reaper_waiting(const struct reaper *r, uid_t owner);
/* Does an owner have REAPER_MAX_CLOSING sockets with its closer? */
bool reaper_flooded(const struct reaper *r);
/* Descriptors handed over and not let go of yet (all in rdmad's table). */
unsigned int reaper_held(const struct reaper *r);
/* Close the connection @fd of a client of @owner: shut at once; closed
 * here when nothing is queued on it (false), else by @owner's closer,
 * with what is queued (true, and counted as @owner's). */
bool reaper_close_connection(struct reaper *r, int fd, uid_t owner);

/* Whose descriptors wait, none of them let go of for REAPER_BEHIND_MS. */
struct reaper_behind {
	uid_t owner;
	unsigned int pending;
	uint64_t quiet_ms; /* since the owner's last one was let go of */
};
/* Fills at most @max; returns how many (0: not behind). */
size_t reaper_behind(const struct reaper *r, struct reaper_behind *ret,
		     size_t max);

#endif
