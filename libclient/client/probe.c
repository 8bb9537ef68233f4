/* SPDX-License-Identifier: MIT */
/*
 * The open probe: a sysfs entry and a /dev node do not prove that this
 * process may open a device; the device cgroup or the node's permissions
 * may refuse it (PROTOCOL.md 8b).  So each life a process is offered is
 * opened once with ibv_open_device(), closed again at once, and what the
 * open said is remembered, keyed by the daemon's identity and
 * incarnation, in a table of at most PROBE_MAX lives for the whole
 * process (ibv_refresh_device_list() serves the process).  When it is
 * full, the life looked up least recently makes room: the lives still
 * listed are looked up on every call, so only a node with more devices
 * than that ever probes one twice.
 *
 * One mutex guards the table and is held across the open, so two
 * threads never probe the same life; it is never held while anything
 * waits for the daemon, and fork() takes it first (pthread_atfork), so a
 * child never inherits it locked.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "probe.h"
#include "report.h"

struct probed {
	char *identity;
	uint64_t incarnation;
	int err;       /* what the open gave: 0 or -errno */
	uint64_t used; /* @probe_clock when last looked up */
};

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t probe_atfork_once = PTHREAD_ONCE_INIT;
static struct probed *table; /* PROBE_MAX entries once the first comes */
static size_t n_probed;
static uint64_t probe_clock;

static void probe_atfork_prepare(void)
{
	pthread_mutex_lock(&probe_lock);
}

static void probe_atfork_release(void)
{
	pthread_mutex_unlock(&probe_lock);
}

static void register_atfork(void)
{
	pthread_atfork(probe_atfork_prepare, probe_atfork_release,
		       probe_atfork_release);
}

static struct probed *find_probed(const char *identity, uint64_t incarnation)
{
	size_t i;

	for (i = 0; i < n_probed; i++)
		if (table[i].incarnation == incarnation &&
		    strcmp(table[i].identity, identity) == 0)
			return &table[i];
	return NULL;
}

/* A free entry: a new one, else the least recently used one's. */
static struct probed *make_room(void)
{
	struct probed *oldest;
	size_t i;

	if (!table) {
		table = calloc(PROBE_MAX, sizeof(*table));
		if (!table)
			return NULL;
	}
	if (n_probed < PROBE_MAX)
		return &table[n_probed++];
	oldest = &table[0];
	for (i = 1; i < n_probed; i++)
		if (table[i].used < oldest->used)
			oldest = &table[i];
	free(oldest->identity);
	oldest->identity = NULL;
	return oldest;
}

/*
 * Why the open failed.  rdma-core's open_cdev() tries /dev/char/M:m and
 * others after /dev/infiniband/uverbsN, so the errno ibv_open_device()
 * leaves is the last path's (ENOENT in a container without /dev/char),
 * not the refusal of the node itself: open the node to ask.
 */
static int node_error(const struct ibv_device *device, int err)
{
	char path[sizeof("/dev/infiniband/") + IBV_SYSFS_NAME_MAX];
	int fd;

	if (reports_refusal(-err) || !device->dev_name[0])
		return err;
	snprintf(path, sizeof(path), "/dev/infiniband/%s", device->dev_name);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0) {
		close(fd);
		return err;
	}
	return reports_refusal(errno) ? -errno : err;
}

/* Open and close at once: 0, or the open's -errno. */
static int open_probe(struct ibv_device *device)
{
	struct ibv_context *context;

	errno = 0;
	context = ibv_open_device(device);
	if (!context)
		return node_error(device, errno ? -errno : -EIO);
	ibv_close_device(context);
	return 0;
}

/* Under the lock: the life's entry, probing it if it is new; NULL when
 * there is no memory to remember it (then it is not probed either, so a
 * life is never probed twice for want of memory). */
static struct probed *look_up(struct ibv_device *device, const char *identity,
			      uint64_t incarnation, bool *ret_first)
{
	struct probed *entry = find_probed(identity, incarnation);
	char *copy;

	*ret_first = false;
	if (entry)
		return entry;
	copy = strdup(identity);
	entry = copy ? make_room() : NULL;
	if (!entry) {
		free(copy);
		return NULL;
	}
	*entry = (struct probed){
		.identity = copy,
		.incarnation = incarnation,
		.err = open_probe(device),
	};
	*ret_first = true;
	return entry;
}

int probe_life(struct ibv_device *device, const char *identity,
	       uint64_t incarnation, bool *ret_first)
{
	struct probed *entry;
	int err = 0;

	pthread_once(&probe_atfork_once, register_atfork);
	pthread_mutex_lock(&probe_lock);
	entry = look_up(device, identity, incarnation, ret_first);
	if (entry) {
		entry->used = ++probe_clock;
		err = entry->err;
	}
	pthread_mutex_unlock(&probe_lock);
	return reports_refusal(-err) ? err : 0;
}
