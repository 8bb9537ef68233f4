/* SPDX-License-Identifier: MIT */
/*
 * The client handle, the top layer: its life cycle, rdmad_client_connect(),
 * the pollable fd, rdmad_client_process() and the callback, the
 * generation and snapshot getters, fork handling, and the reports of
 * refused devices that refresh.c's open probe makes.  Connecting, the
 * handshake and requests are the channel's (channel.c); this file only
 * takes the lock and calls down.
 *
 * Locking: one mutex per client guards all its state, and is never held
 * while waiting for the daemon (channel.h says how).  The getters of the
 * generation, the fd and the timeout take no lock at all, and a snapshot
 * that is still current is handed out under a lock of its own, so no
 * getter waits for a thread that connects or reads.  Callbacks run
 * without the lock, one thread at a time (the @dispatching flag), so
 * events reach the callback in order even when several threads call
 * process().
 * The pollable fd (poller.c) is raised when a call other than process()
 * (a hold waiting for its reply, get_snapshot) read events off the socket
 * and queued them, so a poll loop never misses them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "mrcache/mrcache.h"
#include "rdmad-config.h"

/* Every live client, so that a forked child can drop their connections. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdmad_client *registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* How long get_snapshot() waits for an event the page already announced. */
#define CLIENT_PAGE_WAIT_MS 100

/* The lock is held for bounded work only, never across a wait for the
 * daemon, so fork() waits for no connect or request in progress. */
static void atfork_prepare(void)
{
	struct rdmad_client *c;

	pthread_mutex_lock(&registry_lock);
	for (c = registry; c; c = c->registry_next) {
		pthread_mutex_lock(&c->lock);
		channel_fork_prepare(&c->channel);
	}
}

static void atfork_parent(void)
{
	struct rdmad_client *c;

	for (c = registry; c; c = c->registry_next) {
		channel_fork_parent(&c->channel);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&registry_lock);
}

/* The child's copy of the client starts over, without the parent's
 * connection or holds (channel_reset_in_child()). */
static void reset_in_child(struct rdmad_client *c)
{
	channel_reset_in_child(&c->channel);
	c->dispatching = false;
	pthread_cond_init(&c->dispatch_done, NULL);
}

static void atfork_child(void)
{
	struct rdmad_client *c;

	for (c = registry; c; c = c->registry_next) {
		reset_in_child(c);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&registry_lock);
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void registry_add(struct rdmad_client *c)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&registry_lock);
	c->registry_next = registry;
	if (registry)
		registry->registry_prev = c;
	registry = c;
	pthread_mutex_unlock(&registry_lock);
}

static void registry_remove(struct rdmad_client *c)
{
	pthread_mutex_lock(&registry_lock);
	if (c->registry_prev)
		c->registry_prev->registry_next = c->registry_next;
	else
		registry = c->registry_next;
	if (c->registry_next)
		c->registry_next->registry_prev = c->registry_prev;
	pthread_mutex_unlock(&registry_lock);
}

static const char *resolve_path(const char *socket_path)
{
	const char *env;

	if (socket_path)
		return socket_path;
	env = secure_getenv("RDMAD_SOCKET");
	return env && env[0] ? env : RDMAD_DEFAULT_SOCKET;
}

RDMAD_EXPORT struct rdmad_client *rdmad_client_new(const char *socket_path)
{
	struct rdmad_client *c;

	if (socket_path && !socket_path[0]) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->path = strdup(resolve_path(socket_path));
	if (!c->path) {
		free(c);
		return NULL;
	}
	if (channel_init(&c->channel, c->path, &c->lock) < 0) {
		free(c->path);
		free(c);
		return NULL;
	}
	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->dispatch_done, NULL);
	registry_add(c);
	return c;
}

RDMAD_EXPORT struct rdmad_client *rdmad_client_ref(struct rdmad_client *client)
{
	if (client)
		atomic_fetch_add_explicit(&client->refs, 1,
					  memory_order_relaxed);
	return client;
}

static void client_free(struct rdmad_client *c)
{
	registry_remove(c);
	channel_fini(&c->channel);
	holds_forget_opens(c);
	pthread_cond_destroy(&c->dispatch_done);
	pthread_mutex_destroy(&c->lock);
	free(c->path);
	free(c);
}

RDMAD_EXPORT struct rdmad_client *
rdmad_client_unref(struct rdmad_client *client)
{
	if (client && atomic_fetch_sub_explicit(&client->refs, 1,
						memory_order_acq_rel) == 1)
		client_free(client);
	return NULL;
}

RDMAD_EXPORT const char *
rdmad_client_get_socket_path(const struct rdmad_client *client)
{
	if (!client) {
		errno = EINVAL;
		return NULL;
	}
	return client->path;
}

RDMAD_EXPORT int rdmad_client_set_callback(struct rdmad_client *client,
					   rdmad_event_cb cb, void *userdata)
{
	if (!client)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	client->cb = cb;
	client->userdata = userdata;
	/* Nobody to tell: a client used only for snapshots must not grow a
	 * queue that no rdmad_client_process() ever drains. */
	client->channel.sync.want_events = cb != NULL;
	pthread_mutex_unlock(&client->lock);
	return 0;
}

/* The features decide how devices are built: fixed once a list exists. */
RDMAD_EXPORT int rdmad_client_set_features(struct rdmad_client *client,
					   unsigned int features)
{
	struct channel *s;
	int err = 0;

	if (!client ||
	    (features & ~(unsigned int)(RDMAD_CLIENT_FEATURE_LIFECYCLE |
					RDMAD_CLIENT_FEATURE_REMOVING)))
		return -EINVAL;
	s = &client->channel;
	pthread_mutex_lock(&client->lock);
	if (s->connected || s->connecting || s->sync.snapshot)
		err = -EBUSY;
	else
		s->sync.features = features;
	pthread_mutex_unlock(&client->lock);
	return err;
}

/* Only the thread in the callback sees the event it is given. */
RDMAD_EXPORT const struct rdmad_sriov *
rdmad_client_get_event_sriov(struct rdmad_client *client)
{
	const struct rdmad_sriov *sriov = NULL;

	if (!client)
		return NULL;
	pthread_mutex_lock(&client->lock);
	if (client->dispatching &&
	    pthread_equal(client->dispatcher, pthread_self()))
		sriov = client->event_sriov;
	pthread_mutex_unlock(&client->lock);
	return sriov;
}

/* ---- connecting ---------------------------------------------------------- */

RDMAD_EXPORT int rdmad_client_connect(struct rdmad_client *client)
{
	int err;

	if (!client)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	err = channel_ensure_connected(&client->channel, CHANNEL_CONNECT_NOW);
	channel_wake(&client->channel);
	pthread_mutex_unlock(&client->lock);
	return err;
}

/* ---- polling and processing ---------------------------------------------- */

/* Lock-free, like rdmad_client_get_timeout(). */
RDMAD_EXPORT int rdmad_client_get_fd(struct rdmad_client *client)
{
	if (!client)
		return -EINVAL;
	return channel_poll_fd(&client->channel);
}

RDMAD_EXPORT int rdmad_client_get_timeout(struct rdmad_client *client)
{
	if (!client)
		return -EINVAL;
	return channel_timeout_ms(&client->channel);
}

/* A device that began to leave takes its registration caches' entries
 * with it, before the callback hears of it (librdmad(3)). */
static void drop_cached_mrs(const struct client_event *event)
{
	const struct rdmad_device *dev = event->device;

	if (dev && (rdmad_device_is_removing(dev) ||
		    rdmad_device_get_state(dev) != RDMAD_DEVICE_PRESENT))
		mrcache_device_leaving(rdmad_device_get_name(dev));
}

/* Hand the queued events to the callback, without the lock held. */
static int dispatch(struct rdmad_client *c)
{
	struct client_event *events;
	size_t i, n;
	rdmad_event_cb cb;
	void *userdata;

	events = sync_take_queue(&c->channel.sync, &n);
	for (i = 0; i < n; i++) {
		cb = c->cb;
		userdata = c->userdata;
		c->event_sriov = events[i].sriov;
		pthread_mutex_unlock(&c->lock);
		drop_cached_mrs(&events[i]);
		if (cb)
			cb(c, events[i].type, events[i].device,
			   events[i].generation, userdata);
		pthread_mutex_lock(&c->lock);
		c->event_sriov = NULL;
		snapshot_device_unref(events[i].device);
		snapshot_sriov_free(events[i].sriov);
	}
	free(events);
	return (int)n;
}

RDMAD_EXPORT int rdmad_client_process(struct rdmad_client *client)
{
	struct rdmad_client *c = client;
	int n;

	if (!c)
		return -EINVAL;
	rdmad_client_ref(c);
	pthread_mutex_lock(&c->lock);
	if (c->dispatching && pthread_equal(c->dispatcher, pthread_self())) {
		/* Called from inside the callback. */
		pthread_mutex_unlock(&c->lock);
		rdmad_client_unref(c);
		return -EDEADLK;
	}
	while (c->dispatching)
		pthread_cond_wait(&c->dispatch_done, &c->lock);
	/* Never waits for a connect or a request of another thread. */
	if (channel_ensure_connected(&c->channel,
				     CHANNEL_CONNECT_DUE_NO_WAIT) == 0)
		channel_drain(&c->channel, true);
	poller_clear(&c->channel.poller);
	c->dispatching = true;
	c->dispatcher = pthread_self();
	n = dispatch(c);
	c->dispatching = false;
	pthread_cond_broadcast(&c->dispatch_done);
	channel_wake(&c->channel);
	pthread_mutex_unlock(&c->lock);
	rdmad_client_unref(c);
	return n;
}

/* ---- generation and snapshot --------------------------------------------- */

/* No lock, no syscall, no connect: the page, else the last generation
 * the frames said. */
RDMAD_EXPORT uint64_t rdmad_client_get_generation(struct rdmad_client *client)
{
	if (!client)
		return 0;
	return channel_generation(&client->channel);
}

/* Under the lock: catch up, fold the events in, offer the result to the
 * lock-free path. */
static struct rdmad_snapshot *current_snapshot(struct channel *s, int *ret_err)
{
	struct rdmad_snapshot *snap = NULL;
	int err = 0;

	if (!channel_current(s))
		err = channel_catch_up(s, CLIENT_PAGE_WAIT_MS);
	if (err == 0)
		err = sync_fold(&s->sync);
	if (err == 0 && s->sync.snapshot)
		snap = rdmad_snapshot_ref(s->sync.snapshot);
	else if (err == 0)
		err = -ENOTCONN;
	if (snap && channel_current(s))
		channel_publish(s, snap);
	*ret_err = err;
	return snap;
}

RDMAD_EXPORT struct rdmad_snapshot *
rdmad_client_get_snapshot(struct rdmad_client *client)
{
	struct rdmad_snapshot *snap;
	int err;

	if (!client) {
		errno = EINVAL;
		return NULL;
	}
	snap = channel_cached(&client->channel);
	if (snap)
		return snap;
	pthread_mutex_lock(&client->lock);
	snap = current_snapshot(&client->channel, &err);
	channel_wake(&client->channel);
	pthread_mutex_unlock(&client->lock);
	if (!snap)
		errno = -err;
	return snap;
}

RDMAD_EXPORT int rdmad_client_resolve(struct rdmad_client *client,
				      const char *name_or_alias,
				      char **ret_name)
{
	struct rdmad_snapshot *snap;
	const struct rdmad_device *dev;
	char *name = NULL;

	if (!client || !name_or_alias || !ret_name)
		return -EINVAL;
	snap = rdmad_client_get_snapshot(client);
	if (!snap)
		return errno ? -errno : -EIO;
	dev = rdmad_snapshot_resolve(snap, name_or_alias);
	if (dev)
		name = strdup(rdmad_device_get_name(dev));
	rdmad_snapshot_unref(snap);
	if (!dev)
		return -ENODEV;
	if (!name)
		return -ENOMEM;
	*ret_name = name;
	return 0;
}

/* ---- reports of refused devices ------------------------------------------ */

/* The lock is held for bounded work only, so this never waits for the
 * daemon: the report goes out without its reply being awaited. */
int client_report_unusable(struct rdmad_client *client, const char *name,
			   uint64_t incarnation, int error)
{
	int err;

	if (!client || !name)
		return -EINVAL;
	pthread_mutex_lock(&client->lock);
	err = channel_report_unusable(&client->channel, name, incarnation,
				      error);
	pthread_mutex_unlock(&client->lock);
	return err;
}
