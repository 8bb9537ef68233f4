/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for snapshot reassembly (wire_assembly_add()), as librdmad
 * and rdmactl run it on what a daemon sends: the input is a sequence of
 * datagrams (datagrams.h).
 * Each one that decodes to a Snapshot part goes to one assembly.  It must
 * answer only 1, 0 or an error of its contract, never hold more than its
 * bounds, and a whole snapshot has every device of its parts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "datagrams.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_whole(const struct wire_assembly *a)
{
	size_t n = 0;

	if (a->n_frames != a->parts || a->n_frames > WIRE_MAX_SNAPSHOT_PARTS)
		abort();
	for (size_t i = 0; i < a->n_frames; i++) {
		if (a->frames[i]->snapshot->part != i)
			abort();
		n += a->frames[i]->snapshot->n_devices;
	}
	if (n != a->n_devices || n > WIRE_MAX_SNAPSHOT_DEVICES)
		abort();
}

static void feed(struct wire_assembly *a, const uint8_t *buf, size_t len)
{
	Rdmad__Frame *f = NULL;
	int r;

	if (wire_decode(buf, len, WIRE_MAX_FRAME, &f) != 0)
		goto out;
	if (f->body_case != RDMAD__FRAME__BODY_SNAPSHOT)
		goto out;
	r = wire_assembly_add(a, f);
	f = NULL;
	if (r == 1) {
		check_whole(a);
		wire_assembly_clear(a);
	} else if (r != 0 && r != -EPROTO && r != -E2BIG && r != -ENOMEM) {
		abort();
	}
	if (a->n_frames > WIRE_MAX_SNAPSHOT_PARTS)
		abort();
out:
	wire_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_assembly a;
	const uint8_t *dgram;
	size_t len;

	wire_assembly_init(&a);
	while (next_datagram(&data, &size, &dgram, &len))
		feed(&a, dgram, len);
	wire_assembly_clear(&a);
	return 0;
}
