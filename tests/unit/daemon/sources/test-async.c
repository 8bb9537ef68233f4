/* SPDX-License-Identifier: MIT */
/*
 * Unit test of daemon/sources/async.c under umockdev (run through
 * umockdev-wrapper): the real libibverbs lists the fake devices but
 * cannot open them (no kernel behind them).  The source must degrade
 * quietly (no warning, no rescan request, nothing open), must not fetch
 * libibverbs' device list per event (ibv_get_device_list() is wrapped at
 * link time to count calls) and must forget devices that go.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <infiniband/verbs.h>
#include <umockdev.h>

#include "devices.h"
#include "fake.h"
#include "async.h"
#include "scan.h"
#include "check.h"

static unsigned int nlists;

struct ibv_device **__real_ibv_get_device_list(int *n);
struct ibv_device **__wrap_ibv_get_device_list(int *n);

struct ibv_device **__wrap_ibv_get_device_list(int *n)
{
	nlists++;
	return __real_ibv_get_device_list(n);
}

static void add(UMockdevTestbed *tb, const char *desc)
{
	GError *err = NULL;

	if (!umockdev_testbed_add_from_string(tb, desc, &err)) {
		fprintf(stderr, "testbed: %s\n", err->message);
		exit(1);
	}
}

/* An mlx5 function as libibverbs' mlx5 provider matches it. */
static void plug(UMockdevTestbed *tb, unsigned int i)
{
	char desc[2048];

	snprintf(desc, sizeof(desc),
		 "P: /devices/pci0000:00/0000:00:0%u.0\n"
		 "E: SUBSYSTEM=pci\nE: DRIVER=mlx5_core\n"
		 "E: "
		 "MODALIAS=pci:"
		 "v000015B3d00001017sv000015B3sd00000008bc02sc00i00\n"
		 "A: vendor=0x15b3\nA: device=0x1017\n"
		 "A: "
		 "modalias=pci:"
		 "v000015B3d00001017sv000015B3sd00000008bc02sc00i00\n",
		 i);
	add(tb, desc);
	snprintf(desc, sizeof(desc),
		 "P: /devices/pci0000:00/0000:00:0%u.0/infiniband/mlx5_%u\n"
		 "E: SUBSYSTEM=infiniband\n"
		 "A: node_guid=0002:c903:0000:000%u\nA: node_type=1: CA\n"
		 "L: device=../../../0000:00:0%u.0\n",
		 i, i, i, i);
	add(tb, desc);
	snprintf(desc, sizeof(desc),
		 "P: "
		 "/devices/pci0000:00/0000:00:0%u.0/infiniband_verbs/uverbs%u\n"
		 "N: infiniband/uverbs%u\nE: SUBSYSTEM=infiniband_verbs\n"
		 "E: MAJOR=231\nE: MINOR=%u\nE: "
		 "DEVNAME=/dev/infiniband/uverbs%u\n"
		 "A: ibdev=mlx5_%u\nA: abi_version=1\nA: dev=231:%u\n"
		 "L: device=../../../0000:00:0%u.0\n",
		 i, i, i, 192 + i, i, i, 192 + i, i);
	add(tb, desc);
}

static void table_add(struct devices *table, unsigned int i)
{
	struct device_record info;

	memset(&info, 0, sizeof(info));
	snprintf(info.name, sizeof(info.name), "mlx5_%u", i);
	snprintf(info.uverbs, sizeof(info.uverbs), "uverbs%u", i);
	snprintf(info.id, sizeof(info.id), "pci:0000:00:0%u.0", i);
	snprintf(info.node_guid, sizeof(info.node_guid), "0002:c903:0000:000%u",
		 i);
	snprintf(info.node_type, sizeof(info.node_type), "CA");
	info.numa_node = -1;
	if (devices_apply_one(table, info.name, &info) != 1)
		fprintf(stderr, "cannot add mlx5_%u to the table\n", i);
}

static struct async_source *async;

static void on_event(void *userdata, enum devices_event event,
		     const struct device *dev, const char *old_name)
{
	if (async)
		async_source_device_event(async, event, dev);
}

/* Turn the loop for @ms: the delayed opens come due. */
static void run_ms(struct event_base *base, unsigned int ms)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = ms * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static unsigned int ibv_count(void)
{
	struct ibv_device **list;
	int n = 0;

	list = __real_ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	return (unsigned int)n;
}

int main(void)
{
	struct event_base *base;
	struct devices *table;
	UMockdevTestbed *tb;
	char path[4096], *sysdir;
	FILE *f;
	unsigned int i;

	if (!strstr(getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "",
		    "umockdev-preload")) {
		fprintf(stderr, "SKIP: needs umockdev-wrapper\n");
		return 77;
	}
	tb = umockdev_testbed_new();
	/* libibverbs reads the class-level ABI version first. */
	sysdir = umockdev_testbed_get_sys_dir(tb);
	snprintf(path, sizeof(path), "%s/class/infiniband_verbs", sysdir);
	g_free(sysdir);
	g_mkdir_with_parents(path, 0755);
	strncat(path, "/abi_version", sizeof(path) - strlen(path) - 1);
	f = fopen(path, "w");
	if (!f)
		return 1;
	fputs("6\n", f);
	fclose(f);

	plug(tb, 1);
	if (ibv_count() != 1) {
		fprintf(stderr,
			"SKIP: libibverbs lists %u fake devices, not "
			"1 (no matching provider?)\n",
			ibv_count());
		return 77;
	}
	base = event_base_new();
	table = devices_new(0);
	devices_set_listener(table, on_event, NULL);
	table_add(table, 1);

	/* Start: one list, one failed open, quietly. */
	nlists = 0;
	async = async_source_new(base, table, NULL);
	CHECK(async != NULL, "async_source_new: %s", strerror(errno));
	CHECK(nlists == 1, "%u lists at start", nlists);
	CHECK(async_source_open_count(async) == 0, "opened a fake device");

	/* Devices added one by one: nothing read in the turn that announced
	 * them (the clients go first), then one fresh list for the four new
	 * names (not in the cached one) once the delay is over. */
	nlists = 0;
	for (i = 2; i <= 5; i++) {
		plug(tb, i);
		table_add(table, i);
	}
	CHECK(nlists == 0, "%u lists in the turn of the additions", nlists);
	run_ms(base, 50);
	CHECK(nlists == 1, "%u lists for 4 additions", nlists);
	CHECK(async_source_open_count(async) == 0, "opened a fake device");

	/* Changes are no reason to fetch the list or to retry opening. */
	nlists = 0;
	for (i = 0; i < 100; i++) {
		struct device_record info;

		memset(&info, 0, sizeof(info));
		snprintf(info.name, sizeof(info.name), "mlx5_2");
		snprintf(info.uverbs, sizeof(info.uverbs), "uverbs2");
		snprintf(info.id, sizeof(info.id), "pci:0000:00:02.0");
		snprintf(info.node_guid, sizeof(info.node_guid),
			 "0002:c903:0000:0002");
		snprintf(info.fw_ver, sizeof(info.fw_ver), "1.%u", i);
		snprintf(info.node_type, sizeof(info.node_type), "CA");
		info.numa_node = -1;
		devices_apply_one(table, "mlx5_2", &info);
	}
	CHECK(nlists == 0, "%u lists for 100 changes", nlists);

	/* Removal forgets the device; the list is fetched again only when
	 * a device is next added. */
	devices_apply_one(table, "mlx5_3", NULL);
	CHECK(nlists == 0, "%u lists for a removal", nlists);

	CHECK(fake_log_warnings == 0, "%u warnings", fake_log_warnings);
	CHECK(fake_calls_total() == 0, "rescans asked: %s", fake_calls_dump());

	async_source_free(async);
	async = NULL;
	devices_free(table);
	event_base_free(base);
	g_object_unref(tb);
	if (failures)
		fprintf(stderr, "%u failures\n", failures);
	return failures ? 1 : 0;
}
