/* SPDX-License-Identifier: MIT */
/*
 * A remover: a helper process that shares rdmad's descriptor table
 * (clone(CLONE_FILES) without CLONE_THREAD) and closes there what clients
 * left with rdmad.  Nothing travels to it but numbers: no descriptor is
 * ever in flight (SCM_RIGHTS) on rdmad's account, so the kernel's quota of
 * files in flight per user (too_many_unix_fds(), net/unix) and its unix
 * garbage collector (wait_for_unix_gc()) never come into rdmad's sends.
 *
 * Two kinds, a pair in each of the reaper's lanes (reaper.h):
 * - REMOVER_FILES closes the passed files that are not sockets.  A file
 *   system's ->flush runs on every close(2), the last or not (filp_close()
 *   in fs/open.c; FUSE sends FLUSH and waits for the answer, in state D),
 *   so only a process that shares rdmad's table can take such a file out
 *   of it without rdmad waiting.  No tick: a FLUSH it interrupted would
 *   still be waited for, uninterruptibly.
 * - REMOVER_SOCKETS (named rdmad-closer) closes sockets: passed ones and
 *   connections rdmad drops, whatever is queued on them.  A socket has no
 *   ->flush; its release, and the release of every file queued on it, runs
 *   in the task that drops the last reference, this one.  What can make
 *   that wait is a TCP socket lingering on unsent data (tcp_close() waits
 *   in sk_stream_wait_close() until a signal is pending): its interval
 *   timer (closer.h) runs while it closes, so no close(2) waits longer
 *   than one tick, whatever is queued behind it (the first tick leaves a
 *   signal pending while the rest of that close's releases run).
 *
 * While it closes, the file is still in rdmad's table (remover_held()).
 * A remover that dies (killed by hand) is started again on the same
 * pipes, and the batch it was in is settled from a page it shared with
 * rdmad: the closes it began are counted back to their owners (the one
 * it was in may stay open), the jobs it had not begun go to the next
 * remover, so no owner's count is left behind.
 */
#ifndef RDMAD_REMOVER_H
#define RDMAD_REMOVER_H

#include <sys/types.h>

#include <event2/event.h>

enum remover_kind {
	REMOVER_FILES,	 /* not sockets: no tick */
	REMOVER_SOCKETS, /* sockets: the tick while it closes */
};

struct remover;

/* @n descriptors of @owner were closed. */
typedef void (*remover_done_fn)(uid_t owner, unsigned int n, void *arg);

/* Start one.  NULL and errno on failure. */
struct remover *remover_new(struct event_base *base, enum remover_kind kind,
			    remover_done_fn done, void *arg);
/* Stop it (SIGKILL; never waits for one stuck in a close). */
void remover_free(struct remover *rm);
/* Close @fd of @owner's there, once the loop turns.  Never blocks. */
void remover_put(struct remover *rm, int fd, uid_t owner);
/* Descriptors handed over and not closed yet: all in rdmad's table. */
unsigned int remover_held(const struct remover *rm);
/* Its pid (for tests), or -1. */
pid_t remover_pid(const struct remover *rm);

/* A process with rdmad's descriptor table, not its memory (fork's
 * semantics plus CLONE_FILES): 0 in the child, which may make only
 * async-signal-safe calls; its pid, or -errno. */
pid_t remover_clone_files(void);

#endif
