/* SPDX-License-Identifier: MIT */
/*
 * One connection to rdmad: the SOCK_SEQPACKET socket, the read-only
 * generation page the daemon passes with its Welcome, and sending and
 * receiving whole frames.  No protocol state lives here; channel.c and
 * sync.c decide what the frames mean.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "scope.h"

void conn_init(struct conn *conn)
{
	conn->fd = -1;
	conn->page = NULL;
	conn->next_seq = 1;
	conn->buf = NULL;
}

int conn_open(struct conn *conn, const char *path)
{
	if (!conn->buf) {
		conn->buf = malloc(WIRE_MAX_FRAME);
		if (!conn->buf)
			return -ENOMEM;
	}
	/* A full backlog (-EAGAIN) is the caller's to try again
	 * (channel.c). */
	return wire_connect(path, &conn->fd);
}

void conn_close(struct conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = -1;
	if (conn->page)
		munmap((void *)conn->page, GENPAGE_SIZE);
	conn->page = NULL;
}

void conn_fini(struct conn *conn)
{
	conn_close(conn);
	free(conn->buf);
	conn->buf = NULL;
}

void conn_adopt(struct conn *conn, struct conn *from)
{
	conn->fd = from->fd;
	conn->next_seq = from->next_seq;
	from->fd = -1;
	if (!conn->buf) {
		conn->buf = from->buf;
		from->buf = NULL;
	}
}

int conn_map_page(struct conn *conn, int fd)
{
	const struct genpage *page;
	struct stat st;
	int seals;

	/* Reading a mapping past the end of its file is SIGBUS: only map a
	 * page that is whole and sealed so that it stays whole. */
	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < GENPAGE_SIZE || seals < 0 ||
	    !(seals & F_SEAL_SHRINK)) {
		close(fd);
		return -EPROTO;
	}
	page = mmap(NULL, GENPAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (page == MAP_FAILED)
		return -errno;
	if (page->magic != GENPAGE_MAGIC || page->layout != GENPAGE_LAYOUT) {
		munmap((void *)page, GENPAGE_SIZE);
		return -EPROTO;
	}
	if (conn->page)
		munmap((void *)conn->page, GENPAGE_SIZE);
	conn->page = page;
	return 0;
}

static int send_with(struct conn *conn, Rdmad__Frame *frame, int pass_fd,
		     uint64_t *ret_seq)
{
	uint64_t seq;
	int err;

	if (conn->fd < 0)
		return -ENOTCONN;
	seq = conn->next_seq++;
	err = wire_send_request_fd(conn->fd, frame, seq, pass_fd);
	if (err == 0 && ret_seq)
		*ret_seq = seq;
	return err;
}

int conn_send(struct conn *conn, Rdmad__Frame *frame, uint64_t *ret_seq)
{
	return send_with(conn, frame, -1, ret_seq);
}

/* What every Hello asks for: the device list is kept by (identity,
 * incarnation), whatever the application is shown (PROTOCOL.md 8a). */
static char *const hello_features[] = {"lifecycle", "removing"};

int conn_send_name(struct conn *conn, Rdmad__Frame__BodyCase body,
		   const char *name, uint64_t *ret_seq)
{
	Rdmad__Frame frame;
	Rdmad__Hello hello = RDMAD__HELLO__INIT;
	Rdmad__Subscribe subscribe = RDMAD__SUBSCRIBE__INIT;
	Rdmad__Hold hold = RDMAD__HOLD__INIT;
	Rdmad__Release release = RDMAD__RELEASE__INIT;
	struct scope scope;
	int nl = -1, err;

	wire_frame_init(&frame, 0);
	frame.body_case = body;
	/* An if chain, not a switch: the body enum is generated code. */
	if (body == RDMAD__FRAME__BODY_HELLO) {
		hello.client_name = (char *)name;
		hello.features = (char **)hello_features;
		hello.n_features =
			sizeof(hello_features) / sizeof(hello_features[0]);
		/* Where we are (PROTOCOL.md 8b): our /dev/infiniband, and a
		 * socket of our network namespace for rdmad to ask the
		 * kernel through. */
		scope_collect(&scope);
		nl = scope_netns_socket();
		scope.msg.netns_socket = nl >= 0;
		hello.scope = &scope.msg;
		frame.hello = &hello;
	} else if (body == RDMAD__FRAME__BODY_SUBSCRIBE) {
		/* Our /dev again: a node may have come or gone. */
		scope_collect(&scope);
		subscribe.scope = &scope.msg;
		frame.subscribe = &subscribe;
	} else if (body == RDMAD__FRAME__BODY_HOLD) {
		hold.name = (char *)name;
		frame.hold = &hold;
	} else if (body == RDMAD__FRAME__BODY_RELEASE) {
		release.name = (char *)name;
		frame.release = &release;
	} else {
		return -EINVAL;
	}
	err = send_with(conn, &frame, nl, ret_seq);
	if (nl >= 0)
		close(nl);
	return err;
}

static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int n;

	do {
		n = poll(&pfd, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == 0 ? -EAGAIN : 0;
}

int conn_recv(struct conn *conn, int timeout_ms, Rdmad__Frame **ret_frame,
	      int *ret_fd)
{
	ssize_t n;
	int fd = -1, err;

	if (conn->fd < 0)
		return -ENOTCONN;
	for (;;) {
		n = wire_recv(conn->fd, conn->buf, WIRE_MAX_FRAME, &fd);
		if (n != -EAGAIN || timeout_ms == 0)
			break;
		err = wait_readable(conn->fd, timeout_ms);
		if (err < 0)
			return err;
		/* Waiting once is enough: a caller with a deadline loops. */
		timeout_ms = 0;
	}
	if (n == 0 || n == -ECONNRESET || n == -EPIPE)
		return -ECONNRESET;
	if (n < 0)
		return (int)n;
	if (ret_fd)
		*ret_fd = fd;
	else if (fd >= 0)
		close(fd);
	err = wire_decode(conn->buf, (size_t)n, WIRE_MAX_FRAME, ret_frame);
	if (err == -EPROTONOSUPPORT) {
		/* A frame from a newer daemon: we cannot follow it. */
		wire_free(*ret_frame);
		err = -EPROTO;
	}
	if (err < 0 && ret_fd && *ret_fd >= 0) {
		close(*ret_fd);
		*ret_fd = -1;
	}
	return err;
}
