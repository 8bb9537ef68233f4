/* SPDX-License-Identifier: MIT */
/*
 * One connection (client.h): its state, its output queue, its read loop
 * and its close.
 *
 * Output: every frame goes out through client_push(), which sends at once
 * when the client's queue is empty and queues only on EAGAIN, so the
 * common fan-out costs one sendmsg() per subscriber and no allocation.  A
 * queue holds at most max_queue frames of events; a subscriber that lets
 * it fill loses its queued events and, once it reads again, gets a fresh
 * unsolicited snapshot (seq 0) instead: it can fall behind but never make
 * the daemon hold unbounded memory or stall others.
 *
 * Input: one datagram of at most WIRE_MAX_REQUEST bytes is one request,
 * handed to the request table (requests.c, through the server's hooks).
 * While anything is queued for a client we read no more of its requests,
 * so a client that pipelines requests and never reads holds at most one
 * reply (a snapshot) plus max_queue events here.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "client.h"
#include "devices.h"
#include "log.h"
#include "nlquery.h"
#include "server-int.h"

/* Linux 6.16: a socket that refuses SCM_RIGHTS (the sender gets EPERM). */
#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83
#endif

/* Datagrams read from one client per wake-up, for fairness. */
#define READ_BURST 16

/* ---- the state ---- */

/* The transitions of client.h's table; staying is allowed where entering
 * again means something (a second Subscribe, a second kill). */
static const bool allowed[CLIENT_STATE_COUNT][CLIENT_STATE_COUNT] = {
	[CLIENT_STATE_GREETING] = {[CLIENT_STATE_WELCOMED] = true,
				   [CLIENT_STATE_HANGING_UP] = true,
				   [CLIENT_STATE_DEAD] = true},
	[CLIENT_STATE_WELCOMED] = {[CLIENT_STATE_SUBSCRIBED] = true,
				   [CLIENT_STATE_HANGING_UP] = true,
				   [CLIENT_STATE_DEAD] = true},
	[CLIENT_STATE_SUBSCRIBED] = {[CLIENT_STATE_SUBSCRIBED] = true,
				     [CLIENT_STATE_HANGING_UP] = true,
				     [CLIENT_STATE_DEAD] = true},
	[CLIENT_STATE_HANGING_UP] = {[CLIENT_STATE_DEAD] = true},
	[CLIENT_STATE_DEAD] = {[CLIENT_STATE_DEAD] = true},
};

const char *client_state_name(enum client_state state)
{
	static const char *const names[CLIENT_STATE_COUNT] = {
		[CLIENT_STATE_GREETING] = "greeting",
		[CLIENT_STATE_WELCOMED] = "welcomed",
		[CLIENT_STATE_SUBSCRIBED] = "subscribed",
		[CLIENT_STATE_HANGING_UP] = "hanging-up",
		[CLIENT_STATE_DEAD] = "dead",
	};

	return state < CLIENT_STATE_COUNT ? names[state] : "?";
}

void client_enter_state(struct client *c, enum client_state state)
{
	enum client_state old = c->state;

	assert(allowed[old][state]);
	if (old != state)
		log_debug("client pid %d (%s): %s -> %s", c->peer.pid,
			  c->peer.comm, client_state_name(old),
			  client_state_name(state));
	c->state = state;
	switch (state) {
	case CLIENT_STATE_GREETING:
		break;
	case CLIENT_STATE_WELCOMED:
		event_del(c->ev_hello);
		break;
	case CLIENT_STATE_SUBSCRIBED:
		/* The snapshot just sent pays what a resync owed. */
		c->resync = false;
		break;
	case CLIENT_STATE_HANGING_UP:
		event_del(c->ev_read);
		break;
	case CLIENT_STATE_DEAD:
		/* Closing here could re-enter the fan-out loop through
		 * devices_release_owner(); let the write callback do it. */
		event_active(c->ev_write, EV_WRITE, 0);
		break;
	case CLIENT_STATE_COUNT:
		assert(!"not a state");
	}
}

static bool going(const struct client *c)
{
	return c->state == CLIENT_STATE_HANGING_UP ||
	       c->state == CLIENT_STATE_DEAD;
}

bool client_welcomed(const struct client *c)
{
	return c->state == CLIENT_STATE_WELCOMED ||
	       c->state == CLIENT_STATE_SUBSCRIBED;
}

bool client_hears_events(const struct client *c)
{
	return c->state == CLIENT_STATE_SUBSCRIBED && !c->resync;
}

void client_kill(struct client *c)
{
	client_enter_state(c, CLIENT_STATE_DEAD);
}

/* Reading goes on where nothing holds it: not going, no replies queued,
 * room in rdmad's table. */
static void resume_reading(struct client *c)
{
	if (!going(c) && !c->read_paused && !c->waiting_room)
		event_add(c->ev_read, NULL);
}

/* ---- the output queue ---- */

static int queue_append(struct client *c, struct outbuf *ob)
{
	if (outq_append(&c->out, ob) < 0)
		return -ENOMEM;
	if (c->out.count == 1)
		event_add(c->ev_write, NULL);
	return 0;
}

void client_drop_events(struct client *c)
{
	outq_drop_events(&c->out);
	if (!c->resync) {
		log_debug("client pid %d (%s): queue overflow, resync",
			  c->peer.pid, c->peer.comm);
		c->srv->refusals[SERVER_REFUSED_QUEUE]++;
	}
	c->resync = true;
	event_add(c->ev_write, NULL);
}

/* Did the kernel refuse to carry the descriptor rather than the
 * datagram?  ETOOMANYREFS: rdmad's user has more files in flight than its
 * open file limit (too_many_unix_fds()); EPERM: the client's socket
 * refuses rights (SO_PASSRIGHTS, Linux 6.16). */
static bool descriptor_refused(int r)
{
	return r == -ETOOMANYREFS || r == -EPERM;
}

/* Send @ob; where the kernel will not carry its descriptor, the same
 * reply without it (outq.h), never a closed connection. */
static int send_outbuf(struct client *c, const struct outbuf *ob)
{
	int r = wire_send(c->fd, ob->data, ob->len, ob->pass_fd);

	if (r < 0 && ob->bare && descriptor_refused(r)) {
		if (!c->srv->logged_bare)
			log_warnx("client pid %d: a reply went without its "
				  "descriptor: %s (logged once)",
				  c->peer.pid, strerror(-r));
		c->srv->logged_bare = true;
		r = wire_send(c->fd, ob->bare->data, ob->bare->len, -1);
	}
	return r;
}

int client_push(struct client *c, struct outbuf *ob)
{
	int r;

	if (c->state == CLIENT_STATE_DEAD)
		return -EPIPE;
	if (c->out.count == 0) {
		r = send_outbuf(c, ob);
		if (r != -EAGAIN) {
			if (r < 0)
				client_kill(c);
			return r;
		}
	}
	r = queue_append(c, ob);
	if (r < 0)
		client_kill(c);
	return r;
}

void client_push_event(struct client *c, struct outbuf *ob)
{
	if (c->out.count >= c->srv->opts.max_queue) {
		client_drop_events(c);
		return;
	}
	client_push(c, ob);
}

int client_reply_frame(struct client *c, const Rdmad__Frame *frame, int pass_fd)
{
	struct outbuf *ob = outbuf_encode(frame, false, pass_fd);
	int r;

	if (!ob) {
		client_kill(c);
		return -ENOMEM;
	}
	r = client_push(c, ob);
	outbuf_unref(ob);
	return r;
}

int client_reply_frame_fd(struct client *c, Rdmad__Frame *frame, int pass_fd,
			  protobuf_c_boolean *says_fd)
{
	struct outbuf *ob = outbuf_encode(frame, false, pass_fd);
	int r;

	if (ob && pass_fd >= 0) {
		*says_fd = false;
		ob->bare = outbuf_encode(frame, false, -1);
		*says_fd = true;
	}
	if (!ob || (pass_fd >= 0 && !ob->bare)) {
		if (ob)
			outbuf_unref(ob);
		client_kill(c);
		return -ENOMEM;
	}
	r = client_push(c, ob);
	outbuf_unref(ob);
	return r;
}

/* Flush the queue; then, if owed, the resync snapshot. */
static void client_flush(struct client *c)
{
	struct outbuf *ob;
	int r;

	while ((ob = outq_peek(&c->out))) {
		r = send_outbuf(c, ob);
		if (r == -EAGAIN)
			return;
		if (r < 0) {
			client_close(c);
			return;
		}
		outq_pop(&c->out);
	}
	event_del(c->ev_write);
	if (c->state == CLIENT_STATE_HANGING_UP) {
		client_close(c);
		return;
	}
	if (c->resync) {
		c->resync = false;
		if (c->srv->hooks.resync(c) < 0) {
			client_close(c);
			return;
		}
	}
	if (c->read_paused && c->out.count == 0) {
		c->read_paused = false;
		resume_reading(c);
	}
}

static void on_client_write(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	if (c->state == CLIENT_STATE_DEAD) {
		client_close(c);
		return;
	}
	client_flush(c);
}

/*
 * ---- descriptors ----
 *
 * Only Hello may pass one, a NETLINK_RDMA socket (PROTOCOL.md 8b), so
 * once a connection's first datagram is read it refuses any more where
 * the kernel can say so (SO_PASSRIGHTS, Linux 6.16).  Whatever a client
 * passed goes to the reaper, except a NETLINK_RDMA socket, whose last
 * close cannot block (no file rides in a netlink queue).
 */
static void refuse_rights(struct client *c)
{
	int off = 0;

	c->read_once = true;
	if (setsockopt(c->fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off)) <
		    0 &&
	    errno != ENOPROTOOPT)
		log_debug("client pid %d: SO_PASSRIGHTS: %s", c->peer.pid,
			  strerror(errno));
}

void client_let_go(struct client *c, int fd)
{
	uint64_t cookie;

	if (fd < 0)
		return;
	if (nlquery_check_socket(fd, &cookie) == 0)
		close(fd);
	else
		reaper_put(c->srv->reaper, fd, c->peer.owner);
}

void client_let_go_all(struct client *c, const struct wire_fds *fds)
{
	for (size_t i = 0; i < fds->n; i++)
		client_let_go(c, fds->fd[i]);
}

/* ---- the read loop ---- */

/* Room in rdmad's table (server-int.h); an owner with
 * REAPER_MAX_PENDING descriptors waiting anywhere is not read, nor one
 * with any waiting once the budget is spent. */
static bool may_receive(const struct client *c)
{
	unsigned int waiting = reaper_waiting(c->srv->reaper, c->peer.owner);

	if (!server_room_for(c->srv, 0, c->control))
		return false;
	return c->control || waiting == 0 ||
	       (waiting < REAPER_MAX_PENDING && server_budget_left(c->srv));
}

static void wait_for_room(struct client *c)
{
	struct server *srv = c->srv;

	c->waiting_room = true;
	event_del(c->ev_read);
	if (!srv->logged_room)
		log_warnx("client pid %d uid %u: not read until descriptors "
			  "clients passed are closed (its owner's %u waiting, "
			  "%u in rdmad's table for clients, ceiling %u; "
			  "logged once)",
			  c->peer.pid, (unsigned int)c->peer.uid,
			  reaper_waiting(srv->reaper, c->peer.owner),
			  server_fds_for_clients(srv), srv->fd_ceiling);
	srv->logged_room = true;
}

void client_room_again(struct client *c)
{
	if (!c->waiting_room || !may_receive(c))
		return;
	c->waiting_room = false;
	resume_reading(c);
}

/* The kernel dropped descriptors in this thread anyway: say so, and let
 * the connection go where nothing of it is closed here. */
static int truncated(struct client *c)
{
	if (!c->srv->logged_ctrunc)
		log_warnx("client pid %d uid %u: descriptors it passed did "
			  "not fit rdmad's table (MSG_CTRUNC); closing it "
			  "(logged once)",
			  c->peer.pid, (unsigned int)c->peer.uid);
	c->srv->logged_ctrunc = true;
	return -ECONNRESET;
}

/* Read a burst of requests; returns -errno when the client must go. */
static int client_read(struct client *c)
{
	struct wire_fds fds;
	ssize_t n;
	int r;

	for (int i = 0; i < READ_BURST && c->state != CLIENT_STATE_DEAD; i++) {
		if (!may_receive(c)) {
			wait_for_room(c);
			return 0;
		}
		n = wire_recv_all(c->fd, c->srv->rxbuf, sizeof(c->srv->rxbuf),
				  &fds);
		if (fds.truncated) {
			client_let_go_all(c, &fds);
			return truncated(c);
		}
		if (n == -EAGAIN)
			return 0;
		if (!c->read_once)
			refuse_rights(c);
		r = c->srv->hooks.handle(c, n, &fds);
		if (r < 0)
			return r;
		if (c->out.count > 0) {
			/* Backpressure: no more requests until it reads. */
			c->read_paused = true;
			event_del(c->ev_read);
			return 0;
		}
	}
	return 0;
}

/*
 * A protocol error ends the connection, but the reply that says why
 * (UNSUPPORTED_VERSION, BAD_REQUEST) may still be queued: stop reading
 * and close once it is out.  A peer that never reads is closed by the
 * Hello deadline, or holds only its own slot.
 */
static void client_hang_up(struct client *c)
{
	if (c->state == CLIENT_STATE_DEAD || c->out.count == 0) {
		client_close(c);
		return;
	}
	client_enter_state(c, CLIENT_STATE_HANGING_UP);
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	int r = client_read(c);

	if (c->state == CLIENT_STATE_DEAD || r == -ECONNRESET || r == -EPIPE)
		client_close(c);
	else if (r < 0)
		client_hang_up(c);
}

/* ---- a connection's life ---- */

/* No Hello in time: a slot held for nothing. */
static void on_hello_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	c->srv->refusals[SERVER_REFUSED_NO_HELLO]++;
	log_debug("client pid %d (%s): no Hello within %u ms", c->peer.pid,
		  c->peer.comm, c->srv->opts.hello_timeout_ms);
	client_kill(c);
}

static void client_free_events(struct client *c)
{
	if (c->ev_read)
		event_free(c->ev_read);
	if (c->ev_write)
		event_free(c->ev_write);
	if (c->ev_hello)
		event_free(c->ev_hello);
}

static void client_link(struct server *srv, struct client *c)
{
	c->next = srv->clients;
	if (srv->clients)
		srv->clients->prev = c;
	srv->clients = c;
	srv->nclients++;
	srv->ncontrol += c->control;
}

static void client_unlink(struct server *srv, struct client *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nclients--;
	srv->ncontrol -= c->control;
}

struct client *client_new(struct server *srv, int fd, const struct peer *peer,
			  bool control)
{
	struct client *c = calloc(1, sizeof(*c));
	struct timeval tv = {
		.tv_sec = srv->opts.hello_timeout_ms / 1000,
		.tv_usec = srv->opts.hello_timeout_ms % 1000 * 1000,
	};

	if (!c)
		return NULL;
	c->srv = srv;
	c->fd = fd;
	c->state = CLIENT_STATE_GREETING;
	c->passed_fd = -1;
	c->serial = ++srv->serials;
	c->peer = *peer;
	c->control = control;
	c->ev_read = event_new(srv->base, fd, EV_READ | EV_PERSIST,
			       on_client_read, c);
	c->ev_write = event_new(srv->base, fd, EV_WRITE | EV_PERSIST,
				on_client_write, c);
	c->ev_hello = evtimer_new(srv->base, on_hello_timeout, c);
	if (c->ev_read && c->ev_write && control) {
		event_priority_set(c->ev_read, SERVER_PRIORITY_CONTROL);
		event_priority_set(c->ev_write, SERVER_PRIORITY_CONTROL);
	}
	if (!c->ev_read || !c->ev_write || !c->ev_hello ||
	    event_add(c->ev_read, NULL) < 0 ||
	    evtimer_add(c->ev_hello, &tv) < 0) {
		client_free_events(c);
		free(c);
		return NULL;
	}
	client_link(srv, c);
	return c;
}

/* Time for a namespace's last process to leave it after its last
 * client's socket closed. */
static const struct timeval settle_delay = {.tv_usec = 300 * 1000};

void client_close(struct client *c)
{
	struct server *srv = c->srv;

	log_debug("client pid %d (%s) gone", c->peer.pid, c->peer.comm);
	client_unlink(srv, c);
	client_free_events(c);
	reaper_close_connection(srv->reaper, c->fd, c->peer.owner);
	outq_clear(&c->out);
	/* Unlinked first: the events this causes go to the others only;
	 * and before its view goes, which may take its table along. */
	if (c->nholds && c->view)
		devices_release_owner(c->view->table, c);
	if (c->view)
		views_leave(srv->views, c->view);
	/* Not pushed back by every later close: clients come and go. */
	if (views_unsettled(srv->views) &&
	    !evtimer_pending(srv->ev_settle, NULL))
		evtimer_add(srv->ev_settle, &settle_delay);
	free(c);
}
