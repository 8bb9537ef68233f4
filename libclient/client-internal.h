/* SPDX-License-Identifier: MIT */
/*
 * librdmad internals shared by the client modules: the snapshot and device
 * structs behind the opaque public handles, the connection (conn.c), the
 * processing of incoming frames (sync.c) and the client handle itself
 * (client.c, holds.c, refresh.c).  Not installed.
 */
#ifndef RDMAD_CLIENT_INTERNAL_H
#define RDMAD_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "genpage.h"
#include "rdmad.h"
#include "wire.h"

#include "export.h"

/* ---- snapshot.c: immutable, refcounted device list ---------------------- */

struct rdmad_port {
	unsigned int number;
	const char *state;
	const char *phys_state;
	const char *link_layer;
	const char *rate;
	const char *netdev;
	int netdev_up;
	unsigned int lid;
};

struct rdmad_holder {
	pid_t pid;
	uid_t uid;
	const char *comm;
};

/* One allocation: this header, the ports, the holders, then the strings. */
struct rdmad_device {
	atomic_uint refs;
	enum rdmad_device_state state;
	int numa_node;
	uint64_t generation;
	const char *name;
	const char *old_name;
	const char *id;
	const char *uverbs;
	const char *node_guid;
	const char *sys_image_guid;
	const char *node_type;
	const char *fw_ver;
	const char *pci_address;
	const char *driver;
	unsigned int n_ports;
	unsigned int n_holders;	   /* listed: at most WIRE_MAX_HOLDERS_LISTED */
	unsigned int holder_count; /* all of them */
	struct rdmad_port *ports;
	struct rdmad_holder *holders;
};

struct rdmad_snapshot {
	atomic_uint refs;
	uint64_t generation;
	size_t count;
	struct rdmad_device *devices[];
};

/* A device built from a wire message (all strings copied); NULL on ENOMEM
 * or a message without a name (errno EINVAL). */
struct rdmad_device *snapshot_device_new(const Rdmad__Device *msg);
struct rdmad_device *snapshot_device_ref(struct rdmad_device *device);
void snapshot_device_unref(struct rdmad_device *device);

/* A snapshot of the devices of the snapshot parts @msgs (in order). */
struct rdmad_snapshot *snapshot_new_from_wire(Rdmad__Device *const *msgs,
					      size_t n, uint64_t generation);

/*
 * The snapshot that follows @old after one event: @device (a reference is
 * taken) replaces the entry with the same id (else the same name, or
 * old_name for RENAMED), is appended if new, or the entry is dropped
 * (RELEASED, or REMOVED of a device nobody holds).  @old may be NULL.
 */
int snapshot_apply_event(const struct rdmad_snapshot *old,
			 enum rdmad_event_type type,
			 struct rdmad_device *device, uint64_t generation,
			 struct rdmad_snapshot **ret_snapshot);
/* The same for @n events in order, in one pass and one allocation; the
 * result has the generation of the last event (@old's if @n is 0). */
struct client_event;
int snapshot_apply_events(const struct rdmad_snapshot *old,
			  const struct client_event *events, size_t n,
			  struct rdmad_snapshot **ret_snapshot);

/* ---- conn.c: one connection to the daemon -------------------------------- */

struct conn {
	int fd;
	const struct genpage *page; /* NULL until the Welcome came */
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
/* Map the page passed with the Welcome (closes @fd). */
int conn_map_page(struct conn *conn, int fd);
/* Send @frame with the next sequence number, returned in *ret_seq. */
int conn_send(struct conn *conn, Rdmad__Frame *frame, uint64_t *ret_seq);
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
	return genpage_load(conn->page);
}

/* ---- the client handle --------------------------------------------------- */

struct client_event {
	enum rdmad_event_type type;
	struct rdmad_device *device; /* NULL for RESYNC */
	uint64_t generation;
};

struct client_open {
	struct ibv_context *context;
	char *name;
};

struct rdmad_client {
	atomic_uint refs;
	char *path;

	/* Everything below is guarded by @lock. */
	pthread_mutex_t lock;
	pthread_cond_t dispatch_done;
	bool dispatching;
	pthread_t dispatcher;

	struct conn conn;
	bool connected;
	int epoll_fd;
	int wake_fd;
	bool woken;
	unsigned int backoff_ms;
	uint64_t next_attempt_ms;
	int last_error;

	/* The device list is @snapshot plus the events in @unfolded, oldest
	 * first: an event costs no copy of the list until someone asks for
	 * it (sync_fold()). */
	struct rdmad_snapshot *snapshot;
	struct client_event *unfolded;
	size_t n_unfolded;
	size_t cap_unfolded;
	uint64_t subscribe_seq;
	bool awaiting_snapshot;
	bool resync_pending;
	struct wire_assembly assembly; /* snapshot parts so far */

	struct client_event *queue;
	size_t queue_len;
	size_t queue_cap;

	char **holds;
	size_t n_holds;
	struct client_open *opens;
	size_t n_opens;

	rdmad_event_cb cb;
	void *userdata;

	struct rdmad_client *registry_next;
	struct rdmad_client *registry_prev;
};

/* Reconnect backoff: first retry after 50 ms, doubling up to 2 s. */
#define CLIENT_BACKOFF_MIN_MS 50
#define CLIENT_BACKOFF_MAX_MS 2000
/* How long a request waits for its reply, the handshake for its snapshot. */
#define CLIENT_REPLY_TIMEOUT_MS 2000
/* How long get_snapshot() waits for an event the page already announced. */
#define CLIENT_PAGE_WAIT_MS 100

uint64_t client_now_ms(void);

/* sync.c, with @client->lock held. */
int sync_handle_frame(struct rdmad_client *client, Rdmad__Frame *frame);
int sync_subscribe(struct rdmad_client *client);
int sync_queue_event(struct rdmad_client *client, enum rdmad_event_type type,
		     struct rdmad_device *device, uint64_t generation);
void sync_reset(struct rdmad_client *client);
void sync_clear_queue(struct rdmad_client *client);
/* The generation of the device list, 0 before the first snapshot. */
uint64_t sync_generation(const struct rdmad_client *client);
/* Apply the unfolded events to @client->snapshot; 0 or -ENOMEM. */
int sync_fold(struct rdmad_client *client);
/* Drop the list: the snapshot and the unfolded events. */
void sync_drop_list(struct rdmad_client *client);

/* client.c, with @client->lock held. */
int client_ensure_connected(struct rdmad_client *client, bool force);
void client_drop_connection(struct rdmad_client *client, int err);
/* Read and handle what is pending, waiting up to @timeout_ms for the first
 * frame; -ECONNRESET (connection dropped) or 0. */
int client_drain(struct rdmad_client *client, int timeout_ms);
/* Send a request and wait for its reply, handling everything else that
 * arrives meanwhile; returns the -errno of the reply's status. */
int client_request(struct rdmad_client *client, Rdmad__Frame__BodyCase body,
		   const char *name);
void client_wake(struct rdmad_client *client);

/* holds.c, with @client->lock held. */
int holds_reannounce(struct rdmad_client *client);
void holds_clear(struct rdmad_client *client);

#endif
