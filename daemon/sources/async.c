/* SPDX-License-Identifier: MIT */
/*
 * Verbs async events.  Each present device is opened through libibverbs
 * so the daemon hears what sysfs and udev do not announce: port state,
 * LID, P_Key and GID changes, and DEVICE_FATAL.  Every such event becomes
 * a rescan request for the device; a fatal one also closes the context.
 *
 * Devices are tracked by their stable identity, so a rename keeps the
 * context.  No reference on the table's device is taken.  The context is
 * closed at REMOVING, the moment the kernel deletes the uverbs node: a
 * driver that can disassociate (mlx5, ...) would let the device go
 * anyway, but one that cannot (rxe, siw) makes the unregistration wait
 * for every open context, and RDMA netlink's UNREGISTER and the sysfs
 * removal come only after that wait, so a context kept until REMOVED
 * would hold the device back for ever.  Where a device cannot be opened
 * (no kernel behind it, no permission) this says so once at debug level
 * and leaves it be.
 *
 * A device announced (ADDED, RETURNED, READY) gets its context
 * ASYNC_OPEN_DELAY_MS later, not in the turn of the loop that told the
 * clients: opening it reads libibverbs' device list again (each
 * ibv_get_device_list() rescans sysfs, every device's files), work that
 * would take the CPU from the clients taking in the event on a small
 * host, and the devices announced within the delay share one list, so
 * a storm of 512 VFs added does not cost 512 rescans.  The list is
 * fetched only when a device to open is not in the cached one (or a
 * removal made it stale).  Once open, the device is looked at again
 * (scan_request()): a port that changed before its context could hear
 * it is seen then.  Until then the daemon holds no context on it, so a
 * driver that cannot disassociate lets it go at once (PROTOCOL.md 8a:
 * REMOVED without REMOVING).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <infiniband/verbs.h>

#include "devices.h"
#include "log.h"
#include "async.h"
#include "scan.h"

/* How long an announced device waits for its context (above). */
#define ASYNC_OPEN_DELAY_MS 10

struct async_dev {
	struct async_source *src;
	char id[sizeof(((struct device_record *)0)->id)];
	char name[RECORD_NAME_MAX];
	struct ibv_context *ctx;
	struct event *ev;
	bool pending; /* announced, its context not tried yet */
	struct async_dev *next;
};

struct async_source {
	struct event_base *base;
	struct devices *table;
	struct scan *scan;
	struct async_dev *devs;
	struct event *open_timer; /* the pending devices' delay */
	struct ibv_device **list; /* cached; refreshed for a new device */
	int nlist;
	bool list_stale; /* a device went or was renamed */
	unsigned int open_count;
};

static void dev_close(struct async_dev *d)
{
	if (d->ev) {
		event_free(d->ev);
		d->ev = NULL;
	}
	if (d->ctx) {
		ibv_close_device(d->ctx);
		d->ctx = NULL;
		d->src->open_count--;
	}
}

/* Events that change what a port looks like.  QP, CQ, SRQ and WQ events
 * cannot come: the daemon creates none of those. */
static bool is_port_event(enum ibv_event_type type)
{
	static const enum ibv_event_type port_events[] = {
		IBV_EVENT_PORT_ACTIVE,	     IBV_EVENT_PORT_ERR,
		IBV_EVENT_LID_CHANGE,	     IBV_EVENT_PKEY_CHANGE,
		IBV_EVENT_GID_CHANGE,	     IBV_EVENT_SM_CHANGE,
		IBV_EVENT_CLIENT_REREGISTER,
	};
	size_t i;

	for (i = 0; i < sizeof(port_events) / sizeof(port_events[0]); i++) {
		if (type == port_events[i])
			return true;
	}
	return false;
}

static void on_async(evutil_socket_t fd, short what, void *arg)
{
	struct async_dev *d = arg;
	struct ibv_async_event event;
	bool fatal = false;

	while (d->ctx && ibv_get_async_event(d->ctx, &event) == 0) {
		log_debug("async: %s: %s", d->name,
			  ibv_event_type_str(event.event_type));
		if (event.event_type == IBV_EVENT_DEVICE_FATAL)
			fatal = true;
		if (fatal || is_port_event(event.event_type))
			scan_request(d->src->scan, d->name);
		ibv_ack_async_event(&event);
		if (fatal)
			break;
	}
	if (fatal) {
		log_warnx("async: %s: device fatal error", d->name);
		dev_close(d);
	}
}

static struct ibv_device *find_ibv(struct async_source *src, const char *name)
{
	int i;

	for (i = 0; i < src->nlist; i++) {
		if (strcmp(ibv_get_device_name(src->list[i]), name) == 0)
			return src->list[i];
	}
	return NULL;
}

static void refresh_list(struct async_source *src)
{
	/* Contexts stay valid across ibv_free_device_list(). */
	if (src->list)
		ibv_free_device_list(src->list);
	src->nlist = 0;
	src->list = ibv_get_device_list(&src->nlist);
	src->list_stale = false;
}

static int dev_open(struct async_dev *d)
{
	struct ibv_device *ibv;
	int flags;

	ibv = find_ibv(d->src, d->name);
	if (!ibv)
		return -ENODEV;
	d->ctx = ibv_open_device(ibv);
	if (!d->ctx)
		return errno ? -errno : -ENODEV;
	d->src->open_count++;
	flags = fcntl(d->ctx->async_fd, F_GETFL);
	if (flags < 0 ||
	    fcntl(d->ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	d->ev = event_new(d->src->base, d->ctx->async_fd, EV_READ | EV_PERSIST,
			  on_async, d);
	if (!d->ev || event_add(d->ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

static struct async_dev *find_dev(struct async_source *src, const char *id)
{
	struct async_dev *d;

	for (d = src->devs; d; d = d->next) {
		if (strcmp(d->id, id) == 0)
			return d;
	}
	return NULL;
}

/* Listed, to be opened by open_pending(). */
static void add_device(struct async_source *src, const struct device *dev)
{
	const struct device_record *info = device_info(dev);
	struct async_dev *d;

	if (device_state(dev) != DEVICE_STATE_PRESENT || device_removing(dev) ||
	    find_dev(src, info->id))
		return;
	d = calloc(1, sizeof(*d));
	if (!d)
		return;
	d->src = src;
	snprintf(d->id, sizeof(d->id), "%s", info->id);
	snprintf(d->name, sizeof(d->name), "%s", info->name);
	d->pending = true;
	d->next = src->devs;
	src->devs = d;
}

/* Open every pending device, with one fresh list where one of them is
 * not in the cached one; @look_again: ask for a look at each opened.  A
 * failed device stays listed, closed, so it is not retried on every
 * event; it is forgotten when it goes away. */
static void open_pending(struct async_source *src, bool look_again)
{
	bool refresh = src->list_stale;
	struct async_dev *d;
	int r;

	for (d = src->devs; d && !refresh; d = d->next)
		refresh = d->pending && !find_ibv(src, d->name);
	if (refresh)
		refresh_list(src);
	for (d = src->devs; d; d = d->next) {
		if (!d->pending)
			continue;
		d->pending = false;
		r = dev_open(d);
		if (r < 0) {
			log_debug("async: %s: no verbs async events: %s",
				  d->name, strerror(-r));
			dev_close(d);
		} else if (look_again && src->scan) {
			scan_request(src->scan, d->name);
		}
	}
}

static void on_open_timer(evutil_socket_t fd, short what, void *arg)
{
	open_pending(arg, true);
}

static void remove_device(struct async_source *src, const char *id)
{
	struct async_dev **pp, *d;

	for (pp = &src->devs; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->id, id) != 0)
			continue;
		d = *pp;
		*pp = d->next;
		dev_close(d);
		free(d);
		return;
	}
}

static void rename_device(struct async_source *src, const struct device *dev)
{
	struct async_dev *d = find_dev(src, device_info(dev)->id);

	if (d)
		snprintf(d->name, sizeof(d->name), "%s",
			 device_info(dev)->name);
}

struct async_source *async_source_new(struct event_base *base,
				      struct devices *table, struct scan *scan)
{
	struct async_source *src;
	const struct device *dev;

	src = calloc(1, sizeof(*src));
	if (!src)
		return NULL;
	src->base = base;
	src->table = table;
	src->scan = scan;
	src->open_timer = evtimer_new(base, on_open_timer, src);
	if (!src->open_timer) {
		free(src);
		errno = ENOMEM;
		return NULL;
	}
	/* At start-up no client waits: open at once. */
	for (dev = devices_first(table); dev; dev = devices_next(table, dev))
		add_device(src, dev);
	open_pending(src, false);
	return src;
}

void async_source_free(struct async_source *src)
{
	struct async_dev *d;

	if (!src)
		return;
	event_free(src->open_timer);
	while ((d = src->devs)) {
		src->devs = d->next;
		dev_close(d);
		free(d);
	}
	if (src->list)
		ibv_free_device_list(src->list);
	free(src);
}

void async_source_device_event(struct async_source *src,
			       enum devices_event event,
			       const struct device *dev)
{
	const struct timeval delay = {.tv_usec = ASYNC_OPEN_DELAY_MS * 1000};

	switch (event) {
	case DEVICES_EVENT_ADDED:
	case DEVICES_EVENT_RETURNED: /* a new registration: a new context */
	case DEVICES_EVENT_READY:    /* maybe a removal that did not end */
		if (find_dev(src, device_info(dev)->id))
			break;
		add_device(src, dev);
		if (!evtimer_pending(src->open_timer, NULL))
			evtimer_add(src->open_timer, &delay);
		break;
	case DEVICES_EVENT_RENAMED:
		src->list_stale = true;
		rename_device(src, dev);
		break;
	case DEVICES_EVENT_REMOVING: /* let go now: see the top */
	case DEVICES_EVENT_REMOVED:
		src->list_stale = true;
		remove_device(src, device_info(dev)->id);
		break;
	case DEVICES_EVENT_RELEASED:
		/* Its context went at REMOVED; the id may belong to a
		 * re-plugged successor by now, whose context must stay. */
	case DEVICES_EVENT_CHANGED:
	case DEVICES_EVENT_UNREADY:
	case DEVICES_EVENT_EXPECTING:
	case DEVICES_EVENT_SETTLED:
		break;
	}
}

unsigned int async_source_open_count(const struct async_source *src)
{
	return src->open_count;
}
