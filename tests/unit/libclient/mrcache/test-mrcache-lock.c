/* SPDX-License-Identifier: MIT */
/*
 * libclient/mrcache/lock.c, the cache's lock: only its holder lets go of
 * it (a cleanup handler's unlock by a thread that never got it changes
 * nothing), it excludes (threads counting under it lose no count), and a
 * thread ended by its handler while waiting for it, or while holding it
 * with its cleanup handler pushed, leaves no other thread waiting for
 * good.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "lock.h"

static struct mrc_lock lock;
static unsigned long counted;

static void *count(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 100000; i++) {
		mrc_lock(&lock);
		counted++;
		mrc_unlock(&lock);
	}
	return NULL;
}

static void test_excludes(void)
{
	pthread_t t[4];
	int i;

	mrc_lock_init(&lock);
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, count, NULL);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(counted == 400000, "%lu counts of 400000", counted);
}

static void *unlock_other(void *arg)
{
	(void)arg;
	return (void *)(long)mrc_unlock(&lock);
}

static void test_only_its_holder(void)
{
	pthread_t t;
	void *ret;

	mrc_lock_init(&lock);
	CHECK(mrc_unlock(&lock) == -EPERM, "an unlock of a free lock taken");
	mrc_lock(&lock);
	pthread_create(&t, NULL, unlock_other, NULL);
	pthread_join(t, &ret);
	CHECK((long)ret == -EPERM, "another thread's unlock: %ld", (long)ret);
	CHECK(mrc_lock_held(&lock), "the holder lost the lock");
	CHECK(mrc_unlock(&lock) == 0, "the holder's unlock refused");
	CHECK(!mrc_lock_held(&lock), "still held after the unlock");
}

/* Threads that take the lock with a cleanup handler and are ended by
 * their handler (pthread_exit()) wherever the signal lands: waiting,
 * holding, letting go.  Every one of them is joined, and the lock is
 * free at the end. */
static void ended(int sig)
{
	(void)sig;
	pthread_exit(NULL);
}

static unsigned int running;

static void *taker(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		pthread_cleanup_push(mrc_unlock_on_exit, &lock);
		mrc_lock(&lock);
		counted++;
		mrc_unlock(&lock);
		pthread_cleanup_pop(0);
	}
	return NULL;
}

static void test_ended_anywhere(void)
{
	pthread_t t[3];
	int round, i;

	mrc_lock_init(&lock);
	signal(SIGUSR1, ended);
	for (round = 0; round < 200; round++) {
		/* The signal lands in the loop, not in the thread's start
		 * (libc's and a sanitizer's, which allocate). */
		__atomic_store_n(&running, 0, __ATOMIC_SEQ_CST);
		for (i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, taker, NULL);
		while (__atomic_load_n(&running, __ATOMIC_SEQ_CST) < 3)
			sched_yield();
		usleep(200);
		for (i = 0; i < 3; i++) {
			pthread_kill(t[i], SIGUSR1);
			pthread_join(t[i], NULL);
		}
	}
	CHECK(!(__atomic_load_n(&lock.word, __ATOMIC_SEQ_CST) &
		~MRC_LOCK_WAITERS),
	      "held by an ended thread: %#x", lock.word);
	mrc_lock(&lock);
	CHECK(mrc_unlock(&lock) == 0, "the lock could not be taken again");
}

int main(void)
{
	test_only_its_holder();
	test_excludes();
	test_ended_anywhere();
	if (!failures)
		printf("mrcache lock: OK\n");
	return failures ? 1 : 0;
}
