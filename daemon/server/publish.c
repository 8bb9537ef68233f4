/* SPDX-License-Identifier: MIT */
/*
 * Publishing (publish.h): snapshots and events to views, and the device
 * table's listener.
 *
 * A broadcast event is encoded once per view and set of features into a
 * refcounted outbuf that every queue of them shares (outq.c).  What an
 * event is for each view, and those encodings, live for one fan-out in
 * struct publish, kept here between events: a view itself holds nothing
 * of the fan-out.
 *
 * The order of one table event: the generation goes to the store
 * (note_generation), other network namespaces' tables are read again
 * where a device may have moved (their own events go out first, as
 * complete fan-outs), each view's membership and generation move on, the
 * event goes to the subscribers, and a device that is going is forgotten
 * by the views.  A connection that fails in the middle is only marked
 * DEAD (client.h): its close, which releases its holds and so makes more
 * table events, waits until the loop turns.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "export.h"
#include "log.h"
#include "outq.h"
#include "publish.h"
#include "reaper.h"
#include "server-int.h"
#include "wire.h"

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

/* Encodings of one event a view may need: "lifecycle" x "removing". */
#define VIEW_ENCODINGS 4

/* One view's part in the fan-out at hand: what the event is for it, and
 * its encodings, one per set of features a client said ("lifecycle" x
 * "removing": every client of a view sees the same devices and holders),
 * made on first use. */
struct fanout_slot {
	const struct view *view; /* NULL: free */
	enum view_change change;
	bool failed; /* could not encode: its subscribers resync */
	struct outbuf *enc[VIEW_ENCODINGS];
};

/* The fan-out of one event: a slot for each view that hears it, found
 * by the view's address.  Kept between events, so that a fan-out
 * allocates nothing once the table has grown to the views. */
struct publish {
	struct fanout_slot *slots;
	size_t cap;   /* a power of two, at least twice the views; or 0 */
	size_t *used; /* the slots taken, cap / 2 at most */
	size_t nused;
	bool busy; /* between fanout_begin() and fanout_end() */
};

struct publish *publish_new(void)
{
	return calloc(1, sizeof(struct publish));
}

void publish_free(struct publish *p)
{
	if (!p)
		return;
	free(p->slots);
	free(p->used);
	free(p);
}

/* ---- the fan-out's table ---- */

static size_t slot_index(const struct publish *p, const struct view *v)
{
	uint64_t h = (uint64_t)(uintptr_t)v * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32) & (p->cap - 1);
}

static struct fanout_slot *fanout_find(struct publish *p, const struct view *v)
{
	if (!p->cap)
		return NULL;
	for (size_t i = slot_index(p, v);; i = (i + 1) & (p->cap - 1)) {
		if (p->slots[i].view == v)
			return &p->slots[i];
		if (!p->slots[i].view)
			return NULL;
	}
}

/* Room for every view (never full: at most half the slots are used). */
static int fanout_begin(struct publish *p, struct views *vs)
{
	size_t n = 0, cap = 16, *used;
	struct fanout_slot *slots;

	assert(!p->busy);
	for (struct view *v = views_first(vs); v; v = v->next)
		n++;
	while (cap < 2 * n)
		cap *= 2;
	if (cap > p->cap) {
		slots = calloc(cap, sizeof(*slots));
		used = calloc(cap / 2, sizeof(*used));
		if (!slots || !used) {
			free(slots);
			free(used);
			return -ENOMEM;
		}
		free(p->slots);
		free(p->used);
		p->slots = slots;
		p->used = used;
		p->cap = cap;
	}
	p->busy = true;
	return 0;
}

static void fanout_set(struct publish *p, const struct view *v,
		       enum view_change change)
{
	size_t i = slot_index(p, v);

	while (p->slots[i].view)
		i = (i + 1) & (p->cap - 1);
	p->slots[i].view = v;
	p->slots[i].change = change;
	p->used[p->nused++] = i;
}

/* Every slot free again; the encodings go with their last queue. */
static void fanout_end(struct publish *p)
{
	for (size_t i = 0; i < p->nused; i++) {
		struct fanout_slot *s = &p->slots[p->used[i]];

		for (size_t j = 0; j < VIEW_ENCODINGS; j++)
			if (s->enc[j])
				outbuf_unref(s->enc[j]);
		memset(s, 0, sizeof(*s));
	}
	p->nused = 0;
	p->busy = false;
}

/* ---- snapshots ---- */

static struct export_viewer client_viewer(const struct client *c)
{
	return (struct export_viewer){.all = c->view->key.all,
				      .uid = c->peer.uid,
				      .pidns = c->peer.ns.pid,
				      .lifecycle = c->lifecycle,
				      .wants_removing = c->wants_removing,
				      .view = c->view};
}

void publish_fill_view(const struct client *c, Rdmad__View *msg)
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
		return client_reply_frame(c, frame, -1);
	for (size_t i = 0; i < n; i++) {
		rdmad__closing__init(&items[i]);
		items[i].uid = behind[i].owner;
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
		return client_reply_frame(c, frame, -1);
	return client_reply_frame(c, &f, -1);
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

static void on_view_change(void *ud, struct view *v, const struct device *dev,
			   enum view_change change)
{
	publish_view_event(ud, v, dev, change);
}

/* Look at a view's devices again: what entered or left goes to its
 * clients. */
static void view_changes(struct server *srv, struct view *v)
{
	if (v->ns)
		nstable_rescan(v->ns);
	view_refresh(v, on_view_change, srv);
}

int publish_snapshot(struct client *c, uint64_t seq)
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
	publish_fill_view(c, &view);
	r = export_view(srv, &viewer, &msgs, &n);
	if (r < 0)
		return r;
	r = wire_split_snapshot(msgs, n, c->view->generation, seq, &view,
				emit_part, c);
	export_table_free(msgs, n);
	return r;
}

int publish_resync(struct client *c)
{
	return publish_snapshot(c, 0);
}

/* ---- events ---- */

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

/* @c's encoding of the event at hand, made on first use. */
static struct outbuf *slot_encoding(struct fanout_slot *s,
				    const struct client *c,
				    const struct view_event *base)
{
	struct export_viewer viewer = client_viewer(c);
	struct outbuf **enc = &s->enc[c->lifecycle | c->wants_removing << 1];
	struct view_event ve = *base;

	ve.change = s->change;
	if (!*enc)
		*enc = encode_event(&ve, c->view, &viewer);
	return *enc;
}

/* Nobody of @v gets this event (NULL: of any view), so they resync. */
static void resync_view(struct server *srv, const struct view *v)
{
	log_warnx("cannot publish an event: subscribers will resync");
	for (struct client *c = srv->clients; c; c = c->next)
		if ((!v || c->view == v) && c->state == CLIENT_STATE_SUBSCRIBED)
			client_drop_events(c);
}

/* Push the event to the subscribers of every view it is for (each
 * view's change set, its generation already published). */
static void fan_out(struct server *srv, const struct view_event *ve)
{
	struct fanout_slot *s;
	struct outbuf *ob;

	for (struct client *c = srv->clients; c; c = c->next) {
		if (!client_hears_events(c))
			continue;
		s = fanout_find(srv->publish, c->view);
		if (!s || s->failed)
			continue;
		ob = slot_encoding(s, c, ve);
		if (!ob) {
			s->failed = true;
			resync_view(srv, c->view);
			continue;
		}
		client_push_event(c, ob);
	}
}

/* A change the table did not make (a view's own): the daemon's
 * generation moves with the view's, so no view ever passes it. */
static void bump_daemon_generation(struct server *srv)
{
	uint64_t gen = devices_bump_generation(srv->table);

	if (srv->opts.note_generation)
		srv->opts.note_generation(srv->opts.userdata, gen);
}

void publish_view_event(struct server *srv, struct view *v,
			const struct device *dev, enum view_change change)
{
	struct view_event ve = {.event = DEVICES_EVENT_CHANGED, .dev = dev};
	int r = fanout_begin(srv->publish, srv->views);

	bump_daemon_generation(srv);
	view_next_generation(v);
	if (r < 0) {
		resync_view(srv, v);
		return;
	}
	fanout_set(srv->publish, v, change);
	fan_out(srv, &ve);
	fanout_end(srv->publish);
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

/* What an event of @table (rdmad's own, or @ve->ns's) is for @v, its
 * membership updated. */
static enum view_change change_for(struct view *v, const struct view_event *ve,
				   const struct devices *table)
{
	if (v->table == table)
		return view_apply(v, ve->dev, ve->event);
	return v->key.all && ve->ns ? VIEW_SEEN : VIEW_UNSEEN;
}

/* An event of @table: the views that may see it move on, then hear it. */
static void table_event(struct server *srv, const struct view_event *ve,
			const struct devices *table)
{
	int r = fanout_begin(srv->publish, srv->views);
	enum view_change change;

	for (struct view *v = views_first(srv->views); v; v = v->next) {
		change = change_for(v, ve, table);
		if (change == VIEW_UNSEEN)
			continue;
		view_next_generation(v);
		if (r == 0)
			fanout_set(srv->publish, v, change);
	}
	if (r == 0) {
		fan_out(srv, ve);
		fanout_end(srv->publish);
	} else {
		resync_view(srv, NULL);
	}
	if (device_going(ve->dev))
		views_forget(srv->views, ve->dev);
}

void publish_device_event(struct server *srv, enum devices_event event,
			  const struct device *dev, const char *old_name)
{
	struct view_event ve = {event, dev, old_name, VIEW_SEEN, NULL, NULL};

	if (nstables_follow(srv, event, dev))
		ve.reason = "netns";
	table_event(srv, &ve, srv->table);
}

void publish_ns_event(void *ud, struct nstable *t, enum devices_event event,
		      const struct device *dev, const char *old_name)
{
	struct server *srv = ud;
	struct view_event ve = {event, dev, old_name, VIEW_SEEN, t, NULL};

	/* Not the table's generation, which nobody sees: the daemon's. */
	bump_daemon_generation(srv);
	table_event(srv, &ve, t->table);
}

void publish_count_views(const struct server *srv, unsigned int *counts)
{
	memset(counts, 0, VIEW_KIND_COUNT * sizeof(*counts));
	for (struct view *v = views_first(srv->views); v; v = v->next)
		counts[view_kind(v)]++;
}

/* ---- the device table's listener ---- */

void publish_table_listener(void *userdata, enum devices_event event,
			    const struct device *dev, const char *old_name)
{
	struct publish_relay *relay = userdata;
	const struct device_record *info = device_info(dev);

	log_debug("devices: %s %s (uverbs '%s', %u MAD nodes)",
		  devices_event_name(event), info->name, info->uverbs,
		  info->nmad_nodes);
	if (relay->note_generation)
		relay->note_generation(relay->userdata,
				       devices_generation(relay->table));
	/* Clients first: what comes after (opening a new device for its
	 * async events) takes milliseconds and they need not wait. */
	if (relay->server)
		publish_device_event(relay->server, event, dev, old_name);
	if (relay->then)
		relay->then(relay->userdata, event, dev);
}
