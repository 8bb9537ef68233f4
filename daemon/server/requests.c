/* SPDX-License-Identifier: MIT */
/*
 * The request table (requests.h), shaped like chrony's cmdmon.c: every
 * request type is named once, in requests[], with who may send it and
 * what answers it; handle_request() is the one place that decides.
 *
 * Requests are classed read-only, mutating or admin and checked against
 * SO_PEERCRED (server.c sets client.admin at accept; never from what the
 * message says).  Malformed input is logged at debug level only, and a
 * connection gets MAX_BAD_REQUESTS chances.
 */
#include <errno.h>
#include <string.h>

#include "client.h"
#include "devices.h"
#include "log.h"
#include "nlquery.h"
#include "publish.h"
#include "rdmad-config.h"
#include "requests.h"
#include "scan.h"
#include "server-int.h"

/* Bad requests a client may send before we hang up on it. */
#define MAX_BAD_REQUESTS 3

enum request_class {
	REQUEST_CLASS_READONLY,
	REQUEST_CLASS_MUTATING,
	REQUEST_CLASS_ADMIN,
};

/* A status-only reply; @err is 0 or -errno, mapped by wire.c. */
static int reply_status(struct client *c, uint64_t seq, int err,
			const char *text)
{
	Rdmad__Frame frame;

	wire_frame_init(&frame, seq);
	frame.status = wire_status_from_errno(err);
	if (err && text)
		frame.error = (char *)text;
	return client_reply_frame(c, &frame, -1);
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

/* ---- the handlers ---- */

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

	if (c->state != CLIENT_STATE_GREETING)
		return bad_request(c, req->seq, "Hello was said already");
	r = client_join_view(c, req->hello->scope);
	if (r < 0)
		return reply_status(c, req->seq, r, "cannot make its view");
	log_debug("client pid %d uid %d (%s) says hello as '%.32s'",
		  c->peer.pid, c->peer.uid, c->peer.comm,
		  req->hello->client_name);
	client_enter_state(c, CLIENT_STATE_WELCOMED);
	for (size_t i = 0; i < req->hello->n_features; i++) {
		if (!strcmp(req->hello->features[i], "lifecycle"))
			c->lifecycle = true;
		if (!strcmp(req->hello->features[i], "removing"))
			c->wants_removing = true;
	}
	wire_frame_init(&frame, req->seq);
	frame.body_case = RDMAD__FRAME__BODY_WELCOME;
	frame.welcome = &welcome;
	welcome.version = WIRE_VERSION;
	welcome.generation = c->view->generation;
	welcome.daemon_version = (char *)RDMAD_VERSION;
	welcome.generation_page = c->view->page.ro_fd >= 0;
	publish_fill_view(c, &view);
	welcome.view = &view;
	return client_reply_frame_fd(c, &frame, c->view->page.ro_fd,
				     &welcome.generation_page);
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
	r = publish_snapshot(c, req->seq);
	return r < 0 ? reply_status(c, req->seq, r, "snapshot failed") : 0;
}

static int handle_subscribe(struct client *c, const Rdmad__Frame *req)
{
	int r;

	client_reports(c, req->subscribe->scope);
	r = publish_snapshot(c, req->seq);

	if (r < 0)
		return reply_status(c, req->seq, r, "snapshot failed");
	/* The snapshot is out or queued; events follow it in order. */
	if (c->state != CLIENT_STATE_DEAD)
		client_enter_state(c, CLIENT_STATE_SUBSCRIBED);
	return 0;
}

/* Holds of every connection of @owner (owner.h). */
static unsigned int holds_of_owner(const struct server *srv, uid_t owner)
{
	unsigned int n = 0;

	for (const struct client *c = srv->clients; c; c = c->next)
		if (c->peer.owner == owner)
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
	if (holds_of_owner(c->srv, c->peer.owner) >=
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
		publish_view_event(c->srv, c->view, dev, VIEW_SEEN);
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

/* ---- the table ---- */

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
	if (!client_welcomed(c) && req->body_case != RDMAD__FRAME__BODY_HELLO)
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

/* One datagram and what came with it: Hello's descriptor is handled with
 * it, any other is a protocol error. */
int requests_handle(struct client *c, ssize_t n, const struct wire_fds *fds)
{
	int r;

	if (n == -EMSGSIZE || n <= 0 ||
	    (fds->n && c->state != CLIENT_STATE_GREETING)) {
		client_let_go_all(c, fds);
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
		client_let_go(c, fds->fd[i]);
	r = handle_datagram(c, n);
	client_let_go(c, c->passed_fd);
	c->passed_fd = -1;
	return r;
}
