/* SPDX-License-Identifier: MIT */
/*
 * The memory monitor: one userfaultfd for the process, with the
 * non-cooperative events UNMAP (munmap, mmap MAP_FIXED over a range, brk
 * shrinking, mremap shrinking or moving over a range), REMOVE (madvise
 * MADV_DONTNEED, MADV_FREE, MADV_REMOVE and the other discards) and REMAP
 * (mremap moving), read by one thread that tells every client
 * (monitor.h) of the range.  The kernel raises these events for whatever
 * changes the pages of a watched range, from any library and from glibc
 * inside free() and malloc_trim(), without a call through the PLT to
 * interpose.  docs/mrcache.md has the table of every call that changes a
 * mapping's pages and how it is covered.
 *
 * Ranges are registered in write-protect mode without ever
 * write-protecting a page, so the monitor sees events and no page fault.
 * The kernel accepts that mode on shmem and hugetlbfs too, which lose
 * pages to a truncate or hole punch without an event: what may be cached
 * is decided per mapping by the caller (vma.c), not by the kernel's
 * acceptance.  The file is opened with UFFD_USER_MODE_ONLY where the
 * kernel has it (5.11), so an unprivileged process needs no
 * vm.unprivileged_userfaultfd, then /dev/userfaultfd (6.1).
 *
 * The thread never waits for anything an application thread holds: it
 * takes no lock, allocates nothing, and hands each range to the clients'
 * changed() callbacks, which only record it.  The kernel holds a thread
 * that unmapped a watched range until the monitor has read the event, so
 * that is what lets every munmap() return.
 *
 * The descriptor.  The thread reads from its own copy of the file table
 * (unshare(CLONE_FILES) at its start, every other descriptor closed), so
 * a program that closes descriptors it did not open, or dup2()s over the
 * monitor's, cannot take the file from under it: the kernel keeps
 * watching, the thread keeps reading, and no munmap() hangs.  Application
 * threads still use the number in the shared table to register and
 * unregister ranges; each time they compare it with the file the monitor
 * opened (fstat()'s st_dev and st_ino: userfaultfd has had an inode of
 * its own per file since 5.12), and once it differs the monitor is lost:
 * nothing new is watched and the caches pass through.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "monitor.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define EVENTS                                                                 \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |                \
	 UFFD_FEATURE_EVENT_REMAP)

const char mrc_monitor_lost_why[] =
	"the monitor's descriptor was closed or replaced by the program";

struct client {
	const struct mrc_monitor_client *ops; /* NULL: a free slot */
	void *arg;
};

struct range {
	uintptr_t start;
	uintptr_t end;
	uint64_t id; /* a watch's (mrc_monitor_watch()), else 0 */
};

static struct {
	pthread_mutex_t start_lock;
	int state; /* 0: not tried; 1: running; -errno: unavailable */
	const char *why;
	int fd;	   /* the number in the shared table; unused once lost */
	dev_t dev; /* the file it opened */
	ino_t ino;
	atomic_bool lost;
	bool hooks; /* the program's calls are announced (hooks.c) */
	/* Events read (UNMAP, REMOVE, REMAP): a call the hooks announced
	 * raises none. */
	atomic_ulong events;
	/* Counts the ends of busy spells (mrc_monitor_reading); a futex
	 * word, woken for all at each end (mrc_monitor_quiesce()). */
	uint32_t batches;
	/* The clients: written under list_lock, read by the thread without
	 * it (mrc_monitor_remove() waits for the thread's batch). */
	pthread_mutex_t list_lock;
	struct client clients[MRC_MONITOR_CLIENTS];
	/* Changes announced and not yet done (mrc_monitor_changing()); past
	 * the slots, every range counts as changing until they are done. */
	pthread_mutex_t flight_lock;
	struct range flying[MRC_MONITOR_FLYING];
	unsigned int flying_over;
	/* How many are in flight, slots and over: written under the lock,
	 * read without it, so that a miss while none flies (nearly every
	 * one) neither takes the lock nor scans the slots. */
	unsigned int nflying;
	/* Watched ranges, one a user (so the same range may be there more
	 * than once); allocated once at start, never grown under the lock. */
	pthread_mutex_t watch_lock;
	struct range *watched;
	size_t nwatched;
	size_t max_watched;
	uint64_t last_id;
} mon = {
	.start_lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.list_lock = PTHREAD_MUTEX_INITIALIZER,
	.watch_lock = PTHREAD_MUTEX_INITIALIZER,
	.flight_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* How many of the monitor's locks this thread holds: a call the hooks
 * see on a thread that holds one (a signal handler's munmap()) is not
 * announced, which would wait for that very lock, but left to the
 * kernel's event, which the thread reads without any lock. */
static __thread unsigned int held __attribute__((tls_model("initial-exec")));

struct mrc_hook_line mrc_hook_line __attribute__((aligned(64)));
unsigned int mrc_monitor_reading;

/* A monitor runs (mon.fd) with the hooks on (mon.hooks), or not. */
static void arm(bool on)
{
	__atomic_store_n(&mrc_hook_line.armed, on, __ATOMIC_RELEASE);
}

static void lock(pthread_mutex_t *m)
{
	held++;
	pthread_mutex_lock(m);
}

static void unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
	held--;
}

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

/* On the thread, or on one announcing a change: every client hears. */
static void tell_clients(uintptr_t start, uintptr_t end)
{
	const struct mrc_monitor_client *ops;
	size_t i;

	for (i = 0; i < MRC_MONITOR_CLIENTS; i++) {
		ops = __atomic_load_n(&mon.clients[i].ops, __ATOMIC_ACQUIRE);
		if (ops)
			ops->changed(__atomic_load_n(&mon.clients[i].arg,
						     __ATOMIC_RELAXED),
				     start, end);
	}
}

/* A write-protect fault cannot happen (no page is ever protected), but a
 * thread must never hang on one: unprotect the page and wake it. */
static void unblock(int fd, const struct uffd_msg *msg)
{
	long page = sysconf(_SC_PAGESIZE);
	struct uffdio_writeprotect wp = {
		.range = {.start = msg->arg.pagefault.address & ~(page - 1),
			  .len = (uint64_t)page},
	};

	ioctl(fd, UFFDIO_WRITEPROTECT, &wp);
}

static void apply(int fd, const struct uffd_msg *msg)
{
	switch (msg->event) {
	case UFFD_EVENT_UNMAP:
	case UFFD_EVENT_REMOVE:
		atomic_fetch_add(&mon.events, 1);
		tell_clients(msg->arg.remove.start, msg->arg.remove.end);
		break;
	case UFFD_EVENT_REMAP:
		atomic_fetch_add(&mon.events, 1);
		tell_clients(msg->arg.remap.from,
			     msg->arg.remap.from + msg->arg.remap.len);
		break;
	case UFFD_EVENT_PAGEFAULT:
		unblock(fd, msg);
		break;
	default:
		break;
	}
}

static void end_batch(void)
{
	__atomic_store_n(&mrc_monitor_reading, 0, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&mon.batches, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &mon.batches, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
		NULL, 0);
}

/* The thread's own file table, holding the userfaultfd and nothing else:
 * closing the program's descriptors cannot take the file from it.  Where
 * unshare() is refused (seccomp) it reads the shared number, as before,
 * and the application side's check still notices a loss. */
static void own_table(int fd)
{
	if (unshare(CLONE_FILES) < 0)
		return;
	if (fd > 0)
		syscall(SYS_close_range, 0U, (unsigned int)fd - 1, 0U);
	syscall(SYS_close_range, (unsigned int)fd + 1, ~0U, 0U);
}

static void *run(void *arg)
{
	struct uffd_msg msgs[64];
	struct pollfd p = {.fd = mon.fd, .events = POLLIN};
	ssize_t n;
	size_t i;

	own_table(p.fd);
	/* Only now may the program close what it likes. */
	sem_post(arg);
	for (;;) {
		if (poll(&p, 1, -1) < 0)
			continue;
		__atomic_store_n(&mrc_monitor_reading, 1, __ATOMIC_SEQ_CST);
		while ((n = read(p.fd, msgs, sizeof(msgs))) > 0)
			for (i = 0; i < (size_t)n / sizeof(msgs[0]); i++)
				apply(p.fd, &msgs[i]);
		end_batch();
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return NULL;
	}
}

/* The thread, once it holds the file in a table of its own. */
static int spawn(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;
	sem_t started;
	int err;

	sem_init(&started, 0, 0);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	err = pthread_create(&thread, &attr, run, &started);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (!err && sem_wait(&started) < 0)
		;
	sem_destroy(&started);
	return -err;
}

/* The bound on ranges watched at once: each may split a mapping in three,
 * so a quarter of vm.max_map_count, which leaves the process half of its
 * mappings whatever the caches watch. */
static size_t watch_bound(void)
{
	char buf[32] = {0};
	long max = 65530;
	int fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, buf, sizeof(buf) - 1) > 0)
			max = strtol(buf, NULL, 10);
		close(fd);
	}
	max /= 4;
	return max < 16 ? 16 : (size_t)max;
}

/* RDMAD_MR_CACHE_HOOKS=off: the program's calls are left to the kernel's
 * events, for a program whose own hooks must be the only ones. */
static bool hooks_wanted(void)
{
	const char *env = getenv("RDMAD_MR_CACHE_HOOKS");

	return !env || (strcmp(env, "off") && strcmp(env, "0"));
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void install_atfork(void);

static int start(const char **why)
{
	const char *env = getenv("RDMAD_MR_CACHE_MONITOR");
	struct stat st;
	int fd, err;

	if (env && !strcmp(env, "none")) {
		*why = "turned off (RDMAD_MR_CACHE_MONITOR=none)";
		return -ECANCELED;
	}
	if (env && *env && strcmp(env, "userfaultfd")) {
		*why = "unknown RDMAD_MR_CACHE_MONITOR (userfaultfd or none)";
		return -EINVAL;
	}
	/* Without the token page a child made by _Fork() or a raw clone()
	 * could not be told from this process, and would reach its
	 * monitor: no monitor then. */
	pthread_once(&atfork_once, install_atfork);
	if (!__atomic_load_n(&mrc_hook_line.token, __ATOMIC_ACQUIRE)) {
		*why = "no MADV_WIPEONFORK page to tell a child by";
		return -ENOMEM;
	}
	if (!mon.watched) {
		mon.max_watched = watch_bound();
		mon.watched = calloc(mon.max_watched, sizeof(*mon.watched));
		if (!mon.watched) {
			*why = "no memory for the monitor";
			return -ENOMEM;
		}
	}
	fd = open_monitor(why);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		close(fd);
		*why = "userfaultfd without an inode to check";
		return -EOPNOTSUPP;
	}
	mon.dev = st.st_dev;
	mon.ino = st.st_ino;
	__atomic_store_n(&mon.hooks, hooks_wanted(), __ATOMIC_RELAXED);
	atomic_store(&mon.lost, false);
	__atomic_store_n(&mon.fd, fd, __ATOMIC_RELEASE);
	arm(mon.hooks);
	err = spawn();
	if (err < 0) {
		arm(false);
		__atomic_store_n(&mon.fd, -1, __ATOMIC_RELAXED);
		close(fd);
		*why = "no thread for the monitor";
		return err;
	}
	*why = "userfaultfd";
	return 1;
}

int mrc_monitor_start(const char **why)
{
	int state;

	pthread_mutex_lock(&mon.start_lock);
	if (!mon.state)
		mon.state = start(&mon.why);
	if (mon.state == 1 && atomic_load(&mon.lost))
		mon.state = -ESTALE;
	state = mon.state;
	*why = state == -ESTALE ? mrc_monitor_lost_why : mon.why;
	pthread_mutex_unlock(&mon.start_lock);
	return state < 0 ? state : 0;
}

/* ---- the descriptor ------------------------------------------------------ */

/* The number still names the file the monitor opened: with watch_lock
 * held (or from mrc_monitor_alive()).  A loss is for good. */
static bool ours(void)
{
	struct stat st;
	int fd = __atomic_load_n(&mon.fd, __ATOMIC_RELAXED);

	if (atomic_load(&mon.lost) || fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && st.st_dev == mon.dev && st.st_ino == mon.ino)
		return true;
	atomic_store(&mon.lost, true);
	return false;
}

bool mrc_monitor_alive(void)
{
	bool alive;

	lock(&mon.watch_lock);
	alive = ours();
	unlock(&mon.watch_lock);
	return alive;
}

bool mrc_monitor_lost(void)
{
	return atomic_load(&mon.lost);
}

/* ---- watched ranges ------------------------------------------------------ */

/* Where watched ranges are, coarsely, for the hooks' question "does this
 * call touch a watched range?" without the lock or a walk of the list:
 * a count per 2 MiB region, hashed into a fixed table (a collision only
 * makes the hooks walk the list), and a count of ranges too large to
 * count region by region.  Changed with the list, under watch_lock. */
#define REGION_SHIFT 21
#define REGIONS 4096
#define REGIONS_MAX 512 /* regions a range is counted in, at most */

static unsigned int region_count[REGIONS];
static unsigned int regions_huge;

static size_t region_slot(uintptr_t region)
{
	return (size_t)((region * 0x9E3779B97F4A7C15ull) >> 52) % REGIONS;
}

static void count_regions(uintptr_t start, uintptr_t end, int by)
{
	uintptr_t first = start >> REGION_SHIFT,
		  last = (end - 1) >> REGION_SHIFT, r;

	if (last - first >= REGIONS_MAX) {
		__atomic_add_fetch(&regions_huge, (unsigned int)by,
				   __ATOMIC_RELEASE);
		return;
	}
	for (r = first; r <= last; r++)
		__atomic_add_fetch(&region_count[region_slot(r)],
				   (unsigned int)by, __ATOMIC_RELEASE);
}

/* False only when no watched range can overlap [start, end). */
static bool maybe_watched(uintptr_t start, uintptr_t end)
{
	uintptr_t first = start >> REGION_SHIFT,
		  last = (end - 1) >> REGION_SHIFT, r;

	if (__atomic_load_n(&regions_huge, __ATOMIC_ACQUIRE) ||
	    last - first >= REGIONS_MAX)
		return true;
	for (r = first; r <= last; r++)
		if (__atomic_load_n(&region_count[region_slot(r)],
				    __ATOMIC_ACQUIRE))
			return true;
	return false;
}

int mrc_monitor_watch(uintptr_t start, uintptr_t end, uint64_t *id)
{
	struct uffdio_register reg = {
		.range = {.start = start, .len = end - start},
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	int err = 0;

	lock(&mon.watch_lock);
	if (mon.nwatched == mon.max_watched)
		err = -ENOSPC;
	else if (!ours())
		err = -ESTALE;
	/* Always: a range another user watched may have been unmapped and
	 * mapped again since, and the kernel forgets a mapping's watch with
	 * the mapping. */
	else if (ioctl(mon.fd, UFFDIO_REGISTER, &reg) < 0)
		err = -errno;
	if (!err) {
		*id = ++mon.last_id;
		mon.watched[mon.nwatched++] = (struct range){start, end, *id};
		count_regions(start, end, 1);
	}
	unlock(&mon.watch_lock);
	return err;
}

static bool overlap(const struct range *r, uintptr_t start, uintptr_t end)
{
	return r->start < end && start < r->end;
}

/* Whether a watched range overlaps [start, end), watch_lock held; the
 * hooks and an announced change ask maybe_watched() first. */
static bool any_watched(uintptr_t start, uintptr_t end)
{
	size_t i;

	for (i = 0; i < mon.nwatched; i++)
		if (overlap(&mon.watched[i], start, end))
			return true;
	return false;
}

/* Cut @r out of the pieces [0, *n) (at most @cap): false when they would
 * not fit. */
static bool cut(struct range *pieces, size_t *n, size_t cap,
		const struct range *r)
{
	size_t i, count = *n;
	struct range p;

	for (i = 0; i < count; i++) {
		p = pieces[i];
		if (!overlap(r, p.start, p.end))
			continue;
		pieces[i] = (struct range){p.start, p.start};
		if (p.start < r->start)
			pieces[i].end = r->start;
		if (r->end < p.end) {
			if (*n == cap)
				return false;
			pieces[(*n)++] = (struct range){r->end, p.end};
		}
	}
	return true;
}

/* Unregister the parts of [start, end) that no remaining user watches;
 * when they are too scattered to list, leave them watched (harmless: an
 * event for a range no entry has changes nothing). */
static void unregister_unused(uintptr_t start, uintptr_t end)
{
	struct range pieces[32] = {{start, end}};
	struct uffdio_range r;
	size_t n = 1, i;

	for (i = 0; i < mon.nwatched; i++)
		if (!cut(pieces, &n, 32, &mon.watched[i]))
			return;
	for (i = 0; i < n; i++) {
		if (pieces[i].start == pieces[i].end)
			continue;
		r = (struct uffdio_range){pieces[i].start,
					  pieces[i].end - pieces[i].start};
		ioctl(mon.fd, UFFDIO_UNREGISTER, &r);
	}
}

void mrc_monitor_unwatch(uint64_t id)
{
	uintptr_t start, end;
	size_t i;

	lock(&mon.watch_lock);
	for (i = 0; i < mon.nwatched; i++)
		if (mon.watched[i].id == id)
			break;
	if (i < mon.nwatched) {
		start = mon.watched[i].start;
		end = mon.watched[i].end;
		count_regions(start, end, -1);
		mon.watched[i] = mon.watched[--mon.nwatched];
		if (ours())
			unregister_unused(start, end);
	}
	unlock(&mon.watch_lock);
}

/* ---- ranges given back to the program ------------------------------------ */

/* Grow [*start, *end) over every watched range it overlaps, until none
 * overlaps it in part: those are registered as one with the kernel (a
 * range unregistered is unregistered for every user). */
static void watched_hull(uintptr_t *start, uintptr_t *end)
{
	bool grew = true;
	size_t i;

	while (grew) {
		grew = false;
		for (i = 0; i < mon.nwatched; i++) {
			const struct range *r = &mon.watched[i];

			if (!overlap(r, *start, *end) ||
			    (*start <= r->start && r->end <= *end))
				continue;
			*start = r->start < *start ? r->start : *start;
			*end = r->end > *end ? r->end : *end;
			grew = true;
		}
	}
}

/* Stop watching every range that overlaps [start, end), watch_lock
 * held; each is unregistered as it was registered (the hull may hold
 * mappings the kernel will not register, which would fail the whole
 * call). */
static void unwatch_all(uintptr_t start, uintptr_t end)
{
	struct uffdio_range r;
	size_t i = 0;

	while (i < mon.nwatched) {
		if (!overlap(&mon.watched[i], start, end)) {
			i++;
			continue;
		}
		r = (struct uffdio_range){mon.watched[i].start,
					  mon.watched[i].end -
						  mon.watched[i].start};
		if (ours())
			ioctl(mon.fd, UFFDIO_UNREGISTER, &r);
		count_regions(mon.watched[i].start, mon.watched[i].end, -1);
		mon.watched[i] = mon.watched[--mon.nwatched];
	}
}

void mrc_monitor_release(uintptr_t start, uintptr_t end)
{
	size_t i;

	lock(&mon.watch_lock);
	watched_hull(&start, &end);
	unlock(&mon.watch_lock);
	lock(&mon.list_lock);
	for (i = 0; i < MRC_MONITOR_CLIENTS; i++)
		if (mon.clients[i].ops)
			mon.clients[i].ops->release(mon.clients[i].arg, start,
						    end);
	unlock(&mon.list_lock);
	lock(&mon.watch_lock);
	watched_hull(&start, &end);
	unwatch_all(start, end);
	unlock(&mon.watch_lock);
	/* A miss on another thread may have watched a range here between
	 * the clients' release and unwatch_all(), or may admit an entry it
	 * planned before: as a change, that miss is refused and an entry
	 * admitted meanwhile leaves the index. */
	tell_clients(start, end);
}

/* ---- changes the program announces --------------------------------------- */

/* Stop watching [start, end) for the change: the kernel then raises no
 * event for it and the changing thread does not wait for the monitor.
 * Entries over it leave their caches through the rings, and whoever
 * watches it again registers it again. */
static void unregister_for_change(uintptr_t start, uintptr_t end)
{
	struct uffdio_range r = {start, end - start};

	if (!maybe_watched(start, end))
		return;
	lock(&mon.watch_lock);
	if (any_watched(start, end) && ours())
		ioctl(mon.fd, UFFDIO_UNREGISTER, &r);
	unlock(&mon.watch_lock);
}

void mrc_monitor_changing(uintptr_t start, uintptr_t end)
{
	size_t i;

	lock(&mon.flight_lock);
	for (i = 0; i < MRC_MONITOR_FLYING; i++)
		if (mon.flying[i].start == mon.flying[i].end)
			break;
	if (i < MRC_MONITOR_FLYING)
		mon.flying[i] = (struct range){start, end};
	else
		mon.flying_over++;
	__atomic_store_n(&mon.nflying, mon.nflying + 1, __ATOMIC_SEQ_CST);
	unlock(&mon.flight_lock);
	tell_clients(start, end);
	unregister_for_change(start, end);
}

void mrc_monitor_changed(uintptr_t start, uintptr_t end)
{
	bool was = true; /* the change was in flight */
	size_t i;

	/* Again: a registration that began during the change sees it. */
	tell_clients(start, end);
	lock(&mon.flight_lock);
	for (i = 0; i < MRC_MONITOR_FLYING; i++)
		if (mon.flying[i].start == start && mon.flying[i].end == end &&
		    start != end)
			break;
	if (i < MRC_MONITOR_FLYING)
		mon.flying[i] = (struct range){0, 0};
	else if (mon.flying_over)
		mon.flying_over--;
	else
		was = false;
	if (was)
		__atomic_store_n(&mon.nflying, mon.nflying - 1,
				 __ATOMIC_SEQ_CST);
	unlock(&mon.flight_lock);
}

bool mrc_monitor_in_flight(uintptr_t start, uintptr_t end)
{
	bool in = false;
	size_t i;

	if (!__atomic_load_n(&mon.nflying, __ATOMIC_SEQ_CST))
		return false;
	lock(&mon.flight_lock);
	in = mon.flying_over > 0;
	for (i = 0; i < MRC_MONITOR_FLYING && !in; i++)
		in = overlap(&mon.flying[i], start, end);
	unlock(&mon.flight_lock);
	return in;
}

/* ---- the program's calls, seen by the hooks ------------------------------ */

bool mrc_monitor_wanted(uintptr_t start, uintptr_t end, bool always)
{
	if (held || __atomic_load_n(&mon.fd, __ATOMIC_ACQUIRE) < 0 ||
	    !__atomic_load_n(&mon.hooks, __ATOMIC_RELAXED) ||
	    atomic_load(&mon.lost))
		return false;
	return always || maybe_watched(start, end);
}

bool mrc_monitor_hooked(uintptr_t start, uintptr_t end, bool always)
{
	bool any;

	if (!mrc_monitor_wanted(start, end, always))
		return false;
	if (always)
		return true;
	lock(&mon.watch_lock);
	any = any_watched(start, end);
	unlock(&mon.watch_lock);
	return any;
}

bool mrc_monitor_hooks_on(void)
{
	return __atomic_load_n(&mon.hooks, __ATOMIC_RELAXED);
}

/* Through this object's own call slots, bound as the program's are: to
 * librdmad's hooks where librdmad comes before libc in the lookup order,
 * to libc's calls where it was opened after libc, to another library's
 * calls where that library patched the slots since. */
bool mrc_monitor_hooks_reached(void)
{
	int saved = errno;
	bool reached = madvise(MRC_PROBE_ADDR, 0, MRC_PROBE_ADVICE) ==
			       MRC_PROBE_ANSWER &&
		       munmap(MRC_PROBE_ADDR, 0) == MRC_PROBE_ANSWER;

	errno = saved;
	return reached;
}

/* Cancellation deferred as well as disabled, first: the cancel signal's
 * handler in glibc 2.34-2.36 (Debian 12's) acts on an asynchronous type
 * without looking at the state again, so a cancel sent before the state
 * changed could still end the thread inside (a ring slot claimed, never
 * published: every writer after it waits for good).  Back in the reverse
 * order. */
void mrc_monitor_hush(struct mrc_hush *h)
{
	sigset_t all;

	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &h->type);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &h->cancel);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &h->old);
}

void mrc_monitor_unhush(const struct mrc_hush *h)
{
	pthread_sigmask(SIG_SETMASK, &h->old, NULL);
	pthread_setcancelstate(h->cancel, NULL);
	pthread_setcanceltype(h->type, NULL);
}

unsigned long mrc_monitor_events(void)
{
	return atomic_load(&mon.events);
}

/* ---- waiting for the thread ---------------------------------------------- */

/* Until the thread ends the busy spell it is in: a sleep on the batch
 * count's futex word, no lock, so a thread ended here (cancelled, or by
 * its handler's pthread_exit()) holds nothing, and the wake is for every
 * waiter, so none can take another's.  The nap bounds a sleep whose wake
 * came between the look and the sleep's start (the futex compares the
 * count again, so that is only a spell that ended without a count). */
void mrc_monitor_quiesce(void)
{
	struct timespec nap = {0, 10 * 1000 * 1000};
	uint32_t seen;

	if (!mrc_monitor_busy())
		return;
	seen = __atomic_load_n(&mon.batches, __ATOMIC_SEQ_CST);
	while (mrc_monitor_busy() &&
	       __atomic_load_n(&mon.batches, __ATOMIC_SEQ_CST) == seen)
		syscall(SYS_futex, &mon.batches, FUTEX_WAIT_PRIVATE, seen, &nap,
			NULL, 0);
}

/* ---- the clients, and fork ----------------------------------------------- */

/* fork's order: the list, then each client, then the watched ranges. */
static void lock_clients(bool lock)
{
	const struct client *c;

	for (c = mon.clients; c < mon.clients + MRC_MONITOR_CLIENTS; c++)
		if (c->ops && lock)
			c->ops->lock(c->arg);
		else if (c->ops)
			c->ops->unlock(c->arg);
}

/* fork()'s thread keeps its signals blocked while it holds the locks:
 * a handler's hooked call there would find them held. */
static __thread sigset_t fork_mask;

static void atfork_prepare(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &fork_mask);
	pthread_mutex_lock(&mon.start_lock);
	pthread_mutex_lock(&mon.list_lock);
	lock_clients(true);
	lock(&mon.watch_lock);
	lock(&mon.flight_lock);
}

static void atfork_parent(void)
{
	unlock(&mon.flight_lock);
	unlock(&mon.watch_lock);
	lock_clients(false);
	pthread_mutex_unlock(&mon.list_lock);
	pthread_mutex_unlock(&mon.start_lock);
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

/* A child has no monitor thread and its mappings are no longer watched
 * (the file has no UFFD_FEATURE_EVENT_FORK): it forgets the parent's
 * monitor, and a cache the child makes starts one of its own. */
static void forget_parent(void)
{
	if (mon.fd >= 0 && !atomic_load(&mon.lost))
		close(mon.fd);
	arm(false);
	__atomic_store_n(&mon.fd, -1, __ATOMIC_RELAXED);
	if (mon.state == 1 || mon.state == -ESTALE)
		mon.state = 0;
	mon.nwatched = 0;
	memset(region_count, 0, sizeof(region_count));
	regions_huge = 0;
	memset(mon.flying, 0, sizeof(mon.flying));
	mon.flying_over = 0;
	mon.nflying = 0;
	__atomic_store_n(&mrc_monitor_reading, 0, __ATOMIC_SEQ_CST);
}

/* The child's token page reads zero again: it has been told. */
static void told(void)
{
	uint64_t *t = __atomic_load_n(&mrc_hook_line.token, __ATOMIC_RELAXED);

	if (t)
		__atomic_store_n(t, MRC_TOKEN, __ATOMIC_RELAXED);
}

/* fork()'s handler, with every lock prepare took: the clients forget
 * their entries. */
static void atfork_child(void)
{
	size_t i;

	forget_parent();
	unlock(&mon.flight_lock);
	unlock(&mon.watch_lock);
	for (i = 0; i < MRC_MONITOR_CLIENTS; i++)
		if (mon.clients[i].ops) {
			mon.clients[i].ops->forked(mon.clients[i].arg);
			mon.clients[i].ops->unlock(mon.clients[i].arg);
		}
	pthread_mutex_unlock(&mon.list_lock);
	pthread_mutex_unlock(&mon.start_lock);
	told();
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

/* A child of a raw clone(): no handler ran, and the locks may be held by
 * threads of the parent that the child does not have.  The child is
 * alone in its process, so every lock is made afresh.  Only the first
 * caller does it (a compare-and-swap of the token). */
void mrc_monitor_adopt_clone(void)
{
	uint64_t *t = __atomic_load_n(&mrc_hook_line.token, __ATOMIC_RELAXED);
	uint64_t seen = __atomic_load_n(t, __ATOMIC_RELAXED);
	size_t i;

	/* MRC_TOKEN - 1: another thread of the child is at it. */
	if (seen == MRC_TOKEN || seen == MRC_TOKEN - 1 ||
	    !__atomic_compare_exchange_n(t, &seen, MRC_TOKEN - 1, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	held = 0;
	pthread_mutex_init(&mon.start_lock, NULL);
	pthread_mutex_init(&mon.list_lock, NULL);
	pthread_mutex_init(&mon.watch_lock, NULL);
	pthread_mutex_init(&mon.flight_lock, NULL);
	forget_parent();
	for (i = 0; i < MRC_MONITOR_CLIENTS; i++)
		if (mon.clients[i].ops)
			mon.clients[i].ops->cloned(mon.clients[i].arg);
	told();
}

/* The token page: private anonymous memory that every child gets
 * zeroed (MADV_WIPEONFORK, Linux 4.14).  The madvise() is not one the
 * hooks announce. */
static void make_token(void)
{
	size_t size = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t *t = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (t == MAP_FAILED)
		return;
	if (syscall(SYS_madvise, t, size, MADV_WIPEONFORK) < 0) {
		munmap(t, size);
		return;
	}
	*t = MRC_TOKEN;
	__atomic_store_n(&mrc_hook_line.token, t, __ATOMIC_RELEASE);
}

static void install_atfork(void)
{
	make_token();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int mrc_monitor_add(const struct mrc_monitor_client *client, void *arg)
{
	size_t i;
	int err = -ENOSPC;

	pthread_once(&atfork_once, install_atfork);
	pthread_mutex_lock(&mon.list_lock);
	for (i = 0; i < MRC_MONITOR_CLIENTS; i++)
		if (!mon.clients[i].ops) {
			__atomic_store_n(&mon.clients[i].arg, arg,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&mon.clients[i].ops, client,
					 __ATOMIC_RELEASE);
			err = 0;
			break;
		}
	pthread_mutex_unlock(&mon.list_lock);
	return err;
}

void mrc_monitor_remove(void *arg)
{
	size_t i;

	pthread_mutex_lock(&mon.list_lock);
	for (i = 0; i < MRC_MONITOR_CLIENTS; i++)
		if (mon.clients[i].ops && mon.clients[i].arg == arg)
			__atomic_store_n(&mon.clients[i].ops, NULL,
					 __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&mon.list_lock);
	/* The thread may have read the slot before it was cleared: it did
	 * so in a batch that is still going on. */
	mrc_monitor_quiesce();
}

void mrc_monitor_each(void (*fn)(void *arg, const void *data), const void *data)
{
	size_t i;

	pthread_mutex_lock(&mon.list_lock);
	for (i = 0; i < MRC_MONITOR_CLIENTS; i++)
		if (mon.clients[i].ops)
			fn(mon.clients[i].arg, data);
	pthread_mutex_unlock(&mon.list_lock);
}
