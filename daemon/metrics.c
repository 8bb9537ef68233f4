/* SPDX-License-Identifier: MIT */
/*
 * OpenMetrics text exposition for Prometheus.  Each scrape renders the
 * current state on the spot; nothing is sampled in the background, so an
 * idle daemon stays idle.  Only GET /metrics is served.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "config.h"
#include "devices.h"
#include "httpcap.h"
#include "metrics.h"
#include "rdmad-config.h"
#include "server.h"

/* Bytes of request line and headers a scraper may send. */
#define METRICS_MAX_HEADERS 8192
/* Connections open at once; Prometheus needs one per target. */
#define METRICS_MAX_CONNECTIONS 16

#define N_EVENTS DEVICES_EVENT_COUNT

struct metrics {
	struct evhttp *http;
	struct httpcap *cap;
	const struct devices *table;
	const struct server *srv;
	uint64_t events[N_EVENTS];
};

/* A bounded appender: keeps counting past the end like snprintf. */
struct out {
	char *buf;
	size_t size, len;
};

static void __attribute__((format(printf, 2, 3)))
out(struct out *o, const char *fmt, ...)
{
	size_t room = o->len < o->size ? o->size - o->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	/* Sizing with a NULL buffer: no pointer arithmetic on it. */
	n = vsnprintf(room ? o->buf + o->len : o->buf, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += n;
}

static const char *event_name(enum devices_event event)
{
	switch (event) {
	case DEVICES_EVENT_ADDED:
		return "added";
	case DEVICES_EVENT_REMOVED:
		return "removed";
	case DEVICES_EVENT_CHANGED:
		return "changed";
	case DEVICES_EVENT_RENAMED:
		return "renamed";
	case DEVICES_EVENT_RELEASED:
		return "released";
	case DEVICES_EVENT_RETURNED:
		return "returned";
	case DEVICES_EVENT_READY:
		return "ready";
	case DEVICES_EVENT_UNREADY:
		return "unready";
	}
	return "unknown";
}

static void render_devices(const struct metrics *m, struct out *o)
{
	size_t present = 0, removed = 0, holders = 0, active = 0;
	const struct device *dev;

	for (dev = devices_first(m->table); dev;
	     dev = devices_next(m->table, dev)) {
		const struct sysfs_device *info = device_info(dev);

		if (device_state(dev) == DEVICE_STATE_PRESENT)
			present++;
		else
			removed++;
		holders += device_holder_count(dev);
		for (unsigned int i = 0; i < info->nports; i++)
			active += strcmp(info->ports[i].state, "ACTIVE") == 0;
	}
	out(o,
	    "# TYPE rdmad_devices gauge\n"
	    "# HELP rdmad_devices RDMA devices listed, by state.\n"
	    "rdmad_devices{state=\"present\"} %zu\n"
	    "rdmad_devices{state=\"removed\"} %zu\n",
	    present, removed);
	out(o,
	    "# TYPE rdmad_holds gauge\n"
	    "# HELP rdmad_holds Holds of devices by client connections.\n"
	    "rdmad_holds %zu\n",
	    holders);
	out(o,
	    "# TYPE rdmad_ports_active gauge\n"
	    "# HELP rdmad_ports_active Ports in state ACTIVE.\n"
	    "rdmad_ports_active %zu\n",
	    active);
}

/* What each limit of server.c turned away, by the limit's rdmad.conf key. */
static const char *const limit_key[SERVER_REFUSED_COUNT] = {
	[SERVER_REFUSED_FULL] = "max_clients",
	[SERVER_REFUSED_RESERVED] = "reserved_clients",
	[SERVER_REFUSED_PER_UID] = "max_clients_per_uid",
	[SERVER_REFUSED_NO_HELLO] = "hello_timeout",
	[SERVER_REFUSED_HOLDS] = "max_holds_per_client",
	[SERVER_REFUSED_HOLDS_PER_UID] = "max_holds_per_uid",
	[SERVER_REFUSED_QUEUE] = "max_queue",
};

static unsigned long long refusals(const struct metrics *m,
				   enum server_refusal why)
{
	return m->srv ? server_refusals(m->srv, why) : 0;
}

static void render_limit_family(const struct metrics *m, struct out *o,
				const char *name, const char *help,
				enum server_refusal first,
				enum server_refusal last)
{
	out(o, "# TYPE %s counter\n# HELP %s %s\n", name, name, help);
	for (enum server_refusal r = first; r <= last; r++)
		out(o, "%s_total{limit=\"%s\"} %llu\n", name, limit_key[r],
		    refusals(m, r));
}

/* Every limit of rdmad.conf [socket] that was hit, and how often. */
static void render_refusals(const struct metrics *m, struct out *o)
{
	render_limit_family(m, o, "rdmad_clients_refused",
			    "Connections turned away or closed, by the limit "
			    "that did it.",
			    SERVER_REFUSED_FULL, SERVER_REFUSED_NO_HELLO);
	render_limit_family(m, o, "rdmad_holds_refused",
			    "Hold requests refused, by the limit that did it.",
			    SERVER_REFUSED_HOLDS, SERVER_REFUSED_HOLDS_PER_UID);
	render_limit_family(m, o, "rdmad_client_resyncs",
			    "Subscribers whose queue overflowed (max_queue): "
			    "their events were dropped for a snapshot.",
			    SERVER_REFUSED_QUEUE, SERVER_REFUSED_QUEUE);
}

size_t metrics_render(const struct metrics *m, char *buf, size_t size)
{
	struct out o = {.buf = buf, .size = size};

	if (size)
		buf[0] = '\0';
	out(&o,
	    "# TYPE rdmad_build info\n"
	    "# HELP rdmad_build rdmad version.\n"
	    "rdmad_build_info{version=\"%s\"} 1\n",
	    RDMAD_VERSION);
	out(&o,
	    "# TYPE rdmad_generation gauge\n"
	    "# HELP rdmad_generation Generation of the device list.\n"
	    "rdmad_generation %llu\n",
	    (unsigned long long)devices_generation(m->table));
	render_devices(m, &o);
	out(&o,
	    "# TYPE rdmad_clients gauge\n"
	    "# HELP rdmad_clients Connected clients.\n"
	    "rdmad_clients %u\n",
	    m->srv ? server_client_count(m->srv) : 0);
	render_refusals(m, &o);
	out(&o, "# TYPE rdmad_events counter\n"
		"# HELP rdmad_events Device table events, by type.\n");
	for (int e = 0; e < N_EVENTS; e++)
		out(&o, "rdmad_events_total{type=\"%s\"} %llu\n", event_name(e),
		    (unsigned long long)m->events[e]);
	out(&o, "# EOF\n");
	return o.len;
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	struct evbuffer *body;
	char *text;
	size_t len;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_send_error(req, 405, "Method Not Allowed");
		return;
	}
	len = metrics_render(m, NULL, 0) + 1;
	text = malloc(len);
	body = evbuffer_new();
	if (!text || !body) {
		free(text);
		if (body)
			evbuffer_free(body);
		evhttp_send_error(req, 500, "Out of memory");
		return;
	}
	metrics_render(m, text, len);
	evbuffer_add(body, text, strlen(text));
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req),
			  "Content-Type",
			  "application/openmetrics-text; version=1.0.0; "
			  "charset=utf-8");
	evhttp_send_reply(req, 200, "OK", body);
	evbuffer_free(body);
}

static void on_other(struct evhttp_request *req, void *arg)
{
	evhttp_send_error(req, 404, "Try /metrics");
}

struct metrics *metrics_new(struct event_base *base, const char *listen,
			    const struct devices *table,
			    const struct server *srv)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct evhttp_bound_socket *bound;
	char host[64];
	unsigned int port;

	if (!m)
		return NULL;
	m->table = table;
	m->srv = srv;
	if (config_parse_listen(listen, host, sizeof(host), &port) < 0) {
		errno = EINVAL;
		goto fail;
	}
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
	m->cap = httpcap_new(m->http, bound, METRICS_MAX_CONNECTIONS);
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
		m->events[event]++;
}

void metrics_set_server(struct metrics *m, const struct server *srv)
{
	if (m)
		m->srv = srv;
}
