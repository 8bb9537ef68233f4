/* SPDX-License-Identifier: MIT */
/*
 * One connection to the daemon (conn.c): the socket, the generation page
 * passed with the Welcome, and sending and receiving whole frames.  The
 * wire layer of the client: it calls no other libclient module and keeps
 * no protocol state.  Not installed.
 */
#ifndef RDMAD_CONN_H
#define RDMAD_CONN_H

#include <stdint.h>

#include "genpage.h"
#include "wire.h"

struct conn {
	int fd;
	const struct genpage *page; /* NULL until a Welcome passed one */
	uint64_t next_seq;
	uint8_t *buf; /* WIRE_MAX_FRAME bytes, kept across reconnects */
};

void conn_init(struct conn *conn);
/* Open a SOCK_SEQPACKET socket to @path (non-blocking, close-on-exec). */
int conn_open(struct conn *conn, const char *path);
/* Close the socket and unmap the page; @conn can be opened again. */
void conn_close(struct conn *conn);
/* Free the receive buffer too. */
void conn_fini(struct conn *conn);
/* Take over @from's socket and sequence numbers, and its receive buffer
 * if @conn has none (@conn must be closed); @from keeps its page. */
void conn_adopt(struct conn *conn, struct conn *from);
/* Map the page passed with the Welcome (closes @fd). */
int conn_map_page(struct conn *conn, int fd);
/* Send @frame with the next sequence number, returned in *ret_seq. */
int conn_send(struct conn *conn, Rdmad__Frame *frame, uint64_t *ret_seq);
/* A request with no field but a name: Hello (the name is the client's,
 * and the library's features go with it), Subscribe, Hold, Release. */
int conn_send_name(struct conn *conn, Rdmad__Frame__BodyCase body,
		   const char *name, uint64_t *ret_seq);
/*
 * Receive one frame, waiting up to @timeout_ms (0: do not wait).  -EAGAIN
 * when none came, -ECONNRESET when the daemon closed the connection.  A
 * passed fd lands in *ret_fd (may be NULL: then it is closed).
 */
int conn_recv(struct conn *conn, int timeout_ms, Rdmad__Frame **ret_frame,
	      int *ret_fd);

static inline uint64_t conn_page_generation(const struct conn *conn)
{
	return conn->page ? genpage_load(conn->page) : 0;
}

#endif
