/* SPDX-License-Identifier: MIT */
/*
 * The server end to end (server.c, client.c, requests.c, publish.c): a
 * real server on a temporary socket, driven by this process's libevent
 * loop, with the real device table behind it.
 * Clients are plain SEQPACKET sockets in the same process (and, for the
 * uid checks, in a child that dropped to nobody); while a client waits
 * for a reply the loop is pumped, so the server runs in between.
 * scan_full_now() is faked here to count admin rescans.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "devices.h"
#include "genpage.h"
#include "publish.h"
#include "server.h"
#include "scan.h"
#include "check.h"
#include "wire.h"

#define NDEVS 600
#define NSUBS 50
#define MAX_QUEUE 8
#define MAX_HOLDS 2

static struct event_base *base;
static struct devices *table;
static struct server *srv;
static struct server_options opts;
static char sock_path[108];
static char tmpdir[64];
static int rescans;

int scan_full_now(struct scan *scan)
{
	rescans++;
	return 0;
}

static void on_table_event(void *userdata, enum devices_event event,
			   const struct device *dev, const char *old_name)
{
	if (srv)
		publish_device_event(srv, event, dev, old_name);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* ---- the table ---- */

static void make_device(struct device_record *d, unsigned int i)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "dev_%03u", i);
	snprintf(d->id, sizeof(d->id), "pci-0000:%02x:%02x.%u", i / 256,
		 (i / 8) % 32, i % 8);
	snprintf(d->uverbs, sizeof(d->uverbs), "uverbs%u", i);
	snprintf(d->node_guid, sizeof(d->node_guid), "0002:c903:0000:%04x", i);
	snprintf(d->node_type, sizeof(d->node_type), "CA");
	snprintf(d->fw_ver, sizeof(d->fw_ver), "16.35.2000");
	d->numa_node = -1;
	d->nports = 2;
	d->ports = calloc(2, sizeof(*d->ports));
	for (unsigned int p = 0; p < 2; p++) {
		d->ports[p].port = p + 1;
		snprintf(d->ports[p].state, sizeof(d->ports[p].state),
			 "ACTIVE");
		snprintf(d->ports[p].link_layer, sizeof(d->ports[p].link_layer),
			 "InfiniBand");
		snprintf(d->ports[p].rate, sizeof(d->ports[p].rate),
			 "100 Gb/sec (4X EDR)");
		d->ports[p].netdev_up = -1;
	}
}

static void fill_table(void)
{
	struct device_record *scan = calloc(NDEVS, sizeof(*scan));

	for (unsigned int i = 0; i < NDEVS; i++)
		make_device(&scan[i], i);
	CHECK(devices_apply_scan(table, scan, NDEVS) == NDEVS, "fill");
	free(scan);
}

/* A visible change: an internal holder comes or goes. */
static void bump(void)
{
	static const char owner;
	struct holder h = {.owner = &owner, .pid = 1, .comm = "test"};

	if (devices_release(table, "dev_000", &owner) == -ENOENT)
		devices_hold(table, "dev_000", &h);
}

/* ---- a client ---- */

static int cl_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

static void cl_send_raw(int fd, const void *buf, size_t len)
{
	CHECK(wire_send(fd, buf, len, -1) == 0, "send %zu bytes", len);
}

static void cl_send(int fd, Rdmad__Frame *frame)
{
	uint8_t *buf;
	size_t len;

	CHECK(wire_encode(frame, WIRE_MAX_FRAME, &buf, &len) == 0, "encode");
	cl_send_raw(fd, buf, len);
	free(buf);
}

static void cl_request(int fd, uint64_t seq, Rdmad__Frame__BodyCase body,
		       const char *name)
{
	Rdmad__Hello hello = RDMAD__HELLO__INIT;
	Rdmad__Subscribe sub = RDMAD__SUBSCRIBE__INIT;
	Rdmad__GetStatus get = RDMAD__GET_STATUS__INIT;
	Rdmad__Hold hold = RDMAD__HOLD__INIT;
	Rdmad__Release rel = RDMAD__RELEASE__INIT;
	Rdmad__Rescan rescan = RDMAD__RESCAN__INIT;
	Rdmad__Frame frame;

	wire_frame_init(&frame, seq);
	frame.body_case = body;
	hello.client_name = "test-server";
	hold.name = rel.name = (char *)name;
	/* Only one of these is the body; the others stay unused. */
	if (body == RDMAD__FRAME__BODY_HELLO)
		frame.hello = &hello;
	else if (body == RDMAD__FRAME__BODY_SUBSCRIBE)
		frame.subscribe = &sub;
	else if (body == RDMAD__FRAME__BODY_GET_STATUS)
		frame.get_status = &get;
	else if (body == RDMAD__FRAME__BODY_HOLD)
		frame.hold = &hold;
	else if (body == RDMAD__FRAME__BODY_RELEASE)
		frame.release = &rel;
	else if (body == RDMAD__FRAME__BODY_RESCAN)
		frame.rescan = &rescan;
	cl_send(fd, &frame);
}

/* Let the server run once; a child without a server just waits. */
/* How long a reply or a close may take: a deadline, not a pace. */
#define DEADLINE_MS 10000

static void pump_or_wait(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	if (base)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	else
		poll(&pfd, 1, 10);
}

static void pump(void)
{
	pump_or_wait(-1);
}

/*
 * Next frame for @fd, pumping the server meanwhile.  NULL on close (then
 * *ret_closed is set) or after @timeout_ms.  A passed fd lands in
 * *ret_fd when asked for, else it is closed.
 */
static Rdmad__Frame *cl_recv_fd(int fd, int timeout_ms, bool *ret_closed,
				int *ret_fd)
{
	static uint8_t buf[WIRE_MAX_FRAME];
	uint64_t end = now_ms() + timeout_ms;
	Rdmad__Frame *frame;
	ssize_t n;
	int pfd;

	if (ret_closed)
		*ret_closed = false;
	do {
		n = wire_recv(fd, buf, sizeof(buf), &pfd);
		if (n == -EAGAIN) {
			pump_or_wait(fd);
			continue;
		}
		if (n <= 0) {
			if (ret_closed)
				*ret_closed = true;
			return NULL;
		}
		if (ret_fd)
			*ret_fd = pfd;
		else if (pfd >= 0)
			close(pfd);
		CHECK(wire_decode(buf, n, WIRE_MAX_FRAME, &frame) == 0,
		      "client cannot decode the daemon's frame");
		return frame;
	} while (now_ms() < end);
	return NULL;
}

static Rdmad__Frame *cl_recv(int fd)
{
	return cl_recv_fd(fd, DEADLINE_MS, NULL, NULL);
}

static Rdmad__Status cl_status(int fd, uint64_t seq)
{
	Rdmad__Frame *f = cl_recv(fd);
	Rdmad__Status st;

	if (!f) {
		CHECK(0, "no reply to seq %llu", (unsigned long long)seq);
		return RDMAD__STATUS__STATUS_INTERNAL;
	}
	CHECK(f->seq == seq, "seq %llu echoed as %llu", (unsigned long long)seq,
	      (unsigned long long)f->seq);
	st = f->status;
	wire_free(f);
	return st;
}

static bool cl_closed(int fd)
{
	bool closed;
	Rdmad__Frame *f;

	while ((f = cl_recv_fd(fd, DEADLINE_MS, &closed, NULL)))
		wire_free(f);
	return closed;
}

static int cl_hello(void)
{
	int fd = cl_connect();

	cl_request(fd, 1, RDMAD__FRAME__BODY_HELLO, NULL);
	wire_free(cl_recv(fd));
	return fd;
}

/* Read a whole snapshot (all parts); returns the device count. */
static size_t cl_snapshot(int fd, uint64_t seq, uint64_t *ret_gen,
			  uint32_t *ret_parts)
{
	Rdmad__Frame *f;
	size_t total = 0;
	uint32_t part = 0, parts = 1;

	while (part < parts && (f = cl_recv(fd))) {
		CHECK(f->body_case == RDMAD__FRAME__BODY_SNAPSHOT,
		      "snapshot expected, body %d", f->body_case);
		if (f->body_case != RDMAD__FRAME__BODY_SNAPSHOT) {
			wire_free(f);
			break;
		}
		CHECK(f->seq == seq && f->status == RDMAD__STATUS__STATUS_OK,
		      "snapshot seq %llu status %d", (unsigned long long)f->seq,
		      f->status);
		CHECK(f->snapshot->part == part, "part %u, want %u",
		      f->snapshot->part, part);
		parts = f->snapshot->parts;
		*ret_gen = f->snapshot->generation;
		total += f->snapshot->n_devices;
		part++;
		wire_free(f);
	}
	if (ret_parts)
		*ret_parts = parts;
	return total;
}

/* ---- tests ---- */

static void test_hello(void)
{
	struct genpage *page;
	Rdmad__Frame *f;
	int fd = cl_connect(), gfd = -1;
	struct stat st;
	void *p;

	cl_request(fd, 77, RDMAD__FRAME__BODY_HELLO, NULL);
	f = cl_recv_fd(fd, 2000, NULL, &gfd);
	CHECK(f && f->body_case == RDMAD__FRAME__BODY_WELCOME, "welcome");
	if (!f)
		return;
	CHECK(f->seq == 77 && f->status == RDMAD__STATUS__STATUS_OK, "seq");
	CHECK(f->welcome->version == 1, "version %u", f->welcome->version);
	CHECK(f->welcome->generation == devices_generation(table),
	      "welcome generation");
	CHECK(f->welcome->generation_page && gfd >= 0, "generation page fd");
	CHECK(f->welcome->daemon_version[0] != '\0', "daemon_version");
	wire_free(f);
	if (gfd < 0)
		return;
	CHECK(fstat(gfd, &st) == 0 && st.st_size == 4096, "page size");
	CHECK((fcntl(gfd, F_GETFL) & O_ACCMODE) == O_RDONLY, "O_RDONLY fd");
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, gfd, 0);
	CHECK(p == MAP_FAILED, "PROT_WRITE mapping of the page must fail");
	if (p != MAP_FAILED)
		munmap(p, 4096);
	CHECK(write(gfd, "x", 1) < 0, "write to the page fd must fail");
	CHECK(fcntl(gfd, F_GET_SEALS) & F_SEAL_SEAL,
	      "no client may add seals to the page");
	CHECK(fcntl(gfd, F_ADD_SEALS, F_SEAL_WRITE) < 0, "seals sealed");
	page = mmap(NULL, 4096, PROT_READ, MAP_SHARED, gfd, 0);
	CHECK(page != MAP_FAILED, "PROT_READ mapping");
	if (page != MAP_FAILED) {
		CHECK(page->magic == 0x52444d47 && page->layout == 1,
		      "magic %x layout %u", page->magic, page->layout);
		CHECK(__atomic_load_n(&page->generation, __ATOMIC_ACQUIRE) ==
			      devices_generation(table),
		      "page generation");
		bump();
		CHECK(__atomic_load_n(&page->generation, __ATOMIC_ACQUIRE) ==
			      devices_generation(table),
		      "page follows the table");
		munmap(page, 4096);
	}
	close(gfd);
	close(fd);
}

/* A client whose socket refuses descriptors (SO_PASSRIGHTS 0, Linux
 * 6.16: the daemon's send with the page fails EPERM) still gets its
 * Welcome, without the page and saying so, and keeps its connection: a
 * reply never depends on whether its descriptor can go. */
#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83
#endif
static void test_welcome_without_page(void)
{
	int fd = cl_connect(), off = 0, gfd = -1;
	Rdmad__Frame *f;
	uint64_t gen;

	if (setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off)) < 0) {
		printf("skip: no SO_PASSRIGHTS (Linux 6.16) to refuse the "
		       "page with\n");
		close(fd);
		return;
	}
	cl_request(fd, 5, RDMAD__FRAME__BODY_HELLO, NULL);
	f = cl_recv_fd(fd, 2000, NULL, &gfd);
	CHECK(f && f->body_case == RDMAD__FRAME__BODY_WELCOME,
	      "a Welcome for a client that refuses descriptors");
	CHECK(f && !f->welcome->generation_page && gfd < 0,
	      "without the page, and saying so");
	if (f)
		wire_free(f);
	cl_request(fd, 6, RDMAD__FRAME__BODY_GET_STATUS, NULL);
	CHECK(cl_snapshot(fd, 6, &gen, NULL) == NDEVS,
	      "the connection stays and is served");
	close(fd);
}

static void test_status_split(void)
{
	int fd = cl_connect();
	uint64_t gen = 0, seq = 0xdeadbeefcafeull;
	uint32_t parts = 0;
	size_t n;

	/* Before Hello: refused with the seq echoed. */
	cl_request(fd, 5, RDMAD__FRAME__BODY_GET_STATUS, NULL);
	CHECK(cl_status(fd, 5) == RDMAD__STATUS__STATUS_BAD_REQUEST,
	      "request before hello");
	cl_request(fd, 6, RDMAD__FRAME__BODY_HELLO, NULL);
	wire_free(cl_recv(fd));
	cl_request(fd, seq, RDMAD__FRAME__BODY_GET_STATUS, NULL);
	n = cl_snapshot(fd, seq, &gen, &parts);
	CHECK(n == NDEVS, "snapshot has %zu devices, want %d", n, NDEVS);
	CHECK(parts >= 2, "%d devices should need several parts, got %u", NDEVS,
	      parts);
	CHECK(gen == devices_generation(table), "snapshot generation");
	close(fd);
}

static void test_fanout(void)
{
	int fds[NSUBS], bad = 0;
	uint64_t gen = 0, start;
	Rdmad__Frame *f;

	for (int i = 0; i < NSUBS; i++) {
		fds[i] = cl_hello();
		cl_request(fds[i], 2, RDMAD__FRAME__BODY_SUBSCRIBE, NULL);
		cl_snapshot(fds[i], 2, &gen, NULL);
	}
	CHECK(server_client_count(srv) == NSUBS, "clients %u",
	      server_client_count(srv));
	start = now_ms();
	bump();
	for (int i = 0; i < NSUBS; i++) {
		f = cl_recv(fds[i]);
		if (!f || f->body_case != RDMAD__FRAME__BODY_EVENT ||
		    f->seq != 0 || f->event->generation != gen + 1 ||
		    strcmp(f->event->device->name, "dev_000") != 0 ||
		    f->event->type != RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED)
			bad++;
		wire_free(f);
	}
	CHECK(bad == 0, "%d of %d subscribers missed the event", bad, NSUBS);
	printf("fan-out to %d subscribers: %llu ms\n", NSUBS,
	       (unsigned long long)(now_ms() - start));
	for (int i = 0; i < NSUBS; i++)
		close(fds[i]);
	pump();
}

/* A frame of @body, or NULL, within a short wait. */
static Rdmad__Frame *cl_next(int fd, Rdmad__Frame__BodyCase body)
{
	Rdmad__Frame *f;

	pump();
	f = cl_recv_fd(fd, 200, NULL, NULL);
	if (f && f->body_case != body) {
		wire_free(f);
		return NULL;
	}
	return f;
}

/* A connection's states, row by row as client.h draws them. */
static void test_states(void)
{
	int fd = cl_connect();
	Rdmad__Frame frame, *f;
	uint64_t gen = 0;

	/* GREETING: nothing but Hello. */
	cl_request(fd, 1, RDMAD__FRAME__BODY_GET_STATUS, NULL);
	CHECK(cl_status(fd, 1) == RDMAD__STATUS__STATUS_BAD_REQUEST,
	      "greeting: GetStatus before Hello refused");
	/* GREETING -> WELCOMED: Welcome; no events yet. */
	cl_request(fd, 2, RDMAD__FRAME__BODY_HELLO, NULL);
	f = cl_next(fd, RDMAD__FRAME__BODY_WELCOME);
	CHECK(f != NULL, "welcomed: Welcome");
	wire_free(f);
	bump();
	f = cl_next(fd, RDMAD__FRAME__BODY_EVENT);
	CHECK(f == NULL, "welcomed: no events before Subscribe");
	wire_free(f);
	/* WELCOMED -> SUBSCRIBED, and again: a snapshot, then events. */
	for (uint64_t seq = 3; seq <= 4; seq++) {
		cl_request(fd, seq, RDMAD__FRAME__BODY_SUBSCRIBE, NULL);
		CHECK(cl_snapshot(fd, seq, &gen, NULL) == NDEVS,
		      "subscribed (seq %llu): the snapshot",
		      (unsigned long long)seq);
		bump();
		f = cl_next(fd, RDMAD__FRAME__BODY_EVENT);
		CHECK(f && f->event->generation == gen + 1,
		      "subscribed (seq %llu): the event after it",
		      (unsigned long long)seq);
		wire_free(f);
	}
	/* A protocol error: the reply, then closed. */
	wire_frame_init(&frame, 5);
	frame.version = 2;
	cl_send(fd, &frame);
	CHECK(cl_status(fd, 5) == RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION,
	      "hanging up: the reply that says why");
	CHECK(cl_closed(fd), "hanging up: closed after it");
	close(fd);
	pump();
}

/* ---- the table's listener ---- */

static int relay_fd = -1;
static uint64_t relay_noted;
static bool noted_before_clients, then_after_clients;
static int relay_thens;

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

static void relay_note(void *userdata, uint64_t generation)
{
	relay_noted = generation;
	noted_before_clients = !readable(relay_fd);
}

static void relay_then(void *userdata, enum devices_event event,
		       const struct device *dev)
{
	relay_thens++;
	then_after_clients = readable(relay_fd);
}

/* publish_table_listener(): each change's generation is noted (main.c
 * persists it) before any subscriber hears of it, and what follows
 * (main.c's verbs source, metrics, timers) runs once they have; before
 * a server listens, the change still reaches both. */
static void test_table_listener(void)
{
	struct publish_relay relay = {.table = table,
				      .server = srv,
				      .note_generation = relay_note,
				      .then = relay_then};
	uint64_t gen = 0;
	Rdmad__Frame *f;

	relay_fd = cl_hello();
	cl_request(relay_fd, 2, RDMAD__FRAME__BODY_SUBSCRIBE, NULL);
	cl_snapshot(relay_fd, 2, &gen, NULL);
	devices_set_listener(table, publish_table_listener, &relay);
	bump();
	CHECK(relay_thens == 1 && relay_noted == devices_generation(table),
	      "noted %llu of %llu, %d thens", (unsigned long long)relay_noted,
	      (unsigned long long)devices_generation(table), relay_thens);
	CHECK(noted_before_clients, "generation noted before clients hear it");
	CHECK(then_after_clients, "the rest runs after clients heard it");
	f = cl_recv(relay_fd);
	CHECK(f && f->body_case == RDMAD__FRAME__BODY_EVENT &&
		      f->event->generation == gen + 1,
	      "the subscriber got the event");
	wire_free(f);
	relay.server = NULL;
	bump();
	CHECK(relay_thens == 2 && relay_noted == devices_generation(table),
	      "without a server: noted and handed on");
	CHECK(!readable(relay_fd), "without a server: no client hears it");
	devices_set_listener(table, on_table_event, NULL);
	close(relay_fd);
	pump();
}

static void test_bad_input(void)
{
	int good = cl_hello(), fd;
	uint8_t garbage[64], big[5000];
	Rdmad__Frame frame;
	uint64_t gen;

	/* Version 2: UNSUPPORTED_VERSION with our version, then closed. */
	fd = cl_connect();
	wire_frame_init(&frame, 9);
	frame.version = 2;
	cl_send(fd, &frame);
	{
		Rdmad__Frame *f = cl_recv(fd);

		CHECK(f &&
			      f->status ==
				      RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION &&
			      f->seq == 9 && f->version == 1,
		      "unsupported version reply");
		wire_free(f);
	}
	CHECK(cl_closed(fd), "closed after a bad version");
	close(fd);

	/* Garbage: closed. */
	fd = cl_hello();
	memset(garbage, 0xff, sizeof(garbage));
	cl_send_raw(fd, garbage, sizeof(garbage));
	CHECK(cl_closed(fd), "closed after garbage");
	close(fd);

	/* Oversized: closed. */
	fd = cl_hello();
	memset(big, 0, sizeof(big));
	cl_send_raw(fd, big, sizeof(big));
	CHECK(cl_closed(fd), "closed after an oversized datagram");
	close(fd);

	/* Three decodable bad requests: BAD_REQUEST each, then closed. */
	fd = cl_hello();
	for (uint64_t seq = 10; seq < 13; seq++) {
		Rdmad__Welcome w = RDMAD__WELCOME__INIT;

		wire_frame_init(&frame, seq);
		frame.body_case = RDMAD__FRAME__BODY_WELCOME;
		frame.welcome = &w;
		cl_send(fd, &frame);
		CHECK(cl_status(fd, seq) == RDMAD__STATUS__STATUS_BAD_REQUEST,
		      "a Welcome from a client is a bad request");
	}
	CHECK(cl_closed(fd), "closed after three bad requests");
	close(fd);

	/* The other client never noticed. */
	cl_request(good, 3, RDMAD__FRAME__BODY_GET_STATUS, NULL);
	CHECK(cl_snapshot(good, 3, &gen, NULL) == NDEVS, "other client ok");
	close(good);
}

static void test_holds(void)
{
	char name[16];
	int fd;
	const struct device *dev;

	/* Any process names itself: escapes and bytes that are not UTF-8
	 * reach no client. */
	prctl(PR_GET_NAME, name);
	prctl(PR_SET_NAME, "t\x1b]0;x\x07\xff");
	fd = cl_hello();
	prctl(PR_SET_NAME, name);

	cl_request(fd, 20, RDMAD__FRAME__BODY_HOLD, "dev_010");
	CHECK(cl_status(fd, 20) == RDMAD__STATUS__STATUS_OK, "hold");
	cl_request(fd, 21, RDMAD__FRAME__BODY_HOLD, "dev_011");
	CHECK(cl_status(fd, 21) == RDMAD__STATUS__STATUS_OK, "hold 2");
	cl_request(fd, 22, RDMAD__FRAME__BODY_HOLD, "dev_012");
	CHECK(cl_status(fd, 22) == RDMAD__STATUS__STATUS_LIMIT,
	      "third hold over max_holds");
	cl_request(fd, 23, RDMAD__FRAME__BODY_RELEASE, "dev_012");
	CHECK(cl_status(fd, 23) == RDMAD__STATUS__STATUS_NOT_HELD,
	      "release of an unheld device");
	cl_request(fd, 24, RDMAD__FRAME__BODY_RELEASE, "nosuch");
	CHECK(cl_status(fd, 24) == RDMAD__STATUS__STATUS_NO_SUCH_DEVICE,
	      "release of an unknown device");
	cl_request(fd, 25, RDMAD__FRAME__BODY_RELEASE, "dev_011");
	CHECK(cl_status(fd, 25) == RDMAD__STATUS__STATUS_OK, "release");
	cl_request(fd, 26, RDMAD__FRAME__BODY_HOLD, "nosuch");
	CHECK(cl_status(fd, 26) == RDMAD__STATUS__STATUS_NO_SUCH_DEVICE,
	      "hold of an unknown device");
	dev = devices_find(table, "dev_010");
	CHECK(dev && device_holder_count(dev) == 1, "one holder");
	if (dev && device_holder_count(dev) == 1)
		CHECK(device_holder(dev, 0)->pid == getpid() &&
			      !strcmp(device_holder(dev, 0)->comm, "t?]0;x??"),
		      "holder pid from SO_PEERCRED, comm printable: %s",
		      device_holder(dev, 0)->comm);
	close(fd);
	for (int i = 0; i < 20; i++)
		pump();
	dev = devices_find(table, "dev_010");
	CHECK(dev && device_holder_count(dev) == 0,
	      "holds released when the connection closed");
}

/* A subscriber that does not read overflows and resyncs; a reading
 * one gets every event in order meanwhile. */
/*
 * The reply that ends a connection is not lost behind a full socket:
 * events fill a subscriber's socket and queue, then it sends version 2;
 * once it reads, UNSUPPORTED_VERSION comes after the events, then the
 * close.
 */
static void test_last_reply_queued(void)
{
	int fd = cl_hello(), frames = 0;
	Rdmad__Frame frame, *f, *last = NULL;
	bool closed = false;
	uint64_t gen;

	cl_request(fd, 2, RDMAD__FRAME__BODY_SUBSCRIBE, NULL);
	cl_snapshot(fd, 2, &gen, NULL);
	for (int i = 0; i < 3000; i++)
		bump();
	wire_frame_init(&frame, 9);
	frame.version = 2;
	cl_send(fd, &frame);
	for (int i = 0; i < 10; i++)
		pump();
	while ((f = cl_recv_fd(fd, DEADLINE_MS, &closed, NULL))) {
		wire_free(last);
		last = f;
		frames++;
	}
	CHECK(frames > 1 && last && last->seq == 9 &&
		      last->status == RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION,
	      "%d frames, the last one seq %llu status %d", frames,
	      last ? (unsigned long long)last->seq : 0ULL,
	      last ? (int)last->status : -1);
	CHECK(closed, "closed after the reply");
	wire_free(last);
	close(fd);
}

static void test_overflow(void)
{
	int slow = cl_hello(), fast = cl_hello(), events = 0, gaps = 0;
	uint64_t gen = 0, fast_gen = 0, last;
	bool resynced = false;
	Rdmad__Frame *f;

	cl_request(slow, 2, RDMAD__FRAME__BODY_SUBSCRIBE, NULL);
	cl_snapshot(slow, 2, &gen, NULL);
	cl_request(fast, 2, RDMAD__FRAME__BODY_SUBSCRIBE, NULL);
	cl_snapshot(fast, 2, &fast_gen, NULL);
	last = fast_gen;
	/* More events than the kernel queue plus ours can hold. */
	for (int i = 0; i < 3000; i++) {
		bump();
		while ((f = cl_recv_fd(fast, 0, NULL, NULL))) {
			if (f->event->generation != last + 1)
				gaps++;
			last = f->event->generation;
			events++;
			wire_free(f);
		}
	}
	while ((f = cl_recv_fd(fast, 100, NULL, NULL))) {
		gaps += f->event->generation != last + 1;
		last = f->event->generation;
		events++;
		wire_free(f);
	}
	CHECK(gaps == 0 && events == 3000, "reading client: %d events, %d gaps",
	      events, gaps);
	/* The slow one: some events, then a seq-0 snapshot of now. */
	while ((f = cl_recv_fd(slow, 500, NULL, NULL))) {
		if (f->body_case == RDMAD__FRAME__BODY_SNAPSHOT) {
			CHECK(f->seq == 0, "resync snapshot has seq 0");
			CHECK(f->snapshot->generation ==
				      devices_generation(table),
			      "resync snapshot is current");
			resynced = true;
		}
		wire_free(f);
	}
	CHECK(resynced, "the non-reading client got a resync snapshot");
	close(slow);
	close(fast);
}

static void test_max_clients(void)
{
	struct server_options o = opts;
	int fds[3];

	fds[0] = cl_hello();
	fds[1] = cl_hello();
	o.max_clients = server_client_count(srv);
	server_set_limits(srv, &o);
	fds[2] = cl_connect();
	CHECK(cl_closed(fds[2]), "connection over max_clients closed");
	cl_request(fds[1], 4, RDMAD__FRAME__BODY_GET_STATUS, NULL);
	CHECK(cl_snapshot(fds[1], 4, &(uint64_t){0}, NULL) == NDEVS,
	      "existing clients keep working");
	server_set_limits(srv, &opts);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	pump();
}

/* ---- admission ---- */

/* Wait for one byte on @fd, pumping the server meanwhile. */
static void pump_until_readable(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	uint64_t end = now_ms() + DEADLINE_MS;

	while (poll(&pfd, 1, 0) == 0 && now_ms() < end)
		pump();
}

static void step(int to, int from)
{
	char b = 0;

	if (write(to, &b, 1) != 1 || read(from, &b, 1) != 1)
		_exit(3);
}

/* The unprivileged peer: uid 65534 when we are root, else ourselves in a
 * child.  Phase 1 (one connection per uid): a second is refused.  Phase
 * 2 (the rest reserved): one more is admitted, the next refused. */
static int child_admission(int up, int down)
{
	int a, b, c, d, ok = 1;

	if (getuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
		return 2;
	base = NULL; /* the parent serves */
	a = cl_hello();
	b = cl_connect();
	ok &= cl_closed(b);
	step(up, down);
	c = cl_hello();
	d = cl_connect();
	ok &= cl_closed(d);
	step(up, down);
	close(a);
	close(c);
	return ok ? 0 : 1;
}

/* Not root or the admin group: max_clients_per_uid connections, and not
 * the reserved slots, which root and the admin group still get. */
static void test_admission(void)
{
	struct server_options o = opts;
	uint64_t per_uid = server_refusals(srv, SERVER_REFUSED_PER_UID);
	uint64_t reserved = server_refusals(srv, SERVER_REFUSED_RESERVED);
	int up[2], down[2], status = -1, admin;
	pid_t pid;

	if (getuid() != 0) {
		/* Admission bounds are for other users than rdmad's. */
		printf("skip: admission needs another uid than ours (root)\n");
		return;
	}
	CHECK(pipe(up) == 0 && pipe(down) == 0, "pipes");
	o.max_clients_per_uid = 1;
	server_set_limits(srv, &o);
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(child_admission(up[1], down[0]));
	pump_until_readable(up[0]);
	CHECK(server_refusals(srv, SERVER_REFUSED_PER_UID) == per_uid + 1,
	      "refused past max_clients_per_uid");
	/* Room for two more, both reserved but for one. */
	o.max_clients_per_uid = 100;
	o.reserved_clients = 1;
	o.max_clients = server_client_count(srv) + 2;
	server_set_limits(srv, &o);
	step(down[1], up[0]);
	pump_until_readable(up[0]);
	CHECK(server_refusals(srv, SERVER_REFUSED_RESERVED) == reserved + 1,
	      "refused the reserved slot");
	/* Root is admin; not root, this process's group becomes it. */
	o.admin_group = getgid();
	server_set_limits(srv, &o);
	admin = cl_hello();
	cl_request(admin, 3, RDMAD__FRAME__BODY_GET_STATUS, NULL);
	CHECK(cl_snapshot(admin, 3, &(uint64_t){0}, NULL) == NDEVS,
	      "root or admin group: served in a reserved slot");
	close(admin);
	step(down[1], up[0]);
	while (waitpid(pid, &status, WNOHANG) == 0)
		pump();
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "unprivileged peer saw its refusals (status %d)", status);
	server_set_limits(srv, &opts);
	for (int i = 0; i < 2; i++) {
		close(up[i]);
		close(down[i]);
	}
	pump();
}

/* uid 65534, one process: its second connection is one too many when
 * max_clients_per_namespace is 1. */
static int child_per_namespace(int up, int down)
{
	int a, b, ok;

	if (setgid(65534) < 0 || setuid(65534) < 0)
		return 2;
	base = NULL; /* the parent serves */
	a = cl_hello();
	b = cl_connect();
	ok = cl_closed(b);
	step(up, down);
	close(a);
	return ok ? 0 : 1;
}

/* One container of a user (the namespaces root reads of its peer) gets
 * max_clients_per_namespace connections of max_clients_per_uid. */
static void test_admission_per_namespace(void)
{
	struct server_options o = opts;
	uint64_t before = server_refusals(srv, SERVER_REFUSED_PER_NAMESPACE);
	int up[2], down[2], status = -1;
	pid_t pid;

	if (getuid() != 0) {
		printf("skip: admission needs another uid than ours (root)\n");
		return;
	}
	CHECK(pipe(up) == 0 && pipe(down) == 0, "pipes");
	o.max_clients_per_namespace = 1;
	server_set_limits(srv, &o);
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(child_per_namespace(up[1], down[0]));
	pump_until_readable(up[0]);
	CHECK(server_refusals(srv, SERVER_REFUSED_PER_NAMESPACE) == before + 1,
	      "refused past max_clients_per_namespace");
	step(down[1], up[0]);
	while (waitpid(pid, &status, WNOHANG) == 0)
		pump();
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the container's second connection was closed (status %d)",
	      status);
	server_set_limits(srv, &opts);
	for (int i = 0; i < 2; i++) {
		close(up[i]);
		close(down[i]);
	}
	pump();
}

/* In a child that is not root or admin (uid 65534 when we are root,
 * else our own uid), with the parent serving: @body's exit status. */
static int as_unprivileged(int (*body)(void))
{
	int status = -1;
	uint64_t end;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (getuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
			_exit(2);
		base = NULL; /* nothing to pump: the parent serves */
		_exit(body());
	}
	end = now_ms() + DEADLINE_MS;
	while (waitpid(pid, &status, WNOHANG) == 0 && now_ms() < end)
		pump();
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* max_holds_per_uid = 1, over two connections of one user. */
static int child_two_holds(void)
{
	int a = cl_hello(), b = cl_hello(), ok;

	cl_request(a, 2, RDMAD__FRAME__BODY_HOLD, "dev_020");
	ok = cl_status(a, 2) == RDMAD__STATUS__STATUS_OK;
	cl_request(b, 2, RDMAD__FRAME__BODY_HOLD, "dev_021");
	ok &= cl_status(b, 2) == RDMAD__STATUS__STATUS_LIMIT;
	return ok ? 0 : 1;
}

static void test_holds_per_uid(void)
{
	struct server_options o = opts;

	o.max_holds_per_uid = 1;
	server_set_limits(srv, &o);
	CHECK(as_unprivileged(child_two_holds) == 0,
	      "a user's second hold over max_holds_per_uid is refused");
	server_set_limits(srv, &opts);
	pump();
}

/* A connection that never says Hello is closed after hello_timeout_ms;
 * one that says it twice gets an error, not a second generation page. */
static void test_hello_rules(void)
{
	struct server_options o = opts;
	uint64_t before = server_refusals(srv, SERVER_REFUSED_NO_HELLO);
	Rdmad__Frame *f;
	int silent, fd, gfd = -1;

	o.hello_timeout_ms = 200;
	server_set_limits(srv, &o);
	silent = cl_connect();
	CHECK(cl_closed(silent), "silent connection closed");
	CHECK(server_refusals(srv, SERVER_REFUSED_NO_HELLO) == before + 1,
	      "counted");
	close(silent);
	server_set_limits(srv, &opts);
	fd = cl_hello();
	cl_request(fd, 2, RDMAD__FRAME__BODY_HELLO, NULL);
	f = cl_recv_fd(fd, DEADLINE_MS, NULL, &gfd);
	CHECK(f && f->seq == 2 &&
		      f->status == RDMAD__STATUS__STATUS_BAD_REQUEST &&
		      f->body_case != RDMAD__FRAME__BODY_WELCOME,
	      "a second Hello is a bad request");
	CHECK(gfd < 0, "no second generation page");
	wire_free(f);
	close(fd);
	pump();
}

static void test_emfile(void)
{
	struct rlimit old, low;
	Rdmad__Frame *f;
	int fd, probe;

	/* Connections closed before go to the closer when the loop turns:
	 * let them go first, or accept finds their descriptors free. */
	for (int i = 0; i < 10; i++)
		pump();
	fd = cl_connect();
	getrlimit(RLIMIT_NOFILE, &old);
	probe = dup(0);
	low = old;
	low.rlim_cur = probe; /* the next fd (accept's) is over the limit */
	close(probe);
	setrlimit(RLIMIT_NOFILE, &low);
	cl_request(fd, 1, RDMAD__FRAME__BODY_HELLO, NULL);
	f = cl_recv_fd(fd, 200, NULL, NULL);
	CHECK(!f, "no accept while out of descriptors");
	wire_free(f);
	setrlimit(RLIMIT_NOFILE, &old);
	f = cl_recv_fd(fd, 3000, NULL, NULL);
	CHECK(f && f->body_case == RDMAD__FRAME__BODY_WELCOME,
	      "accepted after the back-off");
	wire_free(f);
	close(fd);
}

/* In a child dropped to nobody: Rescan refused, Hold allowed. */
static int child_unprivileged(void)
{
	Rdmad__Frame *f;
	int fd, ok = 1;

	fd = cl_connect();
	cl_request(fd, 1, RDMAD__FRAME__BODY_HELLO, NULL);
	f = cl_recv_fd(fd, 5000, NULL, NULL);
	ok &= f && f->body_case == RDMAD__FRAME__BODY_WELCOME;
	wire_free(f);
	cl_request(fd, 2, RDMAD__FRAME__BODY_RESCAN, NULL);
	f = cl_recv_fd(fd, 5000, NULL, NULL);
	ok &= f && f->seq == 2 &&
	      f->status == RDMAD__STATUS__STATUS_PERMISSION_DENIED;
	wire_free(f);
	cl_request(fd, 3, RDMAD__FRAME__BODY_HOLD, "dev_020");
	f = cl_recv_fd(fd, 5000, NULL, NULL);
	ok &= f && f->status == RDMAD__STATUS__STATUS_OK;
	wire_free(f);
	return ok ? 0 : 1;
}

/* Ask for a rescan on @fd; check the status and that it ran only if OK. */
static void check_rescan(int fd, uint64_t seq, Rdmad__Status want,
			 const char *who)
{
	int before = rescans;

	cl_request(fd, seq, RDMAD__FRAME__BODY_RESCAN, NULL);
	CHECK(cl_status(fd, seq) == want, "%s: rescan status", who);
	CHECK(rescans == before + (want == RDMAD__STATUS__STATUS_OK),
	      "%s: %d rescans ran", who, rescans - before);
}

/* As root: root may rescan, uid 65534 (a child that drops to it) may hold
 * but not rescan. */
static void test_admin_root(void)
{
	int fd = cl_hello(), status, before;

	check_rescan(fd, 30, RDMAD__STATUS__STATUS_OK, "root");
	close(fd);
	before = rescans;
	status = as_unprivileged(child_unprivileged);
	CHECK(status == 0,
	      "uid 65534: rescan refused and hold allowed (status %d)", status);
	CHECK(rescans == before, "refused rescan did not run");
}

/* Who may rescan: root, or a member of admin_group; anybody may hold.  Not
 * root (a package build), this process is the unprivileged caller, and
 * then a member of the admin group once that is its own group. */
static void test_admin(void)
{
	struct server_options admin = opts;
	int fd;

	if (getuid() == 0) {
		test_admin_root();
		return;
	}
	fd = cl_hello();
	check_rescan(fd, 30, RDMAD__STATUS__STATUS_PERMISSION_DENIED,
		     "not root, no admin group");
	cl_request(fd, 31, RDMAD__FRAME__BODY_HOLD, "dev_020");
	CHECK(cl_status(fd, 31) == RDMAD__STATUS__STATUS_OK, "not root: hold");
	admin.admin_group = getgid();
	server_set_limits(srv, &admin);
	check_rescan(fd, 32, RDMAD__STATUS__STATUS_OK, "admin group member");
	server_set_limits(srv, &opts);
	close(fd);
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-server-XXXXXX");
	if (!mkdtemp(tmpdir) || chmod(tmpdir, 0755) < 0) {
		perror("mkdtemp");
		exit(1);
	}
	/* A sub-directory the server must create itself. */
	snprintf(sock_path, sizeof(sock_path), "%s/run/rdmad.sock", tmpdir);
	base = event_base_new();
	table = devices_new(10);
	devices_set_listener(table, on_table_event, NULL);
	fill_table();
	opts = (struct server_options){
		.socket_path = sock_path,
		.socket_mode = 0666,
		.socket_group = (gid_t)-1,
		.admin_group = (gid_t)-1,
		.max_clients = 4096,
		.max_clients_per_uid = 1024,
		.max_clients_per_namespace = 256,
		.reserved_clients = 4,
		.hello_timeout_ms = 10000,
		.max_holds = MAX_HOLDS,
		.max_holds_per_uid = 4096,
		.max_queue = MAX_QUEUE,
		.listen_fd = -1,
		.control_fd = -1,
	};
	srv = server_new(base, table, (struct scan *)1, &opts);
	if (!srv) {
		perror("server_new");
		exit(1);
	}
}

static void teardown(void)
{
	char dir[128];
	struct stat st;

	server_free(srv);
	CHECK(stat(sock_path, &st) < 0, "socket unlinked at exit");
	devices_free(table);
	event_base_free(base);
	snprintf(dir, sizeof(dir), "%s/run", tmpdir);
	rmdir(dir);
	rmdir(tmpdir);
}

static void test_stale_socket(void)
{
	struct server *second;
	struct server_options o = opts;

	/* A live server owns the path: a second one must not steal it. */
	second = server_new(base, table, NULL, &o);
	CHECK(!second && errno == EADDRINUSE, "second server refused: %s",
	      strerror(errno));
	server_free(second);
}

/* The socket is made with its mode, whatever the umask; a directory
 * that others could swap it in is refused. */
static void test_socket_access(void)
{
	struct server_options o = opts;
	struct server *other;
	char dir[128], path[160];
	struct stat st;
	mode_t old;

	snprintf(dir, sizeof(dir), "%s/open", tmpdir);
	snprintf(path, sizeof(path), "%s/rdmad.sock", dir);
	o.socket_path = path;
	o.socket_mode = 0660;
	CHECK(mkdir(dir, 0755) == 0, "mkdir");
	old = umask(0);
	other = server_new(base, table, NULL, &o);
	umask(old);
	CHECK(other && stat(path, &st) == 0 && (st.st_mode & 07777) == 0660,
	      "mode 0660 under umask 0: %o", other ? st.st_mode & 07777 : 0);
	server_free(other);

	CHECK(chmod(dir, 0777) == 0, "chmod");
	other = server_new(base, table, NULL, &o);
	CHECK(!other && errno == EPERM, "world-writable directory refused: %s",
	      strerror(errno));
	server_free(other);
	CHECK(chmod(dir, 01777) == 0, "chmod");
	other = server_new(base, table, NULL, &o);
	CHECK(other != NULL, "sticky directory, like /tmp: %s",
	      strerror(errno));
	server_free(other);
	rmdir(dir);
}

int main(void)
{
	setup();
	test_hello();
	test_welcome_without_page();
	test_status_split();
	test_fanout();
	test_states();
	test_table_listener();
	test_bad_input();
	test_last_reply_queued();
	test_holds();
	test_overflow();
	test_max_clients();
	test_admission();
	test_admission_per_namespace();
	test_hello_rules();
	test_holds_per_uid();
	test_emfile();
	test_admin();
	test_stale_socket();
	test_socket_access();
	teardown();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
