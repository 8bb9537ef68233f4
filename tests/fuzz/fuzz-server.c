/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the server's request handling, as a hostile local user
 * reaches it: the input is a sequence of datagrams (datagrams.h), sent by
 * one client over a
 * real SOCK_SEQPACKET connection to the real server (its rooms, and
 * export.c on a temporary socket, a table of four devices).  After every
 * input the server must still be there for the next client: a
 * well-behaved one says Hello and gets the whole snapshot.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "datagrams.h"
#include "devices.h"
#include "log.h"
#include "scan.h"
#include "publish.h"
#include "server.h"
#include "wire.h"

#define NDEVS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *base;
static struct devices *table;
static struct server *srv;
static char sock_path[108];

/* An admin Rescan from the fuzz input lands here. */
int scan_full_now(struct scan *scan)
{
	return 0;
}

static void on_table_event(void *userdata, enum devices_event event,
			   const struct device *dev, const char *old_name)
{
	if (srv)
		publish_device_event(srv, event, dev, old_name);
}

static char dir[] = "/tmp/fuzz-server-XXXXXX";

/* The socket and its directory go with the process. */
static void teardown(void)
{
	server_free(srv); /* unlinks the socket it bound */
	srv = NULL;
	rmdir(dir);
}

static void setup(void)
{
	struct device_record scan[NDEVS];
	struct server_options opts = {
		.socket_mode = 0600,
		.socket_group = (gid_t)-1,
		.admin_group = (gid_t)-1,
		.max_clients = 64,
		.max_clients_per_uid = 64,
		.max_clients_per_namespace = 64,
		.hello_timeout_ms = 10000,
		.max_holds = 8,
		.max_holds_per_uid = 16,
		.max_queue = 16,
		.listen_fd = -1,
		.control_fd = -1,
	};

	if (!mkdtemp(dir))
		abort();
	atexit(teardown);
	snprintf(sock_path, sizeof(sock_path), "%s/rdmad.sock", dir);
	opts.socket_path = sock_path;
	log_init(true, 0); /* LOG_EMERG: quiet */
	base = event_base_new();
	table = devices_new(1);
	devices_set_listener(table, on_table_event, NULL);
	memset(scan, 0, sizeof(scan));
	for (int i = 0; i < NDEVS; i++) {
		snprintf(scan[i].name, sizeof(scan[i].name), "mlx5_%d", i);
		snprintf(scan[i].id, sizeof(scan[i].id), "pci:0000:03:00.%d",
			 i);
		scan[i].numa_node = -1;
	}
	if (devices_apply_scan(table, scan, NDEVS) != NDEVS)
		abort();
	srv = server_new(base, table, (struct scan *)1, &opts);
	if (!srv)
		abort();
}

static int connect_client(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
			0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	return fd;
}

static void pump(int times)
{
	for (int i = 0; i < times; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
}

/* Run the loop once, waiting up to 10 ms for something to happen: the
 * helpers that let go of closed connections (reaper.h) are processes of
 * their own, and what the server does next may wait for their word. */
static void pump_wait(void)
{
	static struct event *tick;
	struct timeval tv = {.tv_usec = 10 * 1000};

	if (!tick)
		tick = evtimer_new(base, on_tick, NULL);
	if (!tick || evtimer_add(tick, &tv) < 0)
		abort();
	event_base_loop(base, EVLOOP_ONCE);
	evtimer_del(tick);
}

/* Read and drop whatever the server sent @fd. */
static void drain(int fd)
{
	static uint8_t buf[WIRE_MAX_FRAME];
	int pfd;

	while (wire_recv(fd, buf, sizeof(buf), &pfd) > 0)
		if (pfd >= 0)
			close(pfd);
}

/* A well-behaved client: Hello, GetStatus, every device back. */
static void check_served(void)
{
	static uint8_t buf[WIRE_MAX_FRAME];
	Rdmad__Hello hello = RDMAD__HELLO__INIT;
	Rdmad__GetStatus get = RDMAD__GET_STATUS__INIT;
	struct wire_assembly a;
	Rdmad__Frame f, *in;
	int fd = connect_client(), pfd, r = 0, rounds = 0;
	ssize_t n;

	wire_frame_init(&f, 0);
	f.body_case = RDMAD__FRAME__BODY_HELLO;
	f.hello = &hello;
	if (wire_send_request(fd, &f, 1) < 0)
		abort();
	f.body_case = RDMAD__FRAME__BODY_GET_STATUS;
	f.get_status = &get;
	if (wire_send_request(fd, &f, 2) < 0)
		abort();
	wire_assembly_init(&a);
	while (r != 1 && rounds++ < 1000) {
		pump(1);
		n = wire_recv(fd, buf, sizeof(buf), &pfd);
		if (pfd >= 0)
			close(pfd);
		if (n == -EAGAIN) {
			pump_wait();
			continue;
		}
		if (n <= 0 || wire_decode(buf, n, WIRE_MAX_FRAME, &in) < 0)
			abort(); /* the server hung up on a good client */
		if (in->body_case != RDMAD__FRAME__BODY_SNAPSHOT) {
			wire_free(in);
			continue;
		}
		r = wire_assembly_add(&a, in);
		if (r < 0)
			abort();
	}
	if (r != 1 || a.n_devices != NDEVS)
		abort();
	wire_assembly_clear(&a);
	close(fd);
	pump(4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *dgram;
	size_t len;
	int fd;

	if (!srv)
		setup();
	fd = connect_client();
	while (next_datagram(&data, &size, &dgram, &len)) {
		/* A full socket or a closed one: the rest goes nowhere. */
		if (wire_send(fd, dgram, len, -1) < 0 && len)
			break;
		pump(2);
		drain(fd);
	}
	close(fd);
	pump(4);
	check_served();
	return 0;
}
