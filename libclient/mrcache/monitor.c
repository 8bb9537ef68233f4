/* SPDX-License-Identifier: MIT */
/*
 * The memory monitor: one userfaultfd for the process, with the
 * non-cooperative events UNMAP (munmap, mmap MAP_FIXED over a range, brk
 * shrinking, mremap shrinking), REMOVE (madvise MADV_DONTNEED, MADV_FREE,
 * MADV_REMOVE) and REMAP (mremap moving), read by one thread that
 * invalidates what every cache holds in the range.  The kernel raises
 * these events for whatever changes the pages of a watched range, from
 * any library and from glibc inside free() and malloc_trim(), without a
 * call through the PLT to interpose.
 *
 * Cached ranges are registered in write-protect mode without ever
 * write-protecting a page, so the monitor sees events and no page fault;
 * without UFFD_FEATURE_WP_HUGETLBFS_SHMEM only private anonymous memory
 * can be registered so, which is the memory whose pages only these
 * events change (a shared or file mapping can lose pages to another
 * process's truncate, which no event reports): other memory is not
 * cached.  The file is opened with UFFD_USER_MODE_ONLY where the kernel
 * has it (5.11), so an unprivileged process needs no
 * vm.unprivileged_userfaultfd, then /dev/userfaultfd (6.1).
 *
 * The ordering that makes a cache never stale: the kernel holds a thread
 * that unmapped a watched range until the monitor has read the event.
 * The monitor marks itself busy before it reads and idle once every cache
 * has dropped the range, and rdmad_mr_cache_get() waits for idle first
 * (mrc_monitor_quiesce()), so a get that follows an munmap() in program
 * order never sees the old entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mrcache.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define EVENTS                                                                 \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |                \
	 UFFD_FEATURE_EVENT_REMAP)

static struct {
	pthread_mutex_t start_lock;
	int state; /* 0: not tried; 1: running; -errno: unavailable */
	const char *why;
	int fd;
	/* Busy from before a read to after its events are applied;
	 * batches counts the ends. */
	atomic_uint busy;
	atomic_ulong batches;
	pthread_mutex_t quiet_lock;
	pthread_cond_t quiet;
	/* The caches, and fork's order: this lock, then each cache's. */
	pthread_mutex_t list_lock;
	struct rdmad_mr_cache **caches;
	size_t count;
	size_t cap;
} mon = {
	.start_lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.quiet_lock = PTHREAD_MUTEX_INITIALIZER,
	.quiet = PTHREAD_COND_INITIALIZER,
	.list_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ---- the userfaultfd ---------------------------------------------------- */

static int open_uffd(void)
{
	int flags = O_CLOEXEC | O_NONBLOCK, fd, dev;

	fd = (int)syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
	if (fd < 0 && errno == EINVAL) /* before 5.11 */
		fd = (int)syscall(SYS_userfaultfd, flags);
#ifdef USERFAULTFD_IOC_NEW
	if (fd < 0 && errno == EPERM) {
		dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
			close(dev);
		}
	}
#else
	(void)dev;
#endif
	return fd < 0 ? -errno : fd;
}

/* A userfaultfd with @features, or -errno. */
static int open_api(uint64_t features, uint64_t *offered)
{
	struct uffdio_api api = {.api = UFFD_API, .features = features};
	int fd = open_uffd(), err;

	if (fd < 0)
		return fd;
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (offered)
		*offered = api.features;
	return fd;
}

static int open_monitor(const char **why)
{
	uint64_t offered = 0;
	int fd;

	fd = open_api(0, &offered);
	if (fd < 0) {
		*why = fd == -EPERM || fd == -EACCES
			       ? "userfaultfd refused "
				 "(vm.unprivileged_userfaultfd, "
				 "/dev/userfaultfd's mode, or seccomp)"
			       : "no userfaultfd (kernel without "
				 "CONFIG_USERFAULTFD, or seccomp)";
		return fd;
	}
	close(fd);
	if ((offered & EVENTS) != EVENTS) {
		*why = "userfaultfd without the UNMAP, REMOVE and REMAP events";
		return -EOPNOTSUPP;
	}
	if (!(offered & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
		*why = "userfaultfd without write-protect mode";
		return -EOPNOTSUPP;
	}
	fd = open_api(EVENTS | UFFD_FEATURE_PAGEFAULT_FLAG_WP, NULL);
	if (fd < 0)
		*why = "userfaultfd refused the events it offered";
	return fd;
}

/* ---- the thread --------------------------------------------------------- */

static void invalidate_all(uintptr_t start, uintptr_t end)
{
	size_t i;

	pthread_mutex_lock(&mon.list_lock);
	for (i = 0; i < mon.count; i++)
		mrc_cache_invalidate(mon.caches[i], start, end);
	pthread_mutex_unlock(&mon.list_lock);
}

/* A write-protect fault cannot happen (no page is ever protected), but a
 * thread must never hang on one: unprotect the page and wake it. */
static void unblock(const struct uffd_msg *msg)
{
	long page = sysconf(_SC_PAGESIZE);
	struct uffdio_writeprotect wp = {
		.range = {.start = msg->arg.pagefault.address & ~(page - 1),
			  .len = (uint64_t)page},
	};

	ioctl(mon.fd, UFFDIO_WRITEPROTECT, &wp);
}

static void apply(const struct uffd_msg *msg)
{
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
	case UFFD_EVENT_REMOVE:
		invalidate_all(msg->arg.remove.start, msg->arg.remove.end);
		break;
	case UFFD_EVENT_REMAP:
		invalidate_all(msg->arg.remap.from,
			       msg->arg.remap.from + msg->arg.remap.len);
		break;
	case UFFD_EVENT_PAGEFAULT:
		unblock(msg);
		break;
	default:
		break;
	}
}

static void end_batch(void)
{
	atomic_store(&mon.busy, 0);
	pthread_mutex_lock(&mon.quiet_lock);
	atomic_fetch_add(&mon.batches, 1);
	pthread_cond_broadcast(&mon.quiet);
	pthread_mutex_unlock(&mon.quiet_lock);
}

static void *run(void *arg)
{
	struct uffd_msg msgs[64];
	struct pollfd p = {.fd = (int)(intptr_t)arg, .events = POLLIN};
	ssize_t n;
	size_t i;

	for (;;) {
		if (poll(&p, 1, -1) < 0)
			continue;
		atomic_store(&mon.busy, 1);
		while ((n = read(p.fd, msgs, sizeof(msgs))) > 0)
			for (i = 0; i < (size_t)n / sizeof(msgs[0]); i++)
				apply(&msgs[i]);
		end_batch();
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return NULL;
	}
}

static int spawn(int fd)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	err = pthread_create(&thread, &attr, run, (void *)(intptr_t)fd);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

static int start(const char **why)
{
	const char *env = getenv("RDMAD_MR_CACHE_MONITOR");
	int fd, err;

	if (env && !strcmp(env, "none")) {
		*why = "turned off (RDMAD_MR_CACHE_MONITOR=none)";
		return -ECANCELED;
	}
	if (env && *env && strcmp(env, "userfaultfd")) {
		*why = "unknown RDMAD_MR_CACHE_MONITOR (userfaultfd or none)";
		return -EINVAL;
	}
	fd = open_monitor(why);
	if (fd < 0)
		return fd;
	err = spawn(fd);
	if (err < 0) {
		close(fd);
		*why = "no thread for the monitor";
		return err;
	}
	mon.fd = fd;
	*why = "userfaultfd";
	return 1;
}

int mrc_monitor_start(const char **why)
{
	int state;

	pthread_mutex_lock(&mon.start_lock);
	if (!mon.state)
		mon.state = start(&mon.why);
	state = mon.state;
	*why = mon.why;
	pthread_mutex_unlock(&mon.start_lock);
	return state < 0 ? state : 0;
}

int mrc_monitor_watch(uintptr_t start, uintptr_t end)
{
	struct uffdio_register reg = {
		.range = {.start = start, .len = end - start},
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (ioctl(mon.fd, UFFDIO_REGISTER, &reg) < 0)
		return -errno;
	return 0;
}

bool mrc_monitor_busy(void)
{
	return atomic_load(&mon.busy) != 0;
}

void mrc_monitor_quiesce(void)
{
	unsigned long seen;

	if (!atomic_load(&mon.busy))
		return;
	pthread_mutex_lock(&mon.quiet_lock);
	seen = atomic_load(&mon.batches);
	while (atomic_load(&mon.busy) && atomic_load(&mon.batches) == seen)
		pthread_cond_wait(&mon.quiet, &mon.quiet_lock);
	pthread_mutex_unlock(&mon.quiet_lock);
}

/* ---- the list of caches, and fork --------------------------------------- */

static void atfork_prepare(void)
{
	size_t i;

	pthread_mutex_lock(&mon.start_lock);
	pthread_mutex_lock(&mon.list_lock);
	for (i = 0; i < mon.count; i++)
		mrc_cache_lock(mon.caches[i]);
}

static void atfork_parent(void)
{
	size_t i;

	for (i = 0; i < mon.count; i++)
		mrc_cache_unlock(mon.caches[i]);
	pthread_mutex_unlock(&mon.list_lock);
	pthread_mutex_unlock(&mon.start_lock);
}

/* The child has no monitor thread and its mappings are no longer watched
 * (the file has no UFFD_FEATURE_EVENT_FORK): the parent's caches forget
 * their entries, and a cache the child makes starts a monitor of its
 * own. */
static void atfork_child(void)
{
	size_t i;

	if (mon.fd >= 0)
		close(mon.fd);
	mon.fd = -1;
	if (mon.state == 1)
		mon.state = 0;
	atomic_store(&mon.busy, 0);
	pthread_mutex_init(&mon.quiet_lock, NULL);
	pthread_cond_init(&mon.quiet, NULL);
	for (i = 0; i < mon.count; i++) {
		mrc_cache_forked(mon.caches[i]);
		mrc_cache_unlock(mon.caches[i]);
	}
	pthread_mutex_unlock(&mon.list_lock);
	pthread_mutex_unlock(&mon.start_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void install_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int mrc_monitor_add(struct rdmad_mr_cache *cache)
{
	struct rdmad_mr_cache **caches;
	size_t cap;
	int err = 0;

	pthread_once(&atfork_once, install_atfork);
	pthread_mutex_lock(&mon.list_lock);
	if (mon.count == mon.cap) {
		cap = mon.cap ? mon.cap * 2 : 8;
		caches = realloc(mon.caches, cap * sizeof(*caches));
		if (caches) {
			mon.caches = caches;
			mon.cap = cap;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err)
		mon.caches[mon.count++] = cache;
	pthread_mutex_unlock(&mon.list_lock);
	return err;
}

void mrc_monitor_remove(struct rdmad_mr_cache *cache)
{
	size_t i;

	pthread_mutex_lock(&mon.list_lock);
	for (i = 0; i < mon.count; i++)
		if (mon.caches[i] == cache) {
			mon.caches[i] = mon.caches[--mon.count];
			break;
		}
	pthread_mutex_unlock(&mon.list_lock);
}

void mrc_monitor_each(void (*fn)(struct rdmad_mr_cache *, const void *),
		      const void *arg)
{
	size_t i;

	pthread_mutex_lock(&mon.list_lock);
	for (i = 0; i < mon.count; i++)
		fn(mon.caches[i], arg);
	pthread_mutex_unlock(&mon.list_lock);
}
