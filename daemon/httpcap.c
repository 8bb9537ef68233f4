/* SPDX-License-Identifier: MIT */
/*
 * Counting an evhttp server's connections with public libevent 2.1 API.
 *
 * evhttp asks our bevcb for each accepted connection's bufferevent, so
 * opening is seen exactly.  Closing is not announced: evhttp frees the
 * bufferevent, and nothing tells its creator.  So we keep one extra
 * reference on each: the bufferevent (and, with BEV_OPT_CLOSE_ON_FREE, its
 * socket) then outlives evhttp's bufferevent_free(), which clears every
 * callback.  A connection whose event callback is gone is one evhttp has
 * finished with; a timer drops our reference then, which closes the
 * socket.  evhttp sets its error callback on the bufferevent before it
 * reads anything and keeps it until the free, and evhttp_connection_free()
 * has already shut the socket down for writing, so the peer sees the
 * close at once and only the descriptor lingers, for at most REAP_SEC.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "httpcap.h"
#include "log.h"

#define REAP_SEC 1

struct httpcap {
	struct evhttp *http;
	struct evconnlistener *listener;
	struct event *reaper;
	struct bufferevent **live;
	unsigned int n, max;
	bool paused;
};

static bool finished(struct bufferevent *bev)
{
	bufferevent_event_cb eventcb = NULL;

	bufferevent_getcb(bev, NULL, NULL, &eventcb, NULL);
	return eventcb == NULL;
}

static void resume(struct httpcap *hc)
{
	if (hc->paused && hc->n < hc->max) {
		evconnlistener_enable(hc->listener);
		hc->paused = false;
	}
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
	struct httpcap *hc = arg;

	for (unsigned int i = 0; i < hc->n;) {
		if (!finished(hc->live[i])) {
			i++;
			continue;
		}
		bufferevent_decref(hc->live[i]);
		hc->live[i] = hc->live[--hc->n];
	}
	resume(hc);
	if (hc->n == 0)
		event_del(hc->reaper);
}

static void pause_accepting(struct httpcap *hc)
{
	if (hc->paused)
		return;
	log_warnx("metrics: %u connections open, accepting no more until "
		  "one closes",
		  hc->n);
	evconnlistener_disable(hc->listener);
	hc->paused = true;
}

static struct bufferevent *on_connection(struct event_base *base, void *arg)
{
	struct httpcap *hc = arg;
	struct timeval tv = {.tv_sec = REAP_SEC};
	struct bufferevent *bev;

	if (hc->n == hc->max)
		return NULL; /* cannot happen while paused; evhttp copes */
	bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		return NULL;
	bufferevent_incref(bev);
	hc->live[hc->n++] = bev;
	if (hc->n == hc->max)
		pause_accepting(hc);
	if (!event_pending(hc->reaper, EV_TIMEOUT, NULL))
		event_add(hc->reaper, &tv);
	return bev;
}

struct httpcap *httpcap_new(struct evhttp *http,
			    struct evhttp_bound_socket *bound, unsigned int max)
{
	struct httpcap *hc = calloc(1, sizeof(*hc));
	struct evconnlistener *listener;

	listener = evhttp_bound_socket_get_listener(bound);
	if (!hc || !listener || max == 0)
		goto fail;
	hc->http = http;
	hc->listener = listener;
	hc->max = max;
	hc->live = calloc(max, sizeof(*hc->live));
	hc->reaper = event_new(evconnlistener_get_base(listener), -1,
			       EV_PERSIST, on_reap, hc);
	if (!hc->live || !hc->reaper)
		goto fail;
	evhttp_set_bevcb(http, on_connection, hc);
	return hc;
fail:
	httpcap_free(hc);
	errno = ENOMEM;
	return NULL;
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
		bufferevent_decref(hc->live[i]);
	if (hc->reaper)
		event_free(hc->reaper);
	free(hc->live);
	free(hc);
}

unsigned int httpcap_open(const struct httpcap *hc)
{
	return hc ? hc->n : 0;
}
