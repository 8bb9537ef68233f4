/* SPDX-License-Identifier: MIT */
/*
 * Another network namespace's devices: see nstable.h.  The kernel is
 * asked through a socket of that namespace (nlquery.c), never blocking:
 * a client that shares the socket can make an answer fail, which leaves
 * the table as it was until the next try, and can change nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "nlquery.h"
#include "nstable.h"
#include "sysfs.h"

static void on_event(void *userdata, enum devices_event event,
		     const struct device *dev, const char *old_name)
{
	struct nstable *t = userdata;

	if (t->fn)
		t->fn(t->userdata, t, event, dev, old_name);
}

struct nstable *nstable_new(uint64_t cookie, uint64_t netns,
			    const char *pod_uid, int nl_fd,
			    nstable_listener_fn fn, void *userdata)
{
	struct nstable *t = calloc(1, sizeof(*t));

	/* Its own generations are never published: views count theirs. */
	if (!t || !(t->table = devices_new(0))) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->nl_fd = fcntl(nl_fd, F_DUPFD_CLOEXEC, 3);
	if (t->nl_fd < 0) {
		devices_free(t->table);
		free(t);
		return NULL;
	}
	t->fn = fn;
	t->userdata = userdata;
	t->cookie = cookie;
	t->netns = netns;
	snprintf(t->pod_uid, sizeof(t->pod_uid), "%s", pod_uid);
	devices_set_listener(t->table, on_event, t);
	return t;
}

void nstable_drop_socket(struct nstable *t)
{
	if (t->nl_fd >= 0)
		close(t->nl_fd);
	t->nl_fd = -1;
}

void nstable_take_socket(struct nstable *t, int nl_fd)
{
	int fd = fcntl(nl_fd, F_DUPFD_CLOEXEC, 3);

	if (fd < 0)
		return;
	nstable_drop_socket(t);
	t->nl_fd = fd;
}

void nstable_free(struct nstable *t)
{
	if (!t)
		return;
	devices_apply_scan(t->table, NULL, 0);
	devices_free(t->table);
	nstable_drop_socket(t);
	free(t);
}

int nstable_rescan(struct nstable *t)
{
	struct sysfs_device *devs = NULL;
	size_t n = 0;
	int r;

	if (t->nl_fd < 0)
		return -ESRCH;
	r = nlquery_devices(t->nl_fd, &devs, &n, NSTABLE_MAX_DEVICES);
	if (r == -E2BIG && !t->capped)
		log_warnx("network namespace %llu: more than %d RDMA devices, "
			  "the rest left out",
			  (unsigned long long)t->cookie, NSTABLE_MAX_DEVICES);
	t->capped = r == -E2BIG;
	if (r < 0 && !(r == -E2BIG && devs))
		return r;
	r = devices_apply_scan(t->table, devs, n);
	sysfs_devices_free(devs, n);
	return r;
}

const struct device *nstable_find_identity(const struct nstable *t,
					   const char *identity)
{
	const struct device *dev = devices_find_identity(t->table, identity);

	return dev && device_state(dev) == DEVICE_STATE_PRESENT ? dev : NULL;
}

void nstable_drop(struct nstable *t, const struct device *dev)
{
	char name[SYSFS_NAME_MAX];

	snprintf(name, sizeof(name), "%s", device_info(dev)->name);
	devices_apply_one(t->table, name, NULL);
}
