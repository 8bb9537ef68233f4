/* SPDX-License-Identifier: MIT */
/*
 * The udev event source.  A libudev monitor on the "udev" netlink source
 * (events after udevd has processed them, so the device nodes exist and
 * carry their permissions) filtered to infiniband, infiniband_verbs and
 * net.  Each event is decoded into the ib device it concerns and turned
 * into a coalesced rescan request; nothing else happens here (a removal
 * is looked at again later by scan.c, see scan_request_removed()).
 *
 * The kernel drops uevents when the monitor's socket buffer overflows
 * (ENOBUFS); then nobody knows what was lost, so everything is rescanned.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <libudev.h>

#include "coalesce.h"
#include "log.h"
#include "name.h"
#include "scan.h"
#include "udev.h"

/* Big enough for a storm of SR-IOV VFs appearing at once. */
#define UDEV_RCVBUF (8 * 1024 * 1024)

struct udev_source {
	struct scan *scan;
	struct udev *udev;
	struct udev_monitor *mon;
	struct event *ev;
	bool overrun_logged;
};

/* Copy @name into @ret if it is a plausible kernel device name. */
static int copy_name(char ret[64], const char *name)
{
	if (!rdmad_name_valid_str(name))
		return -EINVAL;
	memcpy(ret, name, strlen(name) + 1);
	return 0;
}

/* The last component of a devpath ("/devices/.../infiniband/mlx5_0"). */
static int copy_basename(char ret[64], const char *devpath)
{
	const char *slash;

	if (!devpath)
		return -EINVAL;
	slash = strrchr(devpath, '/');
	return copy_name(ret, slash ? slash + 1 : devpath);
}

static bool is_action(const char *action, const char *const *list)
{
	for (; *list; list++) {
		if (strcmp(action, *list) == 0)
			return true;
	}
	return false;
}

static int decode_ibdev(const struct udev_uevent *ev, struct udev_target *ret)
{
	ret->kind = UDEV_TARGET_IBDEV;
	if (copy_name(ret->name, ev->sysname) < 0)
		return -EINVAL;
	if (strcmp(ev->action, "move") == 0 &&
	    copy_basename(ret->old_name, ev->devpath_old) < 0)
		return -EINVAL;
	return 0;
}

static int decode_uverbs(const struct udev_uevent *ev, struct udev_target *ret)
{
	/* The ibdev attribute names the device directly, where sysfs still
	 * has it; a removed uverbs device is looked up by its own name. */
	if (ev->ibdev && copy_name(ret->name, ev->ibdev) == 0) {
		ret->kind = UDEV_TARGET_IBDEV;
		return 0;
	}
	ret->kind = UDEV_TARGET_UVERBS;
	return copy_name(ret->name, ev->sysname);
}

static int decode_netdev(const struct udev_uevent *ev, struct udev_target *ret)
{
	ret->kind = UDEV_TARGET_NETDEV;
	if (copy_name(ret->name, ev->sysname) < 0)
		return -EINVAL;
	if (strcmp(ev->action, "move") != 0)
		return 0;
	if (copy_name(ret->old_name, ev->ifname_old) == 0)
		return 0;
	return copy_basename(ret->old_name, ev->devpath_old);
}

int udev_decode(const struct udev_uevent *ev, struct udev_target *ret)
{
	static const char *const actions[] = {
		"add", "remove", "change", "move", NULL,
	};

	memset(ret, 0, sizeof(*ret));
	if (!ev->action || !ev->subsystem)
		return -EINVAL;
	/* bind/unbind concern drivers of the parent; the class devices that
	 * come and go with them send their own add/remove. */
	if (!is_action(ev->action, actions))
		return -ENOMSG;
	if (strcmp(ev->subsystem, "infiniband") == 0)
		return decode_ibdev(ev, ret);
	if (strcmp(ev->subsystem, "infiniband_verbs") == 0)
		return decode_uverbs(ev, ret);
	if (strcmp(ev->subsystem, "net") == 0)
		return decode_netdev(ev, ret);
	/* A PF's sriov_numvfs written: its VFs are on their way. */
	if (strcmp(ev->subsystem, "pci") == 0 &&
	    strcmp(ev->action, "change") == 0) {
		ret->kind = UDEV_TARGET_PCI;
		return copy_name(ret->name, ev->sysname);
	}
	return -ENOMSG;
}

/* Does @dev (when set) carry ib devices: an infiniband class directory? */
static bool has_ibdev(struct udev_device *dev)
{
	char path[4096];
	struct stat st;

	if (!dev || !udev_device_get_syspath(dev))
		return false;
	if (snprintf(path, sizeof(path), "%s/infiniband",
		     udev_device_get_syspath(dev)) >= (int)sizeof(path))
		return false;
	return stat(path, &st) == 0;
}

/* A netdev nobody's port uses yet may still belong to RDMA hardware: its
 * parent device then also has an infiniband class directory. */
static bool parent_has_ibdev(struct udev_device *dev)
{
	return has_ibdev(udev_device_get_parent(dev));
}

/* @removed: an ib device's "remove", which sysfs may not show yet. */
static void request(struct udev_source *src, struct udev_device *dev,
		    const struct udev_target *t, bool removed)
{
	unsigned int n;

	switch (t->kind) {
	case UDEV_TARGET_IBDEV:
		if (removed)
			scan_request_removed(src->scan, t->name);
		else
			scan_request(src->scan, t->name);
		if (t->old_name[0])
			scan_request(src->scan, t->old_name);
		break;
	case UDEV_TARGET_UVERBS:
		scan_request_uverbs(src->scan, t->name);
		break;
	case UDEV_TARGET_NETDEV:
		n = scan_request_netdev(src->scan, t->name);
		if (t->old_name[0])
			n += scan_request_netdev(src->scan, t->old_name);
		if (n == 0 && parent_has_ibdev(dev))
			scan_request(src->scan, NULL);
		break;
	case UDEV_TARGET_PCI:
		if (has_ibdev(dev))
			scan_request(src->scan, NULL);
		break;
	}
}

static void handle_device(struct udev_source *src, struct udev_device *dev)
{
	struct udev_uevent ev = {
		.action = udev_device_get_action(dev),
		.subsystem = udev_device_get_subsystem(dev),
		.sysname = udev_device_get_sysname(dev),
		.devpath_old =
			udev_device_get_property_value(dev, "DEVPATH_OLD"),
		.ifname_old =
			udev_device_get_property_value(dev, "INTERFACE_OLD"),
	};
	struct udev_target t;
	int r;

	if (ev.subsystem && strcmp(ev.subsystem, "infiniband_verbs") == 0)
		ev.ibdev = udev_device_get_sysattr_value(dev, "ibdev");
	r = udev_decode(&ev, &t);
	if (r == -EINVAL) {
		/* Garbage names cannot be rescanned one by one. */
		log_debug("udev: odd event %s %s", ev.action ? ev.action : "?",
			  udev_device_get_devpath(dev));
		scan_request(src->scan, NULL);
		return;
	}
	if (r < 0)
		return;
	log_debug("udev: %s %s/%s", ev.action, ev.subsystem, t.name);
	request(src, dev, &t,
		t.kind == UDEV_TARGET_IBDEV && !strcmp(ev.action, "remove") &&
			!strcmp(ev.subsystem, "infiniband"));
}

static void on_overrun(struct udev_source *src)
{
	if (!src->overrun_logged)
		log_warnx("udev: monitor overran, uevents lost; rescanning");
	src->overrun_logged = true;
	scan_request(src->scan, NULL);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct udev_source *src = arg;
	struct udev_device *dev;

	for (;;) {
		errno = 0;
		dev = udev_monitor_receive_device(src->mon);
		if (dev) {
			handle_device(src, dev);
			udev_device_unref(dev);
			continue;
		}
		if (errno == ENOBUFS) {
			on_overrun(src);
			continue;
		}
		/* EAGAIN: drained.  A malformed message reads as an error
		 * too; libudev has already consumed it, so carry on later. */
		break;
	}
}

static int monitor_open(struct udev_source *src)
{
	static const char *const subsystems[] = {
		"infiniband",
		"infiniband_verbs",
		"net",
		"pci",
	};
	size_t i;
	int r;

	src->mon = udev_monitor_new_from_netlink(src->udev, "udev");
	if (!src->mon)
		return errno ? -errno : -ENOMEM;
	for (i = 0; i < sizeof(subsystems) / sizeof(subsystems[0]); i++) {
		r = udev_monitor_filter_add_match_subsystem_devtype(
			src->mon, subsystems[i], NULL);
		if (r < 0)
			return r;
	}
	/* Needs CAP_NET_ADMIN beyond rmem_max; a smaller buffer still
	 * works, with a higher chance of overruns. */
	if (udev_monitor_set_receive_buffer_size(src->mon, UDEV_RCVBUF) < 0)
		log_debug("udev: cannot enlarge the monitor buffer");
	return udev_monitor_enable_receiving(src->mon);
}

struct udev_source *udev_source_new(struct event_base *base, struct scan *scan)
{
	struct udev_source *src;
	int r;

	src = calloc(1, sizeof(*src));
	if (!src)
		return NULL;
	src->scan = scan;
	src->udev = udev_new();
	if (!src->udev) {
		r = -ENOMEM;
		goto fail;
	}
	r = monitor_open(src);
	if (r < 0)
		goto fail;
	src->ev = event_new(base, udev_monitor_get_fd(src->mon),
			    EV_READ | EV_PERSIST, on_readable, src);
	if (!src->ev || event_add(src->ev, NULL) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	return src;
fail:
	udev_source_free(src);
	errno = -r;
	return NULL;
}

void udev_source_free(struct udev_source *src)
{
	if (!src)
		return;
	if (src->ev)
		event_free(src->ev);
	udev_monitor_unref(src->mon);
	udev_unref(src->udev);
	free(src);
}
