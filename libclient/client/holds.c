/* SPDX-License-Identifier: MIT */
/*
 * Holds, in the public API's layer: telling the daemon this process uses
 * a device, and opening a device through libibverbs with its hold in one
 * step.  The held names, which a new connection announces again (the
 * daemon drops a connection's holds with it), are the channel's
 * (channel.c), counted per name: an explicit hold and each opened context
 * are uses of their own, and the daemon's hold goes with the last use.
 * This file takes the lock and calls down.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "client-internal.h"
#include "name.h"

RDMAD_EXPORT int rdmad_client_hold(struct rdmad_client *client,
				   const char *name)
{
	int err;

	if (!client || !rdmad_name_valid_str(name))
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	err = channel_hold(&client->channel, name, true);
	channel_wake(&client->channel);
	pthread_mutex_unlock(&client->lock);
	return err;
}

RDMAD_EXPORT int rdmad_client_release(struct rdmad_client *client,
				      const char *name)
{
	int err;

	if (!client || !rdmad_name_valid_str(name))
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	err = channel_unhold(&client->channel, name, true);
	channel_wake(&client->channel);
	pthread_mutex_unlock(&client->lock);
	return err;
}

static struct ibv_context *open_by_name(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *context = NULL;
	int i, err = ENODEV;

	list = ibv_get_device_list(NULL);
	if (!list)
		return NULL;
	for (i = 0; list[i]; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) != 0)
			continue;
		context = ibv_open_device(list[i]);
		err = context ? 0 : errno;
		break;
	}
	ibv_free_device_list(list);
	errno = err ? err : errno;
	return context;
}

static int remember_open(struct rdmad_client *c, struct ibv_context *context,
			 const char *name)
{
	struct client_open *opens;
	char *copy = strdup(name);

	if (!copy)
		return -ENOMEM;
	opens = realloc(c->opens, (c->n_opens + 1) * sizeof(*opens));
	if (!opens) {
		free(copy);
		return -ENOMEM;
	}
	c->opens = opens;
	c->opens[c->n_opens++] = (struct client_open){context, copy};
	return 0;
}

/* Hold @name for one more opened context and remember which. */
static int hold_open(struct rdmad_client *c, struct ibv_context *context,
		     const char *name)
{
	int err;

	pthread_mutex_lock(&c->lock);
	err = channel_hold(&c->channel, name, false);
	if (err == 0) {
		err = remember_open(c, context, name);
		if (err < 0)
			channel_unhold(&c->channel, name, false);
	}
	channel_wake(&c->channel);
	pthread_mutex_unlock(&c->lock);
	return err;
}

RDMAD_EXPORT struct ibv_context *
rdmad_client_open_device(struct rdmad_client *client, const char *name)
{
	struct ibv_context *context;
	int err;

	if (!client || !rdmad_name_valid_str(name)) {
		errno = EINVAL;
		return NULL;
	}
	context = open_by_name(name);
	if (!context)
		return NULL;
	err = hold_open(client, context, name);
	if (err < 0) {
		ibv_close_device(context);
		errno = -err;
		return NULL;
	}
	return context;
}

void holds_forget_opens(struct rdmad_client *c)
{
	while (c->n_opens)
		free(c->opens[--c->n_opens].name);
	free(c->opens);
	c->opens = NULL;
}

/* Take @context's entry out of the map; its name, or NULL if unknown. */
static char *forget_open(struct rdmad_client *c, struct ibv_context *context)
{
	char *name;
	size_t i;

	for (i = 0; i < c->n_opens; i++) {
		if (c->opens[i].context != context)
			continue;
		name = c->opens[i].name;
		c->opens[i] = c->opens[--c->n_opens];
		return name;
	}
	return NULL;
}

RDMAD_EXPORT int rdmad_client_close_device(struct rdmad_client *client,
					   struct ibv_context *context)
{
	char *name;
	int err = 0, rerr;

	if (!client || !context)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	name = forget_open(client, context);
	pthread_mutex_unlock(&client->lock);
	if (!name)
		return -EINVAL;
	if (ibv_close_device(context))
		err = errno ? -errno : -EIO;
	pthread_mutex_lock(&client->lock);
	rerr = channel_unhold(&client->channel, name, false);
	channel_wake(&client->channel);
	pthread_mutex_unlock(&client->lock);
	/* -ENOENT: a reconnect found the device gone and forgot it. */
	if (err == 0 && rerr != -ENOENT)
		err = rerr;
	free(name);
	return err;
}
