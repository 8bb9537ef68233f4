/* SPDX-License-Identifier: MIT */
/*
 * The socket server: accepts clients on the AF_UNIX SOCK_SEQPACKET socket
 * (socket-activated or bound here), speaks proto/PROTOCOL.md, keeps a
 * bounded output queue per client and fans device events out to
 * subscribers.  Client identity comes from SO_PEERCRED and the peer
 * process's namespaces (peer.h), never from what a client says; each
 * client sees its view (views.h).  Built of server.c (the
 * listener, admission and what follows), client.c, requests.c and
 * publish.c (server-int.h says which does what).
 */
#ifndef RDMAD_SERVER_H
#define RDMAD_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "reaper.h"
#include "server-options.h"
#include "views.h"

struct event_base;
struct devices;
struct device;
struct scan;
enum devices_event;

struct server;
struct server *server_new(struct event_base *base, struct devices *table,
			  struct scan *scan, const struct server_options *opts);
void server_free(struct server *srv);
unsigned int server_client_count(const struct server *srv);
/* Connections turned away (or closed), holds refused, or queues
 * overflowed, for @why since start. */
uint64_t server_refusals(const struct server *srv, enum server_refusal why);
/* Who waits for descriptors they passed to be closed, while rdmad's
 * helpers are behind (reaper.h): at most @max; how many. */
size_t server_closing_behind(const struct server *srv,
			     struct reaper_behind *ret, size_t max);
/* SIGHUP: take max_clients, max_holds, max_queue and admin_group from
 * @opts (the rest needs a restart). */
void server_set_limits(struct server *srv, const struct server_options *opts);

#endif
