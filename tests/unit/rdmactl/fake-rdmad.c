/* SPDX-License-Identifier: MIT */
/*
 * A fake rdmad's socket: see fake-rdmad.h.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake-rdmad.h"

int fake_socket_open(struct fake_socket *s, const char *prefix)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};

	s->listen_fd = -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/%s-XXXXXX", prefix);
	if (!mkdtemp(s->dir))
		return -errno;
	snprintf(s->path, sizeof(s->path), "%s/rdmad.sock", s->dir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", s->path);
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 ||
	    bind(s->listen_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(s->listen_fd, 4) < 0)
		return -errno;
	return 0;
}

void fake_socket_close(struct fake_socket *s)
{
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	unlink(s->path);
	rmdir(s->dir);
}

int fake_send(int fd, const Rdmad__Frame *frame, int pass_fd)
{
	uint8_t *buf;
	size_t len;
	int r;

	r = wire_encode(frame, WIRE_MAX_FRAME, &buf, &len);
	if (r == 0)
		r = wire_send(fd, buf, len, pass_fd);
	free(buf);
	return r;
}

int fake_send_welcome(int fd, uint64_t seq, Rdmad__View *view)
{
	Rdmad__Welcome w = RDMAD__WELCOME__INIT;
	Rdmad__Frame f;

	wire_frame_init(&f, seq);
	w.version = WIRE_VERSION;
	w.generation = 42;
	w.daemon_version = "fake";
	w.view = view;
	f.body_case = RDMAD__FRAME__BODY_WELCOME;
	f.welcome = &w;
	return fake_send(fd, &f, -1);
}

int fake_recv(int fd, Rdmad__Frame **ret_frame)
{
	static uint8_t buf[WIRE_MAX_REQUEST];
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&pfd, 1, 5000) != 1)
		return -ETIMEDOUT;
	n = wire_recv(fd, buf, sizeof(buf), NULL);
	if (n <= 0)
		return n ? (int)n : -ECONNRESET;
	return wire_decode(buf, (size_t)n, WIRE_MAX_REQUEST, ret_frame);
}

uint64_t fake_expect(int fd, Rdmad__Frame__BodyCase body)
{
	Rdmad__Frame *f = NULL;
	uint64_t seq = 0;

	if (fake_recv(fd, &f) == 0 && f->body_case == body)
		seq = f->seq;
	wire_free(f);
	return seq;
}

static int send_part(const Rdmad__Frame *frame, void *userdata)
{
	return fake_send(*(int *)userdata, frame, -1);
}

int fake_send_snapshot(int fd, Rdmad__Device *const *devices, size_t n,
		       uint64_t generation, uint64_t seq,
		       const Rdmad__View *view)
{
	return wire_split_snapshot(devices, n, generation, seq, view, send_part,
				   &fd);
}

bool fake_client_ends(int fd)
{
	Rdmad__Frame *f = NULL;
	int r = fake_recv(fd, &f);

	wire_free(f);
	return r == -ECONNRESET;
}
