/* SPDX-License-Identifier: MIT */
/*
 * The client handle: its life cycle, connecting (lazily, with backoff)
 * and the handshake, the pollable fd, rdmad_client_process() and the
 * callback, the generation and snapshot getters, and fork handling.
 *
 * Locking: one mutex per client guards all its state.  Callbacks run
 * without it, one thread at a time (the @dispatching flag), so events
 * reach the callback in order even when several threads call process().
 * The pollable fd is an epoll instance holding the socket and an eventfd;
 * the eventfd is raised when a call other than process() (a hold waiting
 * for its reply, get_snapshot) read events off the socket and queued
 * them, so a poll loop never misses them.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "client-internal.h"
#include "rdmad-config.h"

/* Every live client, so that a forked child can drop their connections. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdmad_client *registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

uint64_t client_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void atfork_prepare(void)
{
	struct rdmad_client *c;

	pthread_mutex_lock(&registry_lock);
	for (c = registry; c; c = c->registry_next)
		pthread_mutex_lock(&c->lock);
}

static void atfork_parent(void)
{
	struct rdmad_client *c;

	for (c = registry; c; c = c->registry_next)
		pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&registry_lock);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * The child must never talk on its parent's socket (the replies would go
 * to whichever process reads first) and holds belong to the parent.  Close
 * our copies only: the parent's connection is untouched.
 */
static void reset_in_child(struct rdmad_client *c)
{
	conn_close(&c->conn);
	close_fd(&c->epoll_fd);
	close_fd(&c->wake_fd);
	c->woken = false;
	c->connected = false;
	c->next_attempt_ms = 0;
	c->backoff_ms = CLIENT_BACKOFF_MIN_MS;
	c->last_error = 0;
	c->dispatching = false;
	pthread_cond_init(&c->dispatch_done, NULL);
	sync_reset(c);
	sync_clear_queue(c);
	holds_clear(c);
	sync_drop_list(c);
}

static void atfork_child(void)
{
	struct rdmad_client *c;

	for (c = registry; c; c = c->registry_next) {
		reset_in_child(c);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&registry_lock);
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void registry_add(struct rdmad_client *c)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&registry_lock);
	c->registry_next = registry;
	if (registry)
		registry->registry_prev = c;
	registry = c;
	pthread_mutex_unlock(&registry_lock);
}

static void registry_remove(struct rdmad_client *c)
{
	pthread_mutex_lock(&registry_lock);
	if (c->registry_prev)
		c->registry_prev->registry_next = c->registry_next;
	else
		registry = c->registry_next;
	if (c->registry_next)
		c->registry_next->registry_prev = c->registry_prev;
	pthread_mutex_unlock(&registry_lock);
}

static const char *resolve_path(const char *socket_path)
{
	const char *env;

	if (socket_path)
		return socket_path;
	env = secure_getenv("RDMAD_SOCKET");
	return env && env[0] ? env : RDMAD_DEFAULT_SOCKET;
}

RDMAD_EXPORT struct rdmad_client *rdmad_client_new(const char *socket_path)
{
	struct rdmad_client *c;

	if (socket_path && !socket_path[0]) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->path = strdup(resolve_path(socket_path));
	if (!c->path) {
		free(c);
		return NULL;
	}
	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->dispatch_done, NULL);
	conn_init(&c->conn);
	c->epoll_fd = -1;
	c->wake_fd = -1;
	c->backoff_ms = CLIENT_BACKOFF_MIN_MS;
	registry_add(c);
	return c;
}

RDMAD_EXPORT struct rdmad_client *rdmad_client_ref(struct rdmad_client *client)
{
	if (client)
		atomic_fetch_add_explicit(&client->refs, 1,
					  memory_order_relaxed);
	return client;
}

static void client_free(struct rdmad_client *c)
{
	registry_remove(c);
	conn_fini(&c->conn);
	close_fd(&c->epoll_fd);
	close_fd(&c->wake_fd);
	sync_reset(c);
	sync_clear_queue(c);
	holds_clear(c);
	while (c->n_opens)
		free(c->opens[--c->n_opens].name);
	free(c->opens);
	sync_drop_list(c);
	pthread_cond_destroy(&c->dispatch_done);
	pthread_mutex_destroy(&c->lock);
	free(c->path);
	free(c);
}

RDMAD_EXPORT struct rdmad_client *
rdmad_client_unref(struct rdmad_client *client)
{
	if (client && atomic_fetch_sub_explicit(&client->refs, 1,
						memory_order_acq_rel) == 1)
		client_free(client);
	return NULL;
}

RDMAD_EXPORT const char *
rdmad_client_get_socket_path(const struct rdmad_client *client)
{
	if (!client) {
		errno = EINVAL;
		return NULL;
	}
	return client->path;
}

RDMAD_EXPORT int rdmad_client_set_callback(struct rdmad_client *client,
					   rdmad_event_cb cb, void *userdata)
{
	if (!client)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	client->cb = cb;
	client->userdata = userdata;
	pthread_mutex_unlock(&client->lock);
	return 0;
}

/* ---- connecting ---------------------------------------------------------- */

void client_drop_connection(struct rdmad_client *c, int err)
{
	if (c->epoll_fd >= 0 && c->conn.fd >= 0)
		epoll_ctl(c->epoll_fd, EPOLL_CTL_DEL, c->conn.fd, NULL);
	conn_close(&c->conn);
	sync_reset(c);
	if (c->connected) {
		/* Retry at once: the daemon may just have restarted. */
		c->next_attempt_ms = client_now_ms();
		c->backoff_ms = CLIENT_BACKOFF_MIN_MS;
	}
	c->connected = false;
	c->last_error = err;
}

/* A receive error that ends the connection, as opposed to one bad frame. */
static bool recv_fatal(int err)
{
	return err < 0 && err != -EAGAIN && err != -EBADMSG && err != -EMSGSIZE;
}

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = client_now_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

/* Every event the page announced is in (the page is stored before the
 * event is sent), and no snapshot is half read. */
static bool caught_up(const struct rdmad_client *c)
{
	return c->snapshot && !c->awaiting_snapshot &&
	       c->assembly.n_frames == 0 &&
	       conn_page_generation(&c->conn) <= sync_generation(c);
}

/* Read and handle frames until none is pending or, with @events_only,
 * until caught_up(): then what is left (a late reply) stays for the next
 * call, the fd still readable, and one event costs one recvmsg(), not a
 * second one that says EAGAIN. */
static int drain(struct rdmad_client *c, int timeout_ms, bool events_only)
{
	Rdmad__Frame *frame = NULL;
	int err;

	for (;;) {
		err = conn_recv(&c->conn, timeout_ms, &frame, NULL);
		timeout_ms = 0;
		if (err == -EAGAIN)
			return 0;
		if (recv_fatal(err))
			goto drop;
		if (err < 0)
			continue;
		err = sync_handle_frame(c, frame);
		if (err < 0)
			goto drop;
		if (events_only && caught_up(c))
			return 0;
	}
drop:
	client_drop_connection(c, err);
	return -ECONNRESET;
}

int client_drain(struct rdmad_client *c, int timeout_ms)
{
	return drain(c, timeout_ms, false);
}

/* Wait for the reply to @seq; -ETIMEDOUT, or the reply frame. */
static int wait_reply(struct rdmad_client *c, uint64_t seq,
		      Rdmad__Frame **ret_frame, int *ret_fd)
{
	uint64_t deadline = client_now_ms() + CLIENT_REPLY_TIMEOUT_MS;
	Rdmad__Frame *frame = NULL;
	int err;

	for (;;) {
		err = conn_recv(&c->conn, remaining_ms(deadline), &frame,
				ret_fd);
		if (err == -EAGAIN && remaining_ms(deadline) == 0)
			return -ETIMEDOUT;
		if (recv_fatal(err)) {
			client_drop_connection(c, err);
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
		err = sync_handle_frame(c, frame);
		if (err < 0) {
			client_drop_connection(c, err);
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

int client_request(struct rdmad_client *c, Rdmad__Frame__BodyCase body,
		   const char *name)
{
	Rdmad__Frame *frame = NULL;
	uint64_t seq;
	int err;

	err = conn_send_name(&c->conn, body, name, &seq);
	if (err == -EAGAIN)
		return -EAGAIN;
	if (err < 0) {
		client_drop_connection(c, err);
		return -ECONNRESET;
	}
	err = wait_reply(c, seq, &frame, NULL);
	if (err == -ETIMEDOUT) {
		/* The daemon may still act on it: start over on a fresh
		 * connection, which holds exactly what we recorded. */
		client_drop_connection(c, err);
		return err;
	}
	if (err < 0)
		return err;
	err = status_error(frame->status);
	wire_free(frame);
	return err;
}

static int hello(struct rdmad_client *c)
{
	Rdmad__Frame *frame = NULL;
	uint64_t seq;
	int fd = -1, err;

	err = conn_send_name(&c->conn, RDMAD__FRAME__BODY_HELLO,
			     program_invocation_short_name, &seq);
	if (err < 0)
		return err;
	err = wait_reply(c, seq, &frame, &fd);
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
	return conn_map_page(&c->conn, fd);
}

/* Subscribe and wait until the whole first snapshot is in. */
static int subscribe(struct rdmad_client *c)
{
	uint64_t deadline = client_now_ms() + CLIENT_REPLY_TIMEOUT_MS;
	int err;

	err = sync_subscribe(c);
	while (err == 0 && c->awaiting_snapshot) {
		if (remaining_ms(deadline) == 0)
			return -ETIMEDOUT;
		err = client_drain(c, remaining_ms(deadline));
	}
	return err;
}

static int setup_poll(struct rdmad_client *c)
{
	struct epoll_event ev = {.events = EPOLLIN};

	if (c->epoll_fd < 0) {
		c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
		if (c->epoll_fd < 0)
			return -errno;
	}
	if (c->wake_fd < 0) {
		c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (c->wake_fd < 0)
			return -errno;
		c->woken = false;
		ev.data.fd = c->wake_fd;
		if (epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, c->wake_fd, &ev) < 0)
			return -errno;
	}
	ev.data.fd = c->conn.fd;
	if (epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, c->conn.fd, &ev) < 0)
		return -errno;
	return 0;
}

/* Hello, re-announce the holds, subscribe, make the fd pollable. */
static int establish(struct rdmad_client *c)
{
	int err;

	err = conn_open(&c->conn, c->path);
	if (err == 0)
		err = hello(c);
	if (err == 0)
		err = holds_reannounce(c);
	if (err == 0)
		err = subscribe(c);
	if (err == 0)
		err = setup_poll(c);
	return err;
}

int client_ensure_connected(struct rdmad_client *c, bool force)
{
	uint64_t now = client_now_ms();
	int err;

	if (c->connected)
		return 0;
	if (!force && now < c->next_attempt_ms)
		return c->last_error ? c->last_error : -ENOTCONN;
	err = establish(c);
	if (err < 0) {
		client_drop_connection(c, err);
		c->next_attempt_ms = client_now_ms() + c->backoff_ms;
		c->backoff_ms = c->backoff_ms * 2 > CLIENT_BACKOFF_MAX_MS
					? CLIENT_BACKOFF_MAX_MS
					: c->backoff_ms * 2;
		return err;
	}
	c->connected = true;
	c->backoff_ms = CLIENT_BACKOFF_MIN_MS;
	c->last_error = 0;
	return 0;
}

void client_wake(struct rdmad_client *c)
{
	uint64_t one = 1;

	if (c->queue_len == 0 || c->woken || c->wake_fd < 0)
		return;
	if (write(c->wake_fd, &one, sizeof(one)) == sizeof(one))
		c->woken = true;
}

static void clear_wake(struct rdmad_client *c)
{
	uint64_t count;

	if (!c->woken)
		return;
	if (read(c->wake_fd, &count, sizeof(count)) < 0) {
		/* EAGAIN: already cleared; nothing else can fail here. */
	}
	c->woken = false;
}

RDMAD_EXPORT int rdmad_client_connect(struct rdmad_client *client)
{
	int err;

	if (!client)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	err = client_ensure_connected(client, true);
	client_wake(client);
	pthread_mutex_unlock(&client->lock);
	return err;
}

/* ---- polling and processing ---------------------------------------------- */

RDMAD_EXPORT int rdmad_client_get_fd(struct rdmad_client *client)
{
	int fd;

	if (!client)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	fd = client->connected ? client->epoll_fd : -ENOTCONN;
	pthread_mutex_unlock(&client->lock);
	return fd;
}

RDMAD_EXPORT int rdmad_client_get_timeout(struct rdmad_client *client)
{
	uint64_t now;
	int timeout = -1;

	if (!client)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	if (!client->connected) {
		now = client_now_ms();
		timeout = client->next_attempt_ms > now
				  ? (int)(client->next_attempt_ms - now)
				  : 0;
	}
	pthread_mutex_unlock(&client->lock);
	return timeout;
}

/* Hand the queued events to the callback, without the lock held. */
static int dispatch(struct rdmad_client *c)
{
	struct client_event *events = c->queue;
	size_t i, n = c->queue_len;
	rdmad_event_cb cb;
	void *userdata;

	c->queue = NULL;
	c->queue_len = 0;
	c->queue_cap = 0;
	for (i = 0; i < n; i++) {
		cb = c->cb;
		userdata = c->userdata;
		pthread_mutex_unlock(&c->lock);
		if (cb)
			cb(c, events[i].type, events[i].device,
			   events[i].generation, userdata);
		snapshot_device_unref(events[i].device);
		pthread_mutex_lock(&c->lock);
	}
	free(events);
	return (int)n;
}

RDMAD_EXPORT int rdmad_client_process(struct rdmad_client *client)
{
	struct rdmad_client *c = client;
	int n;

	if (!c)
		return -EINVAL;
	rdmad_client_ref(c);
	pthread_mutex_lock(&c->lock);
	if (c->dispatching && pthread_equal(c->dispatcher, pthread_self())) {
		/* Called from inside the callback. */
		pthread_mutex_unlock(&c->lock);
		rdmad_client_unref(c);
		return -EDEADLK;
	}
	while (c->dispatching)
		pthread_cond_wait(&c->dispatch_done, &c->lock);
	if (client_ensure_connected(c, false) == 0)
		drain(c, 0, true);
	clear_wake(c);
	c->dispatching = true;
	c->dispatcher = pthread_self();
	n = dispatch(c);
	c->dispatching = false;
	pthread_cond_broadcast(&c->dispatch_done);
	client_wake(c);
	pthread_mutex_unlock(&c->lock);
	rdmad_client_unref(c);
	return n;
}

/* ---- generation and snapshot --------------------------------------------- */

RDMAD_EXPORT uint64_t rdmad_client_get_generation(struct rdmad_client *client)
{
	uint64_t generation = 0;

	if (!client)
		return 0;
	pthread_mutex_lock(&client->lock);
	if (!client->connected)
		client_ensure_connected(client, false);
	if (client->connected)
		generation = conn_page_generation(&client->conn);
	else
		generation = sync_generation(client);
	client_wake(client);
	pthread_mutex_unlock(&client->lock);
	return generation;
}

/* The cached snapshot is as new as the page says the daemon is. */
static bool snapshot_current(const struct rdmad_client *c)
{
	return c->connected && c->snapshot && !c->awaiting_snapshot &&
	       conn_page_generation(&c->conn) <= sync_generation(c);
}

/*
 * Apply what is pending.  When the page already shows a newer generation
 * than the events read so far, wait for them a little (CLIENT_PAGE_WAIT_MS)
 * so the snapshot returned is at least as new as the page was.
 */
static int catch_up(struct rdmad_client *c)
{
	uint64_t deadline = client_now_ms() + CLIENT_PAGE_WAIT_MS;
	int err;

	err = client_ensure_connected(c, false);
	if (err == 0)
		err = client_drain(c, 0);
	/* A daemon that just restarted: one reconnect, without waiting. */
	if (err == -ECONNRESET)
		err = client_ensure_connected(c, false);
	while (err == 0 && !snapshot_current(c) && remaining_ms(deadline) > 0)
		err = client_drain(c, remaining_ms(deadline));
	return err;
}

RDMAD_EXPORT struct rdmad_snapshot *
rdmad_client_get_snapshot(struct rdmad_client *client)
{
	struct rdmad_snapshot *snap = NULL;
	int err = 0;

	if (!client) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&client->lock);
	if (!snapshot_current(client))
		err = catch_up(client);
	if (err == 0)
		err = sync_fold(client);
	if (err == 0 && client->snapshot)
		snap = rdmad_snapshot_ref(client->snapshot);
	else if (err == 0)
		err = -ENOTCONN;
	client_wake(client);
	pthread_mutex_unlock(&client->lock);
	if (!snap)
		errno = -err;
	return snap;
}
