/* SPDX-License-Identifier: MIT */
/*
 * Holds: telling the daemon this process uses a device, remembering the
 * names so a new connection can announce them again (the daemon drops a
 * connection's holds with it), and opening a device through libibverbs
 * with its hold in one step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "client-internal.h"
#include "name.h"

static ssize_t find_hold(const struct rdmad_client *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n_holds; i++)
		if (strcmp(c->holds[i], name) == 0)
			return (ssize_t)i;
	return -1;
}

static int add_hold(struct rdmad_client *c, const char *name)
{
	char **holds;
	char *copy = strdup(name);

	if (!copy)
		return -ENOMEM;
	holds = realloc(c->holds, (c->n_holds + 1) * sizeof(*holds));
	if (!holds) {
		free(copy);
		return -ENOMEM;
	}
	c->holds = holds;
	c->holds[c->n_holds++] = copy;
	return 0;
}

static void remove_hold(struct rdmad_client *c, size_t index)
{
	free(c->holds[index]);
	c->holds[index] = c->holds[--c->n_holds];
}

void holds_clear(struct rdmad_client *c)
{
	while (c->n_holds)
		remove_hold(c, c->n_holds - 1);
	free(c->holds);
	c->holds = NULL;
}

/* Whether a refused hold should be forgotten rather than retried. */
static bool hold_refused(int err)
{
	return err == -ENODEV || err == -EPERM || err == -ENOSPC ||
	       err == -EBADMSG;
}

int holds_reannounce(struct rdmad_client *c)
{
	size_t i = 0;
	int err;

	while (i < c->n_holds) {
		err = client_request(c, RDMAD__FRAME__BODY_HOLD, c->holds[i]);
		if (hold_refused(err)) {
			/* Gone while we were away, or no longer allowed. */
			remove_hold(c, i);
			continue;
		}
		if (err < 0)
			return err;
		i++;
	}
	return 0;
}

RDMAD_EXPORT int rdmad_client_hold(struct rdmad_client *client,
				   const char *name)
{
	int err;

	if (!client || !rdmad_name_valid_str(name))
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	if (find_hold(client, name) >= 0)
		err = -EALREADY;
	else
		err = client_ensure_connected(client, true);
	if (err == 0)
		err = client_request(client, RDMAD__FRAME__BODY_HOLD, name);
	if (err == 0)
		err = add_hold(client, name);
	client_wake(client);
	pthread_mutex_unlock(&client->lock);
	return err;
}

RDMAD_EXPORT int rdmad_client_release(struct rdmad_client *client,
				      const char *name)
{
	ssize_t index;
	int err = 0;

	if (!client || !rdmad_name_valid_str(name))
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	index = find_hold(client, name);
	if (index < 0)
		err = -ENOENT;
	/* Without a connection the daemon already dropped the hold. */
	else if (client->connected)
		err = client_request(client, RDMAD__FRAME__BODY_RELEASE, name);
	if (err == -ECONNRESET || err == -ENODEV)
		err = 0;
	if (index >= 0 && err != -ETIMEDOUT && err != -EAGAIN)
		remove_hold(client, (size_t)index);
	client_wake(client);
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
