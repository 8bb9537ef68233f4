/* SPDX-License-Identifier: MIT */
/*
 * The socket server: accepts clients on the AF_UNIX SOCK_SEQPACKET socket
 * (socket-activated or bound here), speaks proto/PROTOCOL.md, keeps a
 * bounded output queue per client and fans device events out to
 * subscribers.  Client identity comes from SO_PEERCRED and the peer
 * process's namespaces (peer.h), never from what a client says; each
 * client sees its view (views.h).  Built in rooms: server.c (the
 * listener, admission and what follows), client.c, requests.c and
 * publish.c (server-int.h says which does what).
 */
#ifndef RDMAD_SERVER_H
#define RDMAD_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "reaper.h"
#include "views.h"

struct event_base;
struct devices;
struct device;
struct scan;
enum devices_event;

/* Descriptors kept for all but clients: listeners, event sources, the
 * verbs contexts of the devices, metrics, the scanner's reserve. */
#define SERVER_FDS_NOT_FOR_CLIENTS 256
/* What one client may cost at most: its socket and, alone in its view
 * (views.h), the view's generation page and its namespace table's RDMA
 * netlink socket. */
#define SERVER_FDS_PER_CLIENT 3

struct server_options {
	const char *socket_path;
	mode_t socket_mode;	  /* e.g. 0666 */
	gid_t socket_group;	  /* (gid_t)-1: leave as is */
	gid_t admin_group;	  /* may send admin requests; root always */
	unsigned int max_clients; /* e.g. 4096 */
	unsigned int max_clients_per_uid; /* but root and the admin group */
	/* ...and of those, per set of namespaces (a container) where the
	 * kernel says which the peer is in (peer.h, known); where rdmad may
	 * read other users' namespaces, the peers whose namespaces it could
	 * not read share one such bucket per uid */
	unsigned int max_clients_per_namespace;
	unsigned int reserved_clients; /* of max_clients, for root and admins */
	unsigned int hello_timeout_ms; /* to say Hello after connecting */
	unsigned int max_holds;	       /* per client, e.g. 1024 */
	unsigned int max_holds_per_uid; /* but root and the admin group */
	unsigned int max_queue;		/* frames queued per client, e.g. 256 */
	int listen_fd;			/* from sd_listen_fds, or -1 to bind */
	enum views_netns_mode netns_mode; /* the kernel's RDMA netns mode */
	/* A generation is about to be published that no table event
	 * announced (a view's own change): persist it. */
	void (*note_generation)(void *userdata, uint64_t generation);
	void *userdata;
};

/* Why a connection was turned away (counted, see server_refusals()). */
enum server_refusal {
	SERVER_REFUSED_NONE,
	SERVER_REFUSED_FULL,	      /* max_clients */
	SERVER_REFUSED_RESERVED,      /* the reserved slots, for a non-admin */
	SERVER_REFUSED_PER_UID,	      /* max_clients_per_uid */
	SERVER_REFUSED_PER_NAMESPACE, /* max_clients_per_namespace */
	SERVER_REFUSED_REAPING,	 /* its passed descriptors wait (reaper.h) */
	SERVER_REFUSED_NO_HELLO, /* closed: no Hello within the timeout */
	/* Not connections: requests and events refused by a limit. */
	SERVER_REFUSED_HOLDS,	      /* a Hold past max_holds_per_client */
	SERVER_REFUSED_HOLDS_PER_UID, /* a Hold past max_holds_per_uid */
	SERVER_REFUSED_QUEUE,	      /* max_queue overflowed: a resync */
	SERVER_REFUSED_COUNT,
};

struct server;
struct server *server_new(struct event_base *base, struct devices *table,
			  struct scan *scan, const struct server_options *opts);
void server_free(struct server *srv);
/* A table event: push it to every subscriber. */
void server_device_event(struct server *srv, enum devices_event event,
			 const struct device *dev, const char *old_name);

/*
 * The device table's listener: devices_set_listener(table,
 * server_table_listener, relay).  Each change is logged, its generation
 * goes to @note_generation before anything is published, it goes to the
 * clients once a server listens, and then to @then, in that order.
 * @then is main.c's: the verbs source, the metrics and its timers
 * (metrics.c includes server.h, so the server calls it by no name).
 */
struct server_relay {
	struct devices *table;
	struct server *server; /* NULL until it listens */
	void (*note_generation)(void *userdata, uint64_t generation);
	void (*then)(void *userdata, enum devices_event event,
		     const struct device *dev);
	void *userdata;
};
void server_table_listener(void *relay, enum devices_event event,
			   const struct device *dev, const char *old_name);

unsigned int server_client_count(const struct server *srv);
/* Views (views.h) by kind: @counts has VIEW_KIND_COUNT entries. */
void server_count_views(const struct server *srv, unsigned int *counts);
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
