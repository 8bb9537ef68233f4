/* SPDX-License-Identifier: MIT */
/*
 * A client's channel to the daemon, which outlives each connection
 * (conn.c): connecting (lazily, with backoff), the Hello/Welcome
 * handshake, re-announcing the held devices and subscribing on every new
 * connection, sending a request and waiting for its reply while handing
 * every other frame to sync.c, the devices held, and the reports of
 * refused devices (report.c), which are sent
 * without waiting and whose replies only settle their bookkeeping.  It sits
 * between the public API (client.c, holds.c), which it never calls, and the
 * wire (conn.c, poller.c, genview.c) and device list (sync.c) below it.
 *
 * No thread waits with the client's lock held.  A new connection is built
 * in a channel of its own (a "link", with no lock: only the connecting
 * thread sees it), then moved into the client's under the lock.  Waiting
 * for a reply polls the socket without the lock, in slices, because
 * another thread may read the reply meanwhile: a reply is put aside for
 * its requester by whoever reads it.  Every wait has a deadline, checked
 * after every frame read.  Requests are sent one at a time (@requesting),
 * and no connection is built while one is in flight, so the held names
 * change only in the thread that owns the requests or the connect.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"

/* How long one poll without the lock lasts at most, so a requester soon
 * sees a reply another thread read for it. */
#define CHANNEL_WAIT_SLICE_MS 20

uint64_t channel_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = channel_now_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- the lock ------------------------------------------------------------ */

static void unlock(struct channel *s)
{
	if (s->lock)
		pthread_mutex_unlock(s->lock);
}

static void relock(struct channel *s)
{
	if (s->lock)
		pthread_mutex_lock(s->lock);
}

static void wait_turn(struct channel *s)
{
	if (s->lock)
		pthread_cond_wait(&s->cond, s->lock);
}

static void done_turn(struct channel *s)
{
	if (s->lock)
		pthread_cond_broadcast(&s->cond);
}

/* What threads read without the lock. */
static void publish_state(struct channel *s)
{
	atomic_store(&s->up, s->connected);
	atomic_store(&s->poll_fd,
		     s->connected ? s->poller.epoll_fd : -ENOTCONN);
}

static void clear_cached(struct channel *s)
{
	struct rdmad_snapshot *old;

	pthread_mutex_lock(&s->cache_lock);
	old = s->cached;
	s->cached = NULL;
	pthread_mutex_unlock(&s->cache_lock);
	rdmad_snapshot_unref(old);
}

/* ---- the held names ------------------------------------------------------ */

static ssize_t find_hold(const struct channel *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n_holds; i++)
		if (strcmp(s->holds[i].name, name) == 0)
			return (ssize_t)i;
	return -1;
}

static int add_hold(struct channel *s, const char *name)
{
	struct channel_hold *holds;
	char *copy = strdup(name);

	if (!copy)
		return -ENOMEM;
	holds = reallocarray(s->holds, s->n_holds + 1, sizeof(*holds));
	if (!holds) {
		free(copy);
		return -ENOMEM;
	}
	s->holds = holds;
	s->holds[s->n_holds++] = (struct channel_hold){.name = copy};
	return 0;
}

static void remove_hold(struct channel *s, size_t index)
{
	free(s->holds[index].name);
	s->holds[index] = s->holds[--s->n_holds];
}

void channel_holds_clear(struct channel *s)
{
	while (s->n_holds)
		remove_hold(s, s->n_holds - 1);
	free(s->holds);
	s->holds = NULL;
}

static int copy_holds(struct channel *dst, const struct channel *src)
{
	size_t i;
	int err;

	for (i = 0; i < src->n_holds; i++) {
		err = add_hold(dst, src->holds[i].name);
		if (err < 0)
			return err;
		dst->holds[i].opens = src->holds[i].opens;
		dst->holds[i].explicit = src->holds[i].explicit;
	}
	return 0;
}

/* ---- life cycle ---------------------------------------------------------- */

static void init_common(struct channel *s, const char *path)
{
	s->path = path;
	conn_init(&s->conn);
	poller_init(&s->poller);
	s->backoff_ms = CHANNEL_BACKOFF_MIN_MS;
	s->pending_fd = -1;
	s->reply_fd = -1;
	atomic_init(&s->up, false);
	atomic_init(&s->poll_fd, -ENOTCONN);
	atomic_init(&s->next_attempt_ms, 0);
}

int channel_init(struct channel *s, const char *path, pthread_mutex_t *lock)
{
	int err = genview_init(&s->view);

	if (err < 0)
		return err;
	init_common(s, path);
	s->lock = lock;
	pthread_cond_init(&s->cond, NULL);
	pthread_mutex_init(&s->cache_lock, NULL);
	return 0;
}

static void forget_reply(struct channel *s)
{
	wire_free(s->reply);
	s->reply = NULL;
	close_fd(&s->reply_fd);
	s->await_seq = 0;
}

/* Forget the list, the queue, the holds and the reports. */
static void drop_state(struct channel *s)
{
	sync_reset(&s->sync);
	sync_clear_queue(&s->sync);
	channel_holds_clear(s);
	reports_clear(&s->reports);
	sync_drop_list(&s->sync);
	forget_reply(s);
}

void channel_fini(struct channel *s)
{
	conn_fini(&s->conn);
	poller_close(&s->poller);
	drop_state(s);
	genview_fini(&s->view);
	if (s->lock) {
		clear_cached(s);
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->cache_lock);
	}
}

void channel_fork_prepare(struct channel *s)
{
	pthread_mutex_lock(&s->cache_lock);
}

void channel_fork_parent(struct channel *s)
{
	pthread_mutex_unlock(&s->cache_lock);
}

/*
 * The child must never talk on its parent's socket (the replies would go
 * to whichever process reads first) and holds belong to the parent.  Close
 * our copies only: the parent's connection and epoll set are untouched.
 * The threads that were connecting or waiting do not exist here.
 */
void channel_reset_in_child(struct channel *s)
{
	close_fd(&s->pending_fd);
	conn_close(&s->conn);
	poller_close(&s->poller);
	genview_detach(&s->view);
	s->connected = false;
	s->connecting = false;
	s->requesting = false;
	atomic_store(&s->next_attempt_ms, 0);
	s->backoff_ms = CHANNEL_BACKOFF_MIN_MS;
	s->last_error = 0;
	drop_state(s);
	publish_state(s);
	rdmad_snapshot_unref(s->cached);
	s->cached = NULL;
	pthread_mutex_unlock(&s->cache_lock);
	pthread_cond_init(&s->cond, NULL);
}

/* ---- frames -------------------------------------------------------------- */

static void drop_connection(struct channel *s, int err)
{
	if (s->conn.fd >= 0)
		poller_unwatch(&s->poller, s->conn.fd);
	conn_close(&s->conn);
	sync_reset(&s->sync);
	genview_detach(&s->view);
	reports_unsend(&s->reports);
	if (s->connected) {
		/* Retry at once: the daemon may just have restarted. */
		atomic_store(&s->next_attempt_ms, channel_now_ms());
		s->backoff_ms = CHANNEL_BACKOFF_MIN_MS;
	}
	s->connected = false;
	s->epoch++;
	s->last_error = err;
	publish_state(s);
}

/* A receive error that ends the connection, as opposed to one bad frame. */
static bool recv_fatal(int err)
{
	return err < 0 && err != -EAGAIN && err != -EBADMSG && err != -EMSGSIZE;
}

/* Every event the page announced is in (the page is stored before the
 * event is sent), and no snapshot is half read. */
static bool caught_up(const struct channel *s)
{
	return s->sync.snapshot && s->sync.follow.state != FOLLOW_AWAITING &&
	       s->sync.assembly.n_frames == 0 &&
	       genview_page(&s->view) <= sync_generation(&s->sync);
}

/* Put the awaited reply aside, or hand the frame to the device list. */
static int handle_frame(struct channel *s, Rdmad__Frame *frame, int fd)
{
	int err;

	if (s->await_seq && frame->seq == s->await_seq && !s->reply) {
		s->reply = frame;
		s->reply_fd = fd;
		return 0;
	}
	close_fd(&fd);
	if (reports_take_reply(&s->reports, frame)) {
		wire_free(frame);
		return 0;
	}
	err = sync_handle_frame(&s->sync, &s->conn, frame);
	genview_learn(&s->view, sync_generation(&s->sync));
	return err;
}

/*
 * Read and handle frames without waiting until none is pending, the
 * budget is spent, @deadline (0: none) passed, the awaited reply came or,
 * with @events_only, the list is caught_up(): then what is left stays for
 * the next call, the fd still readable, and one event costs one
 * recvmsg(), not a second one that says EAGAIN.  0, or the error that
 * dropped the connection.
 */
static int read_frames(struct channel *s, uint64_t deadline, bool events_only)
{
	Rdmad__Frame *frame;
	unsigned int n;
	int err, fd;

	for (n = 0; n < CHANNEL_DRAIN_BUDGET; n++) {
		frame = NULL;
		fd = -1;
		err = conn_recv(&s->conn, 0, &frame, &fd);
		if (err == -EAGAIN)
			return 0;
		if (recv_fatal(err))
			goto drop;
		if (err == 0 && handle_frame(s, frame, fd) < 0) {
			err = -ECONNRESET;
			goto drop;
		}
		if (s->reply || (events_only && caught_up(s)) ||
		    (deadline && channel_now_ms() >= deadline))
			return 0;
	}
	return 0;
drop:
	drop_connection(s, err);
	return err;
}

/* Send the reports not sent on this connection, if the daemon takes
 * them.  A full socket leaves the rest for later; a connection that
 * failed is noticed by the next read. */
static void send_reports(struct channel *s)
{
	if (s->connected && s->views && reports_pending(&s->reports))
		reports_send(&s->reports, &s->conn);
}

int channel_drain(struct channel *s, bool events_only)
{
	send_reports(s);
	return read_frames(s, 0, events_only) < 0 ? -ECONNRESET : 0;
}

/* Wait without the lock until the socket is readable or @deadline; in
 * slices when other threads may read it meanwhile. */
static void wait_socket(struct channel *s, uint64_t deadline)
{
	struct pollfd pfd = {.fd = s->conn.fd, .events = POLLIN};
	int ms = remaining_ms(deadline);

	if (s->lock && ms > CHANNEL_WAIT_SLICE_MS)
		ms = CHANNEL_WAIT_SLICE_MS;
	unlock(s);
	/* EINTR or a closed fd: the caller looks again under the lock. */
	poll(&pfd, 1, ms);
	relock(s);
}

/* Wait for the reply to @seq until @deadline: the reply frame and its
 * passed fd, -ETIMEDOUT, or the error that dropped the connection. */
static int wait_reply(struct channel *s, uint64_t seq, uint64_t deadline,
		      Rdmad__Frame **ret_frame, int *ret_fd)
{
	uint64_t epoch = s->epoch;
	int err = 0;

	s->await_seq = seq;
	while (!s->reply && err == 0) {
		if (s->epoch != epoch)
			err = s->last_error < 0 ? s->last_error : -ECONNRESET;
		else if ((err = read_frames(s, deadline, false)) < 0 ||
			 s->reply)
			break;
		else if (remaining_ms(deadline) == 0)
			err = -ETIMEDOUT;
		else
			wait_socket(s, deadline);
	}
	if (s->reply) {
		*ret_frame = s->reply;
		*ret_fd = s->reply_fd;
		s->reply = NULL;
		s->reply_fd = -1;
		err = 0;
	}
	s->await_seq = 0;
	return err;
}

static int status_error(Rdmad__Status status)
{
	/* A daemon that does not speak our version cannot serve us. */
	if (status == RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION)
		return -EPROTO;
	return wire_errno_from_status(status);
}

/* Send a request and wait for its reply; the -errno of its status. */
static int request(struct channel *s, Rdmad__Frame__BodyCase body,
		   const char *name)
{
	uint64_t deadline = channel_now_ms() + CHANNEL_REPLY_TIMEOUT_MS;
	Rdmad__Frame *frame = NULL;
	uint64_t seq;
	int fd = -1, err;

	err = conn_send_name(&s->conn, body, name, &seq);
	if (err == -EAGAIN)
		return -EAGAIN;
	if (err < 0) {
		drop_connection(s, err);
		return -ECONNRESET;
	}
	err = wait_reply(s, seq, deadline, &frame, &fd);
	close_fd(&fd);
	if (err == -ETIMEDOUT) {
		/* The daemon may still act on it: start over on a fresh
		 * connection, which holds exactly what we recorded. */
		drop_connection(s, err);
		return err;
	}
	if (err < 0)
		return err == -EPROTO ? err : -ECONNRESET;
	err = status_error(frame->status);
	wire_free(frame);
	return err;
}

/* ---- connecting: a link built without the lock --------------------------- */

/* The page, if the Welcome passed one: a daemon may pass none. */
static int take_page(struct channel *link, const Rdmad__Welcome *welcome,
		     int *fd)
{
	int err;

	genview_learn(&link->view, welcome->generation);
	link->views = welcome->view != NULL;
	if (*fd < 0)
		return 0;
	if (!welcome->generation_page) {
		close_fd(fd);
		return 0;
	}
	err = conn_map_page(&link->conn, *fd);
	*fd = -1;
	return err;
}

static int hello(struct channel *link)
{
	uint64_t deadline = channel_now_ms() + CHANNEL_REPLY_TIMEOUT_MS;
	Rdmad__Frame *frame = NULL;
	uint64_t seq;
	int fd = -1, err;

	err = conn_send_name(&link->conn, RDMAD__FRAME__BODY_HELLO,
			     program_invocation_short_name, &seq);
	if (err < 0)
		return err;
	err = wait_reply(link, seq, deadline, &frame, &fd);
	if (err < 0)
		return err;
	if (frame->status != RDMAD__STATUS__STATUS_OK)
		err = status_error(frame->status);
	else if (frame->body_case != RDMAD__FRAME__BODY_WELCOME ||
		 frame->welcome->version != WIRE_VERSION)
		err = -EPROTO;
	else
		err = take_page(link, frame->welcome, &fd);
	wire_free(frame);
	close_fd(&fd);
	return err;
}

/* Whether a refused hold should be forgotten rather than retried. */
static bool hold_refused(int err)
{
	return err == -ENODEV || err == -EPERM || err == -ENOSPC ||
	       err == -EBADMSG;
}

/* The daemon dropped our holds with the old connection: announce them. */
static int reannounce_holds(struct channel *link)
{
	size_t i = 0;
	int err;

	while (i < link->n_holds) {
		err = request(link, RDMAD__FRAME__BODY_HOLD,
			      link->holds[i].name);
		if (hold_refused(err)) {
			/* Gone while we were away, or no longer allowed. */
			remove_hold(link, i);
			continue;
		}
		if (err < 0)
			return err;
		i++;
	}
	return 0;
}

/* Subscribe and wait until the whole first snapshot is in. */
static int subscribe(struct channel *link)
{
	uint64_t deadline = channel_now_ms() + CHANNEL_REPLY_TIMEOUT_MS;
	int err;

	err = sync_subscribe(&link->sync, &link->conn);
	while (err == 0 && link->sync.follow.state == FOLLOW_AWAITING) {
		if (remaining_ms(deadline) == 0)
			return -ETIMEDOUT;
		wait_socket(link, deadline);
		err = read_frames(link, deadline, false);
	}
	return err;
}

/* Hello, re-announce the holds, subscribe: all without the lock. */
static int establish(struct channel *link)
{
	int err;

	err = hello(link);
	if (err == 0)
		err = reannounce_holds(link);
	if (err == 0)
		err = subscribe(link);
	return err;
}

/*
 * Under the lock, with s->connecting set: the link's socket, connected.
 * A listener whose backlog is full (rdmad busy turning a flood of
 * connections away) says EAGAIN at once: tried again, 1 ms then up to
 * CHANNEL_CONNECT_PAUSE_MAX_MS apart, within CHANNEL_REPLY_TIMEOUT_MS,
 * as rdmactl does.  The pauses are without the lock; each try, bounded
 * work, is under it, so a fork() in between finds the socket in
 * pending_fd.
 */
static int connect_link(struct channel *link, struct channel *s)
{
	uint64_t deadline = channel_now_ms() + CHANNEL_REPLY_TIMEOUT_MS;
	struct timespec pause = {.tv_nsec = 1000000};
	int err;

	while ((err = conn_open(&link->conn, s->path)) == -EAGAIN &&
	       channel_now_ms() < deadline) {
		unlock(s);
		nanosleep(&pause, NULL);
		relock(s);
		if (pause.tv_nsec < CHANNEL_CONNECT_PAUSE_MAX_MS * 1000000L)
			pause.tv_nsec *= 2;
	}
	if (err == 0)
		s->pending_fd = link->conn.fd;
	return err;
}

/* Under the lock, with s->connecting set: a link with a copy of the
 * holds, its socket connected. */
static int open_link(struct channel *link, struct channel *s)
{
	int err;

	memset(link, 0, sizeof(*link));
	init_common(link, s->path);
	link->sync.want_events = s->sync.want_events;
	link->sync.features = s->sync.features;
	err = copy_holds(link, s);
	if (err == 0)
		err = connect_link(link, s);
	return err;
}

static void close_link(struct channel *link)
{
	conn_fini(&link->conn);
	drop_state(link);
}

/* Under the lock: the link's connection, list and holds become ours. */
static int adopt(struct channel *s, struct channel *link)
{
	int err;

	err = poller_watch(&s->poller, link->conn.fd);
	if (err == 0 && link->conn.page)
		err = genview_attach(&s->view, &link->conn.page);
	if (err == 0)
		err = sync_adopt(&s->sync, &link->sync);
	if (err < 0) {
		poller_unwatch(&s->poller, link->conn.fd);
		genview_detach(&s->view);
		return err;
	}
	genview_learn(&s->view, genview_load(&link->view));
	conn_adopt(&s->conn, &link->conn);
	s->views = link->views;
	channel_holds_clear(s);
	s->holds = link->holds;
	s->n_holds = link->n_holds;
	link->holds = NULL;
	link->n_holds = 0;
	clear_cached(s);
	return 0;
}

static void back_off(struct channel *s)
{
	atomic_store(&s->next_attempt_ms, channel_now_ms() + s->backoff_ms);
	s->backoff_ms = s->backoff_ms * 2 > CHANNEL_BACKOFF_MAX_MS
				? CHANNEL_BACKOFF_MAX_MS
				: s->backoff_ms * 2;
}

static int connect_now(struct channel *s)
{
	struct channel link;
	int err;

	s->connecting = true;
	err = open_link(&link, s);
	if (err == 0) {
		unlock(s);
		err = establish(&link);
		relock(s);
		s->pending_fd = -1;
		if (err == 0)
			err = adopt(s, &link);
	}
	s->connecting = false;
	done_turn(s);
	close_link(&link);
	if (err < 0) {
		s->last_error = err;
		back_off(s);
		return err;
	}
	s->connected = true;
	s->backoff_ms = CHANNEL_BACKOFF_MIN_MS;
	s->last_error = 0;
	publish_state(s);
	send_reports(s);
	return 0;
}

static bool due(const struct channel *s)
{
	return channel_now_ms() >= atomic_load(&s->next_attempt_ms);
}

int channel_ensure_connected(struct channel *s, enum channel_connect how)
{
	bool force = false;

	switch (how) {
	case CHANNEL_CONNECT_NOW:
		force = true;
		break;
	case CHANNEL_CONNECT_DUE:
		break;
	case CHANNEL_CONNECT_DUE_NO_WAIT:
		/* Someone else connects, or a request is in flight. */
		if (!s->connected && (s->connecting || s->requesting))
			return -ENOTCONN;
		break;
	}
	/* The fast path: no clock read while connected. */
	while (!s->connected && (s->connecting || s->requesting))
		wait_turn(s);
	if (s->connected)
		return 0;
	if (!force && !due(s))
		return s->last_error ? s->last_error : -ENOTCONN;
	return connect_now(s);
}

/* ---- holds --------------------------------------------------------------- */

/* One request at a time, and none while a connection is built. */
static void claim_requests(struct channel *s)
{
	while (s->requesting || s->connecting)
		wait_turn(s);
	s->requesting = true;
}

static void end_requests(struct channel *s)
{
	s->requesting = false;
	done_turn(s);
}

static int take_hold(struct channel *s, const char *name, bool explicit)
{
	ssize_t i = find_hold(s, name);
	int err = 0;

	if (i >= 0 && explicit && s->holds[i].explicit)
		return -EALREADY;
	if (i < 0) {
		if (!s->connected)
			err = connect_now(s);
		if (err == 0)
			err = request(s, RDMAD__FRAME__BODY_HOLD, name);
		if (err == 0)
			err = add_hold(s, name);
		if (err < 0)
			return err;
		i = (ssize_t)s->n_holds - 1;
	}
	if (explicit)
		s->holds[i].explicit = true;
	else
		s->holds[i].opens++;
	return 0;
}

int channel_hold(struct channel *s, const char *name, bool explicit)
{
	int err;

	claim_requests(s);
	err = take_hold(s, name, explicit);
	end_requests(s);
	return err;
}

/* The last use went: release the daemon's hold.  An explicit hold whose
 * release could not be sent or answered stays, to be released again. */
static int release_hold(struct channel *s, size_t i, bool explicit)
{
	int err = 0;

	/* Without a connection the daemon already dropped the hold. */
	if (s->connected)
		err = request(s, RDMAD__FRAME__BODY_RELEASE, s->holds[i].name);
	if (err == -ECONNRESET || err == -ENODEV)
		err = 0;
	if (explicit && (err == -ETIMEDOUT || err == -EAGAIN)) {
		s->holds[i].explicit = true;
		return err;
	}
	/* A closed context's hold must go: on a fresh connection. */
	if (err == -EAGAIN)
		drop_connection(s, err);
	remove_hold(s, i);
	return err;
}

static int put_hold(struct channel *s, const char *name, bool explicit)
{
	ssize_t i = find_hold(s, name);

	if (i < 0 || (explicit ? !s->holds[i].explicit : !s->holds[i].opens))
		return -ENOENT;
	if (explicit)
		s->holds[i].explicit = false;
	else
		s->holds[i].opens--;
	if (s->holds[i].explicit || s->holds[i].opens)
		return 0;
	return release_hold(s, (size_t)i, explicit);
}

int channel_unhold(struct channel *s, const char *name, bool explicit)
{
	int err;

	claim_requests(s);
	err = put_hold(s, name, explicit);
	end_requests(s);
	return err;
}

/* ---- reports ------------------------------------------------------------- */

int channel_report_unusable(struct channel *s, const char *name,
			    uint64_t incarnation, int error)
{
	int err = reports_add(&s->reports, name, incarnation, error);

	if (err == -EALREADY)
		return 0;
	if (err == 0)
		send_reports(s);
	return err;
}

/* ---- the list and what other threads read -------------------------------- */

bool channel_current(const struct channel *s)
{
	return s->connected && s->sync.snapshot &&
	       s->sync.follow.state != FOLLOW_AWAITING &&
	       genview_page(&s->view) <= sync_generation(&s->sync);
}

/*
 * When the page already shows a newer generation than the events read so
 * far, wait for them a little (without the lock) so the list is at least
 * as new as the page was.
 */
int channel_catch_up(struct channel *s, int wait_ms)
{
	uint64_t deadline = channel_now_ms() + (uint64_t)wait_ms;
	int err;

	err = channel_ensure_connected(s, CHANNEL_CONNECT_DUE);
	if (err == 0)
		err = channel_drain(s, false);
	/* A daemon that just restarted: one reconnect. */
	if (err == -ECONNRESET)
		err = channel_ensure_connected(s, CHANNEL_CONNECT_DUE);
	while (err == 0 && !channel_current(s) && remaining_ms(deadline) > 0) {
		wait_socket(s, deadline);
		err = s->connected ? channel_drain(s, false) : -ECONNRESET;
	}
	return err;
}

void channel_wake(struct channel *s)
{
	if (s->sync.queue_len)
		poller_wake(&s->poller);
}

void channel_publish(struct channel *s, struct rdmad_snapshot *snap)
{
	struct rdmad_snapshot *old;

	rdmad_snapshot_ref(snap);
	pthread_mutex_lock(&s->cache_lock);
	old = s->cached;
	s->cached = snap;
	pthread_mutex_unlock(&s->cache_lock);
	rdmad_snapshot_unref(old);
}

uint64_t channel_generation(const struct channel *s)
{
	return genview_load(&s->view);
}

int channel_poll_fd(const struct channel *s)
{
	return atomic_load(&s->poll_fd);
}

int channel_timeout_ms(const struct channel *s)
{
	uint64_t now, next;

	if (atomic_load(&s->up))
		return -1;
	now = channel_now_ms();
	next = atomic_load(&s->next_attempt_ms);
	return next > now ? (int)(next - now) : 0;
}

/* The cached snapshot serves while connected with a page that shows no
 * newer generation; without a page, only the lock's path can tell. */
struct rdmad_snapshot *channel_cached(struct channel *s)
{
	struct rdmad_snapshot *snap = NULL;
	uint64_t page;

	if (!atomic_load(&s->up) || !genview_live(&s->view))
		return NULL;
	page = genview_page(&s->view);
	pthread_mutex_lock(&s->cache_lock);
	if (s->cached && s->cached->generation >= page)
		snap = rdmad_snapshot_ref(s->cached);
	pthread_mutex_unlock(&s->cache_lock);
	return snap;
}
