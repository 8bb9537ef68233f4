/* SPDX-License-Identifier: MIT */
/*
 * ibv_refresh_device_list(): the real libibverbs list (it rescans sysfs on
 * every ibv_get_device_list() call), filtered by what rdmad announced, so
 * the result never lists a device the daemon reported removed or away, or
 * does not know.  A process-wide client on the default socket serves it.
 *
 * Nor does it list a device this process may not open (PROTOCOL.md 8b):
 * one the daemon flags unusable in this client's view, or one whose open
 * probe (probe.c: once per life, where libibverbs' list is at hand
 * anyway) got EPERM or EACCES.  Such a first refusal is reported to the
 * daemon (client_report_unusable(), which does not wait for the reply)
 * so that the other processes of this view learn it too.  Against a
 * daemon before views (a snapshot without a view) nothing is probed or
 * reported, as before.
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

#include "client-internal.h"
#include "export.h"
#include "probe.h"
#include "rdmad.h"

static pthread_once_t process_client_once = PTHREAD_ONCE_INIT;
static struct rdmad_client *process_client;

static void process_client_create(void)
{
	process_client = rdmad_client_new(NULL);
}

/* Present for the daemon: not REMOVED, not AWAY, not being removed, not
 * unknown; NULL else.  Where a held ended life shares the name with the present
 * one, find_device() returns the present one, which is what libibverbs lists.
 */
static const struct rdmad_device *
listed_present(const struct rdmad_snapshot *snap, const char *name)
{
	const struct rdmad_device *dev = rdmad_snapshot_find_device(snap, name);

	if (!dev || rdmad_device_get_state(dev) != RDMAD_DEVICE_PRESENT ||
	    rdmad_device_is_removing(dev))
		return NULL;
	return dev;
}

/* Whether the open probe of @dev's life, which libibverbs lists as
 * @device, found it refused; the first refusal is reported.  Only a
 * daemon that speaks views (its snapshot has one) takes reports, and
 * only lives it numbers can be named in one. */
static bool refused(const struct rdmad_snapshot *snap,
		    const struct rdmad_device *dev, struct ibv_device *device)
{
	uint64_t incarnation = rdmad_device_get_incarnation(dev);
	bool first;
	int err;

	if (!rdmad_snapshot_get_view(snap) || incarnation == 0)
		return false;
	err = probe_life(device, rdmad_device_get_identity(dev), incarnation,
			 &first);
	if (err == 0)
		return false;
	/* Until the daemon's CHANGED flags it, the probe's memory keeps it
	 * out of this list and the next ones. */
	if (first)
		client_report_unusable(process_client,
				       rdmad_device_get_name(dev), incarnation,
				       -err);
	return true;
}

static bool keep(const struct rdmad_snapshot *snap, struct ibv_device *device)
{
	const struct rdmad_device *dev =
		listed_present(snap, ibv_get_device_name(device));

	return dev && !rdmad_device_is_unusable(dev) &&
	       !refused(snap, dev, device);
}

/* One pass, so each device is decided once: asked twice, the probe might
 * answer twice differently (a node with more lives than PROBE_MAX). */
static int filter_list(struct ibv_device **list, int *num,
		       const struct rdmad_snapshot *snap)
{
	struct ibv_device **dropped;
	size_t i, n = 0, kept = 0, n_dropped = 0;

	while (list[n])
		n++;
	dropped = calloc(n + 1, sizeof(*dropped));
	if (!dropped)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (keep(snap, list[i]))
			list[kept++] = list[i];
		else
			dropped[n_dropped++] = list[i];
	}
	list[kept] = NULL;
	ibv_free_device_list(dropped);
	*num = (int)kept;
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
