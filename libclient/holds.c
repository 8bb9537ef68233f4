/* SPDX-License-Identifier: MIT */
/*
 * Holds, in the public API's layer: telling the daemon this process uses
 * a device, and opening a device through libibverbs with its hold in one
 * step.  The held names, which a new connection announces again (the
 * daemon drops a connection's holds with it), are the session's
 * (session.c); this file takes the lock and calls down.
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
	struct session *s;
	int err;

	if (!client || !rdmad_name_valid_str(name))
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	s = &client->session;
	if (session_hold_find(s, name) >= 0)
		err = -EALREADY;
	else
		err = session_ensure_connected(s, true);
	if (err == 0)
		err = session_request(s, RDMAD__FRAME__BODY_HOLD, name);
	if (err == 0)
		err = session_hold_add(s, name);
	session_wake(s);
	pthread_mutex_unlock(&client->lock);
	return err;
}

RDMAD_EXPORT int rdmad_client_release(struct rdmad_client *client,
				      const char *name)
{
	struct session *s;
	ssize_t index;
	int err = 0;

	if (!client || !rdmad_name_valid_str(name))
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	s = &client->session;
	index = session_hold_find(s, name);
	if (index < 0)
		err = -ENOENT;
	/* Without a connection the daemon already dropped the hold. */
	else if (s->connected)
		err = session_request(s, RDMAD__FRAME__BODY_RELEASE, name);
	if (err == -ECONNRESET || err == -ENODEV)
		err = 0;
	if (index >= 0 && err != -ETIMEDOUT && err != -EAGAIN)
		session_hold_remove(s, (size_t)index);
	session_wake(s);
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
	err = rdmad_client_hold(client, name);
	/* A second open of a held device shares the hold. */
	if (err == 0 || err == -EALREADY) {
		pthread_mutex_lock(&client->lock);
		err = remember_open(client, context, name);
		pthread_mutex_unlock(&client->lock);
	}
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
static char *forget_open(struct rdmad_client *c, struct ibv_context *context,
			 bool *ret_last)
{
	char *name = NULL;
	size_t i;

	for (i = 0; i < c->n_opens && !name; i++) {
		if (c->opens[i].context != context)
			continue;
		name = c->opens[i].name;
		c->opens[i] = c->opens[--c->n_opens];
	}
	*ret_last = true;
	for (i = 0; name && i < c->n_opens; i++)
		if (strcmp(c->opens[i].name, name) == 0)
			*ret_last = false;
	return name;
}

RDMAD_EXPORT int rdmad_client_close_device(struct rdmad_client *client,
					   struct ibv_context *context)
{
	char *name;
	bool last;
	int err;

	if (!client || !context)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	name = forget_open(client, context, &last);
	pthread_mutex_unlock(&client->lock);
	if (!name)
		return -EINVAL;
	err = 0;
	if (ibv_close_device(context))
		err = errno ? -errno : -EIO;
	if (last) {
		int rerr = rdmad_client_release(client, name);

		if (err == 0 && rerr != -ENOENT)
			err = rerr;
	}
	free(name);
	return err;
}
