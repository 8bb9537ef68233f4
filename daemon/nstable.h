/* SPDX-License-Identifier: MIT */
/*
 * The devices of another network namespace (PROTOCOL.md 8b), in the
 * kernel's exclusive RDMA namespace mode, where a device lives in one
 * network namespace and rdmad's sysfs and RDMA netlink show only those
 * of its own.  A client there passes rdmad a NETLINK_RDMA socket made in
 * its namespace; rdmad asks the kernel through it (nlquery.h), never
 * through the client's files.  One table per namespace (by its cookie)
 * that has clients, made with its first view.
 */
#ifndef RDMAD_NSTABLE_H
#define RDMAD_NSTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "devices.h"
#include "peer.h"

/* A namespace has at most this many devices for rdmad (a real one has a
 * few; more are left out, and logged). */
#define NSTABLE_MAX_DEVICES 256

struct nstable;
/* Each event of the table, after the table's own listener contract
 * (devices.h). */
typedef void (*nstable_listener_fn)(void *userdata, struct nstable *t,
				    enum devices_event event,
				    const struct device *dev,
				    const char *old_name);

struct nstable {
	struct nstable *next;
	nstable_listener_fn fn;
	void *userdata;
	uint64_t cookie;       /* SO_NETNS_COOKIE of its namespace */
	uint64_t netns;	       /* its inode, where rdmad knows it; else 0 */
	unsigned int refs;     /* views on it */
	struct devices *table; /* its devices, its own lives */
	int nl_fd;	       /* NETLINK_RDMA socket there, or -1 */
	/* Its last client went while it had devices: nobody is left to ask
	 * through, and its devices did not come back to rdmad's namespace.
	 * Listed as last seen, for those who see all, until they return. */
	bool stranded;
	bool capped; /* had more than NSTABLE_MAX_DEVICES (logged once) */
	char pod_uid[PEER_POD_UID_MAX];
};

/* A table for the namespace of @nl_fd (dup'ed), with @cookie, and, where
 * known, its inode @netns and @pod_uid; events go to @fn.  NULL: -ENOMEM
 * or -EMFILE in errno. */
struct nstable *nstable_new(uint64_t cookie, uint64_t netns,
			    const char *pod_uid, int nl_fd,
			    nstable_listener_fn fn, void *userdata);
/* Its devices all go (REMOVED events), then it is freed. */
void nstable_free(struct nstable *t);
/* Ask the kernel again and apply it (events go to the table's listener).
 * Returns the number of events, or -errno (the table is kept). */
int nstable_rescan(struct nstable *t);
/* Another socket of its namespace, from a newer client (dup'ed): asked
 * through from now on. */
void nstable_take_socket(struct nstable *t, int nl_fd);
/* Nobody is left to ask through: close the socket (which holds the
 * namespace alive). */
void nstable_drop_socket(struct nstable *t);
/* @dev of @t is back in rdmad's namespace: drop it (a REMOVED event). */
void nstable_drop(struct nstable *t, const struct device *dev);
/* Is a device with @identity in it? */
const struct device *nstable_find_identity(const struct nstable *t,
					   const char *identity);

#endif
