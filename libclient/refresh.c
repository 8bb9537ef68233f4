/* SPDX-License-Identifier: MIT */
/*
 * ibv_refresh_device_list(): the real libibverbs list (it rescans sysfs on
 * every ibv_get_device_list() call), filtered by what rdmad announced, so
 * the result never lists a device the daemon reported removed or away, or
 * does not know.  A process-wide client on the default socket serves it.
 *
 * Freeing: ibv_free_device_list() drops one reference on every entry up to
 * the NULL and frees the array (rdma-core libibverbs/device.c; the
 * references belong to the list, not to the devices).  So the entries we
 * drop are moved into an array of their own and freed with
 * ibv_free_device_list(), which releases exactly their references, while
 * the kept ones are compacted in place and stay owned by the returned list.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "export.h"
#include "rdmad.h"

static pthread_once_t process_client_once = PTHREAD_ONCE_INIT;
static struct rdmad_client *process_client;

static void process_client_create(void)
{
	process_client = rdmad_client_new(NULL);
}

/* Present for the daemon: not REMOVED, not AWAY, not unknown.  Where a
 * held ended life shares the name with the present one, find_device()
 * returns the present one, which is what libibverbs lists. */
static bool listed_present(const struct rdmad_snapshot *snap, const char *name)
{
	const struct rdmad_device *dev = rdmad_snapshot_find_device(snap, name);

	return dev && rdmad_device_get_state(dev) == RDMAD_DEVICE_PRESENT;
}

static int filter_list(struct ibv_device **list, int *num,
		       const struct rdmad_snapshot *snap)
{
	struct ibv_device **dropped;
	int i, kept = 0, n_dropped = 0;

	for (i = 0; list[i]; i++)
		if (!listed_present(snap, ibv_get_device_name(list[i])))
			n_dropped++;
	if (n_dropped == 0)
		return 0;
	dropped = calloc((size_t)n_dropped + 1, sizeof(*dropped));
	if (!dropped)
		return -ENOMEM;
	n_dropped = 0;
	for (i = 0; list[i]; i++) {
		if (listed_present(snap, ibv_get_device_name(list[i])))
			list[kept++] = list[i];
		else
			dropped[n_dropped++] = list[i];
	}
	list[kept] = NULL;
	ibv_free_device_list(dropped);
	*num = kept;
	return 0;
}

RDMAD_EXPORT struct ibv_device **ibv_refresh_device_list(int *num_devices)
{
	struct rdmad_snapshot *snap = NULL;
	struct ibv_device **list;
	int num = 0, err;

	pthread_once(&process_client_once, process_client_create);
	/* Current first, so the list is at least as new as the generation
	 * the caller may have read; no daemon means no filtering. */
	if (process_client)
		snap = rdmad_client_get_snapshot(process_client);
	list = ibv_get_device_list(&num);
	if (list && snap) {
		err = filter_list(list, &num, snap);
		if (err < 0) {
			ibv_free_device_list(list);
			list = NULL;
			num = 0;
			errno = -err;
		}
	}
	rdmad_snapshot_unref(snap);
	if (num_devices)
		*num_devices = num;
	return list;
}
