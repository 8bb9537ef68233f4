/* SPDX-License-Identifier: MIT */
/*
 * The device table: refcounted device objects keyed by a stable identity
 * (device_record.id), not by name.  Event sources feed it scans; it decides
 * what changed, bumps the generation and tells one listener.  It owns no
 * file descriptors and does no I/O, so it is tested on its own.
 *
 * References a device has: being present, each client hold, and internal
 * ones (the daemon's own open verbs context).  A device that is unplugged
 * while held stays listed with state REMOVED and its holders; when the
 * last reference goes it is dropped with a RELEASED event.
 *
 * Lives (PROTOCOL.md, "A device's lives").  The id is the identity; each
 * registration of it by the kernel (device_record.reg_key) is a new
 * incarnation.  An identity seen before (listed, or remembered in the
 * table's struct lives) that registers anew is RETURNED, not ADDED, and a
 * present device whose registration changed under it ends its life first
 * (REMOVED), so holds never move to a new registration unseen.  A device
 * that goes while it has a grace period (devices_set_grace()) is AWAY
 * until its deadline: it keeps its holds, and comes back RETURNED if the
 * identity registers again in time; devices_expire() ends it otherwise.
 * Readiness is computed here from the scan; READY and UNREADY say when it
 * flips on a listed device.
 *
 * Removing.  The kernel unregisters a device in steps (drivers/infiniband/
 * core/device.c __ib_unregister_device()): its clients go first, ib_uverbs
 * among them, which deletes the uverbs node and then, for a driver without
 * disassociate_ucontext (rxe, siw), waits for every open context; only then
 * do RDMA netlink's UNREGISTER, the detaching of its netdevs, its ports and
 * its sysfs directory follow.  The uverbs node going is thus the first and
 * only sign before that wait: devices_uverbs_gone() marks the device
 * REMOVING (present, not ready) at once, and what scans see of it while it
 * is torn down changes nothing until it is gone (REMOVED) or its uverbs
 * comes back (ib_uverbs reloaded: READY again under the same uverbs number;
 * under another, record_same_registration() makes it a new life).
 */
#ifndef RDMAD_DEVICES_H
#define RDMAD_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "alias.h"
#include "peer.h"
#include "sysfs.h"

struct devices;
struct device;

/*
 * What clients see of a device's life: the "state" of rdmactl's JSON and
 * of the protocol's Device.  The life itself (enum device_life, private to
 * devices.c, its transition table at its top) has more: READY, UNREADY
 * and REMOVING are all PRESENT here (device_ready() and the REMOVING event
 * tell them apart), AWAY is AWAY, REMOVED is REMOVED; a GONE device is
 * not listed at all.
 */
enum device_state {
	DEVICE_STATE_PRESENT,
	DEVICE_STATE_REMOVED,
	DEVICE_STATE_AWAY,
};

enum devices_event {
	DEVICES_EVENT_ADDED,
	DEVICES_EVENT_REMOVED, /* also: went AWAY */
	DEVICES_EVENT_CHANGED,
	DEVICES_EVENT_RENAMED,
	DEVICES_EVENT_RELEASED,
	DEVICES_EVENT_RETURNED,
	DEVICES_EVENT_READY,
	DEVICES_EVENT_UNREADY,
	/* @dev is the PF; device_sriov() says how many VFs. */
	DEVICES_EVENT_EXPECTING, /* its sriov_numvfs went up */
	DEVICES_EVENT_SETTLED,	 /* those VFs are ready, or time is up */
	/* The kernel began to unregister @dev (its uverbs node went):
	 * contexts on it must close now, for drivers without
	 * disassociate_ucontext wait for every one before REMOVED. */
	DEVICES_EVENT_REMOVING,
};
#define DEVICES_EVENT_COUNT (DEVICES_EVENT_REMOVING + 1)

struct holder {
	const void *owner; /* the client connection; identity of the hold */
	pid_t pid;	   /* in rdmad's PID namespace */
	uid_t uid;
	char comm[16];
	/* Where it runs (peer.h): its pid in its own PID namespace, its
	 * namespaces (0: unknown) and pod. */
	pid_t ns_pid;
	struct peer_ns ns;
	char pod_uid[PEER_POD_UID_MAX];
};

/*
 * Called after each visible change, with the generation already bumped.
 * It must not change the table's devices; it may bump the generation
 * (devices.c says why).  @old_name is set for RENAMED.  For REMOVED of
 * an unheld device and for RELEASED, @dev is freed right after the call
 * returns.
 */
typedef void (*devices_listener_fn)(void *userdata, enum devices_event event,
				    const struct device *dev,
				    const char *old_name);

/* "added", "removed", ...: the name logs, metrics and tests use. */
const char *devices_event_name(enum devices_event event);

/* @generation: the last generation published; the next change is +1. */
struct devices *devices_new(uint64_t generation);
void devices_free(struct devices *table);
/* The identity memory (lives.h), to load and save. */
struct lives *devices_lives(struct devices *table);
/* Grace periods, in ms: for VFs (device_record.vf) and for the rest;
 * 0 (the default) removes at once.  @now_ms: CLOCK_REALTIME in ms, NULL
 * for the real clock (tests pass their own). */
void devices_set_grace(struct devices *table, uint64_t vf_ms, uint64_t other_ms,
		       uint64_t (*now_ms)(void));
/* Rules before those defaults, the first match wins (copied).  -ENOMEM. */
int devices_set_grace_rules(struct devices *table,
			    const struct grace_rule *rules, size_t n);
/* How long a PF's announced VFs may take to be ready (default 120 s). */
void devices_set_sriov_settle(struct devices *table, uint64_t ms);
/* The table's clock (devices_set_grace()): CLOCK_REALTIME in ms. */
uint64_t devices_now_ms(const struct devices *table);
/* End AWAY devices whose deadline passed, and SR-IOV waits that timed
 * out; returns the events.  The earliest deadline still pending is in
 * *ret_next (0: none). */
int devices_expire(struct devices *table, uint64_t *ret_next);
/* The [alias] rules (copied); aliases are assigned again at once, with a
 * CHANGED for each device whose aliases changed.  -ENOMEM. */
int devices_set_aliases(struct devices *table, const struct alias_rule *rules,
			size_t n);
void devices_set_listener(struct devices *table, devices_listener_fn fn,
			  void *userdata);

/* Apply a full scan (ownership of each entry's ports moves to the table;
 * the array itself stays the caller's).  Adds, changes, renames and
 * removes as needed.  Returns the number of events, or -errno. */
int devices_apply_scan(struct devices *table, struct device_record *scan,
		       size_t n);
/* Apply one device's rescan: @info NULL means @name is gone. */
int devices_apply_one(struct devices *table, const char *name,
		      struct device_record *info);
/* The kernel removed uverbs char device @uverbs ("uverbs0"): the present
 * device that had it is REMOVING.  Returns the number of events (0: no
 * such device, or already removing). */
int devices_uverbs_gone(struct devices *table, const char *uverbs);
/* A netdev went up/down (rtnetlink): updates every port it backs. */
int devices_set_netdev_state(struct devices *table, const char *ifname,
			     bool up);
/* A netdev was deleted or renamed away: its ports go down, its name is
 * forgotten.  Returns the number of events. */
int devices_netdev_gone(struct devices *table, const char *ifname);

/* -ENODEV unknown or removed name, -EALREADY if @h->owner holds it. */
int devices_hold(struct devices *table, const char *name,
		 const struct holder *h);
/* -ENODEV unknown name, -ENOENT not held by @owner. */
int devices_release(struct devices *table, const char *name, const void *owner);
/* A client went away: drop every hold it had. */
void devices_release_owner(struct devices *table, const void *owner);
/* Internal references (not listed as holders). */
struct device *device_ref(struct device *dev);
void device_unref(struct devices *table, struct device *dev);

uint64_t devices_generation(const struct devices *table);
/* A change outside the table (a view's own, views.h): the generation
 * moves on, no event.  Returns the new generation. */
uint64_t devices_bump_generation(struct devices *table);
size_t devices_count(const struct devices *table);
/* Iterate in a stable order (name); NULL at the end. */
const struct device *devices_first(const struct devices *table);
const struct device *devices_next(const struct devices *table,
				  const struct device *dev);
/* The present or away device of @identity (device_record.id), or NULL. */
const struct device *devices_find_identity(const struct devices *table,
					   const char *identity);
const struct device *devices_find(const struct devices *table,
				  const char *name);

const struct device_record *device_info(const struct device *dev);
enum device_state device_state(const struct device *dev);
uint64_t device_generation(const struct device *dev);
uint64_t device_incarnation(const struct device *dev);
bool device_ready(const struct device *dev);
/* Present, and the kernel is unregistering it (DEVICES_EVENT_REMOVING). */
bool device_removing(const struct device *dev);
/* Inside the listener: @dev is freed when the call returns. */
bool device_going(const struct device *dev);
/* AWAY: CLOCK_REALTIME ms by which it may return; else 0. */
uint64_t device_away_deadline(const struct device *dev);
/* The earliest deadline @dev waits for (AWAY, or a PF's VFs); 0: none. */
uint64_t device_deadline(const struct device *dev);
/* RETURNED: the life_field bits (lives.h) unlike its last life. */
unsigned int device_changed(const struct device *dev);
size_t device_alias_count(const struct device *dev);
const char *device_alias(const struct device *dev, size_t index);
/* A PF: the VFs announced and those ready (EXPECTING, SETTLED). */
void device_sriov(const struct device *dev, unsigned int *ret_expected,
		  unsigned int *ret_ready);
size_t device_holder_count(const struct device *dev);
const struct holder *device_holder(const struct device *dev, size_t index);

#endif
