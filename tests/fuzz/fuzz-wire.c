/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the wire decoder: any datagram a peer can send goes
 * through wire_decode(); what decodes must encode again, that encoding
 * must decode to the same thing (encode is stable), and a decoded
 * snapshot must split into frames that fit.  Any other outcome aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_part(const Rdmad__Frame *frame, void *userdata)
{
	uint8_t *buf;
	size_t len;

	if (wire_encode(frame, WIRE_MAX_FRAME, &buf, &len) < 0)
		abort();
	free(buf);
	return 0;
}

/* Splitting may refuse a device too big for a frame, or a view whose
 * strings are longer than a real one's, nothing else. */
static void check_split(const Rdmad__Frame *f)
{
	int r;

	if (f->body_case != RDMAD__FRAME__BODY_SNAPSHOT)
		return;
	r = wire_split_snapshot(f->snapshot->devices, f->snapshot->n_devices,
				f->snapshot->generation, f->seq,
				f->snapshot->view, check_part, NULL);
	if (r != 0 && r != -EMSGSIZE && r != -EINVAL)
		abort();
}

static void check_stable(const Rdmad__Frame *f)
{
	uint8_t *one, *two;
	size_t len1, len2;
	Rdmad__Frame *again;
	int r;

	/* Re-encoding may grow (varints get canonical), so no cap here. */
	if (wire_encode(f, SIZE_MAX, &one, &len1) < 0)
		abort();
	/* A frame of defaults only (version 0) encodes to nothing. */
	if (len1 == 0) {
		free(one);
		return;
	}
	r = wire_decode(one, len1, SIZE_MAX, &again);
	if (r != 0 && r != -EPROTONOSUPPORT)
		abort();
	if (wire_encode(again, SIZE_MAX, &two, &len2) < 0)
		abort();
	if (len1 != len2 || memcmp(one, two, len1) != 0)
		abort();
	wire_free(again);
	free(one);
	free(two);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Rdmad__Frame *f = NULL;
	int r;

	r = wire_decode(data, size, WIRE_MAX_FRAME, &f);
	if (r != 0 && r != -EPROTONOSUPPORT && r != -EBADMSG && r != -EMSGSIZE)
		abort();
	if ((r == 0 || r == -EPROTONOSUPPORT) != (f != NULL))
		abort();
	if (!f)
		return 0;
	/* A daemon's error path: name the status, map it to an errno. */
	if (!wire_status_name(f->status))
		abort();
	wire_errno_from_status(f->status);
	check_stable(f);
	if (r == 0)
		check_split(f);
	wire_free(f);
	return 0;
}
