/* SPDX-License-Identifier: MIT */
/*
 * The reaper (reaper.h): where what clients hand over goes, and what
 * waits per owner.  REAPER_LANES lanes, each a pair of removers
 * (remover.h) that share rdmad's table: one for sockets (the closer),
 * one for other files.  An owner with descriptors waiting keeps its lane
 * until they are all let go of; an owner with none takes a lane that
 * serves nobody else, or, when every lane is taken, the one with the
 * fewest descriptors waiting.  So a close the kernel makes slow (a FUSE
 * FLUSH nobody answers, AF_PACKET's grace period in packet_release(), a
 * unix socket carrying a queue of those) holds its owner's lane, not
 * the others, until more owners than lanes are slow at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "closer.h"
#include "log.h"
#include "reaper.h"
#include "remover.h"

/* One owner's descriptors handed over and not let go of yet: all in
 * rdmad's table, where its lane's removers close them. */
struct reaper_count {
	uid_t owner;
	unsigned int lane;
	unsigned int waiting;
	unsigned int closing; /* of those, with its closer */
	uint64_t since_ms;    /* its last progress, or its first job after */
};

struct reaper_lane {
	struct remover *closer;	 /* sockets */
	struct remover *remover; /* other files */
	unsigned int owners;	 /* with descriptors waiting in this lane */
	unsigned int waiting;	 /* theirs, in all */
};

struct reaper {
	struct event_base *base;
	reaper_progress_fn progress;
	void *arg;
	pid_t parent;
	pid_t undertaker;
	struct reaper_lane lanes[REAPER_LANES];
	struct reaper_count *counts;
	size_t ncounts, counts_cap;
};

/* ---- the undertaker ---- */

/* A socket has no ->flush: a close(2) that is not its last never waits,
 * and its last is a closer's, with the tick (closer.h).  Any other file
 * may (FUSE sends FLUSH on every close(2), last or not): a remover's, no
 * tick.  getsockopt() asks the socket layer only, never the file's own
 * code. */
static bool is_socket(int fd)
{
	int type;
	socklen_t len = sizeof(type);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0;
}

/*
 * The undertaker.  rdmad killed while the remover is stuck in a close
 * (a FUSE FLUSH nobody answers): the remover keeps rdmad's table alive,
 * and with it every client connection and the listener.  The undertaker
 * shares that table too, sleeps until rdmad is gone, then closes every
 * socket in it (no ->flush; what is queued on them goes with the tick),
 * so that clients see the end at once and a new rdmad can serve; files
 * that are not sockets stay with the remover.
 */
static void close_sockets(void)
{
	char buf[4096];
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	while (dir >= 0 &&
	       (n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			const char *name = buf + off + 19; /* d_name */
			unsigned short reclen;
			int fd = 0;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (*name < '0' || *name > '9')
				continue;
			while (*name >= '0' && *name <= '9')
				fd = fd * 10 + (*name++ - '0');
			if (fd != dir && is_socket(fd))
				close(fd);
		}
	}
}

static void undertaker_loop(pid_t parent)
{
	sigset_t hup;

	closer_tick_init();
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigprocmask(SIG_BLOCK, &hup, NULL);
	prctl(PR_SET_PDEATHSIG, SIGHUP);
	prctl(PR_SET_NAME, "rdmad-undertake");
	while (getppid() == parent)
		sigwaitinfo(&hup, NULL);
	/* systemd's SIGTERM to what is left of the unit must not cut it
	 * short: only the tick gets through. */
	sigfillset(&hup);
	sigdelset(&hup, SIGALRM);
	sigprocmask(SIG_SETMASK, &hup, NULL);
	closer_tick(true);
	close_sockets();
	_exit(0);
}

static int start_undertaker(struct reaper *r)
{
	pid_t pid = remover_clone_files();

	if (pid < 0)
		return pid;
	if (pid == 0)
		undertaker_loop(r->parent);
	r->undertaker = pid;
	return 0;
}

/* ---- what waits, per owner ---- */

static struct reaper_count *count_of(const struct reaper *r, uid_t owner)
{
	for (size_t i = 0; i < r->ncounts; i++)
		if (r->counts[i].owner == owner)
			return &r->counts[i];
	return NULL;
}

/* The lane for an owner with nothing waiting: one nobody else's
 * descriptors wait in, else the least loaded. */
static unsigned int free_lane(const struct reaper *r)
{
	unsigned int best = 0;

	for (unsigned int i = 0; i < REAPER_LANES; i++) {
		if (!r->lanes[i].owners)
			return i;
		if (r->lanes[i].waiting < r->lanes[best].waiting)
			best = i;
	}
	return best;
}

/* One more of @owner's, in its lane: the count (NULL: out of memory,
 * then it goes uncounted through lane 0). */
static struct reaper_count *count_add(struct reaper *r, uid_t owner)
{
	struct reaper_count *c = count_of(r, owner), *more;

	if (!c && r->ncounts == r->counts_cap) {
		size_t cap = r->counts_cap ? 2 * r->counts_cap : 8;

		more = reallocarray(r->counts, cap, sizeof(*more));
		if (!more)
			return NULL;
		r->counts = more;
		r->counts_cap = cap;
	}
	if (!c) {
		c = &r->counts[r->ncounts++];
		*c = (struct reaper_count){.owner = owner,
					   .lane = free_lane(r),
					   .since_ms = clock_monotonic_ms()};
		r->lanes[c->lane].owners++;
	}
	c->waiting++;
	r->lanes[c->lane].waiting++;
	return c;
}

static unsigned int minus(unsigned int a, unsigned int b)
{
	return a > b ? a - b : 0;
}

/* @n of @owner's were let go of. */
static void count_done(struct reaper *r, uid_t owner, unsigned int n)
{
	struct reaper_count *c = count_of(r, owner);
	struct reaper_lane *lane;

	if (!c)
		return;
	n = n < c->waiting ? n : c->waiting;
	lane = &r->lanes[c->lane];
	c->waiting -= n;
	lane->waiting = minus(lane->waiting, n);
	c->since_ms = clock_monotonic_ms();
	if (c->waiting)
		return;
	lane->owners = minus(lane->owners, 1);
	*c = r->counts[--r->ncounts];
}

unsigned int reaper_waiting(const struct reaper *r, uid_t owner)
{
	const struct reaper_count *c = r ? count_of(r, owner) : NULL;

	return c ? c->waiting : 0;
}

unsigned int reaper_held(const struct reaper *r)
{
	unsigned int n = 0;

	for (unsigned int i = 0; r && i < REAPER_LANES; i++)
		n += remover_held(r->lanes[i].remover) +
		     remover_held(r->lanes[i].closer);
	return n;
}

size_t reaper_behind(const struct reaper *r, struct reaper_behind *ret,
		     size_t max)
{
	uint64_t now = clock_monotonic_ms();
	size_t n = 0;

	for (size_t i = 0; r && i < r->ncounts && n < max; i++) {
		const struct reaper_count *c = &r->counts[i];

		if (now - c->since_ms >= REAPER_BEHIND_MS)
			ret[n++] = (struct reaper_behind){
				.owner = c->owner,
				.pending = c->waiting,
				.quiet_ms = now - c->since_ms};
	}
	return n;
}

static void on_let_go(uid_t owner, unsigned int n, void *arg)
{
	struct reaper *r = arg;

	count_done(r, owner, n);
	if (r->progress)
		r->progress(r->arg);
}

static void on_closed(uid_t owner, unsigned int n, void *arg)
{
	struct reaper_count *c = count_of(arg, owner);

	if (c)
		c->closing = minus(c->closing, n);
	on_let_go(owner, n, arg);
}

bool reaper_flooded(const struct reaper *r)
{
	for (size_t i = 0; r && i < r->ncounts; i++)
		if (r->counts[i].closing >= REAPER_MAX_CLOSING)
			return true;
	return false;
}

/* ---- handing over ---- */

static struct reaper_lane *lane_of(struct reaper *r, uid_t owner, bool closing)
{
	struct reaper_count *c = count_add(r, owner);

	if (c && closing)
		c->closing++;
	return &r->lanes[c ? c->lane : 0];
}

/* A passed TCP socket's last close must not linger: a reset at once
 * (SO_LINGER {1, 0}; tcp_close() then sends RST and never waits).  On
 * other sockets the option changes nothing that matters here. */
static void never_linger(int fd)
{
	struct linger l = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

void reaper_put(struct reaper *r, int fd, uid_t owner)
{
	struct reaper_lane *lane;

	if (fd < 0)
		return;
	lane = lane_of(r, owner, is_socket(fd));
	if (is_socket(fd)) {
		never_linger(fd);
		remover_put(lane->closer, fd, owner);
	} else {
		remover_put(lane->remover, fd, owner);
	}
}

/* Anything queued on the connection @fd, shut for reading?  A peek with
 * no room for control data installs nothing: the kernel drops its own
 * extra references to the files a datagram carries (not the last: the
 * datagram keeps them) and says MSG_CTRUNC.  An error says yes: the
 * closer closes it, as it would anything. */
static bool anything_queued(int fd)
{
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n = recvmsg(fd, &msg, MSG_PEEK | MSG_DONTWAIT);

	if (n < 0)
		return errno != EAGAIN;
	return n > 0 || (msg.msg_flags & MSG_CTRUNC);
}

bool reaper_close_connection(struct reaper *r, int fd, uid_t owner)
{
	/* The client sees the end at once, and can queue nothing more
	 * (its sends fail with EPIPE, unix_shutdown() under the peer's
	 * lock): what the peek finds is all there will be. */
	shutdown(fd, SHUT_RDWR);
	if (!anything_queued(fd)) {
		close(fd);
		return false;
	}
	remover_put(lane_of(r, owner, true)->closer, fd, owner);
	return true;
}

/* ---- start and stop ---- */

static int start_lanes(struct reaper *r)
{
	for (unsigned int i = 0; i < REAPER_LANES; i++) {
		struct reaper_lane *lane = &r->lanes[i];

		lane->closer =
			remover_new(r->base, REMOVER_SOCKETS, on_closed, r);
		if (!lane->closer)
			return -errno;
		lane->remover =
			remover_new(r->base, REMOVER_FILES, on_let_go, r);
		if (!lane->remover)
			return -errno;
	}
	return 0;
}

struct reaper *reaper_new(struct event_base *base, reaper_progress_fn progress,
			  void *arg)
{
	struct reaper *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return NULL;
	r->base = base;
	r->progress = progress;
	r->arg = arg;
	r->parent = getpid();
	r->undertaker = -1;
	err = start_lanes(r);
	if (err == 0)
		err = start_undertaker(r);
	if (err < 0) {
		reaper_free(r);
		errno = -err;
		return NULL;
	}
	return r;
}

void reaper_free(struct reaper *r)
{
	if (!r)
		return;
	if (r->undertaker > 0) {
		kill(r->undertaker, SIGKILL);
		waitpid(r->undertaker, NULL, 0);
	}
	for (unsigned int i = 0; i < REAPER_LANES; i++) {
		remover_free(r->lanes[i].remover);
		remover_free(r->lanes[i].closer);
	}
	free(r->counts);
	free(r);
}
