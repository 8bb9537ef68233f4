/* SPDX-License-Identifier: MIT */
/*
 * The uevent source.  Two libudev monitors filtered to infiniband,
 * infiniband_verbs, infiniband_mad (ib_umad's umadN and issmN, which
 * come and go with ib_umad, also after the device), net and pci:
 *   - "kernel": the kernel's own uevents (NETLINK_KOBJECT_UEVENT group 1),
 *     sent the moment a device is added or deleted, with or without udevd;
 *     libudev takes them from the kernel only (sender pid 0).
 *   - "udev": the same events after udevd has processed them, so the
 *     device nodes exist and carry their permissions.  Where udevd does
 *     not run (no /run/udev/control) nothing arrives on it.
 * Where udevd runs, the kernel's add, change and move events are left to
 * its copy; removals are taken from whichever says it first, which is the
 * kernel.  That matters for one event above all: the uverbs node's
 * removal is the only sign a device is being unregistered before the
 * kernel waits for every context on it (scan_uverbs_gone(), devices.h
 * "Removing"), and without udevd it is the only sign at all on kernels
 * whose RDMA netlink has no monitor group.
 *
 * Each event is decoded into the ib device it concerns and turned into a
 * coalesced rescan request; nothing else happens here (a removal is
 * looked at again later by scan.c, see scan_request_removed()).
 *
 * The kernel drops uevents when a monitor's socket buffer overflows
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

/* Where udevd, when it runs, has its control socket (libudev's test). */
#define UDEVD_CONTROL "/run/udev/control"
/* Uevents taken, remembered by SEQNUM so that the other monitor's copy
 * is not taken again.  udevd passes an event on within moments, but a
 * host's servicing removes every VF at once: 1,024 VFs make about 3,000
 * removals (ib device, uverbs, netdev) before udevd's copies come. */
#define TAKEN_MAX 4096

struct udev_source;

struct monitor {
	struct udev_source *src;
	struct udev_monitor *mon;
	struct event *ev;
	bool kernel; /* the "kernel" source, not "udev" */
};

struct udev_source {
	struct scan *scan;
	struct udev *udev;
	struct monitor kernel, udevd;
	unsigned long long taken[TAKEN_MAX]; /* a ring of SEQNUMs */
	unsigned int ntaken;
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
	/* Its own add, or a rename (ib_device_rename() renames registered
	 * devices only: udevd's rules rename at the add, before udevd's
	 * copy of it goes out). */
	ret->kernel_added = strcmp(ev->action, "add") == 0 ||
			    strcmp(ev->action, "move") == 0;
	if (copy_name(ret->name, ev->sysname) < 0)
		return -EINVAL;
	if (strcmp(ev->action, "move") == 0 &&
	    copy_basename(ret->old_name, ev->devpath_old) < 0)
		return -EINVAL;
	return 0;
}

/* A char device of an ib device (uverbsN; umadN, issmN): its ibdev
 * attribute names the device directly, where sysfs still has it; a
 * removed one is looked up by its own name, as a target of @own kind. */
static int decode_char_device(const struct udev_uevent *ev,
			      enum udev_target_kind own,
			      struct udev_target *ret)
{
	if (ev->ibdev && copy_name(ret->name, ev->ibdev) == 0) {
		ret->kind = UDEV_TARGET_IBDEV;
		return 0;
	}
	ret->kind = own;
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
		return decode_char_device(ev, UDEV_TARGET_UVERBS, ret);
	if (strcmp(ev->subsystem, "infiniband_mad") == 0)
		return decode_char_device(ev, UDEV_TARGET_MAD, ret);
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

/* @removed: a "remove", which sysfs may not show yet. */
static void request(struct udev_source *src, struct udev_device *dev,
		    const struct udev_target *t, bool removed)
{
	unsigned int n;

	switch (t->kind) {
	case UDEV_TARGET_IBDEV:
		if (removed)
			scan_request_removed(src->scan, t->name);
		else if (t->kernel_added)
			scan_kernel_added(src->scan, t->name);
		else
			scan_request(src->scan, t->name);
		if (t->old_name[0])
			scan_request(src->scan, t->old_name);
		break;
	case UDEV_TARGET_UVERBS:
		if (removed)
			scan_uverbs_gone(src->scan, t->name);
		else
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
	case UDEV_TARGET_MAD:
		scan_request_mad(src->scan, t->name);
		break;
	}
}

static bool was_taken(const struct udev_source *src, unsigned long long seq)
{
	for (unsigned int i = 0; i < TAKEN_MAX; i++)
		if (src->taken[i] == seq)
			return true;
	return false;
}

/*
 * Take this uevent, or leave it to the other monitor?  The kernel's add,
 * change and move go to udevd's copy where udevd runs; the second copy of
 * an event taken is a duplicate.  Events without a SEQNUM (0) cannot be
 * matched and are taken.
 */
static bool take(struct udev_source *src, const struct monitor *m,
		 struct udev_device *dev)
{
	unsigned long long seq = udev_device_get_seqnum(dev);
	const char *action = udev_device_get_action(dev);

	if (m->kernel && action && strcmp(action, "remove") != 0 &&
	    access(UDEVD_CONTROL, F_OK) == 0)
		return false;
	if (!seq)
		return true;
	if (was_taken(src, seq))
		return false;
	src->taken[src->ntaken++ % TAKEN_MAX] = seq;
	return true;
}

static void handle_device(struct monitor *m, struct udev_device *dev)
{
	struct udev_source *src = m->src;
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

	if (!take(src, m, dev))
		return;
	/* A removed uverbs or mad device's attributes are gone or going: it
	 * is known by its own name (scan_uverbs_gone(), scan_request_mad()). */
	if (ev.subsystem &&
	    (strcmp(ev.subsystem, "infiniband_verbs") == 0 ||
	     strcmp(ev.subsystem, "infiniband_mad") == 0) &&
	    ev.action && strcmp(ev.action, "remove") != 0)
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
	log_debug("udev: %s %s %s/%s", m->kernel ? "kernel" : "udevd",
		  ev.action, ev.subsystem, t.name);
	request(src, dev, &t,
		!strcmp(ev.action, "remove") &&
			(t.kind == UDEV_TARGET_UVERBS ||
			 (t.kind == UDEV_TARGET_IBDEV &&
			  !strcmp(ev.subsystem, "infiniband"))));
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
	struct monitor *m = arg;
	struct udev_device *dev;

	for (;;) {
		errno = 0;
		dev = udev_monitor_receive_device(m->mon);
		if (dev) {
			handle_device(m, dev);
			udev_device_unref(dev);
			continue;
		}
		if (errno == ENOBUFS) {
			on_overrun(m->src);
			continue;
		}
		/* EAGAIN: drained.  A malformed message reads as an error
		 * too; libudev has already consumed it, so carry on later. */
		break;
	}
}

static int monitor_filter(struct udev_monitor *mon)
{
	static const char *const subsystems[] = {
		"infiniband",
		"infiniband_verbs",
		"infiniband_mad", /* ib_umad's umadN and issmN */
		"net",
		"pci",
	};
	size_t i;
	int r;

	for (i = 0; i < sizeof(subsystems) / sizeof(subsystems[0]); i++) {
		r = udev_monitor_filter_add_match_subsystem_devtype(
			mon, subsystems[i], NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

static int monitor_open(struct udev_source *src, struct event_base *base,
			struct monitor *m, bool kernel)
{
	int r;

	m->src = src;
	m->kernel = kernel;
	m->mon = udev_monitor_new_from_netlink(src->udev,
					       kernel ? "kernel" : "udev");
	if (!m->mon)
		return errno ? -errno : -ENOMEM;
	r = monitor_filter(m->mon);
	if (r < 0)
		return r;
	/* Needs CAP_NET_ADMIN beyond rmem_max; a smaller buffer still
	 * works, with a higher chance of overruns. */
	if (udev_monitor_set_receive_buffer_size(m->mon, UDEV_RCVBUF) < 0)
		log_debug("udev: cannot enlarge the monitor buffer");
	r = udev_monitor_enable_receiving(m->mon);
	if (r < 0)
		return r;
	m->ev = event_new(base, udev_monitor_get_fd(m->mon),
			  EV_READ | EV_PERSIST, on_readable, m);
	if (!m->ev || event_add(m->ev, NULL) < 0)
		return -ENOMEM;
	return 0;
}

static void monitor_close(struct monitor *m)
{
	if (m->ev)
		event_free(m->ev);
	udev_monitor_unref(m->mon);
	m->ev = NULL;
	m->mon = NULL;
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
	r = monitor_open(src, base, &src->udevd, false);
	if (r < 0)
		goto fail;
	/* Without it rdmad still hears udevd, when it runs, and RDMA
	 * netlink: later, and nothing before a removal's wait. */
	r = monitor_open(src, base, &src->kernel, true);
	if (r < 0) {
		log_warnx("udev: cannot listen to the kernel's uevents (%s): "
			  "removals are heard only after udevd or the kernel "
			  "is done with them",
			  strerror(-r));
		monitor_close(&src->kernel);
	}
	log_info("udev: kernel uevents %s, udevd %s",
		 src->kernel.mon ? "heard" : "not heard",
		 access(UDEVD_CONTROL, F_OK) == 0 ? "running" : "not running");
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
	monitor_close(&src->kernel);
	monitor_close(&src->udevd);
	udev_unref(src->udev);
	free(src);
}
