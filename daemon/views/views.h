/* SPDX-License-Identifier: MIT */
/*
 * Views (PROTOCOL.md, section 8b): which devices a client can use, and
 * the generation of what it sees.
 *
 * Clients with the same key (uid, namespaces, what they said of their
 * place) share one view; root in the host's namespaces and the admin
 * group share the "all" view.  A view keeps its own generation, in a
 * generation page of its own, so that a change nobody in it can see
 * neither bumps its generation nor wakes its clients.  Its counter starts
 * at the daemon's generation when the view is made and moves only when
 * the daemon's does (publish.c moves the daemon's first, then calls
 * view_next_generation()), so it never passes the daemon's: a client that
 * reconnects into a new view never sees its generation go back.
 *
 * What a view is built from: what the kernel says, and what its clients
 * say about themselves (struct view_claim), never files a client
 * controls.  rdmad opens, stats and lists nothing of a client's.
 *  - Sharing: clients share a view only where the kernel says where
 *    they are (peer.known: rdmad may read their namespaces).  Where it
 *    cannot (an unprivileged rdmad, another user's client), a claim
 *    proves nothing, so each connection gets a view of its own: what a
 *    client reports (its nodes, a device it cannot open) changes only
 *    its own connection's view, never that of another container of its
 *    uid that claims the same mount namespace.
 *  - Membership (mount rule): a view that sees every node (rdmad's own
 *    mount namespace, a client whose /dev/infiniband is the kernel's
 *    devtmpfs, or one that said nothing: "unverified") has every device
 *    of its table; any other has the present devices whose uverbs device
 *    number is among the nodes its clients reported (librdmad and rdmactl
 *    list their own /dev/infiniband in Hello, Subscribe and GetStatus).
 *    A lie changes only the views of the liar's own uid.
 *  - Exclusive mode: a client that passed a NETLINK_RDMA socket of
 *    another network namespace sees that namespace's devices, as the
 *    kernel lists them through that socket (nstable.h), with the same
 *    mount rule.
 * A device that is removed or away stays in the views that had it.  The
 * views own no sockets but those tables': publish.c fans events out.
 */
#ifndef RDMAD_VIEWS_H
#define RDMAD_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "devices.h"
#include "genshare.h"
#include "nstable.h"
#include "peer.h"

/* The kernel's RDMA namespace mode (`rdma system set netns`): in
 * EXCLUSIVE mode a device lives in one network namespace, and a client of
 * another one sees that namespace's devices (nstable.h). */
enum views_netns_mode {
	VIEWS_NETNS_UNKNOWN,
	VIEWS_NETNS_SHARED,
	VIEWS_NETNS_EXCLUSIVE,
};

/* "shared", "exclusive", "unknown": as PROTOCOL.md and rdmactl say it. */
static inline const char *views_netns_mode_name(enum views_netns_mode mode)
{
	return mode == VIEWS_NETNS_SHARED      ? "shared"
	       : mode == VIEWS_NETNS_EXCLUSIVE ? "exclusive"
					       : "unknown";
}

struct views;

/* What a client said of its place (PROTOCOL.md 8b Scope), as checked by
 * requests.c.  Nothing here is trusted beyond the client's own view. */
struct view_claim {
	bool reported;	       /* it sent a Scope */
	uint64_t mntns;	       /* its mount namespace, as it says */
	bool devtmpfs;	       /* its /dev/infiniband is the kernel's
				* devtmpfs (rdmad's): every node */
	const uint64_t *nodes; /* scope_devnum() of its nodes */
	size_t nnodes;
	int nl_fd;	       /* a checked NETLINK_RDMA socket, or -1 */
	uint64_t netns_cookie; /* the namespace of nl_fd */
	uint64_t conn;	       /* its connection, unique while it lasts */
};

struct view_key {
	bool all;      /* every device, every holder */
	bool known;    /* ns is the peer's (peer.known) */
	bool reported; /* built from what its clients say */
	bool by_nodes; /* the mount rule, by reported nodes */
	uid_t uid;
	struct peer_ns ns;     /* unknown: mnt is the one it claims */
	uint64_t netns_cookie; /* another namespace's table, or 0 */
	uint64_t conn; /* unknown: the one connection it is for, see above */
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
	bool blind;	       /* exclusive mode, another namespace and no
				* socket to ask through: sees nothing */
	struct nstable *ns;    /* exclusive mode, another network namespace:
				* that namespace's devices */
	struct devices *table; /* the devices it may see */
	bool host;	       /* rdmad's network, PID and mount namespaces */
	uint64_t *nodes;       /* by_nodes: the nodes its clients reported */
	size_t nnodes;
	uint64_t generation;
	struct genshare page;
	const struct device **members; /* when !every_node */
	size_t nmembers, cap;
	struct view_unusable *unusable;
	size_t nunusable, ucap;
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
struct views *views_new(struct devices *table, enum views_netns_mode mode,
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
enum views_netns_mode views_netns_mode(const struct views *vs);

/* The view for @peer, who said @claim (admin: root or the admin group;
 * root in another place than the host's sees what a user there sees);
 * made with its page on first use.  A table made for it dups
 * claim->nl_fd.  NULL: -errno in *ret_err. */
struct view *views_join(struct views *vs, const struct peer *peer, bool admin,
			const struct view_claim *claim, int *ret_err);
void views_leave(struct views *vs, struct view *v);
/* Is @peer in rdmad's own network, PID and mount namespaces? */
bool views_peer_is_host(const struct views *vs, const struct peer *peer);
/* st_dev of rdmad's /dev (the kernel's devtmpfs), as scope_devnum(). */
uint64_t views_devtmpfs(const struct views *vs);
/* rdmad's network namespace cookie (SO_NETNS_COOKIE); 0 if unknown. */
uint64_t views_netns_cookie(const struct views *vs);
/* Iterate. */
struct view *views_first(struct views *vs);

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
/* A client of @v reported its nodes again: 1 when they changed (call
 * view_refresh()), 0, or -ENOMEM (the old ones are kept). */
int view_set_nodes(struct view *v, const uint64_t *nodes, size_t n);

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
	VIEW_KIND_UNVERIFIED, /* nothing known or said: the host's view */
	VIEW_KIND_COUNT,
};
enum view_kind view_kind(const struct view *v);
const char *view_kind_name(enum view_kind kind);

/* The next generation of @v, published in its page before its event
 * goes out. */
uint64_t view_next_generation(struct view *v);

#endif
