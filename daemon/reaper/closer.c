/* SPDX-License-Identifier: MIT */
/*
 * The closer (closer.h): a process with a table of its own that lets go
 * of sockets clients leave with rdmad.  One SOCK_SEQPACKET pair joins rdmad and
 * the closer.  Down it go batches, each a struct closer_msg (the uid and the
 * count) with that many descriptors of one uid (SCM_RIGHTS), or a marker
 * (a count of 0); up it comes the same struct for each batch let go of.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "closer.h"
#include "log.h"
#include "wire.h"

struct closer_msg {
	uint32_t uid;
	uint32_t n;
};

struct closer_job {
	int fd;
	uid_t uid;
};

struct closer {
	struct event_base *base;
	const struct closer_ops *ops;
	void *arg;
	pid_t parent;
	pid_t pid;
	int pidfd;
	int sock;		 /* rdmad's end */
	struct event *ev_read;	 /* acks */
	struct event *ev_write;	 /* room again for what waits */
	struct event *ev_retry;	 /* ETOOMANYREFS: no wake-up to wait for */
	struct event *ev_exit;	 /* the closer's pidfd */
	struct closer_job *held; /* waiting in rdmad's table, in order */
	size_t nheld, held_cap;
	bool marker_owed; /* a batch went down and no datagram after it */
	/* Handed over, not let go of yet, per batch in order: a dead
	 * closer's are reported done (its exit let go of them). */
	struct closer_msg *sent;
	size_t nsent, sent_cap;
};

/* ---- the closer process ---- */

static void on_tick(int sig)
{
	(void)sig;
}

void closer_tick_init(void)
{
	struct sigaction sa = {.sa_handler = SIG_DFL};
	sigset_t none;

	/* rdmad's handlers are not for this process. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	sa.sa_handler = on_tick; /* no SA_RESTART: waits end */
	sigaction(SIGALRM, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

void closer_tick(bool on)
{
	struct itimerval it = {0};

	if (on) {
		it.it_interval.tv_usec = CLOSER_TICK_MS * 1000;
		it.it_value.tv_usec = CLOSER_TICK_MS * 1000;
	}
	setitimer(ITIMER_REAL, &it, NULL);
}

static void let_go(const int *fd, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		close(fd[i]);
}

static void ack(int sock, const struct closer_msg *m)
{
	while (send(sock, m, sizeof(*m), MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* One datagram: the batch before it may go now (see closer.h). */
static bool closer_step(int sock, struct closer_msg *last, int *last_fds)
{
	union {
		char buf[CMSG_SPACE(WIRE_MAX_PASSED_FDS * sizeof(int))];
		struct cmsghdr align;
	} control;
	struct closer_msg m;
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf)};
	struct cmsghdr *c;
	ssize_t n;

	n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EINTR;
	if (n != sizeof(m))
		return false; /* rdmad is gone */
	if (last->n) {
		let_go(last_fds, last->n);
		ack(sock, last);
	}
	*last = m;
	last->n = 0;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		last->n = (uint32_t)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
	if (last->n > WIRE_MAX_PASSED_FDS)
		last->n = WIRE_MAX_PASSED_FDS;
	if (last->n)
		memcpy(last_fds, CMSG_DATA(c), last->n * sizeof(int));
	/* A batch the table could not take (MSG_CTRUNC) was let go of by
	 * the kernel, here: done as well. */
	if (m.n > last->n) {
		struct closer_msg lost = {m.uid, m.n - last->n};

		ack(sock, &lost);
	}
	return true;
}

static void closer_loop(int sock)
{
	struct closer_msg last = {0};
	int fds[WIRE_MAX_PASSED_FDS];
	struct pollfd p = {.fd = sock, .events = POLLIN};
	bool more = true;

	while (more) {
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		closer_tick(true);
		more = closer_step(sock, &last, fds);
		closer_tick(false);
	}
	_exit(0);
}

/* Only async-signal-safe calls: rdmad may have threads. */
static void closer_child(pid_t parent, int sock)
{
	struct rlimit rl;

	closer_tick_init();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "rdmad-closer");
	/* Its own table holds only what it is sent. */
	if (sock > 3)
		syscall(SYS_close_range, 3, sock - 1, 0);
	syscall(SYS_close_range, sock + 1, ~0U, 0);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	closer_loop(sock);
}

/* ---- rdmad's side ---- */

static void on_exit_closer(evutil_socket_t fd, short what, void *arg);

static int start(struct closer *cl)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (pid == 0)
		closer_child(cl->parent, sv[1]);
	close(sv[1]);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	cl->sock = sv[0];
	cl->pid = pid;
	cl->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (cl->pidfd >= 0)
		fcntl(cl->pidfd, F_SETFD, FD_CLOEXEC);
	return 0;
}

static void note_sent(struct closer *cl, uid_t uid, uint32_t n)
{
	struct closer_msg *more;

	if (cl->nsent == cl->sent_cap) {
		size_t cap = cl->sent_cap ? 2 * cl->sent_cap : 16;

		more = reallocarray(cl->sent, cap, sizeof(*more));
		if (!more)
			return; /* never acked: counted as waiting */
		cl->sent = more;
		cl->sent_cap = cap;
	}
	cl->sent[cl->nsent++] = (struct closer_msg){uid, n};
}

static void forget_sent(struct closer *cl, const struct closer_msg *m)
{
	for (size_t i = 0; i < cl->nsent; i++) {
		if (cl->sent[i].uid != m->uid)
			continue;
		if (cl->sent[i].n > m->n) {
			cl->sent[i].n -= m->n;
			return;
		}
		memmove(&cl->sent[i], &cl->sent[i + 1],
			(cl->nsent - i - 1) * sizeof(*cl->sent));
		cl->nsent--;
		return;
	}
}

/* One batch (descriptors of one uid, from @off in what is held): the
 * number sent, 0 when the socket cannot take it now. */
static size_t send_batch(struct closer *cl, size_t off, int *err)
{
	union {
		char buf[CMSG_SPACE(WIRE_MAX_PASSED_FDS * sizeof(int))];
		struct cmsghdr align;
	} control;
	const struct closer_job *job = cl->held + off;
	struct closer_msg m = {.uid = job->uid};
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	while (off + m.n < cl->nheld && m.n < WIRE_MAX_PASSED_FDS &&
	       job[m.n].uid == m.uid)
		m.n++;
	memset(&control, 0, sizeof(control));
	msg.msg_control = control.buf;
	msg.msg_controllen = CMSG_SPACE(m.n * sizeof(int));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(m.n * sizeof(int));
	for (uint32_t i = 0; i < m.n; i++)
		memcpy(CMSG_DATA(c) + i * sizeof(int), &job[i].fd, sizeof(int));
	if (sendmsg(cl->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		*err = -errno;
		return 0;
	}
	/* The closer's queue holds every file now: these closes are not
	 * the last, and a socket has no ->flush. */
	for (uint32_t i = 0; i < m.n; i++)
		close(job[i].fd);
	note_sent(cl, m.uid, m.n);
	cl->ops->sent(m.uid, m.n, cl->arg);
	return m.n;
}

static bool send_marker(struct closer *cl)
{
	struct closer_msg m = {0};

	return send(cl->sock, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) ==
	       sizeof(m);
}

/* Send what is held, then the marker that lets the last batch go. */
static void flush(struct closer *cl)
{
	struct timeval retry = {.tv_usec = CLOSER_TICK_MS * 1000};
	size_t off = 0, n;
	int err = 0;

	while (off < cl->nheld && (n = send_batch(cl, off, &err)) > 0) {
		off += n;
		cl->marker_owed = true;
	}
	cl->nheld -= off;
	memmove(cl->held, cl->held + off, cl->nheld * sizeof(*cl->held));
	if (!cl->nheld && cl->marker_owed && send_marker(cl))
		cl->marker_owed = false;
	if (!cl->nheld && !cl->marker_owed) {
		event_del(cl->ev_write);
		event_del(cl->ev_retry);
	} else if (err == -ETOOMANYREFS || err == -ENOBUFS || err == -ENOMEM) {
		/* Too many files in flight for rdmad's user: nothing wakes
		 * us when that changes but the closer's progress. */
		event_del(cl->ev_write);
		evtimer_add(cl->ev_retry, &retry);
	} else {
		event_add(cl->ev_write, NULL);
	}
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	flush(arg);
}

static void on_acks(evutil_socket_t fd, short what, void *arg)
{
	struct closer *cl = arg;
	struct closer_msg m[64];
	ssize_t n;

	while ((n = recv(cl->sock, m, sizeof(m), MSG_DONTWAIT)) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(m[0]); i++) {
			forget_sent(cl, &m[i]);
			cl->ops->done(m[i].uid, m[i].n, cl->arg);
		}
	}
	if (cl->nheld || cl->marker_owed)
		flush(cl);
}

void closer_put(struct closer *cl, int fd, uid_t uid)
{
	struct closer_job *more;

	if (fd < 0)
		return;
	if (cl->nheld == cl->held_cap) {
		size_t cap = cl->held_cap ? 2 * cl->held_cap : 64;

		more = reallocarray(cl->held, cap, sizeof(*more));
		if (!more) {
			/* Kept open rather than closed here: a leak beats
			 * a loop stuck in a client's close. */
			log_warnx("closer: out of memory, descriptor %d kept",
				  fd);
			cl->ops->sent(uid, 1, cl->arg);
			cl->ops->done(uid, 1, cl->arg);
			return;
		}
		cl->held = more;
		cl->held_cap = cap;
	}
	cl->held[cl->nheld++] = (struct closer_job){fd, uid};
	/* Sent once the loop turns: a burst of closes (a flood of refused
	 * connections) goes down in one batch and one marker. */
	if (cl->nheld == 1 && !event_pending(cl->ev_retry, EV_TIMEOUT, NULL))
		event_add(cl->ev_write, NULL);
}

unsigned int closer_held(const struct closer *cl)
{
	return cl ? (unsigned int)cl->nheld : 0;
}

pid_t closer_pid(const struct closer *cl)
{
	return cl ? cl->pid : -1;
}

/* ---- start, death and stop ---- */

static void stop_events(struct closer *cl)
{
	struct event **evs[] = {&cl->ev_read, &cl->ev_write, &cl->ev_retry,
				&cl->ev_exit};

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		if (*evs[i])
			event_free(*evs[i]);
		*evs[i] = NULL;
	}
}

static int events(struct closer *cl)
{
	cl->ev_read = event_new(cl->base, cl->sock, EV_READ | EV_PERSIST,
				on_acks, cl);
	cl->ev_write = event_new(cl->base, cl->sock, EV_WRITE | EV_PERSIST,
				 on_write, cl);
	cl->ev_retry = evtimer_new(cl->base, on_write, cl);
	cl->ev_exit = cl->pidfd >= 0 ? event_new(cl->base, cl->pidfd, EV_READ,
						 on_exit_closer, cl)
				     : NULL;
	if (!cl->ev_read || !cl->ev_write || !cl->ev_retry ||
	    event_add(cl->ev_read, NULL) < 0)
		return -ENOMEM;
	if (cl->ev_exit && event_add(cl->ev_exit, NULL) < 0)
		return -ENOMEM;
	return 0;
}

static void release(struct closer *cl)
{
	stop_events(cl);
	if (cl->pid > 0) {
		kill(cl->pid, SIGKILL);
		waitpid(cl->pid, NULL, WNOHANG);
	}
	if (cl->pidfd >= 0)
		close(cl->pidfd);
	/* Only acks are queued on rdmad's end: no client file. */
	if (cl->sock >= 0)
		close(cl->sock);
	cl->pid = -1;
	cl->pidfd = cl->sock = -1;
}

/* Killed by hand: what it held went with it; start another. */
static void on_exit_closer(evutil_socket_t fd, short what, void *arg)
{
	struct closer *cl = arg;
	int r;

	waitpid(cl->pid, NULL, 0);
	for (size_t i = 0; i < cl->nsent; i++)
		cl->ops->done(cl->sent[i].uid, cl->sent[i].n, cl->arg);
	cl->nsent = 0;
	cl->pid = -1; /* reaped: nothing to kill */
	release(cl);
	cl->marker_owed = false;
	r = start(cl);
	if (r == 0)
		r = events(cl);
	if (r < 0) {
		log_warnc(r, "closer died and cannot be started again");
		return;
	}
	log_warnx("closer died: started again as pid %d", (int)cl->pid);
	flush(cl);
}

struct closer *closer_new(struct event_base *base, const struct closer_ops *ops,
			  void *arg)
{
	struct closer *cl = calloc(1, sizeof(*cl));
	int err;

	if (!cl)
		return NULL;
	cl->base = base;
	cl->ops = ops;
	cl->arg = arg;
	cl->parent = getpid();
	cl->pid = -1;
	cl->pidfd = cl->sock = -1;
	err = start(cl);
	if (err == 0)
		err = events(cl);
	if (err < 0) {
		closer_free(cl);
		errno = -err;
		return NULL;
	}
	return cl;
}

void closer_free(struct closer *cl)
{
	if (!cl)
		return;
	release(cl);
	for (size_t i = 0; i < cl->nheld; i++)
		close(cl->held[i].fd);
	free(cl->held);
	free(cl->sent);
	free(cl);
}
