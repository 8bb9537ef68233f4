/* SPDX-License-Identifier: MIT */
/*
 * A cap on the connections an evhttp server keeps open at once.  libevent
 * 2.1's evhttp has no such limit (2.2's evhttp_set_max_connections is not
 * released), so every connection that a peer opens and leaves idle costs a
 * descriptor until evhttp's timeout.  At the cap the listener stops
 * accepting: further peers wait in the kernel's backlog, costing us
 * nothing, until a connection closes.
 */
#ifndef RDMAD_HTTPCAP_H
#define RDMAD_HTTPCAP_H

struct evhttp;
struct evhttp_bound_socket;
struct httpcap;

/* Cap @http, whose only listening socket is @bound, at @max connections.
 * Call before the first connection arrives.  NULL on ENOMEM. */
struct httpcap *httpcap_new(struct evhttp *http,
			    struct evhttp_bound_socket *bound,
			    unsigned int max);
/* Before evhttp_free(). */
void httpcap_free(struct httpcap *hc);
unsigned int httpcap_open(const struct httpcap *hc);

#endif
