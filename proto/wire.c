/* SPDX-License-Identifier: MIT */
/*
 * Framing of the rdmad protocol (PROTOCOL.md): one protobuf-c Frame per
 * SOCK_SEQPACKET datagram.  This file checks sizes before decoding and
 * the shape of each body after it, passes file descriptors with
 * SCM_RIGHTS, maps -errno to wire statuses and back, and splits large
 * snapshots into frames that fit WIRE_MAX_FRAME.  It never logs: every
 * failure is a -errno for the caller to handle.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "wire.h"

/*
 * Worst case of everything in a snapshot Frame except its devices:
 * version (1 + 5), seq (1 + 10), status (1 + 5), the body tag (2) and
 * length (3, as a body is below 2 MiB), generation (1 + 10), part and
 * parts (1 + 5 each); and the View (tag and length 3, three namespace
 * inodes 3 x (1 + 10), a pod UID of up to 39 bytes (2 + 39), a mode name
 * (2 + 9), three flags 3 x 2), whose strings wire_split_snapshot()
 * checks.  Rounded up so the split never has to retry.
 */
#define SNAPSHOT_OVERHEAD 160
#define VIEW_STRING_MAX 39

void wire_frame_init(Rdmad__Frame *frame, uint64_t seq)
{
	*frame = (Rdmad__Frame)RDMAD__FRAME__INIT;
	frame->version = WIRE_VERSION;
	frame->seq = seq;
}

int wire_encode(const Rdmad__Frame *frame, size_t max, uint8_t **ret_buf,
		size_t *ret_len)
{
	size_t len = protobuf_c_message_get_packed_size(&frame->base);
	uint8_t *buf;

	if (len > max)
		return -EMSGSIZE;
	/* A Frame always has version set, but stay safe for len 0. */
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(&frame->base, buf);
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

static bool device_ok(const Rdmad__Device *dev)
{
	return dev && dev->name[0] != '\0';
}

/* The parts of a body that protobuf's optional fields cannot enforce. */
static bool body_ok(const Rdmad__Frame *frame)
{
	switch (frame->body_case) {
	case RDMAD__FRAME__BODY__NOT_SET:
		/* Only a reply may carry a status and nothing else. */
		return frame->seq != 0;
	case RDMAD__FRAME__BODY_HELLO:
	case RDMAD__FRAME__BODY_SUBSCRIBE:
	case RDMAD__FRAME__BODY_GET_STATUS:
	case RDMAD__FRAME__BODY_RESCAN:
	case RDMAD__FRAME__BODY_WELCOME:
		return frame->seq != 0;
	case RDMAD__FRAME__BODY_HOLD:
		return frame->seq != 0 &&
		       rdmad_name_valid_str(frame->hold->name);
	case RDMAD__FRAME__BODY_RELEASE:
		return frame->seq != 0 &&
		       rdmad_name_valid_str(frame->release->name);
	case RDMAD__FRAME__BODY_UNUSABLE:
		return frame->seq != 0 &&
		       rdmad_name_valid_str(frame->unusable->name);
	case RDMAD__FRAME__BODY_SNAPSHOT:
		return frame->snapshot->parts >= 1 &&
		       frame->snapshot->part < frame->snapshot->parts;
	case RDMAD__FRAME__BODY_EVENT:
		return device_ok(frame->event->device);
	case _RDMAD__FRAME__BODY__CASE_IS_INT_SIZE:
		break;
	}
	return false;
}

/* Whether @fd, a message-typed field of @m, is the set member of a oneof
 * or not in a oneof at all. */
static bool field_present(const ProtobufCMessage *m,
			  const ProtobufCFieldDescriptor *fd)
{
	const char *base = (const char *)m;

	if (!(fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
		return true;
	return *(const uint32_t *)(base + fd->quantifier_offset) == fd->id;
}

/*
 * protobuf-c keeps unknown fields to send them on, but it accepts an
 * over-long encoding of the invalid field number 0 and then re-encodes
 * it in a form it rejects itself.  Refuse such input up front so that
 * everything we decode can be encoded again.
 */
static bool unknown_fields_ok(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;
	ProtobufCMessage *const *sub;
	size_t i, j, n;

	for (i = 0; i < m->n_unknown_fields; i++)
		if (m->unknown_fields[i].tag == 0)
			return false;
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[i];

		if (fd->type != PROTOBUF_C_TYPE_MESSAGE ||
		    !field_present(m, fd))
			continue;
		n = 1;
		sub = (ProtobufCMessage *const *)(base + fd->offset);
		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			n = *(const size_t *)(base + fd->quantifier_offset);
			sub = *(ProtobufCMessage *const **)(base + fd->offset);
		}
		for (j = 0; j < n; j++)
			if (sub[j] && !unknown_fields_ok(sub[j]))
				return false;
	}
	return true;
}

int wire_decode(const uint8_t *buf, size_t len, size_t max,
		Rdmad__Frame **ret_frame)
{
	Rdmad__Frame *frame;

	*ret_frame = NULL;
	if (len == 0 || len > max)
		return -EMSGSIZE;
	frame = rdmad__frame__unpack(NULL, len, buf);
	if (!frame)
		return -EBADMSG;
	if (!unknown_fields_ok(&frame->base)) {
		wire_free(frame);
		return -EBADMSG;
	}
	/* The version comes first so a newer peer learns ours. */
	if (frame->version != WIRE_VERSION) {
		*ret_frame = frame;
		return -EPROTONOSUPPORT;
	}
	if (!body_ok(frame)) {
		wire_free(frame);
		return -EBADMSG;
	}
	*ret_frame = frame;
	return 0;
}

void wire_free(Rdmad__Frame *frame)
{
	if (frame)
		rdmad__frame__free_unpacked(frame, NULL);
}

int wire_connect(const char *path, int *ret_fd)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int fd, err;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	*ret_fd = fd;
	return 0;
}

int wire_send(int fd, const void *buf, size_t len, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cmsg;
	ssize_t n;

	if (pass_fd >= 0) {
		memset(&control, 0, sizeof(control));
		msg.msg_control = control.buf;
		msg.msg_controllen = sizeof(control.buf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &pass_fd, sizeof(int));
	}
	n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	/* SEQPACKET sends all or nothing; anything else is a kernel oddity. */
	return (size_t)n == len ? 0 : -EIO;
}

int wire_send_request(int fd, Rdmad__Frame *frame, uint64_t seq)
{
	return wire_send_request_fd(fd, frame, seq, -1);
}

int wire_send_request_fd(int fd, Rdmad__Frame *frame, uint64_t seq, int pass_fd)
{
	uint8_t *buf;
	size_t len;
	int r;

	frame->version = WIRE_VERSION;
	frame->seq = seq;
	r = wire_encode(frame, WIRE_MAX_REQUEST, &buf, &len);
	if (r < 0)
		return r;
	r = wire_send(fd, buf, len, pass_fd);
	free(buf);
	return r;
}

/* Every SCM_RIGHTS descriptor of @msg into @ret_fds. */
static void collect_fds(struct msghdr *msg, struct wire_fds *ret_fds)
{
	struct cmsghdr *cmsg;
	size_t i, nfds;

	for (cmsg = CMSG_FIRSTHDR(msg); cmsg; cmsg = CMSG_NXTHDR(msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET)
			continue;
		if (cmsg->cmsg_type == SCM_CREDENTIALS)
			ret_fds->credentials = true;
		if (cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfds && ret_fds->n < WIRE_MAX_PASSED_FDS; i++)
			memcpy(&ret_fds->fd[ret_fds->n++],
			       CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
	}
}

ssize_t wire_recv_all(int fd, void *buf, size_t cap, struct wire_fds *ret_fds)
{
	union {
		/* SCM_MAX_FD descriptors, and credentials should the socket
		 * ever pass them: nothing is cut off with MSG_CTRUNC. */
		char buf[CMSG_SPACE(WIRE_MAX_PASSED_FDS * sizeof(int)) +
			 CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} control;
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	ssize_t n;

	ret_fds->n = 0;
	ret_fds->credentials = false;
	ret_fds->truncated = false;
	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	collect_fds(&msg, ret_fds);
	ret_fds->truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
	return msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC) ? -EMSGSIZE : n;
}

ssize_t wire_recv(int fd, void *buf, size_t cap, int *ret_fd)
{
	struct wire_fds fds;
	ssize_t n = wire_recv_all(fd, buf, cap, &fds);
	size_t first = 0;

	if (ret_fd) {
		*ret_fd = n > 0 && fds.n ? fds.fd[0] : -1;
		first = *ret_fd >= 0;
	}
	/* A hostile peer cannot make us leak descriptors. */
	for (size_t i = first; i < fds.n; i++)
		close(fds.fd[i]);
	return n;
}

/* Indexed by Rdmad__Status; the reverse direction of the mapping. */
static const struct {
	const char *name;
	int err;
} statuses[] = {
	[RDMAD__STATUS__STATUS_OK] = {"OK", 0},
	[RDMAD__STATUS__STATUS_BAD_REQUEST] = {"BAD_REQUEST", -EBADMSG},
	[RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION] = {"UNSUPPORTED_VERSION",
						       -EPROTONOSUPPORT},
	[RDMAD__STATUS__STATUS_NO_SUCH_DEVICE] = {"NO_SUCH_DEVICE", -ENODEV},
	[RDMAD__STATUS__STATUS_PERMISSION_DENIED] = {"PERMISSION_DENIED",
						     -EPERM},
	[RDMAD__STATUS__STATUS_LIMIT] = {"LIMIT", -ENOSPC},
	[RDMAD__STATUS__STATUS_NOT_HELD] = {"NOT_HELD", -ENOENT},
	[RDMAD__STATUS__STATUS_INTERNAL] = {"INTERNAL", -EIO},
};

static bool status_known(Rdmad__Status status)
{
	return (unsigned int)status < sizeof(statuses) / sizeof(statuses[0]);
}

Rdmad__Status wire_status_from_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return RDMAD__STATUS__STATUS_OK;
	case EBADMSG:
	case EINVAL:
	case EPROTO:
	case EMSGSIZE:
	case ENAMETOOLONG:
	case EALREADY:
	case EOPNOTSUPP:
		return RDMAD__STATUS__STATUS_BAD_REQUEST;
	case EPROTONOSUPPORT:
		return RDMAD__STATUS__STATUS_UNSUPPORTED_VERSION;
	case ENODEV:
		return RDMAD__STATUS__STATUS_NO_SUCH_DEVICE;
	case EPERM:
	case EACCES:
		return RDMAD__STATUS__STATUS_PERMISSION_DENIED;
	case ENOSPC:
	case EMFILE:
	case ENFILE:
	case ENOBUFS:
	case EUSERS:
	case EDQUOT:
		return RDMAD__STATUS__STATUS_LIMIT;
	case ENOENT:
		return RDMAD__STATUS__STATUS_NOT_HELD;
	}
	return RDMAD__STATUS__STATUS_INTERNAL;
}

int wire_errno_from_status(Rdmad__Status status)
{
	/* A status newer than this build: the peer answered but we cannot
	 * tell what it meant. */
	return status_known(status) ? statuses[status].err : -EPROTO;
}

const char *wire_status_name(Rdmad__Status status)
{
	return status_known(status) ? statuses[status].name : "UNKNOWN";
}

/* Bytes a device adds to a Snapshot: tag, length varint, body. */
static size_t device_cost(const Rdmad__Device *dev)
{
	size_t len = protobuf_c_message_get_packed_size(&dev->base);
	size_t cost = 1 + 1 + len;
	size_t v;

	for (v = len; v >= 0x80; v >>= 7)
		cost++;
	return cost;
}

/*
 * Greedy packing, shared by the counting pass and the emitting pass so
 * both cut at the same places: the number of devices from @start that
 * fit in one part.
 */
static size_t part_length(const size_t *costs, size_t start, size_t n)
{
	size_t budget = WIRE_MAX_FRAME - SNAPSHOT_OVERHEAD;
	size_t used = 0, i;

	for (i = start; i < n && used + costs[i] <= budget; i++)
		used += costs[i];
	return i - start;
}

static int count_parts(const size_t *costs, size_t n, uint32_t *ret_parts)
{
	size_t start = 0, len;
	uint32_t parts = 0;

	do {
		len = part_length(costs, start, n);
		if (len == 0 && start < n)
			return -EMSGSIZE;
		start += len;
		parts++;
	} while (start < n);
	*ret_parts = parts;
	return 0;
}

static int emit_parts(Rdmad__Device *const *devices, const size_t *costs,
		      size_t n, Rdmad__Frame *frame, wire_emit_fn emit,
		      void *userdata)
{
	Rdmad__Snapshot *snap = frame->snapshot;
	size_t start = 0;
	int r;

	do {
		snap->n_devices = part_length(costs, start, n);
		/* No device at all: NULL, not NULL + 0 (undefined in C). */
		snap->devices = n ? (Rdmad__Device **)devices + start : NULL;
		/* Our own arithmetic bug, not bad input: fail loudly. */
		if (protobuf_c_message_get_packed_size(&frame->base) >
		    WIRE_MAX_FRAME)
			return -EMSGSIZE;
		r = emit(frame, userdata);
		if (r)
			return r;
		start += snap->n_devices;
		snap->part++;
	} while (start < n);
	return 0;
}

int wire_split_snapshot(Rdmad__Device *const *devices, size_t n,
			uint64_t generation, uint64_t seq,
			const Rdmad__View *view, wire_emit_fn emit,
			void *userdata)
{
	Rdmad__Snapshot snap = RDMAD__SNAPSHOT__INIT;
	Rdmad__Frame frame;
	size_t *costs, i;
	uint32_t parts;
	int r;

	if (view && (strlen(view->pod_uid) > VIEW_STRING_MAX ||
		     strlen(view->netns_mode) > VIEW_STRING_MAX))
		return -EINVAL;
	costs = calloc(n ? n : 1, sizeof(*costs));
	if (!costs)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		costs[i] = device_cost(devices[i]);
	r = count_parts(costs, n, &parts);
	if (r)
		goto out;
	wire_frame_init(&frame, seq);
	frame.body_case = RDMAD__FRAME__BODY_SNAPSHOT;
	frame.snapshot = &snap;
	snap.generation = generation;
	snap.parts = parts;
	snap.view = (Rdmad__View *)view;
	r = emit_parts(devices, costs, n, &frame, emit, userdata);
out:
	free(costs);
	return r;
}

/* ---- snapshot reassembly (beside the splitter above) ---- */

void wire_assembly_init(struct wire_assembly *a)
{
	memset(a, 0, sizeof(*a));
}

void wire_assembly_clear(struct wire_assembly *a)
{
	for (size_t i = 0; i < a->n_frames; i++)
		wire_free(a->frames[i]);
	free(a->frames);
	free(a->devices);
	wire_assembly_init(a);
}

static bool part_follows(const struct wire_assembly *a,
			 const Rdmad__Frame *frame)
{
	const Rdmad__Snapshot *part = frame->snapshot;

	if (part->part == 0)
		return part->parts > 0 &&
		       part->parts <= WIRE_MAX_SNAPSHOT_PARTS;
	return a->n_frames > 0 && part->part == a->n_frames &&
	       part->part < a->parts && frame->seq == a->seq &&
	       part->parts == a->parts && part->generation == a->generation;
}

static int append_part(struct wire_assembly *a, Rdmad__Frame *frame)
{
	const Rdmad__Snapshot *part = frame->snapshot;
	Rdmad__Frame **frames;
	Rdmad__Device **devices;

	if (a->n_devices + part->n_devices > WIRE_MAX_SNAPSHOT_DEVICES)
		return -E2BIG;
	frames = reallocarray(a->frames, a->n_frames + 1, sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	a->frames = frames;
	devices = reallocarray(a->devices, a->n_devices + part->n_devices + 1,
			       sizeof(*devices));
	if (!devices)
		return -ENOMEM;
	a->devices = devices;
	if (part->n_devices)
		memcpy(devices + a->n_devices, part->devices,
		       part->n_devices * sizeof(*devices));
	a->n_devices += part->n_devices;
	a->frames[a->n_frames++] = frame;
	return 0;
}

int wire_assembly_add(struct wire_assembly *a, Rdmad__Frame *frame)
{
	int r;

	if (!frame || frame->body_case != RDMAD__FRAME__BODY_SNAPSHOT) {
		wire_free(frame);
		return -EINVAL;
	}
	if (frame->snapshot->part == 0)
		wire_assembly_clear(a);
	if (!part_follows(a, frame)) {
		wire_assembly_clear(a);
		wire_free(frame);
		return -EPROTO;
	}
	r = append_part(a, frame);
	if (r < 0) {
		wire_assembly_clear(a);
		wire_free(frame);
		return r;
	}
	a->seq = frame->seq;
	a->parts = frame->snapshot->parts;
	a->generation = frame->snapshot->generation;
	return a->n_frames == a->parts;
}
