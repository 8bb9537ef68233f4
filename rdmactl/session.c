/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's connection to rdmad (proto/PROTOCOL.md): connect, Hello and
 * Welcome, requests whose replies must come within a timeout so rdmactl
 * never hangs on a daemon that does not answer, and reassembly of a
 * snapshot from its parts.  Nothing here prints: errors are -errno and a
 * sentence in s->error for the caller to show.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "scope.h"
#include "session.h"

struct session {
	int fd;
	bool connected;
	uint64_t next_seq;
	int timeout_ms;
	uint8_t *buf;
	char error[256];
};

static int fail(struct session *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct session *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	return err;
}

const char *session_error(const struct session *s)
{
	return s->error;
}

bool session_connected(const struct session *s)
{
	return s->connected;
}

int session_fd(const struct session *s)
{
	return s->fd;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	free(s);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A listener whose backlog is full (rdmad busy turning a flood of
 * connections away) says EAGAIN at once: try again, 1 ms then up to
 * 50 ms apart, within the timeout.  Any other error is final. */
static int do_connect(struct session *s, const char *path)
{
	int64_t deadline = s->timeout_ms < 0 ? -1 : now_ms() + s->timeout_ms;
	struct timespec pause = {.tv_nsec = 1000000};
	int r;

	while ((r = wire_connect(path, &s->fd)) == -EAGAIN &&
	       (deadline < 0 || now_ms() < deadline)) {
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 50000000)
			pause.tv_nsec *= 2;
	}
	if (r < 0)
		return fail(s, r, "%s", strerror(-r));
	s->connected = true;
	return 0;
}

/* @pass_fd: -1, or a descriptor to pass with SCM_RIGHTS. */
static int send_with(struct session *s, Rdmad__Frame *frame, int pass_fd,
		     uint64_t *ret_seq)
{
	uint64_t seq = s->next_seq++;
	int r;

	r = wire_send_request_fd(s->fd, frame, seq, pass_fd);
	if (r < 0)
		return fail(s, r, "cannot send request: %s", strerror(-r));
	if (ret_seq)
		*ret_seq = seq;
	return 0;
}

int session_send(struct session *s, Rdmad__Frame *frame, uint64_t *ret_seq)
{
	return send_with(s, frame, -1, ret_seq);
}

/* Wait for input until @deadline (ms, monotonic; -1 forever). */
static int wait_readable(struct session *s, int64_t deadline)
{
	struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
	int64_t left = deadline - now_ms();
	int r;

	r = poll(&pfd, 1, deadline < 0 ? -1 : left > 0 ? (int)left : 0);
	if (r > 0)
		return 0;
	if (r == 0)
		return fail(s, -ETIMEDOUT, "no reply within %d ms",
			    s->timeout_ms);
	/* EINTR: a signal the caller handles ends the wait. */
	if (errno == EINTR)
		return -EINTR;
	return fail(s, -errno, "poll: %s", strerror(errno));
}

static int decode(struct session *s, ssize_t n, Rdmad__Frame **ret_frame)
{
	int r = wire_decode(s->buf, (size_t)n, WIRE_MAX_FRAME, ret_frame);

	if (r == -EPROTONOSUPPORT) {
		r = fail(s, r, "rdmad speaks protocol version %u, rdmactl %u",
			 (*ret_frame)->version, WIRE_VERSION);
		wire_free(*ret_frame);
		*ret_frame = NULL;
		return r;
	}
	if (r < 0)
		return fail(s, -EPROTO, "undecodable frame from rdmad: %s",
			    strerror(-r));
	return 0;
}

int session_recv(struct session *s, int timeout_ms, Rdmad__Frame **ret_frame)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	ssize_t n;
	int fd, r;

	for (;;) {
		r = wait_readable(s, deadline);
		if (r < 0)
			return r;
		n = wire_recv(s->fd, s->buf, WIRE_MAX_FRAME, &fd);
		if (fd >= 0)
			close(fd);
		if (n == -EAGAIN || n == -EINTR)
			continue;
		if (n == 0 || n == -ECONNRESET)
			return fail(s, -ECONNRESET, "it closed the connection");
		if (n < 0)
			return fail(s, (int)n, "receive: %s", strerror(-n));
		return decode(s, n, ret_frame);
	}
}

/* The reply to @seq, skipping pushed frames that may come before it. */
static int recv_reply(struct session *s, uint64_t seq, Rdmad__Frame **ret_frame)
{
	Rdmad__Frame *frame;
	int r;

	for (;;) {
		r = session_recv(s, s->timeout_ms, &frame);
		if (r < 0)
			return r;
		if (frame->seq == seq)
			break;
		wire_free(frame);
	}
	if (frame->status != RDMAD__STATUS__STATUS_OK) {
		r = fail(s, wire_errno_from_status(frame->status), "%s%s%s",
			 wire_status_name(frame->status),
			 frame->error[0] ? ": " : "", frame->error);
		wire_free(frame);
		return r;
	}
	*ret_frame = frame;
	return 0;
}

int session_simple_request(struct session *s, Rdmad__Frame *frame)
{
	Rdmad__Frame *reply;
	uint64_t seq;
	int r;

	r = session_send(s, frame, &seq);
	if (r < 0)
		return r;
	r = recv_reply(s, seq, &reply);
	if (r < 0)
		return r;
	wire_free(reply);
	return 0;
}

/* What rdmactl understands beyond the base protocol (PROTOCOL.md 8a and
 * "Removing"): it shows RETURNED, READY, UNREADY, EXPECTING, SETTLED,
 * REMOVING and AWAY as they are, rather than as the older events that
 * stand in for them. */
static char *features[] = {"lifecycle", "removing"};

/* Hello says where rdmactl is (PROTOCOL.md 8b): its /dev/infiniband and
 * a NETLINK_RDMA socket of its network namespace, so that it is shown
 * what an application beside it would see. */
static int hello(struct session *s)
{
	Rdmad__Hello body = RDMAD__HELLO__INIT;
	Rdmad__Frame frame;
	Rdmad__Frame *reply;
	struct scope scope;
	uint64_t seq = 0;
	int nl = scope_netns_socket();
	int r;

	wire_frame_init(&frame, 0);
	body.client_name = "rdmactl";
	body.n_features = sizeof(features) / sizeof(features[0]);
	body.features = features;
	scope_collect(&scope);
	scope.msg.netns_socket = nl >= 0;
	body.scope = &scope.msg;
	frame.body_case = RDMAD__FRAME__BODY_HELLO;
	frame.hello = &body;
	r = send_with(s, &frame, nl, &seq);
	if (nl >= 0)
		close(nl);
	if (r < 0)
		return r;
	r = recv_reply(s, seq, &reply);
	if (r < 0)
		return r;
	/* The generation page that came with it was closed on receipt:
	 * a one-shot tool has no use for it. */
	if (reply->body_case != RDMAD__FRAME__BODY_WELCOME)
		r = fail(s, -EPROTO, "rdmad answered Hello without Welcome");
	wire_free(reply);
	return r;
}

int session_open(const char *path, int timeout_ms, struct session **ret_session)
{
	struct session *s = calloc(1, sizeof(*s));
	int r;

	*ret_session = s;
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->next_seq = 1;
	s->timeout_ms = timeout_ms;
	s->buf = malloc(WIRE_MAX_FRAME);
	if (!s->buf)
		return fail(s, -ENOMEM, "%s", strerror(ENOMEM));
	r = do_connect(s, path);
	if (r < 0)
		return r;
	return hello(s);
}

void session_snapshot_clear(struct session_snapshot *snap)
{
	wire_assembly_clear(&snap->parts);
	memset(snap, 0, sizeof(*snap));
}

/* Take one part (always); 1 when the snapshot is whole. */
static int add_part(struct session *s, struct session_snapshot *snap,
		    Rdmad__Frame *frame)
{
	uint32_t part = frame->snapshot->part, parts = frame->snapshot->parts;
	int r = wire_assembly_add(&snap->parts, frame);

	if (r == -EPROTO)
		return fail(s, r, "snapshot part %u of %u out of order", part,
			    parts);
	if (r < 0)
		return fail(s, r, "snapshot: %s", strerror(-r));
	if (r == 1) {
		snap->generation = snap->parts.generation;
		snap->devices = snap->parts.devices;
		snap->n_devices = snap->parts.n_devices;
		/* Every part carries the view; they are one snapshot's. */
		snap->view = snap->parts.frames[0]->snapshot->view;
		snap->closing = snap->parts.frames[0]->snapshot->closing;
		snap->n_closing = snap->parts.frames[0]->snapshot->n_closing;
	}
	return r;
}

static bool is_part_of(const Rdmad__Frame *frame, uint64_t seq)
{
	return frame->seq == seq &&
	       frame->body_case == RDMAD__FRAME__BODY_SNAPSHOT;
}

int session_collect(struct session *s, uint64_t seq, Rdmad__Frame *first,
		    struct session_snapshot *ret_snap)
{
	Rdmad__Frame *frame = first;
	int r;

	memset(ret_snap, 0, sizeof(*ret_snap));
	do {
		while (!frame) {
			r = session_recv(s, s->timeout_ms, &frame);
			if (r < 0)
				goto fail;
			if (is_part_of(frame, seq))
				break;
			/* Events from before this snapshot are in it. */
			wire_free(frame);
			frame = NULL;
		}
		r = add_part(s, ret_snap, frame);
		frame = NULL;
	} while (r == 0);
	if (r == 1)
		return 0;
fail:
	session_snapshot_clear(ret_snap);
	return r;
}

int session_get_snapshot(struct session *s, Rdmad__Frame__BodyCase body,
			 struct session_snapshot *ret_snap)
{
	Rdmad__GetStatus get = RDMAD__GET_STATUS__INIT;
	Rdmad__Subscribe sub = RDMAD__SUBSCRIBE__INIT;
	Rdmad__Frame frame;
	Rdmad__Frame *reply;
	struct scope scope;
	uint64_t seq;
	int r;

	scope_collect(&scope);
	get.scope = sub.scope = &scope.msg;
	wire_frame_init(&frame, 0);
	frame.body_case = body;
	if (body == RDMAD__FRAME__BODY_SUBSCRIBE)
		frame.subscribe = &sub;
	else
		frame.get_status = &get;
	r = session_send(s, &frame, &seq);
	if (r < 0)
		return r;
	/* The first reply carries the status; an error has no snapshot. */
	r = recv_reply(s, seq, &reply);
	if (r < 0)
		return r;
	if (reply->body_case != RDMAD__FRAME__BODY_SNAPSHOT) {
		wire_free(reply);
		return fail(s, -EPROTO, "rdmad answered without a snapshot");
	}
	return session_collect(s, seq, reply, ret_snap);
}
