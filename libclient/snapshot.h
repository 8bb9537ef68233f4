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
	int netdev_up;
	unsigned int lid;
};

struct rdmad_holder {
	pid_t pid;
	uid_t uid;
	const char *comm;
};

/* One allocation: this header, the ports, the holders, then the strings. */
struct rdmad_device {
	atomic_uint refs;
	enum rdmad_device_state state;
	int numa_node;
	uint64_t generation;
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
	unsigned int n_ports;
	unsigned int n_holders;	   /* listed: at most WIRE_MAX_HOLDERS_LISTED */
	unsigned int holder_count; /* all of them */
	struct rdmad_port *ports;
	struct rdmad_holder *holders;
};

struct rdmad_snapshot {
	atomic_uint refs;
	uint64_t generation;
	size_t count;
	struct rdmad_device *devices[];
};

/* One change to the device list, as the daemon announced it. */
struct client_event {
	enum rdmad_event_type type;
	struct rdmad_device *device; /* NULL for RESYNC */
	uint64_t generation;
};

/* A device built from a wire message (all strings copied); NULL on ENOMEM
 * or a message without a name (errno EINVAL). */
struct rdmad_device *snapshot_device_new(const Rdmad__Device *msg);
struct rdmad_device *snapshot_device_ref(struct rdmad_device *device);
void snapshot_device_unref(struct rdmad_device *device);

/* A snapshot of the devices of the snapshot parts @msgs (in order). */
struct rdmad_snapshot *snapshot_new_from_wire(Rdmad__Device *const *msgs,
					      size_t n, uint64_t generation);

/*
 * The snapshot that follows @old after one event: @device (a reference is
 * taken) replaces the entry with the same id (else the same name, or
 * old_name for RENAMED), is appended if new, or the entry is dropped
 * (RELEASED, or REMOVED of a device nobody holds).  @old may be NULL.
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
