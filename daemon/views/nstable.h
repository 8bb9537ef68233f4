/* SPDX-License-Identifier: MIT */
/*
 * The devices of another network namespace (PROTOCOL.md 8b), in the
 * kernel's exclusive RDMA namespace mode, where a device lives in one
 * network namespace and rdmad's sysfs and RDMA netlink show only those
 * of its own.  A client there passes rdmad a NETLINK_RDMA socket made in
 * its namespace; rdmad asks the kernel through it (nlquery.h), never
 * through the client's files.  One table per namespace (by its cookie)
 * that has clients, made with its first view.
 *
 * The sockets are lent: their clients keep a copy and can fill them with
 * junk.  So a table keeps a few, from clients of different uids, and asks
 * through one at a time; one that does not carry the kernel's answer back
 * is closed and the next one asked (the rule is in nstable.c).
 */
#ifndef RDMAD_NSTABLE_H
#define RDMAD_NSTABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "devices.h"
#include "peer.h"

/* A namespace has at most this many devices for rdmad (a real one has a
 * few; more are left out, and logged). */
#define NSTABLE_MAX_DEVICES 256
/* Sockets a table keeps, one per uid: a rescan asks at most this many. */
#define NSTABLE_MAX_SOCKETS 4

struct nstable;
/* Each event of the table, after the table's own listener contract
 * (devices.h). */
typedef void (*nstable_listener_fn)(void *userdata, struct nstable *t,
				    enum devices_event event,
				    const struct device *dev,
				    const char *old_name);

struct nstable_socket {
	int fd;	   /* a NETLINK_RDMA socket of the namespace, our dup */
	uid_t uid; /* of the client that lent it; (uid_t)-1 if not known */
};

struct nstable {
	struct nstable *next;
	nstable_listener_fn fn;
	void *userdata;
	uint64_t cookie;       /* SO_NETNS_COOKIE of its namespace */
	uint64_t netns;	       /* its inode, where rdmad knows it; else 0 */
	unsigned int refs;     /* views on it */
	struct devices *table; /* its devices, its own lives */
	/* The sockets to ask through, in the order asked; nl_fd is the
	 * first one's, or -1 when there is none. */
	struct nstable_socket socks[NSTABLE_MAX_SOCKETS];
	unsigned int nsocks;
	int nl_fd;
	/* Its last client went while it had devices: nobody is left to ask
	 * through, and its devices did not come back to rdmad's namespace.
	 * Listed as last seen, for those who see all, until they return. */
	bool stranded;
	bool capped; /* had more than NSTABLE_MAX_DEVICES (logged once) */
	char pod_uid[PEER_POD_UID_MAX];
};

/* A table for the namespace of @nl_fd (dup'ed), lent by a client of
 * @uid, with @cookie, and, where known, its inode @netns and @pod_uid;
 * events go to @fn.  Not asked yet.  NULL: -ENOMEM or -EMFILE in
 * errno. */
struct nstable *nstable_new(uint64_t cookie, uint64_t netns,
			    const char *pod_uid, int nl_fd, uid_t uid,
			    nstable_listener_fn fn, void *userdata);
/* Its devices all go (REMOVED events), then it is freed. */
void nstable_free(struct nstable *t);
/* Ask the kernel again and apply it (events go to the table's listener).
 * A socket that gives junk instead of the answer is closed, and the next
 * one asked.  Returns the number of events, or -errno (the table is
 * kept; -ESRCH: no socket is left to ask through). */
int nstable_rescan(struct nstable *t);
/* A socket of its namespace, lent by a client of @uid: kept (dup'ed) if
 * the rule in nstable.c takes it.  1 if kept, 0 if not, or -errno. */
int nstable_add_socket(struct nstable *t, int nl_fd, uid_t uid);
/* A socket of its namespace from a client whose uid is not known (dup'ed):
 * asked through first from now on. */
void nstable_take_socket(struct nstable *t, int nl_fd);
/* Nobody is left to ask through: close its sockets (which hold the
 * namespace alive). */
void nstable_drop_socket(struct nstable *t);
/* @dev of @t is back in rdmad's namespace: drop it (a REMOVED event). */
void nstable_drop(struct nstable *t, const struct device *dev);
/* Is a device with @identity in it? */
const struct device *nstable_find_identity(const struct nstable *t,
					   const char *identity);

#endif
