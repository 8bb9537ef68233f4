/* SPDX-License-Identifier: MIT */
/*
 * daemon/reaper/reaper.c, closer.c and remover.c: descriptors handed over are
 * closed by a helper process that shares the caller's table, not by the
 * caller, and never sent anywhere: a file by a remover, a socket by a
 * closer; a passed TCP socket is reset, not lingered on; a close that
 * lingers anyway (a socket queued on a passed one) returns within the
 * closer's tick and holds its owner's lane only; a connection with
 * something queued goes to the closer, an empty one is closed at once,
 * uncounted; either way its peer sees the end at once and nothing can be
 * queued on it afterwards.
 *
 * The same helpers under real attackers are the integration suite's
 * (tests/integration/test_passed_descriptors.py, test_descriptor_table.py,
 * test_owners.py, test_inflight.py) and on real kernels the kernel
 * suite's (tests/kernel/test_kernel.py: TestDescriptors, TestLanes,
 * TestInFlight); docs/security.md, "The descriptor closer, suite by
 * suite", lists which test shows what in each.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "check.h"
#include "closer.h"
#include "reaper.h"
#include "wire.h"

#define UID 4242

static struct event_base *base;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Run the loop until @done(@arg) or @ms pass; whether it came. */
static bool loop_until(bool (*done)(void *), void *arg, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (!done(arg) && now_ms() < end)
		event_base_loop(base, EVLOOP_NONBLOCK | EVLOOP_ONCE);
	return done(arg);
}

/* The write end of a pipe was closed by somebody: its read end says EOF. */
static bool at_eof(void *arg)
{
	struct pollfd p = {.fd = *(int *)arg, .events = POLLIN};
	char c;

	return poll(&p, 1, 0) == 1 && read(p.fd, &c, 1) == 0;
}

static void figure_ms(const char *what, uint64_t ms)
{
	printf("figure: %s: %llu ms\n", what, (unsigned long long)ms);
}

static bool none_pending(void *arg)
{
	return reaper_waiting(arg, UID) == 0;
}

static void test_put(struct reaper *r)
{
	int p[2];

	CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe");
	reaper_put(r, p[1], UID);
	CHECK(reaper_waiting(r, UID) == 1, "counted for its uid");
	CHECK(reaper_waiting(r, UID + 1) == 0, "and for nobody else");
	CHECK(loop_until(at_eof, &p[0], 5000), "the reaper closed it");
	CHECK(loop_until(none_pending, r, 5000), "and said so: pending %u",
	      reaper_waiting(r, UID));
	close(p[0]);
}

/*
 * A loopback TCP socket whose peer never reads, with unsent data and
 * SO_LINGER {1, @secs}: its last close waits @secs.
 * The listener (*ret_listener) holds the peer unread.
 */
static int lingering_socket(int secs, int *ret_listener)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct linger l = {.l_onoff = 1, .l_linger = secs};
	socklen_t len = sizeof(sa);
	int small = 4096, lst, s, acc;
	static char junk[1 << 16];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lst = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(lst >= 0 && bind(lst, (struct sockaddr *)&sa, len) == 0 &&
		      getsockname(lst, (struct sockaddr *)&sa, &len) == 0 &&
		      listen(lst, 1) == 0,
	      "listener");
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(lst, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	CHECK(connect(s, (struct sockaddr *)&sa, len) == 0, "connect");
	acc = accept4(lst, NULL, NULL, SOCK_CLOEXEC);
	CHECK(acc >= 0, "accept");
	setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	fcntl(s, F_SETFL, O_NONBLOCK);
	while (send(s, junk, sizeof(junk), MSG_NOSIGNAL) > 0)
		;
	close(lst);
	*ret_listener = acc; /* never reads */
	return s;
}

struct ticks {
	unsigned int n;
};

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	((struct ticks *)arg)->n++;
}

static bool ticked(void *arg)
{
	return ((struct ticks *)arg)->n >= 5;
}

/* The peer of a socket that was reset: ECONNRESET (said once, then
 * remembered: loop_until() asks again). */
static bool reset(void *arg)
{
	static int seen = -1;
	char junk[65536];
	ssize_t n;

	if (seen == *(int *)arg)
		return true;
	while ((n = recv(*(int *)arg, junk, sizeof(junk), MSG_DONTWAIT)) > 0)
		;
	if (n < 0 && errno == ECONNRESET)
		seen = *(int *)arg;
	return seen == *(int *)arg;
}

/* A TCP socket that would linger 30 s in its last close, passed: handing
 * it over costs the loop nothing, and it is reset, not waited for.
 * Sibling: test_passed_descriptors.py's
 * test_lingering_sockets_passed_never_delay_root (against rdmad). */
static void test_blocking_close(struct reaper *r)
{
	struct timeval tv = {.tv_usec = 20 * 1000};
	struct ticks t = {0};
	struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, &t);
	int peer, s = lingering_socket(30, &peer);
	uint64_t t0 = now_ms(), took;

	reaper_put(r, s, UID);
	took = now_ms() - t0;
	CHECK(took < 100, "handing over a lingering socket took %llu ms",
	      (unsigned long long)took);
	event_add(tick, &tv);
	CHECK(loop_until(ticked, &t, 1000), "the loop ran: %u ticks", t.n);
	t0 = now_ms();
	CHECK(loop_until(none_pending, r, 1000),
	      "the lingering socket let go of within 1 s (linger 30 s)");
	took = now_ms() - t0;
	figure_ms("the lingering socket let go of after", took);
	CHECK(took < 100, "not lingered on: %llu ms", (unsigned long long)took);
	CHECK(loop_until(reset, &peer, 1000), "its peer got a reset");
	event_free(tick);
	close(peer);
}

static bool none_pending_of(void *arg)
{
	return reaper_waiting(((void **)arg)[0], *(uid_t *)((void **)arg)[1]) ==
	       0;
}

/* A unix socket carrying a lingering TCP socket in its queue: its
 * close waits out a closer's tick (the reset reaches only the socket
 * passed, not what rides in its queue).  The TCP socket's peer goes to
 * @peer. */
static int socket_of_lingering(int *peer)
{
	int sv[2], s = lingering_socket(30, peer);
	char byte = 'x';

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0,
	      "socketpair");
	CHECK(wire_send(sv[1], &byte, 1, s) == 0, "send: %s", strerror(errno));
	close(s);
	close(sv[1]);
	return sv[0];
}

/* One owner's slow closes hold its lane, not another owner's: while a
 * hundred such sockets wait out a tick each (CLOSER_TICK_US), another
 * owner's pipe and socket are let go of at once; the slow owner's stay
 * counted as its own until they return.  Siblings: test_owners.py's
 * TestOwners (against rdmad), the kernel suite's
 * TestLanes.test_af_packet_holds_its_owner_only. */
static void test_lanes(struct reaper *r)
{
	enum { N = 100 };
	uid_t slow = UID + 10, quick = UID + 11;
	void *slow_arg[] = {r, &slow}, *quick_arg[] = {r, &quick};
	int peers[N], p[2], sv[2];
	uint64_t t0;

	CHECK(pipe2(p, O_CLOEXEC) == 0 &&
		      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ==
			      0,
	      "pipe, socketpair");
	for (unsigned int i = 0; i < N; i++)
		reaper_put(r, socket_of_lingering(&peers[i]), slow);
	t0 = now_ms();
	reaper_put(r, p[1], quick);
	reaper_put(r, sv[1], quick);
	CHECK(loop_until(none_pending_of, quick_arg, 2000),
	      "the other owner's let go of: %u waiting",
	      reaper_waiting(r, quick));
	figure_ms("another owner's let go of, behind a slow owner, after",
		  now_ms() - t0);
	CHECK(now_ms() - t0 < 300, "without waiting for the slow owner");
	CHECK(reaper_waiting(r, slow) > 0, "the slow owner's still counted: %u",
	      reaper_waiting(r, slow));
	CHECK(loop_until(none_pending_of, slow_arg, 10000),
	      "the slow owner's let go of in the end");
	figure_ms("a hundred sockets that each wait out a tick let go of after",
		  now_ms() - t0);
	for (unsigned int i = 0; i < N; i++)
		close(peers[i]);
	close(p[0]);
	close(sv[0]);
}

/* Our children named @comm: up to @max of their pids in @pids, and how
 * many there are. */
static unsigned int children_named(const char *comm, pid_t *pids,
				   unsigned int max)
{
	char path[300], buf[512], *name;
	unsigned int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	int ppid;
	FILE *f;

	while (d && (e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (name = strchr(buf, '(')) &&
		    sscanf(strrchr(buf, ')') + 2, "%*c %d", &ppid) == 1 &&
		    ppid == getpid() &&
		    !strncmp(name + 1, comm, strlen(comm))) {
			if (n < max)
				pids[n] = atoi(e->d_name);
			n++;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* The pid of our child named @comm, or -1. */
static pid_t child_named(const char *comm)
{
	pid_t pid = -1;

	children_named(comm, &pid, 1);
	return pid;
}

static unsigned int open_fds(pid_t pid)
{
	char path[64];
	unsigned int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n > 2 ? n - 2 : 0; /* . and .. */
}

/* The closer shares this process's table: it is sent no descriptor
 * (nothing in flight on this user's account), and sees the 200 this
 * process opens.  Siblings: test_inflight.py's TestInFlight (against
 * rdmad), the kernel suite's
 * TestInFlight.test_queued_lingering_sockets_cost_rdmad_nothing. */
static bool closer_named(void *arg)
{
	*(pid_t *)arg = child_named("rdmad-closer");
	return *(pid_t *)arg > 0;
}

static void test_shared_table(void)
{
	pid_t closer = -1;
	int fds[200];

	loop_until(closer_named, &closer, 5000); /* named once it runs */

	for (size_t i = 0; i < 200; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(closer > 0, "the closer runs");
	CHECK(open_fds(getpid()) > 200, "this process holds 200 more");
	CHECK(closer <= 0 || open_fds(closer) == open_fds(getpid()),
	      "the closer's table is this process's: %u descriptors, %u here",
	      closer > 0 ? open_fds(closer) : 0, open_fds(getpid()));
	for (size_t i = 0; i < 200; i++)
		close(fds[i]);
}

/* Our end of a SEQPACKET pair with queued datagrams: one with a pipe's
 * write end, an empty one, one with the other pipe's.  Closing it hands
 * it to the closer, one descriptor; the peer sees the end at once and
 * can queue nothing afterwards.  Siblings: test_descriptor_table.py's
 * TestDescriptorTable (against rdmad). */
static void test_close_connection(struct reaper *r)
{
	int sv[2], a[2], b[2];
	char byte = 'x';

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0,
	      "socketpair");
	CHECK(pipe2(a, O_CLOEXEC) == 0 && pipe2(b, O_CLOEXEC) == 0, "pipes");
	CHECK(wire_send(sv[1], &byte, 1, a[1]) == 0 &&
		      wire_send(sv[1], &byte, 0, -1) == 0 &&
		      wire_send(sv[1], &byte, 1, b[1]) == 0,
	      "send: %s", strerror(errno));
	close(a[1]);
	close(b[1]);
	CHECK(reaper_close_connection(r, sv[0], UID), "handed over");
	CHECK(reaper_waiting(r, UID) == 1,
	      "the connection handed over, one descriptor: %u",
	      reaper_waiting(r, UID));
	CHECK(reaper_held(r) == 1, "in rdmad's table until the loop turns: %u",
	      reaper_held(r));
	/* EOF, or ECONNRESET once the closer let go of it unread. */
	CHECK(recv(sv[1], &byte, 1, MSG_DONTWAIT) == 0 || errno == ECONNRESET,
	      "its peer sees the end: %s", strerror(errno));
	CHECK(send(sv[1], &byte, 1, MSG_NOSIGNAL) < 0 && errno == EPIPE,
	      "nothing can be queued after");
	CHECK(loop_until(at_eof, &a[0], 5000) &&
		      loop_until(at_eof, &b[0], 5000),
	      "the reaper closed both");
	CHECK(loop_until(none_pending, r, 5000), "and said so");
	close(sv[1]);
	close(a[0]);
	close(b[0]);
}

/* A connection with nothing queued is closed at once, by the caller,
 * and charged to nobody; its peer sees the end. */
static void test_close_empty_connection(struct reaper *r)
{
	int sv[2];
	char byte;

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0,
	      "socketpair");
	CHECK(!reaper_close_connection(r, sv[0], UID), "closed at once");
	CHECK(reaper_waiting(r, UID) == 0 && reaper_held(r) == 0,
	      "charged to nobody: %u", reaper_waiting(r, UID));
	CHECK(fcntl(sv[0], F_GETFD) < 0 && errno == EBADF, "closed");
	CHECK(recv(sv[1], &byte, 1, MSG_DONTWAIT) == 0, "its peer sees EOF");
	close(sv[1]);
}

static bool closer_back(void *arg)
{
	pid_t pid = child_named("rdmad-closer");

	return pid > 0 && pid != *(pid_t *)arg;
}

/* A closer killed by hand is started again, and lets go of what is
 * handed over next. */
static void test_closer_restart(struct reaper *r)
{
	pid_t old = -1;
	int sv[2];

	loop_until(closer_named, &old, 5000);

	CHECK(old > 0, "the closer runs");
	if (old <= 0)
		return;
	kill(old, SIGKILL);
	CHECK(loop_until(closer_back, &old, 5000), "started again");
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0,
	      "socketpair");
	CHECK(send(sv[1], "x", 1, 0) == 1, "queued");
	CHECK(reaper_close_connection(r, sv[0], UID), "handed over");
	CHECK(loop_until(none_pending, r, 5000),
	      "the new one lets go: pending %u", reaper_waiting(r, UID));
	close(sv[1]);
}

/* Every child named @comm killed (reaped when the loop turns): how
 * many. */
static unsigned int kill_children_named(const char *comm)
{
	pid_t pids[64];
	unsigned int n = children_named(comm, pids, 64), killed = 0;

	for (unsigned int i = 0; i < n && i < 64; i++)
		killed += kill(pids[i], SIGKILL) == 0;
	return killed;
}

/* The closers killed while one is inside a batch of 64 closes that wait
 * out a tick each: the closes it began are counted back, the rest are
 * closed by the next closer, the owner's count comes back to none and
 * at most one of the 64 stays open (before, the batch's jobs were never
 * acked: counted for good, and the ones not begun left open). */
static void test_closer_killed_in_a_batch(struct reaper *r)
{
	enum { N = 64 };
	uid_t owner = UID + 20;
	void *arg[] = {r, &owner};
	int peers[N];
	pid_t first = -1;
	unsigned int fds;

	loop_until(closer_named, &first, 5000);
	for (unsigned int i = 0; i < N; i++)
		reaper_put(r, socket_of_lingering(&peers[i]), owner);
	fds = open_fds(getpid());
	/* The loop turns once: the 64 go down in one write. */
	event_base_loop(base, EVLOOP_NONBLOCK | EVLOOP_ONCE);
	usleep(15 * 1000);
	CHECK(reaper_waiting(r, owner) == N, "none acked yet: %u waiting",
	      reaper_waiting(r, owner));
	CHECK(kill_children_named("rdmad-closer") > 0, "closers killed");
	CHECK(loop_until(none_pending_of, arg, 10000),
	      "the owner's count came back to none: %u waiting",
	      reaper_waiting(r, owner));
	/* The one a kill may catch before its close(2) began, at most. */
	CHECK(open_fds(getpid()) <= fds - N + 1,
	      "the batch's descriptors closed: %u open of %u before",
	      open_fds(getpid()), fds);
	for (unsigned int i = 0; i < N; i++)
		close(peers[i]);
}

int main(void)
{
	struct reaper *r;

	base = event_base_new();
	r = base ? reaper_new(base, NULL, NULL) : NULL;
	CHECK(r != NULL, "reaper_new: %s", strerror(errno));
	if (!r)
		return 1;
	test_put(r);
	test_shared_table();
	test_blocking_close(r);
	test_close_connection(r);
	test_close_empty_connection(r);
	test_lanes(r);
	test_closer_restart(r);
	test_closer_killed_in_a_batch(r);
	reaper_free(r);
	event_base_free(base);
	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
