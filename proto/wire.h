/* SPDX-License-Identifier: MIT */
/*
 * Framing of the rdmad protocol: one protobuf-c encoded Frame per
 * SOCK_SEQPACKET datagram (see PROTOCOL.md).  Shared by the daemon, the
 * client library, rdmactl and the tests.  No logging; -errno returns.
 */
#ifndef RDMAD_WIRE_H
#define RDMAD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "name.h"
#include "rdmad.pb-c.h"

#define WIRE_VERSION 1
/* Largest datagram either side sends; a snapshot is split to fit. */
#define WIRE_MAX_FRAME (64 * 1024)
/* Largest request the daemon accepts from a client. */
#define WIRE_MAX_REQUEST 4096
/* Longest device name accepted in a request, with its NUL (name.h). */
#define WIRE_MAX_NAME RDMAD_NAME_MAX
/* Holders a Device lists (Device.holder_count counts them all): a device
 * held from thousands of connections must still fit a frame. */
#define WIRE_MAX_HOLDERS_LISTED 64

/* Encode @frame into a new malloc'd buffer.  -EMSGSIZE if it is larger
 * than @max, -ENOMEM. */
int wire_encode(const Rdmad__Frame *frame, size_t max, uint8_t **ret_buf,
		size_t *ret_len);

/*
 * Decode one datagram after checking its size against @max.  Returns
 * -EMSGSIZE (too large or empty), -EBADMSG (not a Frame, or a body whose
 * required parts are missing), -EPROTONOSUPPORT (version is not
 * WIRE_VERSION; *ret_frame is still set so the caller may answer with the
 * seq).  Free with wire_free().
 */
int wire_decode(const uint8_t *buf, size_t len, size_t max,
		Rdmad__Frame **ret_frame);
void wire_free(Rdmad__Frame *frame);

/* Connect a non-blocking, close-on-exec SOCK_SEQPACKET socket to the
 * daemon at @path.  -ENAMETOOLONG, or connect()'s -errno: a listener
 * whose backlog is full gives -EAGAIN at once instead of making us wait. */
int wire_connect(const char *path, int *ret_fd);

/* Send one datagram, optionally passing @pass_fd (-1 for none) with
 * SCM_RIGHTS; MSG_NOSIGNAL|MSG_DONTWAIT.  -EAGAIN when the socket is full. */
int wire_send(int fd, const void *buf, size_t len, int pass_fd);
/* A client's request: stamp @frame with WIRE_VERSION and @seq, encode it
 * (at most WIRE_MAX_REQUEST bytes) and send it.  -EMSGSIZE, -ENOMEM, or
 * what wire_send() returns. */
int wire_send_request(int fd, Rdmad__Frame *frame, uint64_t seq);
/* The same, passing @pass_fd (-1 for none) with SCM_RIGHTS. */
int wire_send_request_fd(int fd, Rdmad__Frame *frame, uint64_t seq,
			 int pass_fd);

/* Receive one datagram into @buf; a passed fd lands in *ret_fd (else -1),
 * opened O_CLOEXEC, and any other is closed.  For a peer that is trusted
 * (the daemon): closing a file an untrusted peer passed may block, see
 * wire_recv_all().  Returns its length, 0 on orderly close, -EMSGSIZE if
 * truncated, or -errno. */
ssize_t wire_recv(int fd, void *buf, size_t cap, int *ret_fd);

/* The most descriptors one datagram can carry: the kernel's SCM_MAX_FD. */
#define WIRE_MAX_PASSED_FDS 253

/* The control socket, for root and the admin group: the public socket's
 * path with this appended (PROTOCOL.md, section 7). */
#define WIRE_CONTROL_SUFFIX ".control"

struct wire_fds {
	int fd[WIRE_MAX_PASSED_FDS];
	size_t n;
	/* SCM_CREDENTIALS came: with SO_PASSCRED on, every datagram brings
	 * them, even an empty one, and the end of the stream does not. */
	bool credentials;
	/* MSG_CTRUNC: descriptors that did not fit the table (EMFILE) were
	 * dropped by the kernel, in the receiving thread. */
	bool truncated;
};

/*
 * Receive one datagram from a peer that is not trusted: every descriptor
 * that came with it lands in @ret_fds (O_CLOEXEC), none is closed here.
 * The control buffer has room for the most a datagram can carry, so the
 * kernel never drops one in this thread: dropping the last reference to a
 * peer's file can block (a socket that lingers, a FUSE file's release),
 * and the caller decides where that happens.  Returns the length, 0 on
 * orderly close, -EMSGSIZE when the datagram was truncated (its
 * descriptors are still in @ret_fds), or -errno (none passed).
 */
ssize_t wire_recv_all(int fd, void *buf, size_t cap, struct wire_fds *ret_fds);

/* The one mapping between -errno and a wire status, and back. */
Rdmad__Status wire_status_from_errno(int err);
int wire_errno_from_status(Rdmad__Status status);
const char *wire_status_name(Rdmad__Status status);

/*
 * Split @n devices into snapshot parts that each encode to at most
 * WIRE_MAX_FRAME bytes as a full Frame.  Calls @emit once per part, in
 * order, with a Frame whose version, seq, status and snapshot
 * (generation, part, parts, devices, and @view, which may be NULL) are
 * filled in; @emit's return, if non-zero, stops the split and is
 * returned.  -EMSGSIZE if one device alone does not fit; -EINVAL if a
 * string of @view is longer than a view's (39 bytes).
 */
typedef int (*wire_emit_fn)(const Rdmad__Frame *frame, void *userdata);
int wire_split_snapshot(Rdmad__Device *const *devices, size_t n,
			uint64_t generation, uint64_t seq,
			const Rdmad__View *view, wire_emit_fn emit,
			void *userdata);

/* Most parts a snapshot may announce, and most devices it may hold in
 * all: a peer cannot make the receiver keep more (4096 full parts are
 * 256 MiB, far above 8192 devices with 64 holders each). */
#define WIRE_MAX_SNAPSHOT_PARTS 4096
#define WIRE_MAX_SNAPSHOT_DEVICES 65536

/*
 * Joins what wire_split_snapshot() cut: the parts of one snapshot, in
 * order (part 0, 1, ... of one seq, parts count and generation).  The
 * frames are owned; devices point into them.
 */
struct wire_assembly {
	Rdmad__Frame **frames;
	size_t n_frames;
	Rdmad__Device **devices;
	size_t n_devices;
	uint64_t seq;
	uint64_t generation;
	uint32_t parts;
};

void wire_assembly_init(struct wire_assembly *a);
void wire_assembly_clear(struct wire_assembly *a);
/*
 * Take @frame (a Snapshot part; always taken, freed on error).  Part 0
 * starts over.  Returns 1 when the snapshot is whole, 0 when parts are
 * still due, -EPROTO when @frame does not follow the parts so far or
 * announces more than WIRE_MAX_SNAPSHOT_PARTS (the assembly is cleared),
 * -E2BIG past WIRE_MAX_SNAPSHOT_DEVICES, -ENOMEM.
 */
int wire_assembly_add(struct wire_assembly *a, Rdmad__Frame *frame);

/* Fill @frame as a reply/request skeleton (protobuf-c init + version). */
void wire_frame_init(Rdmad__Frame *frame, uint64_t seq);

#endif
