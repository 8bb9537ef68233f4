/* SPDX-License-Identifier: MIT */
/*
 * The server's options, its descriptor arithmetic and why it turns a
 * connection away: what server.h's callers and the server's files
 * (server-int.h) both need, in a header of its own so that those files
 * never include the server's public header.
 */
#ifndef RDMAD_SERVER_OPTIONS_H
#define RDMAD_SERVER_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "views.h"
#include "wire.h"

/* Descriptors kept for all but clients: listeners, event sources, the
 * verbs contexts of the devices, metrics, the scanner's reserve. */
#define SERVER_FDS_NOT_FOR_CLIENTS 256
/* What one client may cost at most: its socket and, alone in its view
 * (views.h), the view's generation page and its namespace table's RDMA
 * netlink socket. */
#define SERVER_FDS_PER_CLIENT 3
/* The control socket: for root, the admin group and rdmad's own user
 * only, with its own accept queue, slots and room in rdmad's table (its
 * clients' connections and one receive), which the public socket's
 * clients never take.  Bound beside the public socket, at its path with
 * WIRE_CONTROL_SUFFIX appended (PROTOCOL.md, section 7). */
#define SERVER_CONTROL_CLIENTS 16
/* Of those, slots that only root and rdmad's own user take: the admin
 * group's members hold at most the others, so root is answered whatever
 * they do. */
#define SERVER_CONTROL_ROOT 4
#define SERVER_CONTROL_ROOM                                                    \
	(SERVER_CONTROL_CLIENTS * SERVER_FDS_PER_CLIENT + WIRE_MAX_PASSED_FDS)
/* The event loop's priorities (event_base_priority_init()): the control
 * socket's listener and connections run at SERVER_PRIORITY_CONTROL, before
 * anything else ready in the same turn, so that a flood on the public
 * socket delays root by one turn of the loop at most. */
#define SERVER_PRIORITIES 2
#define SERVER_PRIORITY_CONTROL 0

/* The least open file limit rdmad runs with (systemd's default soft
 * limit): what it keeps for itself (an eighth), the control socket's
 * room, and a public room of 595 (a budget of 297 for passed
 * descriptors, one receive, 15 clients).  Below it rdmad does not
 * start. */
#define SERVER_FDS_MIN 1024

/* What clients may cost in rdmad's table with the open file limit
 * @limit: the limit less what rdmad keeps for its own work (an eighth of
 * a small limit); the public socket's clients, SERVER_CONTROL_ROOM
 * less. */
static inline unsigned int server_fd_ceiling(unsigned long long limit)
{
	unsigned long long keep = limit / 8 < SERVER_FDS_NOT_FOR_CLIENTS
					  ? limit / 8
					  : SERVER_FDS_NOT_FOR_CLIENTS;

	return limit - keep > UINT_MAX ? UINT_MAX
				       : (unsigned int)(limit - keep);
}

struct server_options {
	const char *socket_path;
	mode_t socket_mode;	  /* e.g. 0666 */
	gid_t socket_group;	  /* (gid_t)-1: leave as is */
	gid_t admin_group;	  /* may send admin requests; root always */
	unsigned int max_clients; /* e.g. 4096 */
	/* but root and the admin group; where the open file limit leaves
	 * fewer than max_clients, main.c scales it down with them */
	unsigned int max_clients_per_uid;
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
	int control_fd; /* from sd_listen_fds, or -1 to bind beside */
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
	SERVER_REFUSED_CONTROL,	 /* the control socket: not root nor admin,
				    or its slots are full */
	SERVER_REFUSED_NO_HELLO, /* closed: no Hello within the timeout */
	/* Not connections: requests and events refused by a limit. */
	SERVER_REFUSED_HOLDS,	      /* a Hold past max_holds_per_client */
	SERVER_REFUSED_HOLDS_PER_UID, /* a Hold past max_holds_per_uid */
	SERVER_REFUSED_QUEUE,	      /* max_queue overflowed: a resync */
	SERVER_REFUSED_COUNT,
};

#endif
