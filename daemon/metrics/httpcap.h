/* SPDX-License-Identifier: MIT */
/*
 * What an evhttp server's clients can make it hold: connections, bytes of
 * input, and time to send a request.  libevent 2.1's evhttp bounds none of
 * them (2.2's evhttp_set_max_connections is not released; its header size
 * limit is checked only after the bytes were read).  httpcap keeps at most
 * max_connections open; a new one past that closes the oldest connection
 * of the peer holding the most (a peer is the uid at the other end for a
 * connection made from this host, else the remote address, its /64 for
 * IPv6), so one user's connections cannot keep another's out.  A
 * connection from this host whose client has closed its socket is
 * nobody's, and is closed before any peer's.  Each
 * connection reads at most max_input bytes ahead of evhttp's parser, must
 * deliver its whole request within request_ms of being accepted, and is
 * closed after its reply.
 */
#ifndef RDMAD_HTTPCAP_H
#define RDMAD_HTTPCAP_H

#include <stddef.h>

struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;
struct httpcap;

struct httpcap_limits {
	unsigned int max_connections; /* open at once, at least 1 */
	size_t max_input;	      /* bytes read and not yet parsed */
	unsigned int request_ms;      /* from accept to the whole request */
};

/* Cap @http, whose only listening socket is @bound.  Call before the first
 * connection arrives.  NULL with errno set. */
struct httpcap *httpcap_new(struct evhttp *http,
			    struct evhttp_bound_socket *bound,
			    const struct httpcap_limits *limits);
/* Before evhttp_free(). */
void httpcap_free(struct httpcap *hc);
/* Call first thing in every request callback: @req has arrived whole, so
 * its connection's deadline no longer applies, and its reply will close
 * the connection (one request a connection, so a second request cannot
 * dawdle past the deadline). */
void httpcap_request_read(struct httpcap *hc, struct evhttp_request *req);

#endif
