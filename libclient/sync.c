/* SPDX-License-Identifier: MIT */
/*
 * Keeping a client's device list in step with the daemon: assembling
 * snapshot parts, applying events in generation order, resubscribing on a
 * gap, and queueing what happened for rdmad_client_process() to hand to
 * the callback.  An event does not copy the device list: it is kept
 * aside and folded in, in one pass, when the list is asked for (beyond
 * 64 events, the oldest is folded as each new one comes), so a
 * subscriber pays for its list only when it reads it.  Every
 * function runs with the client's lock held and does no I/O except
 * sending Subscribe.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"

static void clear_parts(struct rdmad_client *client)
{
	wire_assembly_clear(&client->assembly);
}

void sync_reset(struct rdmad_client *client)
{
	clear_parts(client);
	client->subscribe_seq = 0;
	client->awaiting_snapshot = false;
	client->resync_pending = false;
}

void sync_clear_queue(struct rdmad_client *client)
{
	size_t i;

	for (i = 0; i < client->queue_len; i++)
		snapshot_device_unref(client->queue[i].device);
	free(client->queue);
	client->queue = NULL;
	client->queue_len = 0;
	client->queue_cap = 0;
}

int sync_queue_event(struct rdmad_client *client, enum rdmad_event_type type,
		     struct rdmad_device *device, uint64_t generation)
{
	struct client_event *queue;
	size_t cap;

	/* Nobody to tell: a client used only for snapshots must not grow a
	 * queue that no rdmad_client_process() ever drains. */
	if (!client->cb) {
		snapshot_device_unref(device);
		return 0;
	}
	if (client->queue_len == client->queue_cap) {
		cap = client->queue_cap ? 2 * client->queue_cap : 16;
		queue = realloc(client->queue, cap * sizeof(*queue));
		if (!queue) {
			snapshot_device_unref(device);
			return -ENOMEM;
		}
		client->queue = queue;
		client->queue_cap = cap;
	}
	client->queue[client->queue_len++] = (struct client_event){
		.type = type,
		.device = device,
		.generation = generation,
	};
	return 0;
}

int sync_subscribe(struct rdmad_client *client)
{
	uint64_t seq;
	int err;

	clear_parts(client);
	err = conn_send_name(&client->conn, RDMAD__FRAME__BODY_SUBSCRIBE, NULL,
			     &seq);
	if (err < 0)
		return err;
	client->subscribe_seq = seq;
	client->awaiting_snapshot = true;
	client->resync_pending = true;
	return 0;
}

/* Unfolded events a client keeps at most before it folds them in. */
#define SYNC_MAX_UNFOLDED 64

static void replace_snapshot(struct rdmad_client *client,
			     struct rdmad_snapshot *snap)
{
	rdmad_snapshot_unref(client->snapshot);
	client->snapshot = snap;
}

/* Forget the first @n unfolded events. */
static void drop_unfolded(struct rdmad_client *client, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		snapshot_device_unref(client->unfolded[i].device);
	client->n_unfolded -= n;
	if (n && client->n_unfolded)
		memmove(client->unfolded, client->unfolded + n,
			client->n_unfolded * sizeof(*client->unfolded));
}

void sync_drop_list(struct rdmad_client *client)
{
	drop_unfolded(client, client->n_unfolded);
	free(client->unfolded);
	client->unfolded = NULL;
	client->cap_unfolded = 0;
	client->snapshot = rdmad_snapshot_unref(client->snapshot);
}

uint64_t sync_generation(const struct rdmad_client *client)
{
	if (client->n_unfolded)
		return client->unfolded[client->n_unfolded - 1].generation;
	return client->snapshot ? client->snapshot->generation : 0;
}

/* Fold the oldest @n unfolded events into the snapshot. */
static int fold(struct rdmad_client *client, size_t n)
{
	struct rdmad_snapshot *snap;
	int err;

	if (n == 0)
		return 0;
	err = snapshot_apply_events(client->snapshot, client->unfolded, n,
				    &snap);
	if (err < 0)
		return err;
	replace_snapshot(client, snap);
	drop_unfolded(client, n);
	return 0;
}

int sync_fold(struct rdmad_client *client)
{
	return fold(client, client->n_unfolded);
}

/* Note an applied event; takes a reference on @device. */
static int add_unfolded(struct rdmad_client *client, enum rdmad_event_type type,
			struct rdmad_device *device, uint64_t generation)
{
	struct client_event *grown;
	size_t cap;
	int err;

	/* Past the bound, fold the oldest one only: each event then costs
	 * one copy of the list, as it would without this scheme, instead
	 * of every client paying for 64 at once. */
	if (client->n_unfolded >= SYNC_MAX_UNFOLDED) {
		err = fold(client, 1);
		if (err < 0)
			return err;
	}
	if (client->n_unfolded == client->cap_unfolded) {
		cap = client->cap_unfolded ? 2 * client->cap_unfolded : 4;
		grown = realloc(client->unfolded, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		client->unfolded = grown;
		client->cap_unfolded = cap;
	}
	client->unfolded[client->n_unfolded++] = (struct client_event){
		.type = type,
		.device = snapshot_device_ref(device),
		.generation = generation,
	};
	return 0;
}

/* All parts are in: build the snapshot and announce the resync. */
static int complete_snapshot(struct rdmad_client *client)
{
	struct wire_assembly *a = &client->assembly;
	struct rdmad_snapshot *snap;
	uint64_t generation = a->generation;
	bool solicited = a->seq == client->subscribe_seq;

	snap = snapshot_new_from_wire(a->devices, a->n_devices, generation);
	clear_parts(client);
	if (!snap)
		return -ENOMEM;
	/* The snapshot contains whatever was unfolded. */
	drop_unfolded(client, client->n_unfolded);
	replace_snapshot(client, snap);
	if (solicited)
		client->awaiting_snapshot = false;
	/* A seq-0 snapshot replaces the list after dropped events. */
	if (!solicited || client->resync_pending) {
		client->resync_pending = false;
		return sync_queue_event(client, RDMAD_EVENT_RESYNC, NULL,
					generation);
	}
	return 0;
}

static int handle_part(struct rdmad_client *client, Rdmad__Frame *frame)
{
	int r = wire_assembly_add(&client->assembly, frame);

	/* Parts out of order, or more than any daemon sends: start over
	 * with a fresh snapshot. */
	if (r == -EPROTO || r == -E2BIG)
		return sync_subscribe(client);
	if (r <= 0)
		return r;
	return complete_snapshot(client);
}

static int handle_event(struct rdmad_client *client, const Rdmad__Event *ev)
{
	struct rdmad_device *dev;
	uint64_t last;
	int err;

	/* Events before the snapshot we wait for are part of it. */
	if (client->awaiting_snapshot || !client->snapshot)
		return 0;
	last = sync_generation(client);
	if (ev->generation <= last)
		return 0;
	/* A gap, or an event type newer than this library: resync. */
	if (ev->generation != last + 1 ||
	    (unsigned int)ev->type > RDMAD__EVENT_TYPE__EVENT_TYPE_RELEASED)
		return sync_subscribe(client);
	dev = snapshot_device_new(ev->device);
	if (!dev)
		return -ENOMEM;
	/* The wire values equal the public ones (rdmad.proto, rdmad.h). */
	err = add_unfolded(client, (enum rdmad_event_type)ev->type, dev,
			   ev->generation);
	if (err < 0) {
		snapshot_device_unref(dev);
		return err;
	}
	return sync_queue_event(client, (enum rdmad_event_type)ev->type, dev,
				ev->generation);
}

int sync_handle_frame(struct rdmad_client *client, Rdmad__Frame *frame)
{
	int err = 0;

	if (frame->seq != 0 && frame->seq == client->subscribe_seq &&
	    frame->status != RDMAD__STATUS__STATUS_OK) {
		/* The daemon refused to subscribe us: give up this link. */
		err = wire_errno_from_status(frame->status);
		wire_free(frame);
		return err < 0 ? err : -EPROTO;
	}
	if (frame->body_case == RDMAD__FRAME__BODY_SNAPSHOT &&
	    (frame->seq == 0 || frame->seq == client->subscribe_seq))
		return handle_part(client, frame);
	if (frame->body_case == RDMAD__FRAME__BODY_EVENT && frame->seq == 0)
		err = handle_event(client, frame->event);
	/* Anything else is a late reply to a request that timed out. */
	wire_free(frame);
	return err;
}
