/* SPDX-License-Identifier: MIT */
/*
 * What the server room's files share, and nobody else includes: the
 * server itself.  The files, from the top down, each including only
 * those below it:
 *   server.c    the listener and admission, server_new() and the rest of
 *               server.h's lifecycle;
 *   requests.c  the request table and its handlers;
 *   publish.c   snapshots and events to views, and the table's listener;
 *   client.c    one connection: its state, output queue, read loop and
 *               close.
 * client.c reaches the two files above it only through struct
 * server_hooks, which server_new() fills in.
 */
#ifndef RDMAD_SERVER_INT_H
#define RDMAD_SERVER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "reaper.h"
#include "server-options.h"
#include "views.h"
#include "wire.h"

struct client;
struct publish;

/* What a connection needs of the rooms above it. */
struct server_hooks {
	/* One datagram of @n bytes in srv->rxbuf (or -errno) with @fds:
	 * 0, or -errno when the connection must go (requests.c). */
	int (*handle)(struct client *c, ssize_t n, const struct wire_fds *fds);
	/* The snapshot an overflowed subscriber is owed (publish.c). */
	int (*resync)(struct client *c);
};

struct server {
	struct event_base *base;
	struct devices *table;
	struct scan *scan;
	struct server_options opts;
	struct server_hooks hooks;
	char *socket_path; /* set when we bound it, to unlink at exit */
	int listen_fd;
	int control_fd;	    /* the control socket (server-options.h), or -1 */
	char *control_path; /* set when we bound it, to unlink at exit */
	struct event *ev_accept;
	struct event *ev_control;
	struct event *ev_backoff;
	struct event *ev_settle; /* views_settle() after a table's last view */
	struct event *ev_nsscan; /* other namespaces' tables, now and then */
	bool logged_emfile;
	bool logged_room;
	bool logged_ctrunc;
	bool logged_bare;	   /* a reply went without its descriptor */
	bool accept_waiting_room;  /* accept paused for the table's room */
	bool control_waiting_room; /* the control socket's, for its room */
	unsigned int fd_ceiling;   /* descriptors clients may cost, in all */
	bool identifies_others;	   /* peer_can_identify_others() */
	bool logged_refusal[SERVER_REFUSED_COUNT];
	uint64_t refusals[SERVER_REFUSED_COUNT];
	struct client *clients;
	unsigned int nclients;	 /* both sockets' */
	unsigned int ncontrol;	 /* of those, the control socket's */
	struct views *views;	 /* one generation page each */
	struct reaper *reaper;	 /* closes what clients pass (reaper.h) */
	struct publish *publish; /* the fan-out's state (publish.c) */
	uint64_t serials;	 /* connections accepted */
	uint8_t rxbuf[WIRE_MAX_REQUEST];
};

/*
 * Room in rdmad's table, one rule for admission (server.c) and for each
 * receive (client.c).  A receive may install up to WIRE_MAX_PASSED_FDS
 * descriptors, so rdmad receives only while that many fit under its
 * ceiling (its open file limit less what it keeps for its own work,
 * fd_ceiling() in server.c) beside what clients cost already: their
 * connections and what they passed that still waits in rdmad's table.
 * So the kernel never has to drop a descriptor in this thread
 * (MSG_CTRUNC), whatever clients send; see docs/security.md.
 *
 * The control socket's clients (root, the admin group) have a room of
 * their own, SERVER_CONTROL_ROOM, that the public socket's never use: the
 * public socket's ceiling is the ceiling less that room.  Of the public
 * room, the budget (half) is what passed descriptors may fill before an
 * owner that has any waiting is read no more; owners with none waiting
 * are still read while the public room lasts.
 */
static inline unsigned int server_fds_for_clients(const struct server *srv)
{
	return srv->nclients * SERVER_FDS_PER_CLIENT + reaper_held(srv->reaper);
}

static inline unsigned int server_public_ceiling(const struct server *srv)
{
	return srv->fd_ceiling - SERVER_CONTROL_ROOM;
}

/* Room for @more descriptors and one receive, for a client of the
 * control socket (@control) or of the public one. */
static inline bool server_room_for(const struct server *srv, unsigned int more,
				   bool control)
{
	unsigned int used = server_fds_for_clients(srv);

	if (!control)
		used -= srv->ncontrol * SERVER_FDS_PER_CLIENT;
	return used + more + WIRE_MAX_PASSED_FDS <=
	       (control ? srv->fd_ceiling : server_public_ceiling(srv));
}

/* May an owner with descriptors waiting hand over more (one receive's
 * worth) within the budget? */
static inline bool server_budget_left(const struct server *srv)
{
	return reaper_held(srv->reaper) + WIRE_MAX_PASSED_FDS <=
	       server_public_ceiling(srv) / 2;
}

#endif
