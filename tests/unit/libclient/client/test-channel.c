/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the channel's waits (libclient/client/channel.c,
 * wire/genview.c and the snapshot bounds of list/sync.c) against scripted
 * fake daemons on temporary sockets, each one a way a daemon can fail a
 * client:
 * - silent: accepts and never answers.  While a connect waits for the
 *   Welcome, another thread's rdmad_client_get_generation(), get_fd() and
 *   get_timeout() return, and fork() completes, before the connect does.
 * - endless snapshots: after Subscribe, snapshot parts that never end
 *   (parts = 2^32-1; or 4,096 parts of 64 KiB that decode to megabytes
 *   each, started again on every Subscribe).  The connect fails by its
 *   deadline and the memory it keeps stays bounded.
 * - no page: a Welcome without the generation page is accepted; the
 *   generation then comes from the snapshot and the events.
 * - a full backlog: connect says EAGAIN until the daemon accepts; the
 *   connect tries again within its 2 s, another thread's getters return
 *   meanwhile.
 * Bounds are generous (a loaded 2-core machine): what is checked is that a
 * getter returns while the connect is still in progress, not how fast.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmad.h"
#include "channel.h"
#include "check.h"

/* Longer than any connect may take: a hang is reported, not waited out. */
#define TEST_HANG_MS 30000
/* Empty ports in one heavy part: 2 bytes each on the wire. */
#define HEAVY_PORTS 30000

enum peer_mode {
	PEER_SILENT,	 /* never answers */
	PEER_ENDLESS,	 /* parts = 2^32-1 after Subscribe, without end */
	PEER_HEAVY,	 /* 4,096 heavy parts that never complete */
	PEER_NO_PAGE,	 /* Welcome without a page, then a normal list */
	PEER_PAGE_NO_FD, /* Welcome says a page came, but none did */
};

struct peer {
	enum peer_mode mode;
	char path[108];
	int listen_fd;
	int fd;
	int page_fd; /* passed with the Welcome; -1 for none */
	pthread_t thread;
	atomic_bool stop;
	atomic_bool greeted; /* a Hello came */
	atomic_bool hold;    /* accepts nothing while set */
	atomic_uint subscribes;
	atomic_ulong parts_sent;
	uint64_t generation;
	uint64_t subscribe_seq;
	uint32_t part;
};

/* ---- the fake daemons ---------------------------------------------------- */

/* Send @frame, waiting for room while reading what the client sends;
 * false once the client is gone or the test says stop. */
static bool peer_send(struct peer *p, const Rdmad__Frame *frame, int pass_fd);

static void peer_welcome(struct peer *p, uint64_t seq)
{
	Rdmad__Welcome welcome = RDMAD__WELCOME__INIT;
	Rdmad__Frame frame;

	welcome.version = WIRE_VERSION;
	welcome.generation = p->generation;
	welcome.generation_page = p->mode == PEER_PAGE_NO_FD;
	welcome.generation_page |= p->page_fd >= 0;
	wire_frame_init(&frame, seq);
	frame.body_case = RDMAD__FRAME__BODY_WELCOME;
	frame.welcome = &welcome;
	peer_send(p, &frame, p->page_fd);
}

static void peer_snapshot(struct peer *p, uint64_t seq)
{
	Rdmad__Device dev = RDMAD__DEVICE__INIT, *devs[] = {&dev};
	Rdmad__Snapshot snap = RDMAD__SNAPSHOT__INIT;
	Rdmad__Frame frame;

	dev.name = "mlx5_0";
	dev.id = "mlx5_0";
	snap.generation = p->generation;
	snap.parts = 1;
	snap.devices = devs;
	snap.n_devices = 1;
	wire_frame_init(&frame, seq);
	frame.body_case = RDMAD__FRAME__BODY_SNAPSHOT;
	frame.snapshot = &snap;
	peer_send(p, &frame, -1);
}

static void peer_event(struct peer *p, uint64_t generation)
{
	Rdmad__Device dev = RDMAD__DEVICE__INIT;
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Frame frame;

	dev.name = "mlx5_1";
	dev.id = "mlx5_1";
	ev.generation = generation;
	ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED;
	ev.device = &dev;
	wire_frame_init(&frame, 0);
	frame.body_case = RDMAD__FRAME__BODY_EVENT;
	frame.event = &ev;
	peer_send(p, &frame, -1);
}

static void peer_request(struct peer *p, const Rdmad__Frame *req)
{
	if (req->body_case == RDMAD__FRAME__BODY_HELLO) {
		atomic_store(&p->greeted, true);
		if (p->mode != PEER_SILENT)
			peer_welcome(p, req->seq);
	} else if (req->body_case == RDMAD__FRAME__BODY_SUBSCRIBE) {
		atomic_fetch_add(&p->subscribes, 1);
		/* The heavy peer starts over for each Subscribe, so the
		 * client assembles parts it asked for. */
		p->subscribe_seq = req->seq;
		p->part = 0;
		if (p->mode == PEER_NO_PAGE || p->mode == PEER_PAGE_NO_FD)
			peer_snapshot(p, req->seq);
	}
}

/* Read and answer what the client sent; false once it is gone. */
static bool peer_read(struct peer *p)
{
	uint8_t buf[WIRE_MAX_REQUEST];
	Rdmad__Frame *req;
	ssize_t n;

	for (;;) {
		n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		if (wire_decode(buf, (size_t)n, WIRE_MAX_REQUEST, &req) == 0) {
			peer_request(p, req);
			wire_free(req);
		}
	}
}

static bool peer_send(struct peer *p, const Rdmad__Frame *frame, int pass_fd)
{
	struct pollfd pfd = {.fd = p->fd, .events = POLLOUT};
	uint8_t *buf;
	size_t len;
	int err;

	if (wire_encode(frame, WIRE_MAX_FRAME, &buf, &len) < 0)
		abort();
	while ((err = wire_send(p->fd, buf, len, pass_fd)) == -EAGAIN &&
	       !atomic_load(&p->stop))
		poll(&pfd, 1, 50);
	free(buf);
	return err == 0;
}

/* One part of a snapshot that never completes. */
static bool peer_part(struct peer *p, Rdmad__Port **ports)
{
	Rdmad__Device dev = RDMAD__DEVICE__INIT, *devs[] = {&dev};
	Rdmad__Snapshot snap = RDMAD__SNAPSHOT__INIT;
	Rdmad__Frame frame;

	snap.generation = p->generation;
	snap.part = p->part++;
	if (p->mode == PEER_ENDLESS) {
		snap.parts = UINT32_MAX;
	} else {
		snap.parts = WIRE_MAX_SNAPSHOT_PARTS;
		if (p->part == WIRE_MAX_SNAPSHOT_PARTS)
			p->part = 0;
		dev.name = "heavy";
		dev.ports = ports;
		dev.n_ports = HEAVY_PORTS;
		snap.devices = devs;
		snap.n_devices = 1;
	}
	wire_frame_init(&frame, p->subscribe_seq);
	frame.body_case = RDMAD__FRAME__BODY_SNAPSHOT;
	frame.snapshot = &snap;
	atomic_fetch_add(&p->parts_sent, 1);
	return peer_send(p, &frame, -1);
}

static bool endless(const struct peer *p)
{
	return p->mode == PEER_ENDLESS || p->mode == PEER_HEAVY;
}

static void peer_serve(struct peer *p, Rdmad__Port **ports)
{
	struct pollfd pfd = {.fd = p->fd, .events = POLLIN};

	while (!atomic_load(&p->stop)) {
		if (!peer_read(p))
			return;
		if (endless(p) && atomic_load(&p->subscribes)) {
			if (!peer_part(p, ports))
				return;
			continue;
		}
		poll(&pfd, 1, 50);
	}
}

static void *peer_main(void *arg)
{
	static Rdmad__Port port = RDMAD__PORT__INIT;
	struct peer *p = arg;
	Rdmad__Port **ports = calloc(HEAVY_PORTS, sizeof(*ports));
	struct pollfd pfd = {.fd = p->listen_fd, .events = POLLIN};

	for (size_t i = 0; i < HEAVY_PORTS; i++)
		ports[i] = &port;
	while (!atomic_load(&p->stop)) {
		if (atomic_load(&p->hold)) {
			usleep(1000);
			continue;
		}
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		p->fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (p->fd < 0)
			continue;
		peer_serve(p, ports);
		close(p->fd);
		p->fd = -1;
	}
	free(ports);
	return NULL;
}

/* A generation page as rdmad makes it (daemon/views/genshare.c), showing
 * @generation. */
static int page_new(uint64_t generation)
{
	int fd = memfd_create("gen", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct genpage *page;

	if (fd < 0 || ftruncate(fd, GENPAGE_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		abort();
	page = mmap(NULL, GENPAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    0);
	if (page == MAP_FAILED)
		abort();
	page->magic = GENPAGE_MAGIC;
	page->layout = GENPAGE_LAYOUT;
	genpage_store(page, generation);
	munmap(page, GENPAGE_SIZE);
	return fd;
}

/* @hold: the peer accepts nothing until the test clears p->hold. */
static void peer_start_held(struct peer *p, enum peer_mode mode, bool hold,
			    int backlog)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};

	memset(p, 0, sizeof(*p));
	p->mode = mode;
	atomic_store(&p->hold, hold);
	p->fd = -1;
	p->generation = 7;
	p->page_fd = -1;
	if (mode == PEER_SILENT || mode == PEER_ENDLESS || mode == PEER_HEAVY)
		p->page_fd = page_new(p->generation);
	snprintf(p->path, sizeof(p->path), "/tmp/test-channel-%d-%d.sock",
		 getpid(), (int)mode);
	unlink(p->path);
	strcpy(addr.sun_path, p->path);
	p->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (bind(p->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(p->listen_fd, backlog) < 0)
		abort();
	pthread_create(&p->thread, NULL, peer_main, p);
}

static void peer_start(struct peer *p, enum peer_mode mode)
{
	peer_start_held(p, mode, false, 4);
}

static void peer_stop(struct peer *p)
{
	atomic_store(&p->stop, true);
	pthread_join(p->thread, NULL);
	close(p->listen_fd);
	if (p->page_fd >= 0)
		close(p->page_fd);
	unlink(p->path);
}

/* ---- a connect in another thread ----------------------------------------- */

struct connect_job {
	struct rdmad_client *client;
	pthread_t thread;
	atomic_bool done;
	int err;
	uint64_t elapsed_ms;
};

static void *connect_main(void *arg)
{
	struct connect_job *job = arg;
	uint64_t start = channel_now_ms();

	job->err = rdmad_client_connect(job->client);
	job->elapsed_ms = channel_now_ms() - start;
	atomic_store(&job->done, true);
	return NULL;
}

static void connect_start(struct connect_job *job, struct rdmad_client *c)
{
	memset(job, 0, sizeof(*job));
	job->client = c;
	pthread_create(&job->thread, NULL, connect_main, job);
}

/* Join the connect, or report a hang and leave: it would never end. */
static void connect_join(struct connect_job *job, const char *what)
{
	uint64_t end = channel_now_ms() + TEST_HANG_MS;

	while (!atomic_load(&job->done) && channel_now_ms() < end)
		usleep(10000);
	if (!atomic_load(&job->done)) {
		fprintf(stderr, "%s: connect still running after %d ms\n", what,
			TEST_HANG_MS);
		_exit(1);
	}
	pthread_join(job->thread, NULL);
}

static bool wait_flag(atomic_bool *flag)
{
	uint64_t end = channel_now_ms() + TEST_HANG_MS;

	while (!atomic_load(flag) && channel_now_ms() < end)
		usleep(1000);
	return atomic_load(flag);
}

/* ---- the tests ------------------------------------------------------------
 */

/* fork() while the connect waits; the child exits at once. */
static bool fork_completes(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_silent_daemon(void)
{
	struct rdmad_client *c;
	struct connect_job job;
	struct peer p;
	uint64_t gen;

	peer_start(&p, PEER_SILENT);
	c = rdmad_client_new(p.path);
	connect_start(&job, c);
	CHECK(wait_flag(&p.greeted), "the peer never got a Hello");
	/* The connect waits for a Welcome that never comes. */
	gen = rdmad_client_get_generation(c);
	CHECK(!atomic_load(&job.done), "get_generation waited for connect");
	CHECK(gen == 0);
	CHECK(rdmad_client_get_fd(c) == -ENOTCONN);
	CHECK(rdmad_client_get_timeout(c) >= 0);
	CHECK(!atomic_load(&job.done), "get_fd/get_timeout waited");
	CHECK(rdmad_client_process(c) == 0);
	CHECK(!atomic_load(&job.done), "process waited for connect");
	CHECK(fork_completes(), "fork failed");
	CHECK(!atomic_load(&job.done), "fork waited for connect");
	connect_join(&job, "silent");
	CHECK(job.err == -ETIMEDOUT, "connect: %d", job.err);
	printf("silent daemon: connect returned %d after %llu ms\n", job.err,
	       (unsigned long long)job.elapsed_ms);
	rdmad_client_unref(c);
	peer_stop(&p);
}

static long max_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static void test_endless_snapshot(enum peer_mode mode, const char *what)
{
	struct rdmad_client *c;
	struct connect_job job;
	struct peer p;
	long rss;

	peer_start(&p, mode);
	c = rdmad_client_new(p.path);
	connect_start(&job, c);
	connect_join(&job, what);
	rss = max_rss_kib();
	CHECK(job.err < 0, "%s: connect succeeded", what);
	/* Its deadline is CHANNEL_REPLY_TIMEOUT_MS after Subscribe; the
	 * bound is loose, the hang is what is checked. */
	CHECK(job.elapsed_ms < 3 * CHANNEL_REPLY_TIMEOUT_MS,
	      "%s: connect took %llu ms", what,
	      (unsigned long long)job.elapsed_ms);
	CHECK(atomic_load(&p.parts_sent) > 0, "%s: no part sent", what);
#ifndef UNDER_ASAN
	/* SYNC_MAX_SNAPSHOT_BYTES and one part in decoding; ASan keeps
	 * freed memory in quarantine, so only the plain build checks. */
	CHECK(rss < 256 * 1024, "%s: peak RSS %ld KiB", what, rss);
#endif
	printf("%s: connect returned %d after %llu ms, %lu parts sent, "
	       "%u subscribes, peak RSS %ld KiB\n",
	       what, job.err, (unsigned long long)job.elapsed_ms,
	       atomic_load(&p.parts_sent), atomic_load(&p.subscribes), rss);
	rdmad_client_unref(c);
	peer_stop(&p);
}

static uint64_t snapshot_generation(struct rdmad_client *c, size_t *ret_n)
{
	struct rdmad_snapshot *snap = rdmad_client_get_snapshot(c);
	uint64_t gen = rdmad_snapshot_get_generation(snap);

	*ret_n = rdmad_snapshot_get_count(snap);
	rdmad_snapshot_unref(snap);
	return snap ? gen : 0;
}

/* Events come on the peer's own schedule: process until one is in. */
static int process_until_event(struct rdmad_client *c)
{
	uint64_t end = channel_now_ms() + TEST_HANG_MS;
	int n = 0;

	while (n == 0 && channel_now_ms() < end) {
		struct pollfd pfd = {.fd = rdmad_client_get_fd(c),
				     .events = POLLIN};

		poll(&pfd, 1, 100);
		n = rdmad_client_process(c);
	}
	return n;
}

static void count_event(struct rdmad_client *client, enum rdmad_event_type type,
			const struct rdmad_device *device, uint64_t generation,
			void *userdata)
{
	(void)client;
	(void)type;
	(void)device;
	*(uint64_t *)userdata = generation;
}

static void test_no_page(enum peer_mode mode, const char *what)
{
	struct rdmad_client *c;
	uint64_t last = 0;
	struct peer p;
	size_t n;

	peer_start(&p, mode);
	c = rdmad_client_new(p.path);
	rdmad_client_set_callback(c, count_event, &last);
	CHECK(rdmad_client_connect(c) == 0, "%s: refused", what);
	CHECK(rdmad_client_get_fd(c) >= 0, "%s", what);
	CHECK(rdmad_client_get_generation(c) == 7, "%s: %llu", what,
	      (unsigned long long)rdmad_client_get_generation(c));
	CHECK(snapshot_generation(c, &n) == 7 && n == 1, "%s", what);
	CHECK(rdmad_client_process(c) == 1 && last == 7, "%s: resync", what);
	/* The peer thread sends on its socket; the client is connected
	 * and idle, so this does not race with its requests. */
	peer_event(&p, 8);
	CHECK(process_until_event(c) == 1 && last == 8, "%s: event", what);
	CHECK(rdmad_client_get_generation(c) == 8, "%s: %llu", what,
	      (unsigned long long)rdmad_client_get_generation(c));
	CHECK(snapshot_generation(c, &n) == 8 && n == 2, "%s", what);
	rdmad_client_unref(c);
	peer_stop(&p);
}

/* A listener whose backlog is full says EAGAIN to a connect: the
 * connect tries again within its step's 2 s, without the lock (another
 * thread's getters return meanwhile), and gets in once the daemon
 * accepts what is ahead of it. */
static void test_full_backlog(void)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct rdmad_client *c;
	struct connect_job job;
	struct peer p;
	int ahead, again;

	peer_start_held(&p, PEER_NO_PAGE, true, 0);
	strcpy(addr.sun_path, p.path);
	/* Backlog 0 takes one connection; the next says EAGAIN. */
	ahead = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
	again = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
	CHECK(connect(ahead, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	CHECK(connect(again, (struct sockaddr *)&addr, sizeof(addr)) < 0 &&
		      errno == EAGAIN,
	      "the backlog is not full: %s", strerror(errno));
	close(again);
	c = rdmad_client_new(p.path);
	connect_start(&job, c);
	usleep(200 * 1000);
	CHECK(!atomic_load(&job.done), "connect gave up on a full backlog: %d",
	      job.err);
	CHECK(rdmad_client_get_fd(c) == -ENOTCONN);
	CHECK(rdmad_client_get_timeout(c) >= 0);
	CHECK(!atomic_load(&job.done), "get_fd/get_timeout waited");
	/* The daemon takes the connection ahead (it hangs up at once). */
	close(ahead);
	atomic_store(&p.hold, false);
	connect_join(&job, "full backlog");
	CHECK(job.err == 0, "connect after a full backlog: %d", job.err);
	CHECK(job.elapsed_ms < 2000 + 1000, "%llu ms",
	      (unsigned long long)job.elapsed_ms);
	printf("full backlog: connected after %llu ms\n",
	       (unsigned long long)job.elapsed_ms);
	rdmad_client_unref(c);
	peer_stop(&p);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_silent_daemon();
	test_full_backlog();
	test_endless_snapshot(PEER_ENDLESS, "parts 2^32-1");
	test_endless_snapshot(PEER_HEAVY, "4096 heavy parts");
	test_no_page(PEER_NO_PAGE, "no page");
	test_no_page(PEER_PAGE_NO_FD, "page announced, none passed");
	if (failures)
		fprintf(stderr, "%u check(s) failed\n", failures);
	return failures ? 1 : 0;
}
