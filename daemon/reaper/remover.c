/* SPDX-License-Identifier: MIT */
/*
 * A remover (remover.h): a process that shares rdmad's table and closes
 * there what clients left with rdmad, files or sockets.  Joined to rdmad by two
 * pipes: jobs go down one (a descriptor and the owner it is charged to, 8
 * bytes, written whole as pipes promise for fewer than PIPE_BUF), the same job
 * comes back up the other once closed.  The descriptor numbers mean the same in
 * both processes because they share one table.  A job the pipe cannot
 * take (the remover is stuck and the pipe full) waits in a backlog until
 * the pipe is writable again.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "closer.h"
#include "log.h"
#include "remover.h"

struct remover_job {
	int32_t fd;
	uint32_t owner;
};

/* Where the remover is, in a page it shares with rdmad (MAP_SHARED,
 * made before the first clone, so a remover started again writes the
 * same one); rdmad reads it only once that remover is dead. */
struct remover_progress {
	uint64_t read;	/* jobs read from the pipe, by every remover so far */
	uint32_t batch; /* jobs in the last batch read */
	uint32_t begun; /* of them, the closes begun */
};

struct remover {
	struct event_base *base;
	enum remover_kind kind;
	remover_done_fn done;
	void *arg;
	pid_t parent;
	pid_t pid;
	int pidfd;
	int down[2]; /* jobs: [0] the remover reads, [1] rdmad writes */
	int up[2];   /* done: [0] rdmad reads, [1] the remover writes */
	struct event *ev_done;
	struct event *ev_backlog; /* down[1] writable again */
	struct event *ev_exit;	  /* the remover's pidfd */
	struct remover_job *backlog;
	size_t nbacklog, backlog_cap;
	/* Jobs written down the pipe and not acked yet, oldest first
	 * [sent_head, nsent): the remover closes and acks them in order. */
	struct remover_job *sent;
	size_t sent_head, nsent, sent_cap;
	uint64_t acked; /* jobs acked (or settled after a death), ever */
	struct remover_progress *progress;
};

/* ---- the remover process ---- */

static void remover_loop(const struct remover *rm)
{
	struct remover_job jobs[64];
	ssize_t n;

	/* rdmad's signal handlers write to libevent's socket in the shared
	 * table: none may run here, and SIGTERM ends it (systemd's stop). */
	closer_tick_init();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != rm->parent)
		_exit(0);
	prctl(PR_SET_NAME,
	      rm->kind == REMOVER_SOCKETS ? "rdmad-closer" : "rdmad-remover");
	/* Jobs are written whole (a multiple of 8 bytes, at most PIPE_BUF):
	 * a read gets whole jobs, acked together once closed. */
	for (;;) {
		n = read(rm->down[0], jobs, sizeof(jobs));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(jobs[0]))
			_exit(0);
		rm->progress->begun = 0;
		rm->progress->batch = (uint32_t)((size_t)n / sizeof(jobs[0]));
		rm->progress->read += rm->progress->batch;
		closer_tick(rm->kind == REMOVER_SOCKETS);
		for (size_t i = 0; i < (size_t)n / sizeof(jobs[0]); i++) {
			/* Before the close: a kill from here on may leave
			 * this one open, never one after it. */
			rm->progress->begun = (uint32_t)i + 1;
			close(jobs[i].fd);
		}
		closer_tick(false);
		while (write(rm->up[1], jobs, (size_t)n) < 0 && errno == EINTR)
			;
	}
}

pid_t remover_clone_files(void)
{
	pid_t pid;
#if defined(__s390__) || defined(__CRIS__)
	pid = (pid_t)syscall(SYS_clone, 0, CLONE_FILES | SIGCHLD, 0, 0, 0);
#else
	pid = (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
#endif
	return pid < 0 ? -errno : pid;
}

static int start(struct remover *rm)
{
	pid_t pid = remover_clone_files();

	if (pid < 0)
		return pid;
	if (pid == 0)
		remover_loop(rm);
	rm->pid = pid;
	rm->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (rm->pidfd >= 0)
		fcntl(rm->pidfd, F_SETFD, FD_CLOEXEC);
	return 0;
}

/* ---- rdmad's side ---- */

/* Room for @n more sent jobs: false when out of memory. */
static bool sent_reserve(struct remover *rm, size_t n)
{
	struct remover_job *more;
	size_t cap;

	if (rm->sent_head) {
		rm->nsent -= rm->sent_head;
		memmove(rm->sent, rm->sent + rm->sent_head,
			rm->nsent * sizeof(*rm->sent));
		rm->sent_head = 0;
	}
	if (rm->nsent + n <= rm->sent_cap)
		return true;
	cap = rm->sent_cap ? 2 * rm->sent_cap : 64;
	while (cap < rm->nsent + n)
		cap *= 2;
	more = reallocarray(rm->sent, cap, sizeof(*more));
	if (!more)
		return false;
	rm->sent = more;
	rm->sent_cap = cap;
	return true;
}

/* The oldest job sent and not acked: it is done with. */
static void sent_pop(struct remover *rm)
{
	if (rm->sent_head < rm->nsent)
		rm->sent_head++;
	if (rm->sent_head == rm->nsent)
		rm->sent_head = rm->nsent = 0;
	rm->acked++;
}

/* Up to PIPE_BUF bytes of whole jobs from the front of the backlog, in
 * one write (atomic): how many went, each kept among the jobs sent. */
static size_t send_jobs(struct remover *rm)
{
	size_t max = PIPE_BUF / sizeof(struct remover_job);
	size_t n = rm->nbacklog < max ? rm->nbacklog : max, went;
	ssize_t w;

	if (!sent_reserve(rm, n))
		return 0; /* tried again when the pipe is writable */
	w = write(rm->down[1], rm->backlog, n * sizeof(*rm->backlog));
	went = w > 0 ? (size_t)w / sizeof(*rm->backlog) : 0;
	memcpy(rm->sent + rm->nsent, rm->backlog, went * sizeof(*rm->sent));
	rm->nsent += went;
	return went;
}

static void on_backlog(evutil_socket_t fd, short what, void *arg)
{
	struct remover *rm = arg;
	size_t sent;

	while (rm->nbacklog && (sent = send_jobs(rm)) > 0) {
		rm->nbacklog -= sent;
		memmove(rm->backlog, rm->backlog + sent,
			rm->nbacklog * sizeof(*rm->backlog));
	}
	if (!rm->nbacklog)
		event_del(rm->ev_backlog);
}

/* @job at the back of the backlog: false when out of memory. */
static bool backlog_add(struct remover *rm, struct remover_job job)
{
	struct remover_job *more;

	if (rm->nbacklog == rm->backlog_cap) {
		size_t cap = rm->backlog_cap ? 2 * rm->backlog_cap : 64;

		more = reallocarray(rm->backlog, cap, sizeof(*more));
		if (!more)
			return false;
		rm->backlog = more;
		rm->backlog_cap = cap;
	}
	rm->backlog[rm->nbacklog++] = job;
	/* Sent once the loop turns: one datagram's descriptors in one
	 * write. */
	event_add(rm->ev_backlog, NULL);
	return true;
}

void remover_put(struct remover *rm, int fd, uid_t owner)
{
	if (!backlog_add(rm, (struct remover_job){.fd = fd, .owner = owner})) {
		/* Kept open rather than closed here: a leak beats a loop
		 * stuck in a client's close. */
		log_warnx("remover: out of memory, descriptor %d kept", fd);
		rm->done(owner, 1, rm->arg);
	}
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct remover *rm = arg;
	struct remover_job jobs[64];
	ssize_t n;

	while ((n = read(rm->up[0], jobs, sizeof(jobs))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(jobs[0]); i++) {
			sent_pop(rm);
			rm->done(jobs[i].owner, 1, rm->arg);
		}
	}
}

/* The batch a dead remover took from the pipe and never acked, the
 * oldest of the jobs sent less those still in the pipe: the closes it
 * began are done with (counted back; the last may have been killed
 * before it entered close(2) and stays open), the rest are still in the
 * table, theirs, and go to the next remover.  Only what the dead one
 * wrote before it died is read: its progress, once it recorded this
 * batch, else nothing begun. */
static void settle_dead_batch(struct remover *rm)
{
	size_t taken = rm->nsent - rm->sent_head, begun = 0, left;
	int unread = 0;

	/* Without the count, which jobs it took is unknown: sending any
	 * again could close a number reused since.  Leave them. */
	if (ioctl(rm->down[0], FIONREAD, &unread) < 0) {
		log_warnc(-errno, "remover died: its batch left as it was");
		return;
	}
	left = (size_t)unread / sizeof(struct remover_job);
	taken -= left < taken ? left : taken;
	if (!taken)
		return;
	if (rm->progress->read == rm->acked + taken &&
	    rm->progress->batch == taken)
		begun = rm->progress->begun;
	rm->progress->read = rm->acked + taken;
	log_warnx("remover died in a batch of %zu: %zu closes begun counted "
		  "back, %zu handed to the next",
		  taken, begun, taken - begun);
	for (size_t i = 0; i < taken; i++) {
		struct remover_job job = rm->sent[rm->sent_head];

		sent_pop(rm);
		if (i < begun || !backlog_add(rm, job))
			rm->done(job.owner, 1, rm->arg);
	}
}

/* It died (only a kill does that): reap it, settle the batch it was in,
 * and start another on the same pipes. */
static void on_exit_remover(evutil_socket_t fd, short what, void *arg)
{
	struct remover *rm = arg;
	int r;

	waitpid(rm->pid, NULL, WNOHANG);
	on_done(-1, 0, rm); /* the acks it wrote before it died */
	settle_dead_batch(rm);
	event_del(rm->ev_exit);
	close(rm->pidfd);
	rm->pidfd = -1;
	r = start(rm);
	if (r < 0) {
		log_warnc(r, "remover died and cannot be started again");
		return;
	}
	log_warnx("remover died: started again as pid %d", (int)rm->pid);
	if (rm->pidfd >= 0) {
		event_assign(rm->ev_exit, rm->base, rm->pidfd,
			     EV_READ | EV_PERSIST, on_exit_remover, rm);
		event_add(rm->ev_exit, NULL);
	}
}

/* What waits in the backlog and what went down the pipe unacked. */
unsigned int remover_held(const struct remover *rm)
{
	return rm ? (unsigned int)(rm->nbacklog + rm->nsent - rm->sent_head)
		  : 0;
}

pid_t remover_pid(const struct remover *rm)
{
	return rm ? rm->pid : -1;
}

/* ---- start and stop ---- */

static int pipes(struct remover *rm)
{
	if (pipe2(rm->down, O_CLOEXEC) < 0 || pipe2(rm->up, O_CLOEXEC) < 0)
		return -errno;
	/* rdmad's ends never block; the remover's do. */
	if (fcntl(rm->down[1], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(rm->up[0], F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int events(struct remover *rm)
{
	rm->ev_done = event_new(rm->base, rm->up[0], EV_READ | EV_PERSIST,
				on_done, rm);
	rm->ev_backlog = event_new(rm->base, rm->down[1], EV_WRITE | EV_PERSIST,
				   on_backlog, rm);
	rm->ev_exit = event_new(rm->base, rm->pidfd, EV_READ | EV_PERSIST,
				on_exit_remover, rm);
	if (!rm->ev_done || !rm->ev_backlog || !rm->ev_exit ||
	    event_add(rm->ev_done, NULL) < 0)
		return -ENOMEM;
	if (rm->pidfd >= 0 && event_add(rm->ev_exit, NULL) < 0)
		return -ENOMEM;
	return 0;
}

struct remover *remover_new(struct event_base *base, enum remover_kind kind,
			    remover_done_fn done, void *arg)
{
	struct remover *rm = calloc(1, sizeof(*rm));
	int err;

	if (!rm)
		return NULL;
	rm->base = base;
	rm->kind = kind;
	rm->done = done;
	rm->arg = arg;
	rm->parent = getpid();
	rm->pid = -1;
	rm->pidfd = -1;
	rm->down[0] = rm->down[1] = rm->up[0] = rm->up[1] = -1;
	rm->progress = mmap(NULL, sizeof(*rm->progress), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rm->progress == MAP_FAILED) {
		rm->progress = NULL;
		free(rm);
		return NULL;
	}
	err = pipes(rm);
	if (err == 0)
		err = start(rm);
	if (err == 0)
		err = events(rm);
	if (err < 0) {
		remover_free(rm);
		errno = -err;
		return NULL;
	}
	return rm;
}

static void free_event(struct event *ev)
{
	if (ev)
		event_free(ev);
}

void remover_free(struct remover *rm)
{
	if (!rm)
		return;
	if (rm->pid > 0) {
		/* One stuck in a close dies when it returns; rdmad does not
		 * wait for that. */
		kill(rm->pid, SIGKILL);
		waitpid(rm->pid, NULL, WNOHANG);
	}
	free_event(rm->ev_done);
	free_event(rm->ev_backlog);
	free_event(rm->ev_exit);
	for (int i = 0; i < 2; i++) {
		if (rm->down[i] >= 0)
			close(rm->down[i]);
		if (rm->up[i] >= 0)
			close(rm->up[i]);
	}
	if (rm->pidfd >= 0)
		close(rm->pidfd);
	free(rm->backlog);
	free(rm->sent);
	if (rm->progress)
		munmap(rm->progress, sizeof(*rm->progress));
	free(rm);
}
