/* SPDX-License-Identifier: MIT */
/*
 * The devices of another network namespace (PROTOCOL.md 8b), in the
 * kernel's exclusive RDMA namespace mode, where a device lives in one
 * network namespace and rdmad's sysfs shows only those of its own.  A
 * namespace's own sysfs shows its devices: a container runtime mounts one
 * in the container's network namespace, as `ip netns exec` does, and
 * rdmad reads it through a client's /proc/PID/root/sys with the scanner
 * it uses for its own.  One table per namespace that has clients, made
 * with its first view and freed with its last.
 */
#ifndef RDMAD_NSTABLE_H
#define RDMAD_NSTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "devices.h"
#include "peer.h"

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
	uint64_t netns;
	unsigned int refs;     /* views on it */
	struct devices *table; /* its devices, its own lives */
	int proc_fd;	       /* /proc/PID of a client in it, or -1 */
	/* Its last client went and no process is left in the namespace,
	 * yet its devices did not come back: something (a bind mount, as
	 * `ip netns add` and CNI plugins make) keeps it, and its devices,
	 * out of reach.  Listed for those who see all until they return. */
	bool stranded;
	char pod_uid[PEER_POD_UID_MAX];
};

/* A table for @peer's network namespace, reading its sysfs through
 * @proc_fd (taken); events go to @fn.  NULL: -ENOMEM. */
struct nstable *nstable_new(const struct peer *peer, int proc_fd,
			    nstable_listener_fn fn, void *userdata);
/* Its devices all go (REMOVED events), then it is freed. */
void nstable_free(struct nstable *t);
/* Read the namespace's sysfs again and apply it (events go to the
 * table's listener).  A namespace without an RDMA class directory has no
 * devices.  Returns the number of events, or -errno (the table is kept). */
int nstable_rescan(struct nstable *t);
/* Is any process rdmad may look at in network namespace @netns? */
bool nstable_netns_has_process(uint64_t netns);
/* Is @netns bind-mounted (`ip netns add`, CNI plugins), in rdmad's mount
 * namespace or pid 1's? */
bool nstable_netns_is_mounted(uint64_t netns);
/* @dev of @t is back in rdmad's namespace: drop it (a REMOVED event). */
void nstable_drop(struct nstable *t, const struct device *dev);
/* Is a device with @identity in it? */
const struct device *nstable_find_identity(const struct nstable *t,
					   const char *identity);

#endif
