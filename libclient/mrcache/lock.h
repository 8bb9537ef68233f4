/* SPDX-License-Identifier: MIT */
/*
 * A cache's lock (lock.c): a word naming its holder, so that a thread
 * ended anywhere in the cache (pthread_exit() from a signal handler, a
 * cancel) either holds it, by its number, or does not, and its cleanup
 * lets go only of a lock it holds.  A glibc mutex has two places where
 * that cannot be told: between taking the word and writing its owner
 * (an error-checking mutex then refuses the holder's own unlock), and a
 * waiter woken by the unlock that ends before it takes the word, which
 * leaves the next waiter asleep for good.  Here taking the lock is one
 * compare-and-swap of the thread's number, and a waiter sleeps at most
 * MRC_LOCK_NAP_NS before it looks again: a wake that a thread took with
 * it delays the others by that much, never for good.
 */
#ifndef RDMAD_MRCACHE_LOCK_H
#define RDMAD_MRCACHE_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#define MRC_LOCK_NAP_NS 1000000L

/* The word: the holder's number, MRC_LOCK_WAITERS or'd in; 0: free. */
struct mrc_lock {
	uint32_t word;
};

#define MRC_LOCK_WAITERS 0x80000000u

void mrc_lock_init(struct mrc_lock *l);
void mrc_lock(struct mrc_lock *l);
/* 0, or -EPERM where this thread does not hold @l (nothing changes). */
int mrc_unlock(struct mrc_lock *l);
bool mrc_lock_held(const struct mrc_lock *l);
/* A cleanup handler (pthread_cleanup_push()): lets go of the lock @l
 * points to where this thread holds it. */
void mrc_unlock_on_exit(void *l);

#endif
