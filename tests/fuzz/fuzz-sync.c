/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the client's frame sequencing (libclient/list/sync.c, with
 * the snapshot assembly of proto/wire.c and the list building of
 * snapshot.c): the input is a sequence of datagrams (datagrams.h) that a
 * daemon sends to a subscribed librdmad.  The first byte of the input
 * says whether the client has a callback (events queued).  Each datagram
 * that decodes goes to sync_handle_frame(), as client/channel.c hands it over;
 * an error drops the "connection" (the state is reset and the client
 * subscribes again, as a reconnect would).  The Subscribe requests it
 * sends go to the other end of a socketpair and are thrown away.
 *
 * After every frame: the parts kept stay within WIRE_MAX_SNAPSHOT_PARTS
 * and SYNC_MAX_SNAPSHOT_BYTES, at most one event is queued per frame, and
 * folding the events into the list gives a snapshot at the generation the
 * list claims, whose every device reads back.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "datagrams.h"
#include "sync.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void discard_requests(int fd)
{
	uint8_t buf[WIRE_MAX_REQUEST];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* Every device of the list reads back, as an application would. */
static void read_list(const struct rdmad_snapshot *snap)
{
	size_t i, n = rdmad_snapshot_get_count(snap);

	for (i = 0; i < n; i++) {
		const struct rdmad_device *d =
			rdmad_snapshot_get_device(snap, i);

		if (!d || !rdmad_device_get_name(d)[0] ||
		    rdmad_snapshot_find_device(
			    snap, rdmad_device_get_name(d)) == NULL)
			abort();
		for (unsigned int p = 0; p < rdmad_device_get_port_count(d);
		     p++)
			if (!rdmad_port_get_state(rdmad_device_get_port(d, p)))
				abort();
	}
}

static void check(struct sync *sync, size_t queued_before)
{
	uint64_t gen = sync_generation(sync);

	if (sync->assembly.n_frames > WIRE_MAX_SNAPSHOT_PARTS ||
	    sync->assembly_bytes > SYNC_MAX_SNAPSHOT_BYTES ||
	    sync->queue_len > queued_before + 1)
		abort();
	if (sync_fold(sync) == -ENOMEM)
		return;
	if (sync->n_unfolded != 0 ||
	    (sync->snapshot && sync->snapshot->generation != gen))
		abort();
	read_list(sync->snapshot);
}

static void feed(struct sync *sync, struct conn *conn, const uint8_t *buf,
		 size_t len)
{
	Rdmad__Frame *frame = NULL;
	size_t queued = sync->queue_len;

	if (wire_decode(buf, len, WIRE_MAX_FRAME, &frame) != 0) {
		wire_free(frame);
		return;
	}
	if (sync_handle_frame(sync, conn, frame) < 0) {
		/* channel.c drops the connection; the next one subscribes. */
		sync_reset(sync);
		sync_subscribe(sync, conn);
		queued = sync->queue_len;
	}
	check(sync, queued);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sync sync = {0};
	struct conn conn;
	const uint8_t *dgram;
	size_t len;
	int fds[2];

	if (size < 1 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, fds) < 0)
		return 0;
	conn_init(&conn);
	conn.fd = fds[0];
	sync.want_events = data[0] & 1;
	data++;
	size--;
	/* Subscribed as a new connection is: its seq is 1. */
	sync_subscribe(&sync, &conn);
	while (next_datagram(&data, &size, &dgram, &len)) {
		feed(&sync, &conn, dgram, len);
		discard_requests(fds[1]);
	}
	sync_reset(&sync);
	sync_clear_queue(&sync);
	sync_drop_list(&sync);
	conn_close(&conn);
	close(fds[1]);
	return 0;
}
