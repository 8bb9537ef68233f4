/* SPDX-License-Identifier: MIT */
/*
 * One connection to the server (server-int.h names its files): its state,
 * its output queue, its read loop and its close.
 *
 * A connection's life is one state, entered only through
 * client_enter_state(), which logs old -> new and starts or stops what
 * the state owns:
 *
 *   from                  what happens                        to
 *   (accept)              admitted (server.c)                 GREETING
 *   GREETING              Hello answered with Welcome         WELCOMED
 *   WELCOMED, SUBSCRIBED  Subscribe answered with a snapshot  SUBSCRIBED
 *   GREETING, WELCOMED,   a protocol error, its reply still   HANGING_UP
 *   SUBSCRIBED            queued: read no more
 *   any                   a send failed, out of memory, no    DEAD
 *                         Hello within hello_timeout_ms
 *   HANGING_UP            its queue is out                    (closed)
 *   DEAD                  its write callback runs             (closed)
 *   any                   the peer hung up, or rdmad stops    (closed)
 *
 * DEAD is not closed at once: a close could re-enter the fan-out through
 * devices_release_owner() (its holds go), so the write callback closes it
 * once the loop turns.  HANGING_UP and DEAD get no events.  A close goes
 * in this order: out of the server's list (so the events it causes reach
 * the others only), its socket to the closer (reaper.h) and its queue
 * dropped, its holds released (table events, published at once), its
 * view left (which may take a namespace's table along: settled later).
 *
 * Independent of the state, and of each other: reading may be paused
 * because replies wait in the queue (read_paused: backpressure) or
 * because rdmad's table has no room for what a receive may install
 * (waiting_room, server-int.h); a subscriber that overflowed owes a
 * snapshot (resync).
 */
#ifndef RDMAD_CLIENT_H
#define RDMAD_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "outq.h"
#include "peer.h"
#include "wire.h"

struct server;
struct view;

enum client_state {
	CLIENT_STATE_GREETING, /* connected, Hello not said yet */
	CLIENT_STATE_WELCOMED,
	CLIENT_STATE_SUBSCRIBED, /* gets events */
	CLIENT_STATE_HANGING_UP, /* closed once its queued replies are out */
	CLIENT_STATE_DEAD,	 /* closed from its write callback */
	CLIENT_STATE_COUNT,
};

struct client {
	struct client *prev, *next;
	struct server *srv;
	struct event *ev_read;
	struct event *ev_write;
	struct event *ev_hello; /* the Hello deadline, until it came */
	int fd;
	enum client_state state;
	struct peer peer;    /* pid, uid, gid, namespaces (peer.h) */
	struct view *view;   /* what it sees, decided at Hello (views.h) */
	uint64_t serial;     /* this connection, unique while rdmad runs */
	int passed_fd;	     /* came with the request being handled, or -1 */
	bool read_once;	     /* its first datagram was read */
	bool verified;	     /* its view is known or said, not assumed */
	bool admin;	     /* root or the admin group: admin requests */
	bool control;	     /* came through the control socket */
	bool lifecycle;	     /* said the "lifecycle" feature in Hello */
	bool wants_removing; /* said the "removing" feature in Hello */
	bool resync;	     /* overflowed: owes a seq-0 snapshot */
	bool read_paused;    /* replies queued: no more requests */
	bool waiting_room;   /* no room in rdmad's table to read it now */
	uint8_t bad_requests;
	unsigned int nholds;
	struct outq out; /* frames waiting for the socket */
};

const char *client_state_name(enum client_state state);
/* The one way a connection changes state (the table above). */
void client_enter_state(struct client *c, enum client_state state);
/* Said Hello, not going away: may send requests past Hello. */
bool client_welcomed(const struct client *c);
/* Gets events: subscribed, not overflowed, not going away. */
bool client_hears_events(const struct client *c);

/* A connection in GREETING, linked into the server's list; NULL on
 * ENOMEM (the caller still owns @fd). */
struct client *client_new(struct server *srv, int fd, const struct peer *peer,
			  bool control);
/* Close it now: its holds go, its view is left, its socket goes to the
 * closer (reaper.h). */
void client_close(struct client *c);
/* Close it once the loop turns (DEAD). */
void client_kill(struct client *c);

/* Send @ob now if nothing is queued ahead, else queue it: 0 or -errno
 * (the connection is DEAD then). */
int client_push(struct client *c, struct outbuf *ob);
/* An event: past max_queue, the queued events go and a snapshot is owed
 * instead. */
void client_push_event(struct client *c, struct outbuf *ob);
/* Drop the queued events (replies stay) and owe a snapshot. */
void client_drop_events(struct client *c);
/* Encode @frame and push it, with @pass_fd (or -1). */
int client_reply_frame(struct client *c, const Rdmad__Frame *frame,
		       int pass_fd);

/* Encode @frame and push it with @pass_fd (or -1); where the kernel will
 * not carry the descriptor, the frame goes without it, *@says_fd (the
 * frame's flag that one comes) false.  Never closes the connection for
 * that. */
int client_reply_frame_fd(struct client *c, Rdmad__Frame *frame, int pass_fd,
			  protobuf_c_boolean *says_fd);

/* Let go of a descriptor it passed (reaper.h; a NETLINK_RDMA socket is
 * closed here, its last close cannot block). */
void client_let_go(struct client *c, int fd);
void client_let_go_all(struct client *c, const struct wire_fds *fds);

/* Room again (server-int.h): read it again if nothing else holds it. */
void client_room_again(struct client *c);

#endif
