/* SPDX-License-Identifier: MIT */
/*
 * The reaper: see reaper.h.  Sockets go to the closer (closer.c, a table
 * of its own).  Other files go to the remover: a process that shares
 * rdmad's table, joined to it by two pipes: jobs go down one (a
 * descriptor and the uid it is charged to, 8 bytes, written whole as
 * pipes promise for fewer than PIPE_BUF), the same job comes back up the
 * other once closed.  The descriptor numbers mean the same in both
 * processes because they share one table.  A job the pipe cannot take
 * (the remover is stuck and the pipe full) waits in a backlog until the
 * pipe is writable again.  A helper that dies (killed by hand) is started
 * again.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
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

struct reaper_job {
	int32_t fd;
	uint32_t uid;
};

/* A uid's descriptors handed over: how many are still in rdmad's table
 * (the remover's, and the closer's not sent yet), how many are not let
 * go of yet (those, and the closer's in its queue or its table). */
struct reaper_count {
	uid_t uid;
	unsigned int in_table;
	unsigned int waiting;
	uint64_t since_ms; /* its last progress, or its first job after */
};

struct reaper {
	struct event_base *base;
	struct closer *closer;
	reaper_progress_fn progress;
	void *arg;
	unsigned int removing; /* handed to the remover, not closed */
	pid_t parent;
	pid_t undertaker;
	pid_t pid;
	int pidfd;
	int down[2]; /* jobs: [0] the reaper reads, [1] rdmad writes */
	int up[2];   /* done: [0] rdmad reads, [1] the reaper writes */
	struct event *ev_done;
	struct event *ev_backlog; /* down[1] writable again */
	struct event *ev_exit;	  /* the reaper's pidfd */
	struct reaper_job *backlog;
	size_t nbacklog, backlog_cap;
	struct reaper_count *counts;
	size_t ncounts, counts_cap;
};

/* ---- the reaper process ---- */

static void reaper_loop(const struct reaper *r)
{
	struct reaper_job jobs[64];
	ssize_t n;

	/* rdmad's signal handlers write to libevent's socket in the shared
	 * table: none may run here, and SIGTERM ends it (systemd's stop). */
	closer_tick_init();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != r->parent)
		_exit(0);
	prctl(PR_SET_NAME, "rdmad-reaper");
	/* Jobs are written whole (a multiple of 8 bytes, at most PIPE_BUF):
	 * a read gets whole jobs, acked together once closed. */
	for (;;) {
		n = read(r->down[0], jobs, sizeof(jobs));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(jobs[0]))
			_exit(0);
		for (size_t i = 0; i < (size_t)n / sizeof(jobs[0]); i++)
			close(jobs[i].fd);
		while (write(r->up[1], jobs, (size_t)n) < 0 && errno == EINTR)
			;
	}
}

/* A process with rdmad's descriptor table, not its memory: fork's
 * semantics plus CLONE_FILES (the raw call: glibc's fork() takes no
 * flags).  Only async-signal-safe calls follow in the child. */
static pid_t clone_files(void)
{
#if defined(__s390__) || defined(__CRIS__)
	return (pid_t)syscall(SYS_clone, 0, CLONE_FILES | SIGCHLD, 0, 0, 0);
#else
	return (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
#endif
}

/* A socket has no ->flush: handing it over never waits (closer.h).  Any
 * other file may (FUSE sends FLUSH on every close(2), last or not), so
 * only a process that shares rdmad's table may take it out of there.
 * getsockopt() asks the socket layer only, never the file's own code. */
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
	pid_t pid = clone_files();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		undertaker_loop(r->parent);
	r->undertaker = pid;
	return 0;
}

static int start_reaper(struct reaper *r)
{
	pid_t pid = clone_files();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		reaper_loop(r);
	r->pid = pid;
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (r->pidfd >= 0)
		fcntl(r->pidfd, F_SETFD, FD_CLOEXEC);
	return 0;
}

/* ---- what waits, per uid ---- */

static struct reaper_count *count_of(const struct reaper *r, uid_t uid)
{
	for (size_t i = 0; i < r->ncounts; i++)
		if (r->counts[i].uid == uid)
			return &r->counts[i];
	return NULL;
}

static void count_add(struct reaper *r, uid_t uid)
{
	struct reaper_count *c = count_of(r, uid), *more;

	if (!c && r->ncounts == r->counts_cap) {
		size_t cap = r->counts_cap ? 2 * r->counts_cap : 8;

		more = reallocarray(r->counts, cap, sizeof(*more));
		if (!more)
			return; /* uncounted: admitted as if nothing waited */
		r->counts = more;
		r->counts_cap = cap;
	}
	if (!c) {
		c = &r->counts[r->ncounts++];
		*c = (struct reaper_count){.uid = uid,
					   .since_ms = clock_monotonic_ms()};
	}
	c->in_table++;
	c->waiting++;
}

static unsigned int minus(unsigned int a, unsigned int b)
{
	return a > b ? a - b : 0;
}

/* @n of @uid's left rdmad's table (@let_go: and were let go of too). */
static void count_done(struct reaper *r, uid_t uid, unsigned int n, bool let_go)
{
	struct reaper_count *c = count_of(r, uid);

	if (!c)
		return;
	c->in_table = minus(c->in_table, n);
	if (!let_go)
		return;
	c->waiting = minus(c->waiting, n);
	c->since_ms = clock_monotonic_ms();
	if (!c->waiting)
		*c = r->counts[--r->ncounts];
}

unsigned int reaper_held_by(const struct reaper *r, uid_t uid)
{
	const struct reaper_count *c = r ? count_of(r, uid) : NULL;

	return c ? c->in_table : 0;
}

unsigned int reaper_waiting(const struct reaper *r, uid_t uid)
{
	const struct reaper_count *c = r ? count_of(r, uid) : NULL;

	return c ? c->waiting : 0;
}

unsigned int reaper_held(const struct reaper *r)
{
	return r ? r->removing + closer_held(r->closer) : 0;
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
				.uid = c->uid,
				.pending = c->waiting,
				.quiet_ms = now - c->since_ms};
	}
	return n;
}

static void made_progress(struct reaper *r, uid_t uid, unsigned int n)
{
	count_done(r, uid, n, true);
	if (r->progress)
		r->progress(r->arg);
}

/* ---- the remover: files that are not sockets ---- */

/* Up to PIPE_BUF bytes of whole jobs from the front of the backlog, in
 * one write (atomic): how many went. */
static size_t send_jobs(struct reaper *r)
{
	size_t n = r->nbacklog < PIPE_BUF / sizeof(struct reaper_job)
			   ? r->nbacklog
			   : PIPE_BUF / sizeof(struct reaper_job);
	ssize_t w = write(r->down[1], r->backlog, n * sizeof(*r->backlog));

	return w > 0 ? (size_t)w / sizeof(*r->backlog) : 0;
}

static void keep_in_backlog(struct reaper *r, const struct reaper_job *job)
{
	struct reaper_job *more;

	if (r->nbacklog == r->backlog_cap) {
		size_t cap = r->backlog_cap ? 2 * r->backlog_cap : 64;

		more = reallocarray(r->backlog, cap, sizeof(*more));
		if (!more) {
			/* Kept open rather than closed here: a leak beats
			 * a loop stuck in a client's close. */
			log_warnx("reaper: out of memory, descriptor %d kept",
				  job->fd);
			return;
		}
		r->backlog = more;
		r->backlog_cap = cap;
	}
	r->backlog[r->nbacklog++] = *job;
	event_add(r->ev_backlog, NULL);
}

/* Sent from on_backlog(), once the loop turns: the descriptors of one
 * datagram go down the pipe in one write. */
static void remove_file(struct reaper *r, int fd, uid_t uid)
{
	struct reaper_job job = {.fd = fd, .uid = uid};

	r->removing++;
	keep_in_backlog(r, &job);
}

void reaper_put(struct reaper *r, int fd, uid_t uid)
{
	if (fd < 0)
		return;
	count_add(r, uid);
	if (is_socket(fd))
		closer_put(r->closer, fd, uid);
	else
		remove_file(r, fd, uid);
}

static void on_backlog(evutil_socket_t fd, short what, void *arg)
{
	struct reaper *r = arg;
	size_t sent;

	while (r->nbacklog && (sent = send_jobs(r)) > 0) {
		r->nbacklog -= sent;
		memmove(r->backlog, r->backlog + sent,
			r->nbacklog * sizeof(*r->backlog));
	}
	if (!r->nbacklog)
		event_del(r->ev_backlog);
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct reaper *r = arg;
	struct reaper_job jobs[64];
	ssize_t n;

	while ((n = read(r->up[0], jobs, sizeof(jobs))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(jobs[0]); i++) {
			r->removing -= r->removing > 0;
			made_progress(r, jobs[i].uid, 1);
		}
	}
}

static void on_sent(uid_t uid, unsigned int n, void *arg)
{
	count_done(arg, uid, n, false);
}

static void on_closed(uid_t uid, unsigned int n, void *arg)
{
	made_progress(arg, uid, n);
}

static const struct closer_ops closer_ops = {
	.sent = on_sent,
	.done = on_closed,
};

/* Its remover died (only a kill does that): reap it and start another on
 * the same pipes.  The job it was closing, if any, stays open. */
static void on_reaper_exit(evutil_socket_t fd, short what, void *arg)
{
	struct reaper *r = arg;
	int r2;

	waitpid(r->pid, NULL, WNOHANG);
	event_del(r->ev_exit);
	close(r->pidfd);
	r->pidfd = -1;
	r2 = start_reaper(r);
	if (r2 < 0) {
		log_warnc(r2, "reaper died and cannot be started again");
		return;
	}
	log_warnx("reaper died: started again as pid %d", (int)r->pid);
	if (r->pidfd >= 0) {
		event_assign(r->ev_exit, r->base, r->pidfd,
			     EV_READ | EV_PERSIST, on_reaper_exit, r);
		event_add(r->ev_exit, NULL);
	}
}

/* ---- connections ---- */

void reaper_close_connection(struct reaper *r, int fd, uid_t uid)
{
	/* The client sees the end at once, and can queue nothing more
	 * (its sends fail with EPIPE); what it queued goes with the socket
	 * to the closer, never into rdmad's table. */
	shutdown(fd, SHUT_RDWR);
	count_add(r, uid);
	closer_put(r->closer, fd, uid);
}

/* ---- start and stop ---- */

static int pipes(struct reaper *r)
{
	if (pipe2(r->down, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(r->up, O_CLOEXEC) < 0)
		return -errno;
	/* rdmad's ends never block; the reaper's do. */
	if (fcntl(r->down[1], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(r->up[0], F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int events(struct reaper *r)
{
	r->ev_done =
		event_new(r->base, r->up[0], EV_READ | EV_PERSIST, on_done, r);
	r->ev_backlog = event_new(r->base, r->down[1], EV_WRITE | EV_PERSIST,
				  on_backlog, r);
	r->ev_exit = event_new(r->base, r->pidfd, EV_READ | EV_PERSIST,
			       on_reaper_exit, r);
	if (!r->ev_done || !r->ev_backlog || !r->ev_exit ||
	    event_add(r->ev_done, NULL) < 0)
		return -ENOMEM;
	if (r->pidfd >= 0 && event_add(r->ev_exit, NULL) < 0)
		return -ENOMEM;
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
	r->pid = r->undertaker = -1;
	r->pidfd = -1;
	r->down[0] = r->down[1] = r->up[0] = r->up[1] = -1;
	/* The closer first, while rdmad's table holds nothing of a
	 * client's: its child lets go of its copy of that table. */
	r->closer = closer_new(base, &closer_ops, r);
	err = r->closer ? pipes(r) : -errno;
	if (err == 0)
		err = start_reaper(r);
	if (err == 0)
		err = start_undertaker(r);
	if (err == 0)
		err = events(r);
	if (err < 0) {
		reaper_free(r);
		errno = -err;
		return NULL;
	}
	return r;
}

static void free_event(struct event *ev)
{
	if (ev)
		event_free(ev);
}

void reaper_free(struct reaper *r)
{
	if (!r)
		return;
	if (r->undertaker > 0) {
		kill(r->undertaker, SIGKILL);
		waitpid(r->undertaker, NULL, 0);
	}
	if (r->pid > 0) {
		/* One stuck in a close dies when it returns; rdmad does not
		 * wait for that. */
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, WNOHANG);
	}
	closer_free(r->closer);
	free_event(r->ev_done);
	free_event(r->ev_backlog);
	free_event(r->ev_exit);
	for (int i = 0; i < 2; i++) {
		if (r->down[i] >= 0)
			close(r->down[i]);
		if (r->up[i] >= 0)
			close(r->up[i]);
	}
	if (r->pidfd >= 0)
		close(r->pidfd);
	free(r->backlog);
	free(r->counts);
	free(r);
}
