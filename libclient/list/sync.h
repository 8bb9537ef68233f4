/* SPDX-License-Identifier: MIT */
/*
 * Keeping a device list in step with the daemon (sync.c): the snapshot,
 * the events not yet folded into it, the snapshot parts being assembled,
 * and the queue of events for the callback.  Below the channel: it calls
 * only snapshot.c, conn.c (to send Subscribe) and proto's follower,
 * which decides what each frame means.  Not installed.
 */
#ifndef RDMAD_SYNC_H
#define RDMAD_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "follow.h"
#include "snapshot.h"
#include "wire.h"

struct conn;

/* All zeroes is an empty list, subscribed to nothing. */
struct sync {
	/* The device list is @snapshot plus the events in @unfolded, oldest
	 * first: an event costs no copy of the list until someone asks for
	 * it (sync_fold()). */
	struct rdmad_snapshot *snapshot;
	struct client_event *unfolded;
	size_t n_unfolded;
	size_t cap_unfolded;
	/* Which frames apply, and the list's generation (proto/follow.h). */
	struct follow follow;
	bool resync_pending;
	struct wire_assembly assembly; /* snapshot parts so far */
	size_t assembly_bytes;	       /* what they take, as part_cost() */

	/* Events for the callback; none are queued unless @want_events.
	 * @features (enum rdmad_client_feature) say which types and states
	 * the callback and the devices show; the list follows the same
	 * rules either way. */
	bool want_events;
	unsigned int features;
	struct client_event *queue;
	size_t queue_len;
	size_t queue_cap;
};

/* Memory the parts of one snapshot may take in all (their bytes on the
 * wire, then decoded): far above what a daemon with 8,192 devices sends,
 * and what a peer that sends parts without end can make us keep. */
#define SYNC_MAX_SNAPSHOT_BYTES ((size_t)64 << 20)

/* Handle one frame that is not the reply awaited; takes @frame.  Sends
 * Subscribe on @conn when the list must be fetched again. */
int sync_handle_frame(struct sync *sync, struct conn *conn,
		      Rdmad__Frame *frame);
/* Ask for a fresh snapshot on @conn. */
int sync_subscribe(struct sync *sync, struct conn *conn);
/* Queue an event for the callback, taking @device's reference. */
int sync_queue_event(struct sync *sync, enum rdmad_event_type type,
		     struct rdmad_device *device, uint64_t generation);
/* Take @from's list, subscription and parts (dropping ours) and append
 * its queue to ours; @from is left empty.  0 or -ENOMEM (nothing moved). */
int sync_adopt(struct sync *sync, struct sync *from);
/* Forget the subscription and any half-read snapshot. */
void sync_reset(struct sync *sync);
void sync_clear_queue(struct sync *sync);
/* Hand over the queued events (the caller frees the array, unrefs their
 * devices and frees their sriov); *ret_n is how many. */
struct client_event *sync_take_queue(struct sync *sync, size_t *ret_n);
/* The generation of the device list, 0 before the first snapshot. */
uint64_t sync_generation(const struct sync *sync);
/* Apply the unfolded events to @sync->snapshot; 0 or -ENOMEM. */
int sync_fold(struct sync *sync);
/* Drop the list: the snapshot and the unfolded events. */
void sync_drop_list(struct sync *sync);

#endif
