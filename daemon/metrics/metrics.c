/* SPDX-License-Identifier: MIT */
/*
 * The metrics endpoint: GET /metrics on evhttp, in the format the
 * scraper's Accept header asks for (metrics-expo.c), with the families of
 * metrics-families.c.  Only GET /metrics is served.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "devices.h"
#include "httpcap.h"
#include "metrics-families.h"
#include "metrics.h"

/* Bytes of request line and headers a scraper may send. */
#define METRICS_MAX_HEADERS 8192

/* What scrapers, and anyone else who can connect, may make rdmad hold
 * (httpcap.h): 16 connections (Prometheus needs one per target), each
 * reading at most 16 KiB ahead of the parser (twice the headers allowed)
 * and given 2 s for its request; evhttp's own 10 s timeout then bounds
 * each wait for the scraper to take the reply. */
static const struct httpcap_limits metrics_limits = {
	.max_connections = 16,
	.max_input = 2 * METRICS_MAX_HEADERS,
	.request_ms = 2000,
};

struct metrics {
	struct evhttp *http;
	struct httpcap *cap;
	struct metrics_state st;
};

size_t metrics_render(const struct metrics *m, enum metrics_format format,
		      char *buf, size_t size)
{
	struct expo e;

	expo_init(&e, format, buf, size);
	metrics_families_render(&m->st, &e);
	return expo_end(&e);
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
	enum metrics_format format;
	struct evbuffer *body;
	char *text;
	size_t len;

	httpcap_request_read(m->cap, req);
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_send_error(req, 405, "Method Not Allowed");
		return;
	}
	format = metrics_negotiate(evhttp_find_header(headers, "Accept"));
	len = metrics_render(m, format, NULL, 0) + 1;
	text = malloc(len);
	body = evbuffer_new();
	if (!text || !body) {
		free(text);
		if (body)
			evbuffer_free(body);
		evhttp_send_error(req, 500, "Out of memory");
		return;
	}
	metrics_render(m, format, text, len);
	evbuffer_add(body, text, strlen(text));
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req),
			  "Content-Type", metrics_format_content_type(format));
	/* Caches must not hand one format to a scraper asking another. */
	evhttp_add_header(evhttp_request_get_output_headers(req), "Vary",
			  "Accept");
	evhttp_send_reply(req, 200, "OK", body);
	evbuffer_free(body);
}

static void on_other(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;

	httpcap_request_read(m->cap, req);
	evhttp_send_error(req, 404, "Try /metrics");
}

struct metrics *metrics_new(struct event_base *base, const char *host,
			    unsigned int port,
			    const struct metrics_sources *sources)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct evhttp_bound_socket *bound;

	if (!m)
		return NULL;
	m->st.src = *sources;
	m->http = evhttp_new(base);
	if (!m->http)
		goto fail;
	/* A scrape is a GET with a few headers: anything bigger is refused
	 * before it is buffered (evhttp's defaults are unbounded). */
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET);
	evhttp_set_max_headers_size(m->http, METRICS_MAX_HEADERS);
	evhttp_set_max_body_size(m->http, 0);
	evhttp_set_timeout(m->http, 10);
	if (evhttp_set_cb(m->http, "/metrics", on_request, m) < 0)
		goto fail;
	evhttp_set_gencb(m->http, on_other, m);
	bound = evhttp_bind_socket_with_handle(m->http, host, port);
	if (!bound) {
		if (!errno)
			errno = EADDRNOTAVAIL;
		goto fail;
	}
	m->cap = httpcap_new(m->http, bound, &metrics_limits);
	if (!m->cap)
		goto fail;
	return m;
fail:
	metrics_free(m);
	return NULL;
}

void metrics_free(struct metrics *m)
{
	int saved = errno;

	if (!m)
		return;
	httpcap_free(m->cap);
	if (m->http)
		evhttp_free(m->http);
	free(m);
	errno = saved;
}

void metrics_note_event(struct metrics *m, enum devices_event event)
{
	if (m)
		m->st.events[event]++;
}

void metrics_set_server(struct metrics *m, const struct server *srv)
{
	if (m)
		m->st.src.srv = srv;
}
