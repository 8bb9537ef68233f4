/* SPDX-License-Identifier: MIT */
/*
 * Keeping a device list in step with the daemon: assembling
 * snapshot parts, applying events in generation order, resubscribing on a
 * gap or an unknown event type (which frames do what is proto/follow.c's
 * rule), and queueing what happened for rdmad_client_process() to hand to
 * the callback.  An event does not copy the device list: it is kept
 * aside and folded in, in one pass, when the list is asked for (beyond
 * 64 events, the oldest is folded as each new one comes), so a
 * subscriber pays for its list only when it reads it.  Every
 * function runs with the client's lock held and does no I/O except
 * sending Subscribe (through conn.c); it knows nothing of the client
 * handle or the channel above it.  The list always follows every event
 * type (PROTOCOL.md 8a); what the callback is told depends on the
 * client's features: without lifecycle, the types librdmad 1.0 knew.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "sync.h"

static void clear_parts(struct sync *sync)
{
	wire_assembly_clear(&sync->assembly);
	sync->assembly_bytes = 0;
}

void sync_reset(struct sync *sync)
{
	clear_parts(sync);
	follow_stop(&sync->follow);
	sync->resync_pending = false;
}

void sync_clear_queue(struct sync *sync)
{
	size_t i;

	for (i = 0; i < sync->queue_len; i++) {
		snapshot_device_unref(sync->queue[i].device);
		snapshot_sriov_free(sync->queue[i].sriov);
	}
	free(sync->queue);
	sync->queue = NULL;
	sync->queue_len = 0;
	sync->queue_cap = 0;
}

/* Queue @event, taking its device and sriov (dropped on failure). */
static int queue_event(struct sync *sync, struct client_event event)
{
	struct client_event *queue;
	size_t cap;
	int err = 0;

	/* Nobody to tell: a client used only for snapshots must not grow a
	 * queue that no rdmad_client_process() ever drains. */
	if (!sync->want_events)
		goto drop;
	if (sync->queue_len == sync->queue_cap) {
		cap = sync->queue_cap ? 2 * sync->queue_cap : 16;
		queue = realloc(sync->queue, cap * sizeof(*queue));
		if (!queue) {
			err = -ENOMEM;
			goto drop;
		}
		sync->queue = queue;
		sync->queue_cap = cap;
	}
	sync->queue[sync->queue_len++] = event;
	return 0;
drop:
	snapshot_device_unref(event.device);
	snapshot_sriov_free(event.sriov);
	return err;
}

int sync_queue_event(struct sync *sync, enum rdmad_event_type type,
		     struct rdmad_device *device, uint64_t generation)
{
	return queue_event(sync, (struct client_event){
					 .type = type,
					 .device = device,
					 .generation = generation,
				 });
}

struct client_event *sync_take_queue(struct sync *sync, size_t *ret_n)
{
	struct client_event *events = sync->queue;

	*ret_n = sync->queue_len;
	sync->queue = NULL;
	sync->queue_len = 0;
	sync->queue_cap = 0;
	return events;
}

int sync_subscribe(struct sync *sync, struct conn *conn)
{
	uint64_t seq;
	int err;

	clear_parts(sync);
	err = conn_send_name(conn, RDMAD__FRAME__BODY_SUBSCRIBE, NULL, &seq);
	if (err < 0)
		return err;
	follow_subscribed(&sync->follow, seq);
	sync->resync_pending = true;
	return 0;
}

/* Unfolded events a client keeps at most before it folds them in. */
#define SYNC_MAX_UNFOLDED 64

static void replace_snapshot(struct sync *sync, struct rdmad_snapshot *snap)
{
	rdmad_snapshot_unref(sync->snapshot);
	sync->snapshot = snap;
}

/* Forget the first @n unfolded events. */
static void drop_unfolded(struct sync *sync, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		snapshot_device_unref(sync->unfolded[i].device);
	sync->n_unfolded -= n;
	if (n && sync->n_unfolded)
		memmove(sync->unfolded, sync->unfolded + n,
			sync->n_unfolded * sizeof(*sync->unfolded));
}

void sync_drop_list(struct sync *sync)
{
	drop_unfolded(sync, sync->n_unfolded);
	free(sync->unfolded);
	sync->unfolded = NULL;
	sync->cap_unfolded = 0;
	sync->snapshot = rdmad_snapshot_unref(sync->snapshot);
	sync->follow = (struct follow){0};
}

uint64_t sync_generation(const struct sync *sync)
{
	return sync->follow.generation;
}

/* Fold the oldest @n unfolded events into the snapshot. */
static int fold(struct sync *sync, size_t n)
{
	struct rdmad_snapshot *snap;
	int err;

	if (n == 0)
		return 0;
	err = snapshot_apply_events(sync->snapshot, sync->unfolded, n, &snap);
	if (err < 0)
		return err;
	replace_snapshot(sync, snap);
	drop_unfolded(sync, n);
	return 0;
}

int sync_fold(struct sync *sync)
{
	return fold(sync, sync->n_unfolded);
}

/* Note an applied event; takes a reference on @device. */
static int add_unfolded(struct sync *sync, enum rdmad_event_type type,
			struct rdmad_device *device, uint64_t generation)
{
	struct client_event *grown;
	size_t cap;
	int err;

	/* Past the bound, fold the oldest one only: each event then costs
	 * one copy of the list, as it would without this scheme, instead
	 * of every client paying for 64 at once. */
	if (sync->n_unfolded >= SYNC_MAX_UNFOLDED) {
		err = fold(sync, 1);
		if (err < 0)
			return err;
	}
	if (sync->n_unfolded == sync->cap_unfolded) {
		cap = sync->cap_unfolded ? 2 * sync->cap_unfolded : 4;
		grown = realloc(sync->unfolded, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		sync->unfolded = grown;
		sync->cap_unfolded = cap;
	}
	sync->unfolded[sync->n_unfolded++] = (struct client_event){
		.type = type,
		.device = device ? snapshot_device_ref(device) : NULL,
		.generation = generation,
	};
	follow_applied(&sync->follow, generation);
	return 0;
}

/* The snapshot of the parts: their devices, and the view that every part
 * carries (PROTOCOL.md 8b; none from a daemon before views). */
static struct rdmad_snapshot *assemble(const struct sync *sync)
{
	const struct wire_assembly *a = &sync->assembly;
	struct rdmad_snapshot *snap;

	snap = snapshot_new_from_wire(a->devices, a->n_devices, a->generation,
				      sync->features);
	if (snap && snapshot_set_view(snap, a->frames[0]->snapshot->view) < 0)
		snap = rdmad_snapshot_unref(snap);
	return snap;
}

/* All parts are in: build the snapshot and announce the resync. */
static int complete_snapshot(struct sync *sync)
{
	struct wire_assembly *a = &sync->assembly;
	struct rdmad_snapshot *snap;
	uint64_t generation = a->generation, seq = a->seq;
	bool solicited;

	snap = assemble(sync);
	clear_parts(sync);
	if (!snap)
		return -ENOMEM;
	/* The snapshot contains whatever was unfolded. */
	drop_unfolded(sync, sync->n_unfolded);
	replace_snapshot(sync, snap);
	solicited = follow_snapshot(&sync->follow, seq, generation);
	/* A seq-0 snapshot replaces the list after dropped events. */
	if (!solicited || sync->resync_pending) {
		sync->resync_pending = false;
		return sync_queue_event(sync, RDMAD_EVENT_RESYNC, NULL,
					generation);
	}
	return 0;
}

/* What protobuf-c's malloc() costs a decoded string beyond its bytes. */
#define SYNC_ALLOC_OVERHEAD 32

/*
 * Memory a decoded part takes, bounded from above: its encoding (every
 * string's bytes are in it) plus the structures and an allocation for
 * every string of every device (its 13 string fields, its aliases and
 * changed fields), port (5) and holder (2: comm and pod_uid), and of the
 * view (2).  A part of empty ports is 2 bytes a port on the wire but a
 * few hundred decoded.
 */
static size_t part_cost(const Rdmad__Frame *frame)
{
	const Rdmad__Snapshot *part = frame->snapshot;
	size_t cost, i;

	cost = protobuf_c_message_get_packed_size(&frame->base) +
	       sizeof(*frame) + sizeof(*part) + sizeof(Rdmad__View) +
	       2 * SYNC_ALLOC_OVERHEAD;
	for (i = 0; i < part->n_devices; i++) {
		const Rdmad__Device *d = part->devices[i];

		cost += sizeof(*d) + sizeof(d) +
			(13 + d->n_aliases + d->n_changed) *
				(sizeof(char *) + SYNC_ALLOC_OVERHEAD);
		cost += d->n_ports * (sizeof(Rdmad__Port) + sizeof(void *) +
				      5 * SYNC_ALLOC_OVERHEAD);
		cost += d->n_holders * (sizeof(Rdmad__Holder) + sizeof(void *) +
					2 * SYNC_ALLOC_OVERHEAD);
	}
	return cost;
}

static int handle_part(struct sync *sync, struct conn *conn,
		       Rdmad__Frame *frame)
{
	size_t cost = part_cost(frame);
	int r;

	if (frame->snapshot->part == 0)
		clear_parts(sync);
	/* More than any daemon sends: start over with a fresh snapshot. */
	if (sync->assembly_bytes + cost > SYNC_MAX_SNAPSHOT_BYTES) {
		wire_free(frame);
		return sync_subscribe(sync, conn);
	}
	r = wire_assembly_add(&sync->assembly, frame);
	/* Parts out of order, or more than any daemon sends: the same. */
	if (r == -EPROTO || r == -E2BIG)
		return sync_subscribe(sync, conn);
	if (r < 0) {
		clear_parts(sync);
		return r;
	}
	sync->assembly_bytes += cost;
	if (r == 0)
		return 0;
	return complete_snapshot(sync);
}

/* The public type of a wire event type; false for one newer than this
 * library.  RESYNC (5 in rdmad.h) is no wire type, so from RETURNED on
 * the numbers differ. */
static bool type_from_wire(Rdmad__EventType wire,
			   enum rdmad_event_type *ret_type)
{
	static const enum rdmad_event_type types[] = {
		[RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED] = RDMAD_EVENT_ADDED,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED] = RDMAD_EVENT_REMOVED,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED] = RDMAD_EVENT_CHANGED,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED] = RDMAD_EVENT_RENAMED,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_RELEASED] = RDMAD_EVENT_RELEASED,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED] = RDMAD_EVENT_RETURNED,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_READY] = RDMAD_EVENT_READY,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY] = RDMAD_EVENT_UNREADY,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING] =
			RDMAD_EVENT_EXPECTING,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED] = RDMAD_EVENT_SETTLED,
		[RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING] = RDMAD_EVENT_REMOVING,
	};

	if ((unsigned int)wire >= sizeof(types) / sizeof(types[0]))
		return false;
	*ret_type = types[wire];
	return true;
}

/* What the callback is told of @type: as it is with the feature that
 * brought it, else what the daemon tells its older clients (PROTOCOL.md
 * 8a); false: nothing. */
static bool type_for_callback(enum rdmad_event_type type, unsigned int features,
			      enum rdmad_event_type *ret_type)
{
	*ret_type = type;
	if (type == RDMAD_EVENT_REMOVING &&
	    (features & RDMAD_CLIENT_FEATURE_REMOVING))
		return true;
	if (type == RDMAD_EVENT_REMOVING)
		type = *ret_type = RDMAD_EVENT_UNREADY;
	if (features & RDMAD_CLIENT_FEATURE_LIFECYCLE)
		return true;
	switch (type) {
	case RDMAD_EVENT_ADDED:
	case RDMAD_EVENT_REMOVED:
	case RDMAD_EVENT_CHANGED:
	case RDMAD_EVENT_RENAMED:
	case RDMAD_EVENT_RELEASED:
	case RDMAD_EVENT_RESYNC:
		return true;
	case RDMAD_EVENT_RETURNED:
		*ret_type = RDMAD_EVENT_ADDED;
		return true;
	case RDMAD_EVENT_READY:
	case RDMAD_EVENT_UNREADY:
	case RDMAD_EVENT_REMOVING:
		*ret_type = RDMAD_EVENT_CHANGED;
		return true;
	case RDMAD_EVENT_EXPECTING:
	case RDMAD_EVENT_SETTLED:
		return false;
	}
	return false;
}

/* Tell the callback, if @event is for it; takes its device and sriov. */
static int tell(struct sync *sync, struct client_event event)
{
	if (!type_for_callback(event.type, sync->features, &event.type)) {
		snapshot_device_unref(event.device);
		snapshot_sriov_free(event.sriov);
		return 0;
	}
	return queue_event(sync, event);
}

/* EXPECTING and SETTLED: no device, but a generation of their own. */
static int handle_sriov(struct sync *sync, enum rdmad_event_type type,
			const Rdmad__Event *ev)
{
	struct rdmad_sriov *sriov = snapshot_sriov_new(ev->sriov);
	int err;

	if (!sriov)
		return -ENOMEM;
	err = add_unfolded(sync, type, NULL, ev->generation);
	if (err < 0) {
		snapshot_sriov_free(sriov);
		return err;
	}
	return tell(sync, (struct client_event){.type = type,
						.sriov = sriov,
						.generation = ev->generation});
}

/* The next event (FOLLOW_APPLY): into the list, and to the callback. */
static int apply_event(struct sync *sync, struct conn *conn,
		       const Rdmad__Event *ev)
{
	enum rdmad_event_type type;
	struct rdmad_device *dev;
	int err;

	/* A type the schema has but the table above lacks: as unknown. */
	if (!type_from_wire(ev->type, &type))
		return sync_subscribe(sync, conn);
	if (type == RDMAD_EVENT_EXPECTING || type == RDMAD_EVENT_SETTLED)
		return handle_sriov(sync, type, ev);
	dev = snapshot_device_new(ev->device, sync->features);
	if (!dev)
		return errno == EINVAL ? -EPROTO : -ENOMEM;
	err = add_unfolded(sync, type, dev, ev->generation);
	if (err < 0) {
		snapshot_device_unref(dev);
		return err;
	}
	return tell(sync, (struct client_event){.type = type,
						.device = dev,
						.generation = ev->generation});
}

/* Append @from's queue to ours: the only step that can fail. */
static int take_queue(struct sync *sync, struct sync *from)
{
	struct client_event *queue;
	size_t n = sync->queue_len + from->queue_len;

	if (!sync->queue_len) {
		free(sync->queue);
		sync->queue = sync_take_queue(from, &sync->queue_len);
		sync->queue_cap = sync->queue_len;
		return 0;
	}
	if (n > sync->queue_cap) {
		queue = reallocarray(sync->queue, n, sizeof(*queue));
		if (!queue)
			return -ENOMEM;
		sync->queue = queue;
		sync->queue_cap = n;
	}
	memcpy(sync->queue + sync->queue_len, from->queue,
	       from->queue_len * sizeof(*sync->queue));
	sync->queue_len = n;
	free(from->queue);
	from->queue = NULL;
	from->queue_len = 0;
	from->queue_cap = 0;
	return 0;
}

int sync_adopt(struct sync *sync, struct sync *from)
{
	int err = take_queue(sync, from);

	if (err < 0)
		return err;
	sync_reset(sync);
	sync_drop_list(sync);
	sync->snapshot = from->snapshot;
	sync->unfolded = from->unfolded;
	sync->n_unfolded = from->n_unfolded;
	sync->cap_unfolded = from->cap_unfolded;
	sync->follow = from->follow;
	sync->resync_pending = from->resync_pending;
	sync->assembly = from->assembly;
	sync->assembly_bytes = from->assembly_bytes;
	*from = (struct sync){.want_events = from->want_events,
			      .features = from->features};
	return 0;
}

/* The daemon refused to subscribe us: give up this link. */
static int refused(Rdmad__Frame *frame)
{
	int err = wire_errno_from_status(frame->status);

	wire_free(frame);
	return err < 0 ? err : -EPROTO;
}

int sync_handle_frame(struct sync *sync, struct conn *conn, Rdmad__Frame *frame)
{
	int err = 0;

	switch (follow_frame(&sync->follow, frame)) {
	case FOLLOW_REFUSED:
		return refused(frame);
	case FOLLOW_PART:
		return handle_part(sync, conn, frame);
	case FOLLOW_APPLY:
		err = apply_event(sync, conn, frame->event);
		break;
	case FOLLOW_RESYNC:
		err = sync_subscribe(sync, conn);
		break;
	case FOLLOW_SKIP:
	case FOLLOW_IGNORE:
		/* Already in the list, or a late reply to a request that
		 * timed out. */
		break;
	}
	wire_free(frame);
	return err;
}
