/* SPDX-License-Identifier: MIT */
/*
 * A client's session with the daemon: connecting (lazily, with backoff),
 * the Hello/Welcome handshake, re-announcing the held devices and
 * subscribing on every new connection, sending a request and waiting for
 * its reply while handing every other frame to sync.c, and the names of
 * the held devices.  It sits between the public API (client.c, holds.c),
 * which it never calls, and the wire (conn.c, poller.c) and device list
 * (sync.c) below it.  Every function runs with the client's lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

uint64_t session_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = session_now_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- the held names ------------------------------------------------------ */

ssize_t session_hold_find(const struct session *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n_holds; i++)
		if (strcmp(s->holds[i], name) == 0)
			return (ssize_t)i;
	return -1;
}

int session_hold_add(struct session *s, const char *name)
{
	char **holds;
	char *copy = strdup(name);

	if (!copy)
		return -ENOMEM;
	holds = realloc(s->holds, (s->n_holds + 1) * sizeof(*holds));
	if (!holds) {
		free(copy);
		return -ENOMEM;
	}
	s->holds = holds;
	s->holds[s->n_holds++] = copy;
	return 0;
}

void session_hold_remove(struct session *s, size_t index)
{
	free(s->holds[index]);
	s->holds[index] = s->holds[--s->n_holds];
}

void session_holds_clear(struct session *s)
{
	while (s->n_holds)
		session_hold_remove(s, s->n_holds - 1);
	free(s->holds);
	s->holds = NULL;
}

/* ---- life cycle ---------------------------------------------------------- */

void session_init(struct session *s, const char *path)
{
	s->path = path;
	conn_init(&s->conn);
	poller_init(&s->poller);
	s->backoff_ms = SESSION_BACKOFF_MIN_MS;
}

/* Forget the list, the queue and the holds. */
static void drop_state(struct session *s)
{
	sync_reset(&s->sync);
	sync_clear_queue(&s->sync);
	session_holds_clear(s);
	sync_drop_list(&s->sync);
}

void session_fini(struct session *s)
{
	conn_fini(&s->conn);
	poller_close(&s->poller);
	drop_state(s);
}

/*
 * The child must never talk on its parent's socket (the replies would go
 * to whichever process reads first) and holds belong to the parent.  Close
 * our copies only: the parent's connection and epoll set are untouched.
 */
void session_reset_in_child(struct session *s)
{
	conn_close(&s->conn);
	poller_close(&s->poller);
	s->connected = false;
	s->next_attempt_ms = 0;
	s->backoff_ms = SESSION_BACKOFF_MIN_MS;
	s->last_error = 0;
	drop_state(s);
}

/* ---- frames -------------------------------------------------------------- */

static void drop_connection(struct session *s, int err)
{
	poller_unwatch(&s->poller, s->conn.fd);
	conn_close(&s->conn);
	sync_reset(&s->sync);
	if (s->connected) {
		/* Retry at once: the daemon may just have restarted. */
		s->next_attempt_ms = session_now_ms();
		s->backoff_ms = SESSION_BACKOFF_MIN_MS;
	}
	s->connected = false;
	s->last_error = err;
}

/* A receive error that ends the connection, as opposed to one bad frame. */
static bool recv_fatal(int err)
{
	return err < 0 && err != -EAGAIN && err != -EBADMSG && err != -EMSGSIZE;
}

/* Every event the page announced is in (the page is stored before the
 * event is sent), and no snapshot is half read. */
static bool caught_up(const struct session *s)
{
	return s->sync.snapshot && !s->sync.awaiting_snapshot &&
	       s->sync.assembly.n_frames == 0 &&
	       conn_page_generation(&s->conn) <= sync_generation(&s->sync);
}

/* Read and handle frames until none is pending or, with @events_only,
 * until caught_up(): then what is left (a late reply) stays for the next
 * call, the fd still readable, and one event costs one recvmsg(), not a
 * second one that says EAGAIN. */
int session_drain(struct session *s, int timeout_ms, bool events_only)
{
	Rdmad__Frame *frame = NULL;
	int err;

	for (;;) {
		err = conn_recv(&s->conn, timeout_ms, &frame, NULL);
		timeout_ms = 0;
		if (err == -EAGAIN)
			return 0;
		if (recv_fatal(err))
			goto drop;
		if (err < 0)
			continue;
		err = sync_handle_frame(&s->sync, &s->conn, frame);
		if (err < 0)
			goto drop;
		if (events_only && caught_up(s))
			return 0;
	}
drop:
	drop_connection(s, err);
	return -ECONNRESET;
}

/* Wait for the reply to @seq; -ETIMEDOUT, or the reply frame. */
static int wait_reply(struct session *s, uint64_t seq, Rdmad__Frame **ret_frame,
		      int *ret_fd)
{
	uint64_t deadline = session_now_ms() + SESSION_REPLY_TIMEOUT_MS;
	Rdmad__Frame *frame = NULL;
	int err;

	for (;;) {
		err = conn_recv(&s->conn, remaining_ms(deadline), &frame,
				ret_fd);
		if (err == -EAGAIN && remaining_ms(deadline) == 0)
			return -ETIMEDOUT;
		if (recv_fatal(err)) {
			drop_connection(s, err);
			return err == -EPROTO ? err : -ECONNRESET;
		}
		if (err < 0)
			continue;
		if (frame->seq == seq) {
			*ret_frame = frame;
			return 0;
		}
		if (ret_fd && *ret_fd >= 0)
			close_fd(ret_fd);
		err = sync_handle_frame(&s->sync, &s->conn, frame);
		if (err < 0) {
			drop_connection(s, err);
			return -ECONNRESET;
		}
	}
}

static int status_error(Rdmad__Status status)
{
	/* A daemon that does not speak our version cannot serve us. */
	if (status == RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION)
		return -EPROTO;
	return wire_errno_from_status(status);
}

int session_request(struct session *s, Rdmad__Frame__BodyCase body,
		    const char *name)
{
	Rdmad__Frame *frame = NULL;
	uint64_t seq;
	int err;

	err = conn_send_name(&s->conn, body, name, &seq);
	if (err == -EAGAIN)
		return -EAGAIN;
	if (err < 0) {
		drop_connection(s, err);
		return -ECONNRESET;
	}
	err = wait_reply(s, seq, &frame, NULL);
	if (err == -ETIMEDOUT) {
		/* The daemon may still act on it: start over on a fresh
		 * connection, which holds exactly what we recorded. */
		drop_connection(s, err);
		return err;
	}
	if (err < 0)
		return err;
	err = status_error(frame->status);
	wire_free(frame);
	return err;
}

/* ---- connecting ---------------------------------------------------------- */

static int hello(struct session *s)
{
	Rdmad__Frame *frame = NULL;
	uint64_t seq;
	int fd = -1, err;

	err = conn_send_name(&s->conn, RDMAD__FRAME__BODY_HELLO,
			     program_invocation_short_name, &seq);
	if (err < 0)
		return err;
	err = wait_reply(s, seq, &frame, &fd);
	if (err < 0)
		return err;
	if (frame->status != RDMAD__STATUS__STATUS_OK)
		err = status_error(frame->status);
	else if (frame->body_case != RDMAD__FRAME__BODY_WELCOME ||
		 frame->welcome->version != WIRE_VERSION || fd < 0)
		err = -EPROTO;
	wire_free(frame);
	if (err < 0) {
		close_fd(&fd);
		return err;
	}
	return conn_map_page(&s->conn, fd);
}

/* Whether a refused hold should be forgotten rather than retried. */
static bool hold_refused(int err)
{
	return err == -ENODEV || err == -EPERM || err == -ENOSPC ||
	       err == -EBADMSG;
}

/* The daemon dropped our holds with the old connection: announce them. */
static int reannounce_holds(struct session *s)
{
	size_t i = 0;
	int err;

	while (i < s->n_holds) {
		err = session_request(s, RDMAD__FRAME__BODY_HOLD, s->holds[i]);
		if (hold_refused(err)) {
			/* Gone while we were away, or no longer allowed. */
			session_hold_remove(s, i);
			continue;
		}
		if (err < 0)
			return err;
		i++;
	}
	return 0;
}

/* Subscribe and wait until the whole first snapshot is in. */
static int subscribe(struct session *s)
{
	uint64_t deadline = session_now_ms() + SESSION_REPLY_TIMEOUT_MS;
	int err;

	err = sync_subscribe(&s->sync, &s->conn);
	while (err == 0 && s->sync.awaiting_snapshot) {
		if (remaining_ms(deadline) == 0)
			return -ETIMEDOUT;
		err = session_drain(s, remaining_ms(deadline), false);
	}
	return err;
}

/* Hello, re-announce the holds, subscribe, make the fd pollable. */
static int establish(struct session *s)
{
	int err;

	err = conn_open(&s->conn, s->path);
	if (err == 0)
		err = hello(s);
	if (err == 0)
		err = reannounce_holds(s);
	if (err == 0)
		err = subscribe(s);
	if (err == 0)
		err = poller_watch(&s->poller, s->conn.fd);
	return err;
}

static void back_off(struct session *s)
{
	s->next_attempt_ms = session_now_ms() + s->backoff_ms;
	s->backoff_ms = s->backoff_ms * 2 > SESSION_BACKOFF_MAX_MS
				? SESSION_BACKOFF_MAX_MS
				: s->backoff_ms * 2;
}

int session_ensure_connected(struct session *s, bool force)
{
	int err;

	/* The getters' fast path: no clock read while connected. */
	if (s->connected)
		return 0;
	if (!force && session_now_ms() < s->next_attempt_ms)
		return s->last_error ? s->last_error : -ENOTCONN;
	err = establish(s);
	if (err < 0) {
		drop_connection(s, err);
		back_off(s);
		return err;
	}
	s->connected = true;
	s->backoff_ms = SESSION_BACKOFF_MIN_MS;
	s->last_error = 0;
	return 0;
}

/* ---- the list and the pollable fd ---------------------------------------- */

bool session_current(const struct session *s)
{
	return s->connected && s->sync.snapshot && !s->sync.awaiting_snapshot &&
	       conn_page_generation(&s->conn) <= sync_generation(&s->sync);
}

/*
 * When the page already shows a newer generation than the events read so
 * far, wait for them a little so the list is at least as new as the page
 * was.
 */
int session_catch_up(struct session *s, int wait_ms)
{
	uint64_t deadline = session_now_ms() + (uint64_t)wait_ms;
	int err;

	err = session_ensure_connected(s, false);
	if (err == 0)
		err = session_drain(s, 0, false);
	/* A daemon that just restarted: one reconnect, without waiting. */
	if (err == -ECONNRESET)
		err = session_ensure_connected(s, false);
	while (err == 0 && !session_current(s) && remaining_ms(deadline) > 0)
		err = session_drain(s, remaining_ms(deadline), false);
	return err;
}

uint64_t session_generation(const struct session *s)
{
	if (s->connected)
		return conn_page_generation(&s->conn);
	return sync_generation(&s->sync);
}

int session_timeout_ms(const struct session *s)
{
	uint64_t now;

	if (s->connected)
		return -1;
	now = session_now_ms();
	return s->next_attempt_ms > now ? (int)(s->next_attempt_ms - now) : 0;
}

int session_poll_fd(const struct session *s)
{
	return s->connected ? s->poller.epoll_fd : -ENOTCONN;
}

void session_wake(struct session *s)
{
	if (s->sync.queue_len)
		poller_wake(&s->poller);
}
