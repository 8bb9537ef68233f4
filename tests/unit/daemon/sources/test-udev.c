/* SPDX-License-Identifier: MIT */
/*
 * Unit test of daemon/sources/udev.c.  First the decoding of uevent properties
 * into rescan targets, table-driven; then the real libudev monitor under
 * umockdev (run through umockdev-wrapper): a fake ib device, its uverbs
 * device and a netdev come and go, and the rescan requests recorded by
 * the fake scan module must name the right devices.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <libudev.h>
#include <umockdev.h>

#include "fake.h"
#include "check.h"
#include "scan.h"
#include "udev.h"

#define PCI "/sys/devices/pci0000:00/0000:00:03.0"

static void test_decode(void)
{
	static const struct {
		struct udev_uevent ev;
		int ret;
		enum udev_target_kind kind;
		const char *name, *old_name;
		bool kernel_added; /* the ib device's own add (arrival.h) */
	} cases[] = {
		{{"add", "infiniband", "mlx5_0"},
		 0,
		 UDEV_TARGET_IBDEV,
		 "mlx5_0",
		 "",
		 true},
		{{"remove", "infiniband", "mlx5_0"},
		 0,
		 UDEV_TARGET_IBDEV,
		 "mlx5_0",
		 ""},
		{{"move", "infiniband", "rdma0",
		  "/devices/pci0000:00/0000:00:03.0/infiniband/mlx5_0"},
		 0,
		 UDEV_TARGET_IBDEV,
		 "rdma0",
		 "mlx5_0",
		 true},
		{{"move", "infiniband", "rdma0", NULL}, -EINVAL},
		{{"move", "infiniband", "rdma0", "/x/"}, -EINVAL},
		{{"add", "infiniband_verbs", "uverbs3", NULL, "mlx5_1"},
		 0,
		 UDEV_TARGET_IBDEV,
		 "mlx5_1",
		 ""},
		{{"remove", "infiniband_verbs", "uverbs3"},
		 0,
		 UDEV_TARGET_UVERBS,
		 "uverbs3",
		 ""},
		{{"change", "infiniband_verbs", "uverbs3", NULL, "a/b"},
		 0,
		 UDEV_TARGET_UVERBS,
		 "uverbs3",
		 ""},
		{{"add", "infiniband_mad", "umad2", NULL, "mlx5_1"},
		 0,
		 UDEV_TARGET_IBDEV,
		 "mlx5_1",
		 ""},
		{{"remove", "infiniband_mad", "issm2"},
		 0,
		 UDEV_TARGET_MAD,
		 "issm2",
		 ""},
		{{"add", "infiniband_mad", "umad2", NULL, "../x"},
		 0,
		 UDEV_TARGET_MAD,
		 "umad2",
		 ""},
		{{"add", "infiniband_mad", "a/b"}, -EINVAL},
		{{"add", "net", "eth0"}, 0, UDEV_TARGET_NETDEV, "eth0", ""},
		{{"move", "net", "ens1", "/devices/virtual/net/eth0", NULL,
		  "eth0"},
		 0,
		 UDEV_TARGET_NETDEV,
		 "ens1",
		 "eth0"},
		{{"move", "net", "ens1", "/devices/virtual/net/eth9"},
		 0,
		 UDEV_TARGET_NETDEV,
		 "ens1",
		 "eth9"},
		{{"bind", "infiniband", "mlx5_0"}, -ENOMSG},
		{{"unbind", "net", "eth0"}, -ENOMSG},
		{{"add", "usb", "1-1"}, -ENOMSG},
		{{NULL, "infiniband", "mlx5_0"}, -EINVAL},
		{{"add", NULL, "mlx5_0"}, -EINVAL},
		{{"add", "infiniband", NULL}, -EINVAL},
		{{"add", "infiniband", ""}, -EINVAL},
		{{"add", "infiniband", ".."}, -EINVAL},
		{{"add", "infiniband", "a b"}, -EINVAL},
		{{"add", "infiniband", "mlx\x01"}, -EINVAL},
		{{"add", "infiniband",
		  "a12345678901234567890123456789012345678901234567890123456789"
		  "0123"},
		 -EINVAL},
	};
	struct udev_target t;
	size_t i;
	int r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = udev_decode(&cases[i].ev, &t);
		CHECK(r == cases[i].ret, "case %zu: %d", i, r);
		if (r < 0 || cases[i].ret < 0)
			continue;
		CHECK(t.kind == cases[i].kind &&
			      strcmp(t.name, cases[i].name) == 0 &&
			      strcmp(t.old_name, cases[i].old_name) == 0 &&
			      t.kernel_added == cases[i].kernel_added,
		      "case %zu: kind %d name '%s' old '%s' added %d", i,
		      t.kind, t.name, t.old_name, t.kernel_added);
	}
}

/* ---- under umockdev ---- */

static struct event_base *base;

static void run_for(unsigned int ms)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = ms * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void add(UMockdevTestbed *tb, const char *desc)
{
	GError *err = NULL;

	if (!umockdev_testbed_add_from_string(tb, desc, &err)) {
		fprintf(stderr, "testbed: %s\n", err->message);
		exit(1);
	}
}

static void add_pci(UMockdevTestbed *tb)
{
	add(tb, "P: /devices/pci0000:00/0000:00:03.0\n"
		"E: SUBSYSTEM=pci\n"
		"E: PCI_ID=15B3:1017\n"
		"A: vendor=0x15b3\n"
		"A: device=0x1017\n");
}

static void add_ibdev(UMockdevTestbed *tb, const char *name)
{
	char desc[512];

	snprintf(desc, sizeof(desc),
		 "P: /devices/pci0000:00/0000:00:03.0/infiniband/%s\n"
		 "E: SUBSYSTEM=infiniband\n"
		 "A: node_guid=0002:c903:0000:0001\n"
		 "A: node_type=1: CA\n"
		 "L: device=../../../0000:00:03.0\n",
		 name);
	add(tb, desc);
}

/* The "remove" uevents a udev monitor of our own hears within 300 ms of the
 * last event, for @syspath. */
static unsigned int heard_removes(struct udev_monitor *mon, const char *syspath)
{
	struct pollfd pfd = {.fd = udev_monitor_get_fd(mon), .events = POLLIN};
	struct udev_device *dev;
	unsigned int n = 0;
	const char *action, *path;

	while (poll(&pfd, 1, 300) > 0) {
		dev = udev_monitor_receive_device(mon);
		if (!dev)
			continue;
		action = udev_device_get_action(dev);
		path = udev_device_get_syspath(dev);
		if (action && path && strcmp(action, "remove") == 0 &&
		    strcmp(path, syspath) == 0)
			n++;
		udev_device_unref(dev);
	}
	return n;
}

/* Whether umockdev_testbed_remove_device() sends the device's "remove"
 * uevent itself, as umockdev does from 0.18.4 on (Debian 13's 0.19: its
 * commit "Generate a "remove" uevent"), or only deletes the device's files,
 * as 0.17 (Debian 12) does.  Asked of umockdev rather than of its version:
 * a device of a subsystem of its own comes and goes under a monitor of the
 * test's, before the source under test exists. */
static bool remove_sends_uevent(UMockdevTestbed *tb)
{
	const char *sys = "/sys/devices/virtual/rdmadprobe/probe0";
	struct udev *udev = udev_new();
	struct udev_monitor *mon;
	bool sends;

	mon = udev_monitor_new_from_netlink(udev, "udev");
	if (!mon || udev_monitor_enable_receiving(mon) < 0) {
		fprintf(stderr, "probe monitor: %s\n", strerror(errno));
		exit(1);
	}
	add(tb, "P: /devices/virtual/rdmadprobe/probe0\n"
		"E: SUBSYSTEM=rdmadprobe\n");
	heard_removes(mon, sys); /* its "add" */
	umockdev_testbed_remove_device(tb, sys);
	sends = heard_removes(mon, sys) > 0;
	udev_monitor_unref(mon);
	udev_unref(udev);
	return sends;
}

/* Remove a device as the kernel does: one "remove" uevent, then its sysfs
 * directory is gone.  umockdev_testbed_remove_device() sends the uevent
 * itself where @sends (umockdev >= 0.18.4); sending another one there made
 * two removals of the device, two SEQNUMs, which the source rightly took
 * as two (each "gone" twice).  That was this test's doing, not the
 * kernel's nor libudev's: the kernel sends one "remove" for a device. */
static void remove_device(UMockdevTestbed *tb, bool sends, const char *path)
{
	if (!sends)
		umockdev_testbed_uevent(tb, path, "remove");
	umockdev_testbed_remove_device(tb, path);
}

/* Add devices (umockdev sends their "add" uevents itself) and return
 * what the source asked for. */
static const char *added(UMockdevTestbed *tb, const char *desc)
{
	fake_calls_reset();
	add(tb, desc);
	run_for(100);
	return fake_calls_dump();
}

/* Send @action for @path and return what the source asked for. */
static const char *uevent(UMockdevTestbed *tb, const char *path,
			  const char *action)
{
	fake_calls_reset();
	umockdev_testbed_uevent(tb, path, action);
	run_for(100);
	return fake_calls_dump();
}

static void test_monitor(void)
{
	UMockdevTestbed *tb;
	struct udev_source *src;
	const char *got;
	bool sends;

	tb = umockdev_testbed_new();
	sends = remove_sends_uevent(tb);
	fprintf(stderr, "umockdev_testbed_remove_device() %s\n",
		sends ? "sends the remove uevent itself" : "sends none");
	base = event_base_new();
	src = udev_source_new(base, NULL);
	CHECK(src != NULL, "udev_source_new: %s", strerror(errno));
	if (!src)
		return;

	add_pci(tb);
	fake_calls_reset();
	add_ibdev(tb, "mlx5_0");
	run_for(100);
	got = fake_calls_dump();
	CHECK(strcmp(got, "added:mlx5_0;") == 0, "add: %s", got);
	got = uevent(tb, PCI "/infiniband/mlx5_0", "change");
	CHECK(strcmp(got, "dev:mlx5_0;") == 0, "change: %s", got);

	got = added(
		tb,
		"P: /devices/pci0000:00/0000:00:03.0/infiniband_verbs/uverbs0\n"
		"E: SUBSYSTEM=infiniband_verbs\n"
		"A: ibdev=mlx5_0\n"
		"L: device=../../../0000:00:03.0\n");
	CHECK(strcmp(got, "dev:mlx5_0;") == 0, "uverbs add: %s", got);

	/* Removed before the daemon reads it: the ibdev attribute is gone,
	 * so the table is asked who had uverbs0, and that device is being
	 * unregistered (scan_uverbs_gone()).  umockdev sends each uevent to
	 * both monitors, "kernel" and "udev", as the kernel and udevd do:
	 * each is taken once (by SEQNUM), whichever comes first, so the
	 * device is announced gone once. */
	fake_calls_reset();
	remove_device(tb, sends, PCI "/infiniband_verbs/uverbs0");
	run_for(100);
	got = fake_calls_dump();
	CHECK(strcmp(got, "uverbs-gone:uverbs0;") == 0, "uverbs remove: %s",
	      got);

	/* ib_umad loaded later: its devices name the ib device; once
	 * removed, the table is asked who had them. */
	got = added(tb,
		    "P: /devices/pci0000:00/0000:00:03.0/infiniband_mad/umad0\n"
		    "E: SUBSYSTEM=infiniband_mad\n"
		    "A: ibdev=mlx5_0\n"
		    "A: port=1\n"
		    "L: device=../../../0000:00:03.0\n");
	CHECK(strcmp(got, "dev:mlx5_0;") == 0, "umad add: %s", got);
	fake_calls_reset();
	remove_device(tb, sends, PCI "/infiniband_mad/umad0");
	run_for(100);
	got = fake_calls_dump();
	CHECK(strcmp(got, "mad:umad0;") == 0, "umad remove: %s", got);

	/* Renamed: mlx5_0 becomes rdma0 (udev reports a move). */
	umockdev_testbed_remove_device(tb, PCI "/infiniband/mlx5_0");
	add_ibdev(tb, "rdma0");
	run_for(100);
	umockdev_testbed_set_property(
		tb, PCI "/infiniband/rdma0", "DEVPATH_OLD",
		"/devices/pci0000:00/0000:00:03.0/infiniband/mlx5_0");
	got = uevent(tb, PCI "/infiniband/rdma0", "move");
	CHECK(strcmp(got, "added:rdma0;dev:mlx5_0;") == 0, "move: %s", got);

	/* A netdev of the same PCI function: no port uses it yet (the fake
	 * table knows none), but its parent carries an ib device. */
	got = added(tb, "P: /devices/pci0000:00/0000:00:03.0/net/eth5\n"
			"E: SUBSYSTEM=net\n"
			"E: INTERFACE=eth5\n"
			"L: device=../../../0000:00:03.0\n");
	CHECK(strcmp(got, "netdev:eth5;all;") == 0, "net add: %s", got);
	umockdev_testbed_set_property(tb, PCI "/net/eth5", "INTERFACE_OLD",
				      "eth4");
	got = uevent(tb, PCI "/net/eth5", "move");
	CHECK(strcmp(got, "netdev:eth5;netdev:eth4;all;") == 0, "net move: %s",
	      got);

	/* A virtual netdev with nothing RDMA about it. */
	got = added(tb, "P: /devices/virtual/net/veth7\n"
			"E: SUBSYSTEM=net\n"
			"E: INTERFACE=veth7\n");
	CHECK(strcmp(got, "netdev:veth7;") == 0, "veth add: %s", got);

	/* Unplug: the ib device goes, then its PCI parent.  The kernel
	 * announces a removal before sysfs forgets the device: the scanner
	 * is told so, and looks again later itself. */
	got = uevent(tb, PCI "/infiniband/rdma0", "remove");
	CHECK(strcmp(got, "removed:rdma0;") == 0, "remove: %s", got);

	udev_source_free(src);
	event_base_free(base);
	g_object_unref(tb);
}

int main(void)
{
	test_decode();
	/* umockdev_in_mock_environment() of umockdev 0.17 misses the
	 * wrapper's slash-less LD_PRELOAD, so look for the library itself. */
	if (!strstr(getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "",
		    "umockdev-preload")) {
		fprintf(stderr, "SKIP: monitor part needs umockdev-wrapper\n");
		return failures ? 1 : 77;
	}
	test_monitor();
	if (failures)
		fprintf(stderr, "%u failures\n", failures);
	return failures ? 1 : 0;
}
