/* SPDX-License-Identifier: MIT */
/*
 * Keeping an evhttp server's connections in bounds with public libevent
 * 2.1 API.
 *
 * evhttp asks our bevcb for each accepted connection's bufferevent, so
 * opening is seen exactly; there we also set the read high-water mark that
 * bounds what the bufferevent reads ahead of evhttp's parser (evhttp's
 * header and body limits are checked on bytes already read, and while it
 * writes a reply it keeps reading with nobody parsing).  The bevcb runs
 * before evhttp gives the bufferevent its socket, so the peer is looked up
 * just after: at the next accept or in this turn of the event loop.
 *
 * Closing is not announced: evhttp frees the bufferevent, and nothing
 * tells its creator.  So we keep one extra reference on each: the
 * bufferevent (and, with BEV_OPT_CLOSE_ON_FREE, its socket) then outlives
 * evhttp's bufferevent_free(), which clears every callback.  A connection
 * whose event callback is gone is one evhttp has finished with; we drop
 * our reference then, which closes the socket.  evhttp sets its error
 * callback on the bufferevent before it reads anything and keeps it until
 * the free, and evhttp_connection_free() has already shut the socket down
 * for writing, so the peer sees the close at once and only the descriptor
 * lingers (with at most max_input bytes read), for at most TICK_MS.
 *
 * To close a connection ourselves (past the deadline, or to make room) we
 * report an error on its bufferevent, as its socket failing would:
 * evhttp's error callback frees the connection there and then.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "clock.h"
#include "httpcap.h"
#include "log.h"
#include "sockdiag.h"

/* How often connections evhttp has let go of are closed, at the latest. */
#define TICK_MS 250

enum owner_kind {
	OWNER_UNKNOWN,
	OWNER_UID,   /* a connection from this host: its socket's uid */
	OWNER_INET,  /* from elsewhere: the IPv4 address */
	OWNER_INET6, /* the IPv6 /64, what one host is given */
	OWNER_NONE,  /* from this host, but its client closed its socket */
};

struct owner {
	enum owner_kind kind;
	unsigned char id[8];
};

struct conn {
	struct bufferevent *bev;
	uint64_t since; /* accepted, ms of CLOCK_MONOTONIC */
	struct owner owner;
	bool known;   /* owner looked up */
	bool read;    /* its request arrived */
	bool closing; /* we shut it down; evhttp has yet to see it */
};

struct httpcap {
	struct evhttp *http;
	struct evconnlistener *listener;
	struct event *tick;
	struct conn *conns;
	unsigned int n, size;
	unsigned int accepted; /* since the last tick */
	struct httpcap_limits lim;
	int diag; /* sock_diag socket, or -1 */
	bool paused, told;
};

static bool finished(struct bufferevent *bev)
{
	bufferevent_event_cb eventcb = NULL;

	bufferevent_getcb(bev, NULL, NULL, &eventcb, NULL);
	return eventcb == NULL;
}

static void drop(struct httpcap *hc, unsigned int i)
{
	bufferevent_decref(hc->conns[i].bev);
	hc->conns[i] = hc->conns[--hc->n];
}

static void reap(struct httpcap *hc)
{
	for (unsigned int i = 0; i < hc->n;) {
		if (finished(hc->conns[i].bev))
			drop(hc, i);
		else
			i++;
	}
}

static void owner_from_addr(const struct sockaddr_storage *ss,
			    struct owner *ret)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET) {
		ret->kind = OWNER_INET;
		memcpy(ret->id, &in->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6 &&
		   IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
		ret->kind = OWNER_INET;
		memcpy(ret->id, &in6->sin6_addr.s6_addr[12], 4);
	} else if (ss->ss_family == AF_INET6) {
		ret->kind = OWNER_INET6;
		memcpy(ret->id, &in6->sin6_addr, 8);
	}
}

/* The client's socket has our peer name as its own address. */
static void identify(struct httpcap *hc, struct conn *c)
{
	struct sockaddr_storage peer, self;
	socklen_t plen = sizeof(peer), slen = sizeof(self);
	int fd = bufferevent_getfd(c->bev);
	uid_t uid;
	int r;

	if (fd < 0)
		return; /* evhttp has not given it its socket yet */
	c->known = true;
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&self, &slen) < 0)
		return;
	r = hc->diag >= 0
		    ? sockdiag_tcp_owner(hc->diag, (struct sockaddr *)&peer,
					 (struct sockaddr *)&self, &uid)
		    : -ENOENT;
	if (r == 0) {
		c->owner.kind = OWNER_UID;
		memcpy(c->owner.id, &uid, sizeof(uid));
	} else if (r == -ESRCH) {
		c->owner.kind = OWNER_NONE;
	} else {
		owner_from_addr(&peer, &c->owner);
	}
}

static bool same_owner(const struct owner *a, const struct owner *b)
{
	return a->kind == b->kind && !memcmp(a->id, b->id, sizeof(a->id));
}

/* Connections open, of @o or of anyone (NULL). */
static unsigned int count_open(const struct httpcap *hc, const struct owner *o)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < hc->n; i++)
		if (!hc->conns[i].closing &&
		    (!o || same_owner(&hc->conns[i].owner, o)))
			k++;
	return k;
}

/* How many @c's peer has open.  A connection whose client has closed its
 * socket is nobody's, and nobody waits for its reply: such connections
 * go first, before any peer's. */
static unsigned int weight(const struct httpcap *hc, const struct conn *c)
{
	if (c->owner.kind == OWNER_NONE)
		return UINT_MAX;
	return count_open(hc, &c->owner);
}

/* The oldest connection of the peer that has the most. */
static unsigned int pick_victim(const struct httpcap *hc)
{
	unsigned int best = hc->n, best_k = 0;

	for (unsigned int i = 0; i < hc->n; i++) {
		const struct conn *c = &hc->conns[i];
		unsigned int k;

		if (c->closing)
			continue;
		k = weight(hc, c);
		if (best == hc->n || k > best_k ||
		    (k == best_k && c->since < hc->conns[best].since)) {
			best = i;
			best_k = k;
		}
	}
	return best;
}

static void close_conn(struct httpcap *hc, unsigned int i)
{
	struct bufferevent *bev = hc->conns[i].bev;

	bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_ERROR, 0);
	if (finished(bev)) {
		drop(hc, i);
		return;
	}
	/* Not seen with libevent 2.1: evhttp will find the socket shut. */
	shutdown(bufferevent_getfd(bev), SHUT_RDWR);
	hc->conns[i].closing = true;
}

static void make_room(struct httpcap *hc)
{
	if (count_open(hc, NULL) <= hc->lim.max_connections)
		return;
	if (!hc->told)
		log_warnx("metrics: %u connections open: closing the oldest of "
			  "the peer with the most for each new one (logged "
			  "once)",
			  hc->lim.max_connections);
	hc->told = true;
	while (count_open(hc, NULL) > hc->lim.max_connections)
		close_conn(hc, pick_victim(hc));
}

static void settle(struct httpcap *hc)
{
	for (unsigned int i = 0; i < hc->n; i++)
		if (!hc->conns[i].known)
			identify(hc, &hc->conns[i]);
	make_room(hc);
}

static bool late(const struct httpcap *hc, const struct conn *c, uint64_t now)
{
	return !c->read && !c->closing && now - c->since >= hc->lim.request_ms;
}

static void expire(struct httpcap *hc, uint64_t now)
{
	for (unsigned int i = 0; i < hc->n;) {
		unsigned int n = hc->n;

		if (!late(hc, &hc->conns[i], now)) {
			i++;
			continue;
		}
		log_debug("metrics: no whole request within %u ms, closing",
			  hc->lim.request_ms);
		close_conn(hc, i);
		if (hc->n == n)
			i++;
	}
}

static void resume(struct httpcap *hc)
{
	hc->accepted = 0;
	if (hc->paused && hc->n < hc->size) {
		evconnlistener_enable(hc->listener);
		hc->paused = false;
	}
}

/* At the next deadline, and every TICK_MS to reap, while any are open. */
static void schedule(struct httpcap *hc, uint64_t now)
{
	uint64_t next = now + TICK_MS;
	struct timeval tv;

	if (hc->n == 0) {
		event_del(hc->tick);
		return;
	}
	for (unsigned int i = 0; i < hc->n; i++) {
		const struct conn *c = &hc->conns[i];

		if (!c->read && !c->closing &&
		    c->since + hc->lim.request_ms < next)
			next = c->since + hc->lim.request_ms;
	}
	next = next > now ? next - now : 0;
	tv.tv_sec = next / 1000;
	tv.tv_usec = next % 1000 * 1000;
	event_add(hc->tick, &tv);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct httpcap *hc = arg;
	uint64_t now = clock_monotonic_ms();

	reap(hc);
	settle(hc);
	expire(hc, now);
	resume(hc);
	schedule(hc, now);
}

/* Until the next tick, which this turn of the loop runs.  Connections
 * closed here keep their descriptors until libevent finalizes their
 * bufferevents later in this turn, so a turn accepts no more than
 * max_connections, however many wait. */
static void pause_accepting(struct httpcap *hc)
{
	if (hc->n == hc->size)
		log_warnx("metrics: %u connections closing, accepting no more "
			  "until they are gone",
			  hc->n);
	evconnlistener_disable(hc->listener);
	hc->paused = true;
}

static struct bufferevent *on_connection(struct event_base *base, void *arg)
{
	struct httpcap *hc = arg;
	struct bufferevent *bev;

	reap(hc);
	settle(hc);
	if (hc->n == hc->size)
		return NULL; /* cannot happen while paused; evhttp copes */
	bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		return NULL;
	bufferevent_setwatermark(bev, EV_READ, 0, hc->lim.max_input);
	bufferevent_incref(bev);
	hc->conns[hc->n++] =
		(struct conn){.bev = bev, .since = clock_monotonic_ms()};
	if (hc->n == hc->size || ++hc->accepted == hc->lim.max_connections)
		pause_accepting(hc);
	/* Look its peer up once evhttp has given it its socket. */
	event_active(hc->tick, EV_TIMEOUT, 1);
	return bev;
}

/* The kernel's buffer for what a client sends is bounded too (accepted
 * sockets inherit the listener's): requests are small.  And its backlog
 * is as long as the kernel allows (net.core.somaxconn) rather than
 * evhttp's 128: a connection that finds the backlog full waits a second or
 * more for the kernel to retry its handshake, so a user with a few hundred
 * connections pending would delay everybody else's. */
static void tune_listener(struct httpcap *hc)
{
	int fd = evconnlistener_get_fd(hc->listener);
	int size = hc->lim.max_input;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
		log_warn("metrics: SO_RCVBUF");
	if (listen(fd, SOMAXCONN) < 0)
		log_warn("metrics: listen");
}

static void open_diag(struct httpcap *hc)
{
	hc->diag = sockdiag_open();
	if (hc->diag < 0)
		log_warnc(-hc->diag,
			  "metrics: sock_diag: connections from this "
			  "host are told apart by address only");
}

struct httpcap *httpcap_new(struct evhttp *http,
			    struct evhttp_bound_socket *bound,
			    const struct httpcap_limits *limits)
{
	struct httpcap *hc = calloc(1, sizeof(*hc));
	struct evconnlistener *listener;

	if (!hc)
		return NULL;
	hc->diag = -1;
	listener = evhttp_bound_socket_get_listener(bound);
	if (!listener || !limits->max_connections || !limits->max_input ||
	    !limits->request_ms) {
		httpcap_free(hc);
		errno = EINVAL;
		return NULL;
	}
	hc->http = http;
	hc->listener = listener;
	hc->lim = *limits;
	/* Room for one more while it is looked up, and as many closing. */
	hc->size = 2 * limits->max_connections + 1;
	hc->conns = calloc(hc->size, sizeof(*hc->conns));
	hc->tick = event_new(evconnlistener_get_base(listener), -1, 0, on_tick,
			     hc);
	if (!hc->conns || !hc->tick) {
		httpcap_free(hc);
		errno = ENOMEM;
		return NULL;
	}
	open_diag(hc);
	tune_listener(hc);
	evhttp_set_bevcb(http, on_connection, hc);
	return hc;
}

/* evhttp_free() frees the connections it still has; our references then
 * free the bufferevents. */
void httpcap_free(struct httpcap *hc)
{
	if (!hc)
		return;
	if (hc->http)
		evhttp_set_bevcb(hc->http, NULL, NULL);
	for (unsigned int i = 0; i < hc->n; i++)
		bufferevent_decref(hc->conns[i].bev);
	if (hc->tick)
		event_free(hc->tick);
	if (hc->diag >= 0)
		close(hc->diag);
	free(hc->conns);
	free(hc);
}

void httpcap_request_read(struct httpcap *hc, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev;

	evhttp_add_header(evhttp_request_get_output_headers(req), "Connection",
			  "close");
	if (!hc || !evcon)
		return;
	bev = evhttp_connection_get_bufferevent(evcon);
	for (unsigned int i = 0; i < hc->n; i++)
		if (hc->conns[i].bev == bev)
			hc->conns[i].read = true;
}
