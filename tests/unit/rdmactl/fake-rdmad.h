/* SPDX-License-Identifier: MIT */
/*
 * A fake rdmad's socket for rdmactl's unit tests (test-rdmactl.c,
 * test-rdmactl-view.c, test-rdmactl-lives.c, test-rdmactl-netns.c): a
 * listening SOCK_SEQPACKET socket in a fresh temporary directory, and
 * frames in and out through proto/wire.c.  What each fake answers is the
 * test's own.
 */
#ifndef RDMAD_TEST_FAKE_RDMAD_H
#define RDMAD_TEST_FAKE_RDMAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct fake_socket {
	char dir[64];
	char path[100];
	int listen_fd; /* -1 when it could not be made */
};

/* Listen at a new @prefix-XXXXXX/rdmad.sock under /tmp: 0 or -errno. */
int fake_socket_open(struct fake_socket *s, const char *prefix);
void fake_socket_close(struct fake_socket *s);

/* One frame, with @pass_fd (or -1) as SCM_RIGHTS: 0 or -errno. */
int fake_send(int fd, const Rdmad__Frame *frame, int pass_fd);
/* A plain Welcome (version 1, generation 42, no generation page) with
 * @view (NULL: a daemon from before views) in reply to @seq. */
int fake_send_welcome(int fd, uint64_t seq, Rdmad__View *view);
/* The next request within 5 s: 0 and *@ret_frame (wire_free() it), or
 * -errno. */
int fake_recv(int fd, Rdmad__Frame **ret_frame);
/* The seq of the next request if it is of @body; 0 if not (or none). */
uint64_t fake_expect(int fd, Rdmad__Frame__BodyCase body);
/* A snapshot of @devices at @generation with @view (NULL: none), split
 * into parts as rdmad splits it, in reply to @seq (0: unsolicited). */
int fake_send_snapshot(int fd, Rdmad__Device *const *devices, size_t n,
		       uint64_t generation, uint64_t seq,
		       const Rdmad__View *view);
/* Whether the client hangs up within 5 s without asking anything more. */
bool fake_client_ends(int fd);

#endif
