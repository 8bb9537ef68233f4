/* SPDX-License-Identifier: MIT */
/*
 * Views (PROTOCOL.md, section 8b): which devices a client can use, and
 * the generation of what it sees.
 *
 * Clients with the same namespaces and uid share one view; root in the
 * host's namespaces and the admin group share the "all" view.  A view
 * keeps its own generation, in a generation page of its own, so that a
 * change nobody in it can see neither bumps its generation nor wakes its
 * clients.  Its counter starts at the daemon's generation when the view is
 * made and moves only when the daemon's does (views_bump() moves both), so
 * it never passes the daemon's: a client that reconnects into a new view
 * never sees its generation go back.
 *
 * Membership: a view that sees every node (rdmad's own mount namespace, or
 * a client rdmad could not look into) has every device of the table; any
 * other has a present device whose uverbs node exists in its mount
 * namespace with the device's number, looked up through a client's
 * /proc/PID/root when the device registers and on its clients' requests
 * (view_looks()).  In the kernel's exclusive RDMA namespace mode a view in
 * another network namespace has none of the table's devices (they are in
 * rdmad's).  A device that is removed or away stays in the views that had
 * it.  The views own no sockets: server.c fans events out.
 *
 * Exclusive mode: a view in another network namespace sees that
 * namespace's devices (nstable.h) instead, with the same mount rule.
 */
#ifndef RDMAD_VIEWS_H
#define RDMAD_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "devices.h"
#include "genshare.h"
#include "netlink.h"
#include "nstable.h"
#include "peer.h"

/* Encodings of one event a view may need: "lifecycle" x "removing". */
#define VIEW_ENCODINGS 4

struct views;

struct view_key {
	bool all;   /* every device, every holder */
	bool known; /* ns is the peer's (peer.known) */
	uid_t uid;
	struct peer_ns ns;
};

struct view_unusable {
	const struct device *dev;
	uint64_t incarnation;
};

struct view {
	struct view *next;
	struct view_key key;
	unsigned int nclients;
	bool every_node;       /* sees every device of the table */
	struct nstable *ns;    /* exclusive mode, another network namespace:
				* that namespace's devices */
	struct devices *table; /* the devices it may see */
	bool host;	       /* rdmad's network, PID and mount namespaces */
	int proc_fd;	       /* /proc/PID of a client in it, or -1 */
	uint64_t generation;
	struct genshare page;
	const struct device **members; /* when !every_node */
	size_t nmembers, cap;
	struct view_unusable *unusable;
	size_t nunusable, ucap;
	/* The fan-out's per-event encodings, one per set of features. */
	void *scratch[VIEW_ENCODINGS]; /* (server.c) */
	int change; /* the fan-out's per-event change (server.c) */
};

/* What an event is for a view. */
enum view_change {
	VIEW_UNSEEN, /* not in the view before or after */
	VIEW_SEEN,   /* in it before and after: the event as it is */
	VIEW_ENTERS, /* ADDED for this view */
	VIEW_LEAVES, /* REMOVED for this view, reason "mount" or "netns" */
};

/* @mode: the kernel's RDMA namespace mode; @ns_fn hears the events of
 * other namespaces' tables (nstable.h).  NULL and errno on failure. */
struct views *views_new(struct devices *table, enum netlink_netns_mode mode,
			nstable_listener_fn ns_fn, void *userdata);
/* Other network namespaces' tables, while they have views, and those
 * left stranded (nstable.h). */
struct nstable *views_nstables(struct views *vs);
/* A table lost its last view: call views_settle() a little later. */
bool views_unsettled(const struct views *vs);
void views_settle(struct views *vs);
/* A device with @identity is back in rdmad's namespace: it is stranded
 * nowhere any more. */
void views_returned(struct views *vs, const char *identity);
void views_free(struct views *vs);
enum netlink_netns_mode views_netns_mode(const struct views *vs);

/* The view for @peer (admin: root in the host's namespaces or the admin
 * group); made with its page on first use.  Takes peer->proc_fd when the
 * view needs one (sets it to -1).  NULL: -errno in *ret_err. */
struct view *views_join(struct views *vs, struct peer *peer, bool admin,
			int *ret_err);
void views_leave(struct views *vs, struct view *v);
/* Is @peer in rdmad's own network, PID and mount namespaces? */
bool views_peer_is_host(const struct views *vs, const struct peer *peer);
/* Iterate. */
struct view *views_first(struct views *vs);

/* Does @v look for a device's node on @event?  When the device
 * registers (ADDED, RETURNED); a container's /dev is looked at again for
 * every device on its clients' Subscribe and GetStatus (view_refresh()),
 * so that a port change costs no system call per view. */
bool view_looks(const struct view *v, enum devices_event event);
/* Where @dev stands in @v after @event; updates the membership. */
enum view_change view_apply(struct view *v, const struct device *dev,
			    enum devices_event event);
/* Check every device again (Subscribe, GetStatus); the changes go to
 * @fn, membership already updated, one call per device that entered or
 * left. */
void view_refresh(struct view *v,
		  void (*fn)(void *ud, struct view *v, const struct device *dev,
			     enum view_change change),
		  void *ud);
bool view_has(const struct view *v, const struct device *dev);
/* The process that stood for the view exited: give it another client's
 * /proc/PID (taken), checked to be in the view's namespaces. */
bool view_needs_proc(const struct view *v);
bool view_offer_proc(struct view *v, struct peer *peer);

/* Flag @dev (this incarnation) unusable in @v: 0, -EALREADY. */
int view_set_unusable(struct view *v, const struct device *dev);
bool view_unusable(const struct view *v, const struct device *dev);
/* A device is freed: forget it everywhere. */
void views_forget(struct views *vs, const struct device *dev);

/* What a view is, for the metrics. */
enum view_kind {
	VIEW_KIND_ALL,	      /* every device, every holder */
	VIEW_KIND_HOST,	      /* rdmad's mount namespace */
	VIEW_KIND_MOUNT,      /* another mount namespace: by its nodes */
	VIEW_KIND_NETNS,      /* exclusive mode, another network namespace */
	VIEW_KIND_UNVERIFIED, /* rdmad could not look: the host's view */
	VIEW_KIND_COUNT,
};
enum view_kind view_kind(const struct view *v);
const char *view_kind_name(enum view_kind kind);

/* The next generation of @v, published in its page before its event
 * goes out. */
uint64_t view_next_generation(struct view *v);

#endif
