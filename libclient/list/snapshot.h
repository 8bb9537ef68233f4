/* SPDX-License-Identifier: MIT */
/*
 * Snapshots (snapshot.c): the structs behind the opaque public device and
 * snapshot handles, building them from the daemon's Device messages, and
 * the next snapshot after one event or several.  The lowest layer of the
 * client: it calls no other libclient module.  Not installed.
 */
#ifndef RDMAD_SNAPSHOT_H
#define RDMAD_SNAPSHOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdmad.h"
#include "wire.h"

#include "export.h"

struct rdmad_port {
	unsigned int number;
	const char *state;
	const char *phys_state;
	const char *link_layer;
	const char *rate;
	const char *netdev;
	int netdev_up; /* 1 up, 0 down, -1 not known */
	unsigned int lid;
};

/* The namespaces are sent only to a viewer that sees all (PROTOCOL.md
 * 8b); 0 and "" otherwise. */
struct rdmad_holder {
	pid_t pid;
	uid_t uid;
	const char *comm;
	uint64_t pidns;
	uint64_t netns;
	uint64_t mntns;
	const char *pod_uid;
};

/* One allocation: this header, the ports, the holders, the alias and
 * changed-field pointers, then the strings. */
struct rdmad_device {
	atomic_uint refs;
	enum rdmad_device_state state; /* as the client's features show it */
	bool away;		       /* the daemon said AWAY */
	bool removing;		       /* the kernel is unregistering it */
	bool ready;		       /* present and usable */
	bool unusable; /* a client of this view could not open it (8b) */
	int numa_node;
	uint64_t generation;
	uint64_t incarnation; /* 0: a daemon before lifecycle */
	uint64_t away_deadline;
	const char *identity; /* the daemon's, else the id */
	const char *sriov_pf;
	const char *name;
	const char *old_name;
	const char *id;
	const char *uverbs;
	const char *node_guid;
	const char *sys_image_guid;
	const char *node_type;
	const char *fw_ver;
	const char *pci_address;
	const char *driver;
	const char *reason; /* why it left this view: "mount", "netns"; "" */
	unsigned int n_ports;
	unsigned int n_holders;	   /* listed: at most WIRE_MAX_HOLDERS_LISTED */
	unsigned int holder_count; /* all of them */
	unsigned int n_aliases;
	unsigned int n_changed;
	struct rdmad_port *ports;
	struct rdmad_holder *holders;
	const char **aliases;
	const char **changed;
};

/* What the daemon says this client sees (PROTOCOL.md 8b): one
 * allocation, its strings after it, shared by the snapshots that follow
 * one another through events (an event carries no view). */
struct rdmad_view {
	atomic_uint refs;
	uint64_t netns;
	uint64_t mntns;
	uint64_t pidns;
	const char *pod_uid;
	const char *netns_mode;
	bool all;
	bool verified;
	bool host;
};

/* The devices, then the ready set: @ready points into the same
 * allocation, just past room for every device. */
struct rdmad_snapshot {
	atomic_uint refs;
	uint64_t generation;
	struct rdmad_view *view; /* NULL: a daemon before views sent none */
	size_t count;
	size_t n_ready;
	struct rdmad_device **ready;
	struct rdmad_device *devices[];
};

/* EXPECTING and SETTLED: one allocation, the PF's address after it. */
struct rdmad_sriov {
	const char *pf;
	unsigned int expected;
	unsigned int ready;
};

/* One change to the device list, as the daemon announced it. */
struct client_event {
	enum rdmad_event_type type;
	struct rdmad_device *device; /* NULL for RESYNC, EXPECTING, SETTLED */
	struct rdmad_sriov *sriov; /* EXPECTING and SETTLED, for the callback */
	uint64_t generation;
};

/* A device built from a wire message (all strings copied), its state as a
 * client with @features (enum rdmad_client_feature) sees it; NULL on
 * ENOMEM or a message without a name (errno EINVAL). */
struct rdmad_device *snapshot_device_new(const Rdmad__Device *msg,
					 unsigned int features);
struct rdmad_device *snapshot_device_ref(struct rdmad_device *device);
void snapshot_device_unref(struct rdmad_device *device);

/* A snapshot of the devices of the snapshot parts @msgs (in order). */
struct rdmad_snapshot *snapshot_new_from_wire(Rdmad__Device *const *msgs,
					      size_t n, uint64_t generation,
					      unsigned int features);

/* Give @snap, just built and not yet shared, the view of its parts
 * (@msg NULL: none).  0 or -ENOMEM. */
int snapshot_set_view(struct rdmad_snapshot *snap, const Rdmad__View *msg);

/* An Event.sriov copied (an absent one reads as empty); NULL on ENOMEM. */
struct rdmad_sriov *snapshot_sriov_new(const Rdmad__Sriov *msg);
void snapshot_sriov_free(struct rdmad_sriov *sriov);

/*
 * The snapshot that follows @old after one event (PROTOCOL.md 8a): @device
 * (a reference is taken) replaces the entry of the same life (identity
 * and incarnation; from a daemon before lifecycle the same id, else the
 * same name, or old_name for RENAMED), or for RETURNED the AWAY entry of
 * its identity; is appended if new; or the entry is dropped (RELEASED,
 * or REMOVED of a device neither held nor AWAY).  An event without a
 * device (EXPECTING, SETTLED) changes only the generation.  @old may be
 * NULL.  The result keeps @old's view.
 */
int snapshot_apply_event(const struct rdmad_snapshot *old,
			 enum rdmad_event_type type,
			 struct rdmad_device *device, uint64_t generation,
			 struct rdmad_snapshot **ret_snapshot);
/* The same for @n events in order, in one pass and one allocation; the
 * result has the generation of the last event (@old's if @n is 0). */
int snapshot_apply_events(const struct rdmad_snapshot *old,
			  const struct client_event *events, size_t n,
			  struct rdmad_snapshot **ret_snapshot);

#endif
