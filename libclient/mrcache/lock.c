/* SPDX-License-Identifier: MIT */
/*
 * A cache's lock (lock.h): a futex word holding its holder's number.
 * Each thread takes a number from a counter the first time it locks
 * (thread-local, so no system call after that).  Under ThreadSanitizer
 * the lock tells the runtime what it is, as a mutex would.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"

#ifdef __SANITIZE_THREAD__ /* gcc's */
#define MRC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) /* clang's */
#define MRC_TSAN 1
#endif
#endif
#ifdef MRC_TSAN
#include <sanitizer/tsan_interface.h>
#define TSAN(call) call
#else
#define TSAN(call) ((void)0)
#endif

static uint32_t next_number = 1;
static __thread uint32_t number __attribute__((tls_model("initial-exec")));

static uint32_t me(void)
{
	uint32_t n = number;

	while (!n) {
		n = __atomic_fetch_add(&next_number, 1, __ATOMIC_RELAXED) &
		    ~MRC_LOCK_WAITERS;
		number = n;
	}
	return n;
}

void mrc_lock_init(struct mrc_lock *l)
{
	__atomic_store_n(&l->word, 0, __ATOMIC_RELAXED);
	TSAN(__tsan_mutex_create(l, 0));
}

static void nap(struct mrc_lock *l, uint32_t seen)
{
	struct timespec t = {0, MRC_LOCK_NAP_NS};

	syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, seen, &t, NULL, 0);
}

void mrc_lock(struct mrc_lock *l)
{
	uint32_t id = me(), seen = 0;

	TSAN(__tsan_mutex_pre_lock(l, 0));
	if (!__atomic_compare_exchange_n(&l->word, &seen, id, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		/* Having waited, take it with the waiters' bit: others may
		 * still sleep, and its unlock must wake them. */
		for (;;) {
			seen = 0;
			if (__atomic_compare_exchange_n(
				    &l->word, &seen, id | MRC_LOCK_WAITERS,
				    false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				break;
			if (!(seen & MRC_LOCK_WAITERS) &&
			    !__atomic_compare_exchange_n(
				    &l->word, &seen, seen | MRC_LOCK_WAITERS,
				    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				continue;
			nap(l, seen | MRC_LOCK_WAITERS);
		}
	}
	TSAN(__tsan_mutex_post_lock(l, 0, 0));
}

int mrc_unlock(struct mrc_lock *l)
{
	if (!mrc_lock_held(l))
		return -EPERM;
	TSAN(__tsan_mutex_pre_unlock(l, 0));
	if (__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) &
	    MRC_LOCK_WAITERS)
		syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL,
			0);
	TSAN(__tsan_mutex_post_unlock(l, 0));
	return 0;
}

bool mrc_lock_held(const struct mrc_lock *l)
{
	return (__atomic_load_n(&l->word, __ATOMIC_RELAXED) &
		~MRC_LOCK_WAITERS) == me();
}

void mrc_unlock_on_exit(void *l)
{
	mrc_unlock(l);
}
