/* SPDX-License-Identifier: MIT */
/*
 * The client handle behind the opaque struct rdmad_client, shared by the
 * public API's two files: client.c (life cycle, polling, the callback,
 * the generation and snapshot getters, fork handling) and holds.c (holds
 * and opened devices).  The connection and protocol state below them is
 * in channel.h.  Not installed.
 */
#ifndef RDMAD_CLIENT_INTERNAL_H
#define RDMAD_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmad.h"
#include "channel.h"

#include "export.h"

/* A device opened by rdmad_client_open_device(). */
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

	struct channel channel;

	struct client_open *opens;
	size_t n_opens;

	rdmad_event_cb cb;
	void *userdata;
	/* EXPECTING or SETTLED being delivered by @dispatcher. */
	const struct rdmad_sriov *event_sriov;

	struct rdmad_client *registry_next;
	struct rdmad_client *registry_prev;
};

/* client.c: tell the daemon that this process could not open @name's
 * life @incarnation (@error EPERM or EACCES), once per life and without
 * waiting (channel_report_unusable()).  For the open probe of
 * ibv_refresh_device_list() (refresh.c); not exported. */
int client_report_unusable(struct rdmad_client *client, const char *name,
			   uint64_t incarnation, int error);

/* holds.c: forget the opened devices (without closing them), as when the
 * client is freed; with @client->lock held or unshared. */
void holds_forget_opens(struct rdmad_client *client);

#endif
