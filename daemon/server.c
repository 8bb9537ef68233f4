/* SPDX-License-Identifier: MIT */
/*
 * The socket server (proto/PROTOCOL.md).  One SOCK_SEQPACKET listener,
 * one small struct per client, one event loop.
 *
 * Output: every frame goes out through client_push(), which sends at once
 * when the client's queue is empty and queues only on EAGAIN, so the
 * common fan-out costs one sendmsg() per subscriber and no allocation.  A
 * broadcast event is encoded once into a refcounted outbuf that every
 * queue shares (outq.c).  A queue holds at most max_queue frames of events; a
 * subscriber that lets it fill loses its queued events and, once it reads
 * again, gets a fresh unsolicited snapshot (seq 0) instead: it can fall
 * behind but never make the daemon hold unbounded memory or stall others.
 *
 * Input: one datagram of at most WIRE_MAX_REQUEST bytes is one request.
 * Requests are classed read-only, mutating or admin and checked against
 * SO_PEERCRED (never against what the message says).  While anything is
 * queued for a client we read no more of its requests, so a client that
 * pipelines requests and never reads holds at most one reply (a snapshot)
 * plus max_queue events here.
 * Malformed input is logged at debug level only.
 *
 * Admission.  The socket is usually open to every local user, so nothing
 * one user does may lock out the others: a uid other than root, the
 * admin group or rdmad's own gets at most max_clients_per_uid
 * connections, at most max_clients_per_namespace of them from one
 * container (where the kernel tells which that is), none while
 * REAPER_MAX_PENDING descriptors it passed wait to be closed (reaper.h),
 * and the last reserved_clients of max_clients are kept for root and the
 * admin group.
 * A connection must say Hello within hello_timeout_ms, and says it once:
 * the generation page goes with the one Welcome, so a client cannot pin
 * descriptors in flight by asking again.  Refusals are counted
 * (server_refusals()) and logged once until a client is admitted again.
 *
 * The generation page: a 4 KiB memfd that the daemon maps read-write and
 * every client maps read-only, through an O_RDONLY re-open of it passed
 * with Welcome; clients can check for news without a syscall.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "devices.h"
#include "export.h"
#include "log.h"
#include "nlquery.h"
#include "outq.h"
#include "rdmad-config.h"
#include "reaper.h"
#include "server.h"
#include "nstable.h"
#include "scan.h"
#include "views.h"
#include "wire.h"

/* Linux 6.16: a socket that refuses SCM_RIGHTS (the sender gets EPERM). */
#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83
#endif

/* Bad requests a client may send before we hang up on it. */
#define MAX_BAD_REQUESTS 3
/* Datagrams read from one client per wake-up, for fairness. */
#define READ_BURST 16
#define ACCEPT_BURST 64
#define ACCEPT_BACKOFF_SEC 1

struct client {
	struct client *prev, *next;
	struct server *srv;
	struct event *ev_read;
	struct event *ev_write;
	struct event *ev_hello; /* the Hello deadline, until it came */
	int fd;
	struct peer peer;  /* pid, uid, gid, namespaces (peer.h) */
	struct view *view; /* what it sees, decided at Hello (views.h) */
	uint64_t serial;   /* this connection, unique while rdmad runs */
	int passed_fd;	   /* came with the request being handled, or -1 */
	bool read_once;	   /* its first datagram was read */
	bool verified;	   /* its view is known or said, not assumed */
	bool admin;	   /* root or the admin group: admin requests */
	bool lifecycle;	   /* said the "lifecycle" feature in Hello */
	bool removing;	   /* said "removing" */
	bool hello;
	bool subscribed;
	bool resync; /* overflowed: owes a seq-0 snapshot */
	bool dead;   /* to be closed from its write callback */
	bool read_paused;
	bool waiting_room; /* no room in rdmad's table to read it now */
	bool hangup;	   /* to be closed once its queued replies are out */
	uint8_t bad_requests;
	unsigned int nholds;
	struct outq out; /* frames waiting for the socket */
};

struct server {
	struct event_base *base;
	struct devices *table;
	struct scan *scan;
	struct server_options opts;
	char *socket_path; /* set when we bound it, to unlink at exit */
	int listen_fd;
	struct event *ev_accept;
	struct event *ev_backoff;
	struct event *ev_settle; /* views_settle() after a table's last view */
	struct event *ev_nsscan; /* other namespaces' tables, now and then */
	bool logged_emfile;
	bool logged_room;
	bool logged_ctrunc;
	bool accept_waiting_room; /* accept paused for the table's room */
	unsigned int fd_ceiling;  /* descriptors clients may cost, in all */
	bool identifies_others;	  /* peer_can_identify_others() */
	bool logged_refusal[SERVER_REFUSED_COUNT];
	uint64_t refusals[SERVER_REFUSED_COUNT];
	struct client *clients;
	unsigned int nclients;
	struct views *views;   /* one generation page each */
	struct reaper *reaper; /* closes what clients pass (reaper.h) */
	uint64_t serials;      /* connections accepted */
	uint8_t rxbuf[WIRE_MAX_REQUEST];
};

enum request_class {
	REQUEST_CLASS_READONLY,
	REQUEST_CLASS_MUTATING,
	REQUEST_CLASS_ADMIN,
};

static void client_close(struct client *c);
static int send_snapshot(struct client *c, uint64_t seq);
static int bad_request(struct client *c, uint64_t seq, const char *why);

/* ---- per-client output queue ---- */

static void client_kill(struct client *c)
{
	/* Closing here could re-enter the fan-out loop through
	 * devices_release_owner(); let the write callback do it. */
	c->dead = true;
	event_active(c->ev_write, EV_WRITE, 0);
}

static int queue_append(struct client *c, struct outbuf *ob)
{
	if (outq_append(&c->out, ob) < 0)
		return -ENOMEM;
	if (c->out.count == 1)
		event_add(c->ev_write, NULL);
	return 0;
}

/* Overflow: drop queued events (replies stay) and owe a snapshot. */
static void queue_drop_events(struct client *c)
{
	outq_drop_events(&c->out);
	if (!c->resync) {
		log_debug("client pid %d (%s): queue overflow, resync",
			  c->peer.pid, c->peer.comm);
		c->srv->refusals[SERVER_REFUSED_QUEUE]++;
	}
	c->resync = true;
	event_add(c->ev_write, NULL);
}

/* Send now if nothing is queued ahead, else queue. */
static int client_push(struct client *c, struct outbuf *ob)
{
	int r;

	if (c->dead)
		return -EPIPE;
	if (c->out.count == 0) {
		r = wire_send(c->fd, ob->data, ob->len, ob->pass_fd);
		if (r != -EAGAIN) {
			if (r < 0)
				client_kill(c);
			return r;
		}
	}
	r = queue_append(c, ob);
	if (r < 0)
		client_kill(c);
	return r;
}

static void push_event(struct client *c, struct outbuf *ob)
{
	if (c->out.count >= c->srv->opts.max_queue) {
		queue_drop_events(c);
		return;
	}
	client_push(c, ob);
}

/* Flush the queue; then, if owed, the resync snapshot. */
static void client_flush(struct client *c)
{
	struct outbuf *ob;
	int r;

	while ((ob = outq_peek(&c->out))) {
		r = wire_send(c->fd, ob->data, ob->len, ob->pass_fd);
		if (r == -EAGAIN)
			return;
		if (r < 0) {
			client_close(c);
			return;
		}
		outq_pop(&c->out);
	}
	event_del(c->ev_write);
	if (c->hangup) {
		client_close(c);
		return;
	}
	if (c->resync) {
		c->resync = false;
		if (send_snapshot(c, 0) < 0) {
			client_close(c);
			return;
		}
	}
	if (c->read_paused && c->out.count == 0) {
		c->read_paused = false;
		if (!c->waiting_room)
			event_add(c->ev_read, NULL);
	}
}

static void on_client_write(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	if (c->dead) {
		client_close(c);
		return;
	}
	client_flush(c);
}

/* ---- replies ---- */

static int reply_frame(struct client *c, const Rdmad__Frame *frame, int pass_fd)
{
	struct outbuf *ob = outbuf_encode(frame, false, pass_fd);
	int r;

	if (!ob) {
		client_kill(c);
		return -ENOMEM;
	}
	r = client_push(c, ob);
	outbuf_unref(ob);
	return r;
}

/* A status-only reply; @err is 0 or -errno, mapped by wire.c. */
static int reply_status(struct client *c, uint64_t seq, int err,
			const char *text)
{
	Rdmad__Frame frame;

	wire_frame_init(&frame, seq);
	frame.status = wire_status_from_errno(err);
	if (err && text)
		frame.error = (char *)text;
	return reply_frame(c, &frame, -1);
}

#define CLOSING_LISTED 16

/* Part 0 of a snapshot for root or the admin group says who waits for
 * the helpers, while they are behind (Snapshot.closing). */
static int emit_part(const Rdmad__Frame *frame, void *userdata)
{
	struct client *c = userdata;
	struct reaper_behind behind[CLOSING_LISTED];
	Rdmad__Closing items[CLOSING_LISTED], *ptrs[CLOSING_LISTED];
	Rdmad__Snapshot snap;
	Rdmad__Frame f;
	size_t n = 0;

	if (c->admin && frame->snapshot && frame->snapshot->part == 0)
		n = reaper_behind(c->srv->reaper, behind, CLOSING_LISTED);
	if (!n)
		return reply_frame(c, frame, -1);
	for (size_t i = 0; i < n; i++) {
		rdmad__closing__init(&items[i]);
		items[i].uid = behind[i].uid;
		items[i].pending = behind[i].pending;
		items[i].quiet_ms = behind[i].quiet_ms;
		ptrs[i] = &items[i];
	}
	f = *frame;
	snap = *frame->snapshot;
	snap.n_closing = n;
	snap.closing = ptrs;
	f.snapshot = &snap;
	/* A part already at the frame's limit goes without. */
	if (rdmad__frame__get_packed_size(&f) > WIRE_MAX_FRAME)
		return reply_frame(c, frame, -1);
	return reply_frame(c, &f, -1);
}

static struct export_viewer client_viewer(const struct client *c)
{
	return (struct export_viewer){.all = c->view->key.all,
				      .uid = c->peer.uid,
				      .pidns = c->peer.ns.pid,
				      .lifecycle = c->lifecycle,
				      .removing = c->removing,
				      .view = c->view};
}

/* Welcome.view and Snapshot.view: what rdmad found (PROTOCOL.md 8b). */
static void fill_view(const struct client *c, Rdmad__View *msg)
{
	rdmad__view__init(msg);
	msg->netns = c->peer.ns.net;
	msg->mntns = c->peer.ns.mnt;
	msg->pidns = c->peer.ns.pid;
	msg->pod_uid = (char *)c->peer.pod_uid;
	msg->netns_mode =
		(char *)views_netns_mode_name(views_netns_mode(c->srv->views));
	msg->all = c->view->key.all;
	msg->verified = c->verified;
	msg->host = c->view->host;
	msg->nodes = c->view->key.by_nodes;
	msg->netns_cookie = c->view->ns ? c->view->ns->cookie : 0;
}

/* Where a device of another network namespace is, for those who see
 * all. */
static void mark_netns(Rdmad__Device *msg, const struct nstable *t)
{
	msg->netns = t->netns;
	msg->netns_cookie = t->cookie;
	msg->pod_uid = (char *)t->pod_uid;
	msg->stranded = t->stranded;
}

/* Append the devices of @t to *@msgs, marked with their namespace. */
static int export_nstable(const struct nstable *t,
			  const struct export_viewer *viewer,
			  Rdmad__Device ***msgs, size_t *n)
{
	Rdmad__Device **more, **all;
	size_t m;
	int r = export_table(t->table, viewer, &more, &m);

	if (r < 0)
		return r;
	all = reallocarray(*msgs, *n + m ? *n + m : 1, sizeof(*all));
	if (!all) {
		export_table_free(more, m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m; i++) {
		mark_netns(more[i], t);
		all[*n + i] = more[i];
	}
	free(more);
	*msgs = all;
	*n += m;
	return 0;
}

/* A snapshot's devices: the view's table; for those who see all, every
 * other network namespace's too. */
static int export_view(struct server *srv, const struct export_viewer *viewer,
		       Rdmad__Device ***ret_msgs, size_t *ret_n)
{
	int r = export_table(viewer->view->table, viewer, ret_msgs, ret_n);

	if (r < 0 || !viewer->all)
		return r;
	for (struct nstable *t = views_nstables(srv->views); t && r == 0;
	     t = t->next)
		r = export_nstable(t, viewer, ret_msgs, ret_n);
	if (r < 0)
		export_table_free(*ret_msgs, *ret_n);
	return r;
}

static void view_changes(struct server *srv, struct view *v);
static void on_ns_event(void *ud, struct nstable *t, enum devices_event event,
			const struct device *dev, const char *old_name);
static void view_event(struct server *srv, struct view *v,
		       const struct device *dev, enum view_change change);

static int send_snapshot(struct client *c, uint64_t seq)
{
	struct server *srv = c->srv;
	struct export_viewer viewer;
	Rdmad__Device **msgs;
	Rdmad__View view;
	size_t n;
	int r;

	/* Nodes come and go in a container's /dev without an event. */
	view_changes(srv, c->view);
	viewer = client_viewer(c);
	fill_view(c, &view);
	r = export_view(srv, &viewer, &msgs, &n);
	if (r < 0)
		return r;
	r = wire_split_snapshot(msgs, n, c->view->generation, seq, &view,
				emit_part, c);
	export_table_free(msgs, n);
	return r;
}

/* ---- request handlers ---- */

/* What @c said of its place (PROTOCOL.md 8b), its socket checked to be
 * NETLINK_RDMA.  Nothing of it is looked at but what the kernel says of
 * the socket. */
static void claim_of(const struct client *c, const Rdmad__Scope *scope,
		     struct view_claim *ret)
{
	*ret = (struct view_claim){.nl_fd = -1, .conn = c->serial};
	if (!scope)
		return;
	ret->reported = true;
	ret->mntns = scope->mntns;
	ret->devtmpfs = scope->dev_dir &&
			scope->dev_dir == views_devtmpfs(c->srv->views);
	ret->nodes = scope->nodes;
	ret->nnodes = scope->n_nodes;
	if (scope->netns_socket && c->passed_fd >= 0 &&
	    nlquery_check_socket(c->passed_fd, &ret->netns_cookie) == 0)
		ret->nl_fd = c->passed_fd;
}

/* Into the view of what it is and says: the first request, before
 * anything of a view went out. */
static int client_join_view(struct client *c, const Rdmad__Scope *scope)
{
	struct view_claim claim;
	int r = 0;

	claim_of(c, scope, &claim);
	c->view = views_join(c->srv->views, &c->peer, c->admin, &claim, &r);
	c->verified = c->peer.known || claim.reported;
	return r;
}

static int handle_hello(struct client *c, const Rdmad__Frame *req)
{
	Rdmad__Welcome welcome = RDMAD__WELCOME__INIT;
	Rdmad__View view;
	Rdmad__Frame frame;
	int r;

	if (c->hello)
		return bad_request(c, req->seq, "Hello was said already");
	r = client_join_view(c, req->hello->scope);
	if (r < 0)
		return reply_status(c, req->seq, r, "cannot make its view");
	log_debug("client pid %d uid %d (%s) says hello as '%.32s'",
		  c->peer.pid, c->peer.uid, c->peer.comm,
		  req->hello->client_name);
	c->hello = true;
	for (size_t i = 0; i < req->hello->n_features; i++) {
		if (!strcmp(req->hello->features[i], "lifecycle"))
			c->lifecycle = true;
		if (!strcmp(req->hello->features[i], "removing"))
			c->removing = true;
	}
	event_del(c->ev_hello);
	wire_frame_init(&frame, req->seq);
	frame.body_case = RDMAD__FRAME__BODY_WELCOME;
	frame.welcome = &welcome;
	welcome.version = WIRE_VERSION;
	welcome.generation = c->view->generation;
	welcome.daemon_version = (char *)RDMAD_VERSION;
	welcome.generation_page = c->view->page.ro_fd >= 0;
	fill_view(c, &view);
	welcome.view = &view;
	return reply_frame(c, &frame, c->view->page.ro_fd);
}

/* Its nodes, reported again: the snapshot's refresh applies them. */
static void client_reports(struct client *c, const Rdmad__Scope *scope)
{
	if (scope)
		view_set_nodes(c->view, scope->nodes, scope->n_nodes);
}

static int handle_get_status(struct client *c, const Rdmad__Frame *req)
{
	int r;

	client_reports(c, req->get_status->scope);
	r = send_snapshot(c, req->seq);
	return r < 0 ? reply_status(c, req->seq, r, "snapshot failed") : 0;
}

static int handle_subscribe(struct client *c, const Rdmad__Frame *req)
{
	int r;

	client_reports(c, req->subscribe->scope);
	r = send_snapshot(c, req->seq);

	if (r < 0)
		return reply_status(c, req->seq, r, "snapshot failed");
	/* The snapshot is out or queued; events follow it in order. */
	c->subscribed = true;
	c->resync = false;
	return 0;
}

/* Holds of every connection of @uid. */
static unsigned int holds_of_uid(const struct server *srv, uid_t uid)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		if (c->peer.uid == uid)
			n += c->nholds;
	return n;
}

static int handle_hold(struct client *c, const Rdmad__Frame *req)
{
	struct holder h = {.owner = c,
			   .pid = c->peer.pid,
			   .uid = c->peer.uid,
			   .ns_pid = c->peer.ns_pid,
			   .ns = c->peer.ns};
	const struct device *dev;
	int r;

	if (c->nholds >= c->srv->opts.max_holds) {
		c->srv->refusals[SERVER_REFUSED_HOLDS]++;
		return reply_status(c, req->seq, -EDQUOT,
				    "too many holds on this connection");
	}
	if (holds_of_uid(c->srv, c->peer.uid) >=
		    c->srv->opts.max_holds_per_uid &&
	    !c->admin) {
		c->srv->refusals[SERVER_REFUSED_HOLDS_PER_UID]++;
		return reply_status(c, req->seq, -EDQUOT,
				    "too many holds for this user");
	}
	memcpy(h.comm, c->peer.comm, sizeof(h.comm));
	memcpy(h.pod_uid, c->peer.pod_uid, sizeof(h.pod_uid));
	dev = devices_find(c->view->table, req->hold->name);
	if (!dev || !view_has(c->view, dev))
		return reply_status(c, req->seq, -ENODEV, strerror(ENODEV));
	r = devices_hold(c->view->table, req->hold->name, &h);
	if (r == 0)
		c->nholds++;
	return reply_status(c, req->seq, r, strerror(-r));
}

static int handle_release(struct client *c, const Rdmad__Frame *req)
{
	int r = devices_release(c->view->table, req->release->name, c);

	if (r == 0 && c->nholds)
		c->nholds--;
	return reply_status(c, req->seq, r, strerror(-r));
}

/* A client could not open a device it sees (PROTOCOL.md 8b): flag it in
 * that client's view, for that life of the device. */
static int handle_unusable(struct client *c, const Rdmad__Frame *req)
{
	const Rdmad__Unusable *u = req->unusable;
	const struct device *dev = devices_find(c->view->table, u->name);
	int r;

	if (u->error != EPERM && u->error != EACCES)
		return bad_request(c, req->seq, "not a permission error");
	if (!dev || !view_has(c->view, dev) ||
	    device_state(dev) != DEVICE_STATE_PRESENT ||
	    device_incarnation(dev) != u->incarnation)
		return reply_status(c, req->seq, -ENODEV,
				    "no such device in this view");
	r = view_set_unusable(c->view, dev);
	if (r == 0) {
		log_info("%s (incarnation %llu) is unusable for pid %d uid %d "
			 "(%s): %s",
			 u->name, (unsigned long long)u->incarnation,
			 c->peer.pid, c->peer.uid, c->peer.comm,
			 strerror(u->error));
		view_event(c->srv, c->view, dev, VIEW_SEEN);
	}
	return reply_status(c, req->seq, r == -EALREADY ? 0 : r,
			    "out of memory");
}

static int handle_rescan(struct client *c, const Rdmad__Frame *req)
{
	int r = 0;

	log_info("rescan requested by pid %d uid %d (%s)", c->peer.pid,
		 c->peer.uid, c->peer.comm);
	if (c->srv->scan)
		r = scan_full_now(c->srv->scan);
	return reply_status(c, req->seq, r, strerror(-r));
}

static bool gid_listed(const gid_t *groups, size_t n, gid_t group)
{
	for (size_t i = 0; i < n; i++)
		if (groups[i] == group)
			return true;
	return false;
}

/* Supplementary groups as of connect(), from the kernel. */
static bool in_group(int fd, gid_t primary, gid_t group)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool found = false;

	if (group == (gid_t)-1)
		return false;
	if (primary == group)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE || !(groups = malloc(len)))
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
			len = 0;
	}
	found = gid_listed(groups, len / sizeof(gid_t), group);
	if (groups != small)
		free(groups);
	return found;
}

static bool peer_is_admin(const struct server *srv, int fd,
			  const struct ucred *cred)
{
	return cred->uid == 0 || in_group(fd, cred->gid, srv->opts.admin_group);
}

static void client_check_admin(struct client *c)
{
	struct ucred cred = {c->peer.pid, c->peer.uid, c->peer.gid};

	c->admin = peer_is_admin(c->srv, c->fd, &cred);
}

/* Malformed input: debug log only, and a bounded number of chances. */
static int bad_request(struct client *c, uint64_t seq, const char *why)
{
	log_debug("client pid %d (%s): bad request: %s", c->peer.pid,
		  c->peer.comm, why);
	if (seq)
		reply_status(c, seq, -EBADMSG, why);
	return ++c->bad_requests >= MAX_BAD_REQUESTS ? -EPROTO : 0;
}

/*
 * Every request, named once: who may send it and what answers it.  Holds
 * mutate, but anyone who may connect may hold: holds are per connection,
 * capped, and released with it.  Admin requests need root or the admin
 * group (SO_PEERCRED, never the message).
 */
struct request_type {
	enum request_class class;
	int (*handle)(struct client *c, const Rdmad__Frame *req);
};

static const struct request_type requests[] = {
	[RDMAD__FRAME__BODY_HELLO] = {REQUEST_CLASS_READONLY, handle_hello},
	[RDMAD__FRAME__BODY_SUBSCRIBE] = {REQUEST_CLASS_READONLY,
					  handle_subscribe},
	[RDMAD__FRAME__BODY_GET_STATUS] = {REQUEST_CLASS_READONLY,
					   handle_get_status},
	[RDMAD__FRAME__BODY_HOLD] = {REQUEST_CLASS_MUTATING, handle_hold},
	[RDMAD__FRAME__BODY_RELEASE] = {REQUEST_CLASS_MUTATING, handle_release},
	[RDMAD__FRAME__BODY_RESCAN] = {REQUEST_CLASS_ADMIN, handle_rescan},
	[RDMAD__FRAME__BODY_UNUSABLE] = {REQUEST_CLASS_MUTATING,
					 handle_unusable},
};

static const struct request_type *request_type(Rdmad__Frame__BodyCase body)
{
	if ((size_t)body >= sizeof(requests) / sizeof(requests[0]) ||
	    !requests[body].handle)
		return NULL; /* Welcome, Snapshot, Event: ours, not requests */
	return &requests[body];
}

static int handle_request(struct client *c, const Rdmad__Frame *req)
{
	const struct request_type *t = request_type(req->body_case);

	if (!t)
		return bad_request(c, req->seq, "not a request");
	if (!c->hello && req->body_case != RDMAD__FRAME__BODY_HELLO)
		return bad_request(c, req->seq,
				   "the first request must be "
				   "Hello");
	if (t->class == REQUEST_CLASS_ADMIN && !c->admin) {
		log_debug("client pid %d uid %d: admin request refused",
			  c->peer.pid, c->peer.uid);
		return reply_status(c, req->seq, -EPERM,
				    "needs root or the admin group");
	}
	return t->handle(c, req);
}

/* Undecodable: if protobuf can still read a seq, answer it once. */
static int handle_undecodable(struct client *c, size_t len, int err)
{
	Rdmad__Frame *frame = NULL;
	uint64_t seq = 0;

	if (err == -EBADMSG)
		frame = rdmad__frame__unpack(NULL, len, c->srv->rxbuf);
	if (frame) {
		seq = frame->seq;
		rdmad__frame__free_unpacked(frame, NULL);
		return bad_request(c, seq, "malformed request");
	}
	bad_request(c, 0,
		    err == -EMSGSIZE ? "oversized datagram"
				     : "undecodable datagram");
	return -EPROTO;
}

static int handle_datagram(struct client *c, size_t len)
{
	Rdmad__Frame *req;
	int r;

	r = wire_decode(c->srv->rxbuf, len, WIRE_MAX_REQUEST, &req);
	if (r == -EPROTONOSUPPORT) {
		log_debug("client pid %d (%s): protocol version %u",
			  c->peer.pid, c->peer.comm, req->version);
		reply_status(c, req->seq, r, "protocol version 1 only");
		wire_free(req);
		return -EPROTONOSUPPORT;
	}
	if (r < 0)
		return handle_undecodable(c, len, r);
	r = handle_request(c, req);
	wire_free(req);
	return r;
}

/*
 * Descriptors.  Only Hello may pass one, a NETLINK_RDMA socket (PROTOCOL.md
 * 8b), so once a connection's first datagram is read it refuses any more
 * where the kernel can say so (SO_PASSRIGHTS, Linux 6.16).  Whatever a
 * client passed goes to the reaper, except a NETLINK_RDMA socket, whose
 * last close cannot block (no file rides in a netlink queue).
 */
static void refuse_rights(struct client *c)
{
	int off = 0;

	c->read_once = true;
	if (setsockopt(c->fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off)) <
		    0 &&
	    errno != ENOPROTOOPT)
		log_debug("client pid %d: SO_PASSRIGHTS: %s", c->peer.pid,
			  strerror(errno));
}

static void let_go(struct client *c, int fd)
{
	uint64_t cookie;

	if (fd < 0)
		return;
	if (nlquery_check_socket(fd, &cookie) == 0)
		close(fd);
	else
		reaper_put(c->srv->reaper, fd, c->peer.uid);
}

static void let_go_all(struct client *c, const struct wire_fds *fds)
{
	for (size_t i = 0; i < fds->n; i++)
		let_go(c, fds->fd[i]);
}

/* One datagram and what came with it: Hello's descriptor is handled with
 * it, any other is a protocol error. */
static int client_handle(struct client *c, ssize_t n,
			 const struct wire_fds *fds)
{
	int r;

	if (n == -EMSGSIZE || n <= 0 || (fds->n && c->hello)) {
		let_go_all(c, fds);
		if (n == -EMSGSIZE)
			return handle_undecodable(c, 0, -EMSGSIZE);
		if (n > 0) {
			bad_request(c, 0, "a descriptor after Hello");
			return -EPROTO;
		}
		return n < 0 ? (int)n : -ECONNRESET;
	}
	c->passed_fd = fds->n ? fds->fd[0] : -1;
	for (size_t i = 1; i < fds->n; i++)
		let_go(c, fds->fd[i]);
	r = handle_datagram(c, n);
	let_go(c, c->passed_fd);
	c->passed_fd = -1;
	return r;
}

/*
 * Room in rdmad's table.  A receive may install up to WIRE_MAX_PASSED_FDS
 * descriptors, so rdmad receives only while that many fit under its
 * ceiling (its open file limit less what it keeps for its own work,
 * fd_ceiling()) beside what clients cost already: their connections and
 * what they passed that still waits to be closed.  A uid with
 * REAPER_MAX_PENDING descriptors waiting is not read either.  So the
 * kernel never has to drop a descriptor in this thread (MSG_CTRUNC),
 * whatever clients send; see docs/security.md.
 */
static unsigned int fds_for_clients(const struct server *srv)
{
	return srv->nclients * SERVER_FDS_PER_CLIENT + reaper_held(srv->reaper);
}

static bool room_for(const struct server *srv, unsigned int more)
{
	return fds_for_clients(srv) + more + WIRE_MAX_PASSED_FDS <=
	       srv->fd_ceiling;
}

static bool may_receive(const struct client *c)
{
	return room_for(c->srv, 0) &&
	       reaper_held_by(c->srv->reaper, c->peer.uid) < REAPER_MAX_PENDING;
}

static void wait_for_room(struct client *c)
{
	struct server *srv = c->srv;

	c->waiting_room = true;
	event_del(c->ev_read);
	if (!srv->logged_room)
		log_warnx("client pid %d uid %u: not read until descriptors "
			  "clients passed are closed (its own %u, all "
			  "clients' %u, ceiling %u; logged once)",
			  c->peer.pid, (unsigned int)c->peer.uid,
			  reaper_held_by(srv->reaper, c->peer.uid),
			  fds_for_clients(srv), srv->fd_ceiling);
	srv->logged_room = true;
}

/* The kernel dropped descriptors in this thread anyway: say so, and let
 * the connection go where nothing of it is closed here. */
static int truncated(struct client *c)
{
	if (!c->srv->logged_ctrunc)
		log_warnx("client pid %d uid %u: descriptors it passed did "
			  "not fit rdmad's table (MSG_CTRUNC); closing it "
			  "(logged once)",
			  c->peer.pid, (unsigned int)c->peer.uid);
	c->srv->logged_ctrunc = true;
	return -ECONNRESET;
}

/* Read a burst of requests; returns -errno when the client must go. */
static int client_read(struct client *c)
{
	struct wire_fds fds;
	ssize_t n;
	int r;

	for (int i = 0; i < READ_BURST && !c->dead; i++) {
		if (!may_receive(c)) {
			wait_for_room(c);
			return 0;
		}
		n = wire_recv_all(c->fd, c->srv->rxbuf, sizeof(c->srv->rxbuf),
				  &fds);
		if (fds.truncated) {
			let_go_all(c, &fds);
			return truncated(c);
		}
		if (n == -EAGAIN)
			return 0;
		if (!c->read_once)
			refuse_rights(c);
		r = client_handle(c, n, &fds);
		if (r < 0)
			return r;
		if (c->out.count > 0) {
			/* Backpressure: no more requests until it reads. */
			c->read_paused = true;
			event_del(c->ev_read);
			return 0;
		}
	}
	return 0;
}

/*
 * A protocol error ends the connection, but the reply that says why
 * (UNSUPPORTED_VERSION, BAD_REQUEST) may still be queued: stop reading
 * and close once it is out.  A peer that never reads is closed by the
 * Hello deadline, or holds only its own slot.
 */
static void client_hang_up(struct client *c)
{
	if (c->dead || c->out.count == 0) {
		client_close(c);
		return;
	}
	c->hangup = true;
	event_del(c->ev_read);
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	int r = client_read(c);

	if (c->dead || r == -ECONNRESET || r == -EPIPE)
		client_close(c);
	else if (r < 0)
		client_hang_up(c);
}

/* ---- clients ---- */

/* No Hello in time: a slot held for nothing. */
static void on_hello_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	c->srv->refusals[SERVER_REFUSED_NO_HELLO]++;
	log_debug("client pid %d (%s): no Hello within %u ms", c->peer.pid,
		  c->peer.comm, c->srv->opts.hello_timeout_ms);
	client_kill(c);
}

static void client_free_events(struct client *c)
{
	if (c->ev_read)
		event_free(c->ev_read);
	if (c->ev_write)
		event_free(c->ev_write);
	if (c->ev_hello)
		event_free(c->ev_hello);
}

static void client_leave_view(struct client *c)
{
	if (c->view)
		views_leave(c->srv->views, c->view);
}

static struct client *client_new(struct server *srv, int fd,
				 const struct peer *peer)
{
	struct client *c = calloc(1, sizeof(*c));
	struct timeval tv = {
		.tv_sec = srv->opts.hello_timeout_ms / 1000,
		.tv_usec = srv->opts.hello_timeout_ms % 1000 * 1000,
	};

	if (!c)
		return NULL;
	c->srv = srv;
	c->fd = fd;
	c->passed_fd = -1;
	c->serial = ++srv->serials;
	c->peer = *peer;
	client_check_admin(c);
	c->ev_read = event_new(srv->base, fd, EV_READ | EV_PERSIST,
			       on_client_read, c);
	c->ev_write = event_new(srv->base, fd, EV_WRITE | EV_PERSIST,
				on_client_write, c);
	c->ev_hello = evtimer_new(srv->base, on_hello_timeout, c);
	if (!c->ev_read || !c->ev_write || !c->ev_hello ||
	    event_add(c->ev_read, NULL) < 0 ||
	    evtimer_add(c->ev_hello, &tv) < 0)
		goto fail;
	return c;
fail:
	client_free_events(c);
	client_leave_view(c);
	free(c);
	return NULL;
}

static void client_link(struct server *srv, struct client *c)
{
	c->next = srv->clients;
	if (srv->clients)
		srv->clients->prev = c;
	srv->clients = c;
	srv->nclients++;
}

static void client_unlink(struct server *srv, struct client *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nclients--;
}

/* Time for a namespace's last process to leave it after its last
 * client's socket closed. */
static const struct timeval settle_delay = {.tv_usec = 300 * 1000};

static void on_settle(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	views_settle(srv->views);
}

/*
 * Another network namespace's uevents go to that namespace only, and
 * rdmad cannot open its devices for their async events: ask the kernel
 * about those with clients again every 2 s, through their RDMA netlink
 * socket (nstable_rescan(), one dump), so that a port that goes down in a
 * pod reaches its clients without their asking.
 */
static const struct timeval nsscan_period = {.tv_sec = 2};

static void on_nsscan(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	for (struct nstable *t = views_nstables(srv->views); t; t = t->next)
		if (t->refs)
			nstable_rescan(t);
}

static void client_close(struct client *c)
{
	struct server *srv = c->srv;

	log_debug("client pid %d (%s) gone", c->peer.pid, c->peer.comm);
	client_unlink(srv, c);
	client_free_events(c);
	reaper_close_connection(srv->reaper, c->fd, c->peer.uid);
	outq_clear(&c->out);
	/* Unlinked first: the events this causes go to the others only;
	 * and before its view goes, which may take its table along. */
	if (c->nholds && c->view)
		devices_release_owner(c->view->table, c);
	client_leave_view(c);
	/* Not pushed back by every later close: clients come and go. */
	if (views_unsettled(srv->views) &&
	    !evtimer_pending(srv->ev_settle, NULL))
		evtimer_add(srv->ev_settle, &settle_delay);
	free(c);
}

/* ---- accepting ---- */

static void on_backoff(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	event_add(srv->ev_accept, NULL);
}

/* Out of descriptors: stop accepting for a while instead of spinning. */
static void accept_backoff(struct server *srv)
{
	struct timeval tv = {.tv_sec = ACCEPT_BACKOFF_SEC};

	if (!srv->logged_emfile)
		log_warn("accept: pausing for %d s", ACCEPT_BACKOFF_SEC);
	srv->logged_emfile = true;
	event_del(srv->ev_accept);
	evtimer_add(srv->ev_backoff, &tv);
}

static unsigned int clients_of_uid(const struct server *srv, uid_t uid)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		n += c->peer.uid == uid;
	return n;
}

/* One container: the same uid in the same namespaces.  Where rdmad can
 * read other users' namespaces, the peers whose namespaces it could not
 * read (the process that connected is gone, or hidden) are one more
 * bucket per uid, bounded like a container, so that they never take a
 * sibling container's share.  Where it cannot (an unprivileged rdmad),
 * it cannot tell containers apart: max_clients_per_uid alone holds. */
static bool same_place(const struct peer *a, const struct peer *b)
{
	if (a->uid != b->uid || a->known != b->known)
		return false;
	return !a->known || (a->ns.mnt == b->ns.mnt && a->ns.net == b->ns.net &&
			     a->ns.pid == b->ns.pid);
}

/* Connections of @peer's uid from its namespaces (a container), or of
 * its uid's unknown bucket. */
static unsigned int clients_of_place(const struct server *srv,
				     const struct peer *peer)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		n += same_place(&c->peer, peer);
	return n;
}

/* May this peer take one more slot?  See "Admission" at the top.  What
 * needs only SO_PEERCRED comes first, before rdmad looks at the peer's
 * process (which costs more): a flood of a uid over its bounds is turned
 * away cheaply.  *@exempt: root, the admin group or rdmad's own user. */
static enum server_refusal refusal_of_uid(const struct server *srv, int fd,
					  const struct ucred *cred,
					  bool *exempt)
{
	const struct server_options *o = &srv->opts;

	*exempt = false;
	if (srv->nclients >= o->max_clients)
		return SERVER_REFUSED_FULL;
	/* rdmad's own user could ptrace it anyway: a daemon run as a user
	 * of its own (a test suite as nobody) never locks that user out. */
	*exempt = peer_is_admin(srv, fd, cred) || cred->uid == geteuid();
	if (*exempt)
		return SERVER_REFUSED_NONE;
	if (srv->nclients + o->reserved_clients >= o->max_clients)
		return SERVER_REFUSED_RESERVED;
	if (clients_of_uid(srv, cred->uid) >= o->max_clients_per_uid)
		return SERVER_REFUSED_PER_UID;
	if (reaper_held_by(srv->reaper, cred->uid) >= REAPER_MAX_PENDING)
		return SERVER_REFUSED_REAPING;
	return SERVER_REFUSED_NONE;
}

static enum server_refusal refusal_of_place(const struct server *srv,
					    const struct peer *peer)
{
	if (!peer->known && !srv->identifies_others)
		return SERVER_REFUSED_NONE;
	return clients_of_place(srv, peer) >=
			       srv->opts.max_clients_per_namespace
		       ? SERVER_REFUSED_PER_NAMESPACE
		       : SERVER_REFUSED_NONE;
}

static void refuse(struct server *srv, enum server_refusal why,
		   const struct peer *peer)
{
	static const char *const text[SERVER_REFUSED_COUNT] = {
		[SERVER_REFUSED_FULL] = "max_clients reached",
		[SERVER_REFUSED_RESERVED] =
			"the rest is reserved for root and the admin group",
		[SERVER_REFUSED_PER_UID] = "max_clients_per_uid reached",
		[SERVER_REFUSED_PER_NAMESPACE] =
			"max_clients_per_namespace reached",
		[SERVER_REFUSED_REAPING] =
			"descriptors it passed are still being closed",
	};

	srv->refusals[why]++;
	if (!srv->logged_refusal[why])
		log_warnx("refusing a connection of uid %u: %u clients, %s "
			  "(logged once until one is admitted)",
			  (unsigned int)peer->uid, srv->nclients, text[why]);
	srv->logged_refusal[why] = true;
}

/* Returns false when accept() has nothing more for now. */
static bool accept_one(struct server *srv)
{
	enum server_refusal why;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	struct peer peer;
	bool exempt;
	int fd;

	fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			accept_backoff(srv);
		else if (errno != EAGAIN && errno != EINTR &&
			 errno != ECONNABORTED)
			log_warn("accept");
		return errno == EINTR || errno == ECONNABORTED;
	}
	srv->logged_emfile = false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		reaper_close_connection(srv->reaper, fd, (uid_t)-1);
		return true;
	}
	why = refusal_of_uid(srv, fd, &cred, &exempt);
	if (why == SERVER_REFUSED_NONE) {
		peer_identify(fd, &cred, &peer);
		if (!exempt)
			why = refusal_of_place(srv, &peer);
	} else {
		peer = (struct peer){.pid = cred.pid, .uid = cred.uid};
	}
	if (why != SERVER_REFUSED_NONE) {
		refuse(srv, why, &peer);
		reaper_close_connection(srv->reaper, fd, peer.uid);
		return true;
	}
	c = client_new(srv, fd, &peer);
	if (!c) {
		reaper_close_connection(srv->reaper, fd, peer.uid);
		return true;
	}
	memset(srv->logged_refusal, 0, sizeof(srv->logged_refusal));
	client_link(srv, c);
	log_debug("client pid %d uid %d (%s) connected", c->peer.pid,
		  c->peer.uid, c->peer.comm);
	return true;
}

static void accept_wait_for_room(struct server *srv)
{
	if (!srv->logged_room)
		log_warnx("not accepting until clients' descriptors are "
			  "closed: %u in rdmad's table for clients, ceiling "
			  "%u (logged once)",
			  fds_for_clients(srv), srv->fd_ceiling);
	srv->logged_room = true;
	srv->accept_waiting_room = true;
	event_del(srv->ev_accept);
}

/* An accept installs one descriptor, and its Hello may bring more: with
 * no room for both, wait for the helpers to let some go. */
static void on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	for (int i = 0; i < ACCEPT_BURST; i++) {
		if (!room_for(srv, SERVER_FDS_PER_CLIENT)) {
			accept_wait_for_room(srv);
			return;
		}
		if (!accept_one(srv))
			break;
	}
}

/* Descriptors were let go of: what waited for room goes on. */
static void on_reaper_progress(void *arg)
{
	struct server *srv = arg;

	if (srv->accept_waiting_room && room_for(srv, SERVER_FDS_PER_CLIENT)) {
		srv->accept_waiting_room = false;
		srv->logged_room = false;
		event_add(srv->ev_accept, NULL);
	}
	for (struct client *c = srv->clients; c; c = c->next) {
		if (!c->waiting_room || !may_receive(c))
			continue;
		c->waiting_room = false;
		if (!c->read_paused && !c->hangup && !c->dead)
			event_add(c->ev_read, NULL);
	}
}

size_t server_closing_behind(const struct server *srv,
			     struct reaper_behind *ret, size_t max)
{
	return reaper_behind(srv->reaper, ret, max);
}

/* ---- the listening socket ---- */

/* Unlink @path only if it is a socket nobody answers on any more. */
static int remove_stale_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	if (errno != ECONNREFUSED)
		return -errno;
	return unlink(path) < 0 ? -errno : 0;
}

/*
 * The socket's directory, made if missing.  An existing one must not let
 * others swap the socket for something else between bind() and chown():
 * a real directory (not a link), owned by root or us, writable only by
 * its owner unless sticky (as /tmp is).
 */
static int check_parent_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	if (slash == dir)
		slash++;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return -EPERM;
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		return -EPERM;
	return 0;
}

/* bind() with the mode already right (the umask decides a socket's
 * mode), so there is no chmod by path for a swapped file to catch. */
static int bind_with_mode(int fd, const struct sockaddr_un *sa, mode_t mode)
{
	mode_t old = umask(~mode & 0777);
	int r = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));

	umask(old);
	return r;
}

static int bind_socket(struct server *srv)
{
	const struct server_options *opts = &srv->opts;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (strlen(opts->socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", opts->socket_path);
	r = check_parent_dir(opts->socket_path);
	if (r == 0)
		r = remove_stale_socket(opts->socket_path);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind_with_mode(fd, &sa, opts->socket_mode) < 0)
		goto fail;
	srv->socket_path = strdup(opts->socket_path);
	if (!srv->socket_path)
		goto fail;
	/* The group by lchown: never through a link someone put there. */
	if (opts->socket_group != (gid_t)-1 &&
	    lchown(opts->socket_path, (uid_t)-1, opts->socket_group) < 0)
		goto fail;
	if (listen(fd, SOMAXCONN) < 0)
		goto fail;
	srv->listen_fd = fd;
	return 0;
fail:
	r = errno ? -errno : -ENOMEM;
	close(fd);
	return r;
}

static int adopt_socket(struct server *srv, int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	srv->listen_fd = fd;
	return 0;
}

/* ---- public ---- */

static int server_listen(struct server *srv)
{
	int r;

	if (srv->opts.listen_fd >= 0)
		r = adopt_socket(srv, srv->opts.listen_fd);
	else
		r = bind_socket(srv);
	if (r < 0) {
		log_warnc(r, "socket %s", srv->opts.socket_path);
		return r;
	}
	srv->ev_accept = event_new(srv->base, srv->listen_fd,
				   EV_READ | EV_PERSIST, on_accept, srv);
	srv->ev_backoff = evtimer_new(srv->base, on_backoff, srv);
	srv->ev_settle = evtimer_new(srv->base, on_settle, srv);
	srv->ev_nsscan = event_new(srv->base, -1, EV_PERSIST, on_nsscan, srv);
	if (!srv->ev_accept || !srv->ev_backoff || !srv->ev_settle ||
	    !srv->ev_nsscan ||
	    (srv->opts.netns_mode == VIEWS_NETNS_EXCLUSIVE &&
	     event_add(srv->ev_nsscan, &nsscan_period) < 0) ||
	    event_add(srv->ev_accept, NULL) < 0)
		return -ENOMEM;
	return 0;
}

/* What clients may cost in rdmad's table: its open file limit less what
 * rdmad keeps for its own work (an eighth of a small limit). */
static unsigned int fd_ceiling(void)
{
	struct rlimit rl;
	rlim_t keep;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > UINT_MAX)
		return UINT_MAX;
	keep = rl.rlim_cur / 8 < SERVER_FDS_NOT_FOR_CLIENTS
		       ? rl.rlim_cur / 8
		       : SERVER_FDS_NOT_FOR_CLIENTS;
	return (unsigned int)(rl.rlim_cur - keep);
}

struct server *server_new(struct event_base *base, struct devices *table,
			  struct scan *scan, const struct server_options *opts)
{
	struct server *srv = calloc(1, sizeof(*srv));
	int r;

	if (!srv)
		return NULL;
	srv->base = base;
	srv->table = table;
	srv->scan = scan;
	srv->opts = *opts;
	srv->listen_fd = -1;
	srv->fd_ceiling = fd_ceiling();
	srv->identifies_others = peer_can_identify_others();
	srv->reaper = reaper_new(base, on_reaper_progress, srv);
	srv->views = views_new(table, opts->netns_mode, on_ns_event, srv);
	r = srv->views && srv->reaper ? server_listen(srv) : -ENOMEM;
	if (r < 0) {
		server_free(srv);
		errno = -r;
		return NULL;
	}
	srv->opts.socket_path = srv->socket_path;
	return srv;
}

void server_free(struct server *srv)
{
	if (!srv)
		return;
	while (srv->clients)
		client_close(srv->clients);
	if (srv->ev_accept)
		event_free(srv->ev_accept);
	if (srv->ev_backoff)
		event_free(srv->ev_backoff);
	if (srv->ev_settle)
		event_free(srv->ev_settle);
	if (srv->ev_nsscan)
		event_free(srv->ev_nsscan);
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->socket_path) {
		unlink(srv->socket_path);
		free(srv->socket_path);
	}
	views_free(srv->views);
	reaper_free(srv->reaper);
	free(srv);
}

void server_set_limits(struct server *srv, const struct server_options *opts)
{
	srv->opts.max_clients = opts->max_clients;
	srv->opts.max_holds = opts->max_holds;
	srv->opts.max_holds_per_uid = opts->max_holds_per_uid;
	srv->opts.max_clients_per_uid = opts->max_clients_per_uid;
	srv->opts.max_clients_per_namespace = opts->max_clients_per_namespace;
	srv->opts.reserved_clients = opts->reserved_clients;
	srv->opts.hello_timeout_ms = opts->hello_timeout_ms;
	srv->opts.max_queue = opts->max_queue;
	if (srv->opts.admin_group != opts->admin_group) {
		srv->opts.admin_group = opts->admin_group;
		for (struct client *c = srv->clients; c; c = c->next)
			client_check_admin(c);
	}
}

/* What one event is for one view: its wire type and, when the device
 * leaves the view, why. */
struct view_event {
	enum devices_event event;
	const struct device *dev;
	const char *old_name;
	enum view_change change;
	const struct nstable *ns; /* a device of another network namespace */
	const char *reason;	  /* REMOVED: "netns" when it went to one */
};

static struct outbuf *encode_event(const struct view_event *ve,
				   const struct view *v,
				   const struct export_viewer *viewer)
{
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Sriov sriov = RDMAD__SRIOV__INIT;
	Rdmad__Frame frame;
	struct outbuf *ob;

	ev.type = export_event_type(ve->event, viewer);
	if (ve->change == VIEW_ENTERS)
		ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED;
	if (ve->change == VIEW_LEAVES)
		ev.type = RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED;
	if (ev.type == RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING ||
	    ev.type == RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED) {
		/* About the PF's VFs; the PF itself is the device. */
		sriov.pf = (char *)device_info(ve->dev)->pci_address;
		device_sriov(ve->dev, &sriov.expected, &sriov.ready);
		ev.sriov = &sriov;
	}
	if (export_device(ve->dev, ve->old_name, viewer, &ev.device) < 0)
		return NULL;
	if (ve->change == VIEW_LEAVES) {
		/* Gone from this view only: present elsewhere. */
		ev.device->state = RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED;
		ev.device->reason = (char *)"mount";
	} else if (ve->reason) {
		ev.device->reason = (char *)ve->reason;
	}
	if (ve->ns && viewer->all)
		mark_netns(ev.device, ve->ns);
	wire_frame_init(&frame, 0);
	frame.body_case = RDMAD__FRAME__BODY_EVENT;
	frame.event = &ev;
	ev.generation = v->generation;
	ob = outbuf_encode(&frame, true, -1);
	export_device_free(ev.device);
	return ob;
}

/*
 * A view's encodings of the event at hand, made on first use: one for each
 * set of features a client said, "lifecycle" and "removing" (every client
 * of a view sees the same devices and holders).
 */
static struct outbuf *view_encoding(struct view *v, const struct client *c,
				    const struct view_event *ve)
{
	struct export_viewer viewer = client_viewer(c);
	struct outbuf **slot =
		(struct outbuf **)&v->scratch[c->lifecycle | c->removing << 1];

	if (!*slot)
		*slot = encode_event(ve, v, &viewer);
	return *slot;
}

static void view_scratch_clear(struct view *v)
{
	for (size_t i = 0; i < VIEW_ENCODINGS; i++) {
		if (v->scratch[i])
			outbuf_unref(v->scratch[i]);
		v->scratch[i] = NULL;
	}
}

/* Could not encode: nobody of that view gets this event, so they resync. */
static void resync_view(struct server *srv, const struct view *v)
{
	log_warnx("cannot encode an event: subscribers will resync");
	for (struct client *c = srv->clients; c; c = c->next)
		if (c->view == v && c->subscribed && !c->dead)
			queue_drop_events(c);
}

/* Push the event to the subscribers of every view it is for (each
 * view's change already set, its generation already published). */
static void fan_out(struct server *srv, const struct view_event *base)
{
	struct view_event ve = *base;
	struct outbuf *ob;
	struct client *c;

	for (c = srv->clients; c; c = c->next) {
		if (!c->subscribed || c->dead || c->resync ||
		    c->view->change == VIEW_UNSEEN || c->view->change < 0)
			continue;
		ve.change = c->view->change;
		ob = view_encoding(c->view, c, &ve);
		if (!ob) {
			c->view->change =
				-1; /* cannot encode: the view resyncs */
			resync_view(srv, c->view);
			continue;
		}
		push_event(c, ob);
	}
	for (struct view *v = views_first(srv->views); v; v = v->next)
		view_scratch_clear(v);
}

/* A change the table did not make (a view's own): the daemon's
 * generation moves with the view's, so no view ever passes it. */
static void bump_daemon_generation(struct server *srv)
{
	uint64_t gen = devices_bump_generation(srv->table);

	if (srv->opts.note_generation)
		srv->opts.note_generation(srv->opts.userdata, gen);
}

/* One view's own event (entering or leaving it, flagged unusable): its
 * clients only. */
static void view_event(struct server *srv, struct view *v,
		       const struct device *dev, enum view_change change)
{
	struct view_event ve = {.event = DEVICES_EVENT_CHANGED, .dev = dev};

	for (struct view *o = views_first(srv->views); o; o = o->next)
		o->change = VIEW_UNSEEN;
	v->change = change;
	bump_daemon_generation(srv);
	view_next_generation(v);
	fan_out(srv, &ve);
}

static void on_view_change(void *ud, struct view *v, const struct device *dev,
			   enum view_change change)
{
	view_event(ud, v, dev, change);
}

/* Look at a view's devices again: what entered or left goes to its
 * clients. */
static void view_changes(struct server *srv, struct view *v)
{
	if (v->ns)
		nstable_rescan(v->ns);
	view_refresh(v, on_view_change, srv);
}

/*
 * Exclusive mode: a device that leaves or joins rdmad's network namespace
 * may be joining or leaving another one, whose tables hear nothing of it:
 * read them again.  Returns whether @dev (REMOVED) is now in one.
 */
static bool nstables_follow(struct server *srv, enum devices_event event,
			    const struct device *dev)
{
	bool moved = false;

	if (event != DEVICES_EVENT_ADDED && event != DEVICES_EVENT_REMOVED &&
	    event != DEVICES_EVENT_RETURNED)
		return false;
	for (struct nstable *t = views_nstables(srv->views); t; t = t->next) {
		nstable_rescan(t);
		moved = moved || nstable_find_identity(t, device_info(dev)->id);
	}
	if (event != DEVICES_EVENT_REMOVED)
		views_returned(srv->views, device_info(dev)->id);
	return event == DEVICES_EVENT_REMOVED && moved;
}

/* An event of @table (rdmad's own, or @ns's): the views that may see it
 * move on, then hear it. */
static void table_event(struct server *srv, struct view_event *ve,
			const struct devices *table)
{
	for (struct view *v = views_first(srv->views); v; v = v->next) {
		if (v->table == table)
			v->change = view_apply(v, ve->dev, ve->event);
		else
			v->change =
				v->key.all && ve->ns ? VIEW_SEEN : VIEW_UNSEEN;
		if (v->change != VIEW_UNSEEN)
			view_next_generation(v);
	}
	fan_out(srv, ve);
	if (device_going(ve->dev))
		views_forget(srv->views, ve->dev);
}

void server_device_event(struct server *srv, enum devices_event event,
			 const struct device *dev, const char *old_name)
{
	struct view_event ve = {event, dev, old_name, VIEW_SEEN, NULL, NULL};

	if (nstables_follow(srv, event, dev))
		ve.reason = "netns";
	table_event(srv, &ve, srv->table);
}

static void on_ns_event(void *ud, struct nstable *t, enum devices_event event,
			const struct device *dev, const char *old_name)
{
	struct server *srv = ud;
	struct view_event ve = {event, dev, old_name, VIEW_SEEN, t, NULL};

	/* Not the table's generation, which nobody sees: the daemon's. */
	bump_daemon_generation(srv);
	table_event(srv, &ve, t->table);
}

void server_count_views(const struct server *srv, unsigned int *counts)
{
	memset(counts, 0, VIEW_KIND_COUNT * sizeof(*counts));
	for (struct view *v = views_first(srv->views); v; v = v->next)
		counts[view_kind(v)]++;
}

unsigned int server_client_count(const struct server *srv)
{
	return srv->nclients;
}

uint64_t server_refusals(const struct server *srv, enum server_refusal why)
{
	return why < SERVER_REFUSED_COUNT ? srv->refusals[why] : 0;
}
