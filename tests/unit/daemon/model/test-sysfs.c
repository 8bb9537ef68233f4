/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the sysfs scanner on fake sysfs trees: the devices of the
 * common drivers (mlx5 IB and RoCE, irdma iWARP, EFA, rxe) read as a
 * client would expect, and garbage of every kind listed in the brief
 * either leaves the device out or empties one value, never more.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture-sysfs.h"
#include "check.h"
#include "sysfs.h"

/* The string fields of a scan and of its first port, by name. */
/* clang-format off */ /* 14 and 19 differ here: check-format.sh */
#define DEV_STR(f) {#f, false, offsetof(struct device_record, f)}
#define PORT_STR(f) {#f, true, offsetof(struct port_record, f)}
/* clang-format on */
static const struct {
	const char *key;
	bool in_port;
	size_t offset;
} string_fields[] = {
	DEV_STR(name),
	DEV_STR(uverbs),
	DEV_STR(id),
	DEV_STR(node_guid),
	DEV_STR(sys_image_guid),
	DEV_STR(node_type),
	DEV_STR(fw_ver),
	DEV_STR(driver),
	{"pci", false, offsetof(struct device_record, pci_address)},
	PORT_STR(state),
	PORT_STR(phys_state),
	PORT_STR(link_layer),
	PORT_STR(rate),
	PORT_STR(netdev),
};

/* Numeric fields as text; false if @key is none of them. */
static bool number_field(const struct device_record *d, const char *key,
			 char *buf, size_t size)
{
	const struct port_record *p = d->nports ? &d->ports[0] : NULL;
	const struct port_record *p2 = d->nports > 1 ? &d->ports[1] : NULL;
	long v;

	if (!strcmp(key, "numa"))
		v = d->numa_node;
	else if (!strcmp(key, "nports"))
		v = d->nports;
	else if (!strcmp(key, "port"))
		v = p ? (long)p->port : -99;
	else if (!strcmp(key, "port2"))
		v = p2 ? (long)p2->port : -99;
	else if (!strcmp(key, "lid"))
		v = p ? (long)p->lid : -99;
	else if (!strcmp(key, "netdev_up"))
		v = p ? p->netdev_up : -99;
	else
		return false;
	snprintf(buf, size, "%ld", v);
	return true;
}

/* One field of a scan as text, so tables can name what they expect. */
static void field(const struct device_record *d, const char *key, char *buf,
		  size_t size)
{
	const char *base;

	if (number_field(d, key, buf, size))
		return;
	snprintf(buf, size, "<bad key %s>", key);
	for (size_t i = 0; i < sizeof(string_fields) / sizeof(string_fields[0]);
	     i++) {
		if (strcmp(string_fields[i].key, key))
			continue;
		if (string_fields[i].in_port && !d->nports) {
			snprintf(buf, size, "<no port>");
			return;
		}
		base = string_fields[i].in_port ? (const char *)d->ports
						: (const char *)d;
		snprintf(buf, size, "%s", base + string_fields[i].offset);
	}
}

struct expect {
	const char *key;
	const char *value;
};

static void check_fields(const char *what, const struct device_record *d,
			 const struct expect *want)
{
	char got[256];

	for (; want->key; want++) {
		field(d, want->key, got, sizeof(got));
		CHECK(!strcmp(got, want->value),
		      "%s: %s is \"%s\", want \"%s\"", what, want->key, got,
		      want->value);
	}
}

/* Macros, not const objects: C wants constant initializers below. */
/* clang-format off */ /* 14 and 19 differ here: check-format.sh */
#define IB_PORT                                                                \
	{"4: ACTIVE", "5: LinkUp", "InfiniBand", "100 Gb/sec (4X EDR)", "0x5",  \
	 NULL}
#define IB_PORT_DOWN                                                           \
	{"1: DOWN", "3: Disabled", "InfiniBand", "10 Gb/sec (4X SDR)", "0x0",  \
	 NULL}
#define ROCE_PORT                                                              \
	{"4: ACTIVE", "5: LinkUp", "Ethernet", "25 Gb/sec (1X EDR)", "0x0",    \
	 "eth0"}
/* clang-format on */

/* The good devices, one of each kind the brief names. */
static const struct {
	struct fixture_device dev;
	struct expect want[24];
} devices[] = {
	{{.name = "mlx5_0",
	  .uverbs = 0,
	  .parent = "0000:03:00.0",
	  .driver = "mlx5_core",
	  .numa_node = "0",
	  .node_guid = "0002:c903:0000:1234",
	  .sys_image_guid = "0002:c903:0000:1234",
	  .node_type = "1: CA",
	  .fw_ver = "16.35.2000",
	  .nports = 2,
	  .ports = {IB_PORT, IB_PORT_DOWN}},
	 {{"name", "mlx5_0"},
	  {"uverbs", "uverbs0"},
	  {"id", "pci:0000:03:00.0"},
	  {"node_guid", "0002:c903:0000:1234"},
	  {"sys_image_guid", "0002:c903:0000:1234"},
	  {"node_type", "CA"},
	  {"fw_ver", "16.35.2000"},
	  {"pci", "0000:03:00.0"},
	  {"driver", "mlx5_core"},
	  {"numa", "0"},
	  {"nports", "2"},
	  {"port", "1"},
	  {"port2", "2"},
	  {"state", "ACTIVE"},
	  {"phys_state", "LinkUp"},
	  {"link_layer", "InfiniBand"},
	  {"rate", "100 Gb/sec (4X EDR)"},
	  {"lid", "5"},
	  {"netdev", ""},
	  {"netdev_up", "-1"},
	  {NULL, NULL}}},
	{{.name = "mlx5_1",
	  .uverbs = 1,
	  .parent = "0000:03:00.1",
	  .driver = "mlx5_core",
	  .numa_node = "-1",
	  .node_guid = "0002:c903:0000:1235",
	  .node_type = "1: CA",
	  .fw_ver = "16.35.2000",
	  .nports = 1,
	  .ports = {ROCE_PORT}},
	 {{"id", "pci:0000:03:00.1"},
	  {"uverbs", "uverbs1"},
	  {"numa", "-1"},
	  {"sys_image_guid", ""},
	  {"link_layer", "Ethernet"},
	  {"netdev", "eth0"},
	  {"lid", "0"},
	  {NULL, NULL}}},
	{{.name = "irdma0",
	  .uverbs = 2,
	  .parent = "0000:5e:00.0",
	  .driver = "ice",
	  .numa_node = "1",
	  .node_guid = "b496:91ff:fe12:0001",
	  .node_type = "4: RNIC",
	  .fw_ver = "1.61",
	  .nports = 1,
	  .ports = {{"4: ACTIVE", "5: LinkUp", "Ethernet",
		     "100 Gb/sec (4X EDR)", "0x1", "ens1f0"}}},
	 {{"id", "pci:0000:5e:00.0"},
	  {"node_type", "RNIC"},
	  {"driver", "ice"},
	  {"numa", "1"},
	  {"netdev", "ens1f0"},
	  {NULL, NULL}}},
	{{.name = "efa_0",
	  .uverbs = 3,
	  .parent = "0000:00:1d.0",
	  .driver = "efa",
	  .numa_node = "0",
	  .node_guid = "0000:0000:0000:0000",
	  .node_type = "7: unspecified",
	  .nports = 1,
	  .ports = {{"4: ACTIVE", "5: LinkUp", "Unspecified",
		     "100 Gb/sec (4X EDR)", "0x0", NULL}}},
	 {{"id", "pci:0000:00:1d.0"},
	  {"node_type", "unspecified"},
	  {"driver", "efa"},
	  {"fw_ver", ""},
	  {"link_layer", "Unspecified"},
	  {NULL, NULL}}},
	{{.name = "rxe0",
	  .uverbs = 4,
	  .node_guid = "5054:00ff:fe12:3456",
	  .node_type = "1: CA",
	  .nports = 1,
	  .ports = {{"4: ACTIVE", "5: LinkUp", "Ethernet",
		     "2.5 Gb/sec (1X SDR)", "0x0", "enp0s3"}}},
	 {{"id", "guid:5054:00ff:fe12:3456"},
	  {"uverbs", "uverbs4"},
	  {"pci", ""},
	  {"driver", ""},
	  {"numa", "-1"},
	  {"netdev", "enp0s3"},
	  {NULL, NULL}}},
	{{.name = "siw0",
	  .uverbs = -1,
	  .node_guid = "0000:0000:0000:0000",
	  .node_type = "4: RNIC",
	  .nports = 1,
	  .ports = {{"4: ACTIVE", "5: LinkUp", "Ethernet", NULL, NULL, "lo"}}},
	 {{"id", "name:siw0"}, {"uverbs", ""}, {"rate", ""}, {NULL, NULL}}},
};

#define N_DEVICES (sizeof(devices) / sizeof(devices[0]))

static void test_good_devices(void)
{
	struct fixture *fx = fixture_new();
	struct device_record *all, one;
	size_t n, skipped;
	int r;

	for (size_t i = 0; i < N_DEVICES; i++)
		fixture_add_device(fx, &devices[i].dev);
	r = sysfs_scan_all(fixture_root(fx), &all, &n, &skipped);
	CHECK(r == 0 && n == N_DEVICES && skipped == 0,
	      "scan_all r=%d n=%zu skipped=%zu", r, n, skipped);
	for (size_t i = 0; i + 1 < n; i++)
		CHECK(strcmp(all[i].name, all[i + 1].name) < 0,
		      "order %s before %s", all[i].name, all[i + 1].name);
	for (size_t i = 0; i < N_DEVICES; i++) {
		const char *name = devices[i].dev.name;

		r = sysfs_scan_device(fixture_root(fx), name, &one);
		CHECK(r == 0, "scan_device %s: %d", name, r);
		check_fields(name, &one, devices[i].want);
		for (size_t j = 0; j < n; j++) {
			if (strcmp(all[j].name, name))
				continue;
			CHECK(record_equal(&all[j], &one),
			      "%s: full and single scans differ", name);
			check_fields(name, &all[j], devices[i].want);
		}
		record_clear(&one);
	}
	records_free(all, n);
	fixture_free(fx);
}

static char overlong[4096];

static void set_attr(struct fixture *fx, const char *rel, const char *s)
{
	char path[256];

	snprintf(path, sizeof(path), "class/infiniband/mlx5_0/%s", rel);
	fixture_write_str(fx, path, s);
}

static void rm_attr(struct fixture *fx, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "class/infiniband/mlx5_0/%s", rel);
	fixture_rm(fx, path);
}

static void g_guid_missing(struct fixture *fx)
{
	rm_attr(fx, "node_guid");
}
static void g_guid_empty(struct fixture *fx)
{
	set_attr(fx, "node_guid", "");
}
static void g_guid_truncated(struct fixture *fx)
{
	set_attr(fx, "node_guid", "0002:c903");
}
static void g_guid_binary(struct fixture *fx)
{
	set_attr(fx, "node_guid", "0002:c903:\xff\xfe:1234\n");
}
static void g_guid_overlong(struct fixture *fx)
{
	set_attr(fx, "node_guid", overlong);
}
static void g_type_no_number(struct fixture *fx)
{
	set_attr(fx, "node_type", "CA\n");
}
static void g_type_missing(struct fixture *fx)
{
	rm_attr(fx, "node_type");
}
static void g_type_bare_number(struct fixture *fx)
{
	set_attr(fx, "node_type", "1\n");
}
static void g_ports_missing(struct fixture *fx)
{
	rm_attr(fx, "ports");
}
static void g_state_no_number(struct fixture *fx)
{
	set_attr(fx, "ports/1/state", "ACTIVE\n");
}
static void g_state_missing(struct fixture *fx)
{
	rm_attr(fx, "ports/1/state");
}
static void g_rate_binary(struct fixture *fx)
{
	set_attr(fx, "ports/1/rate", "100 \xc3\x28 Gb\n");
}
static void g_fw_overlong(struct fixture *fx)
{
	set_attr(fx, "fw_ver", overlong + sizeof(overlong) - 101);
}
static void g_fw_huge(struct fixture *fx)
{
	set_attr(fx, "fw_ver", overlong);
}
static void g_lid_garbage(struct fixture *fx)
{
	set_attr(fx, "ports/1/lid", "five\n");
}
static void g_lid_no_prefix(struct fixture *fx)
{
	set_attr(fx, "ports/1/lid", "5\n");
}
static void g_netdev_dir(struct fixture *fx)
{
	fixture_mkdir(fx, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0");
}
static void g_netdev_spaces(struct fixture *fx)
{
	set_attr(fx, "ports/1/gid_attrs/ndevs/0", "eth 0\n");
}
static void g_numa_garbage(struct fixture *fx)
{
	fixture_write_str(fx, "devices/pci0000:00/0000:03:00.0/numa_node",
			  "zero\n");
}
static void g_numa_overflow(struct fixture *fx)
{
	fixture_write_str(fx, "devices/pci0000:00/0000:03:00.0/numa_node",
			  "99999999999999999999\n");
}
static void g_numa_below(struct fixture *fx)
{
	fixture_write_str(fx, "devices/pci0000:00/0000:03:00.0/numa_node",
			  "-7\n");
}
static void g_driver_missing(struct fixture *fx)
{
	fixture_rm(fx, "devices/pci0000:00/0000:03:00.0/driver");
}
static void g_subsystem_missing(struct fixture *fx)
{
	fixture_rm(fx, "devices/pci0000:00/0000:03:00.0/subsystem");
}
static void g_guid_no_newline(struct fixture *fx)
{
	set_attr(fx, "node_guid", "0002:c903:0000:1234");
}

static void g_fifo(struct fixture *fx)
{
	char path[512];

	rm_attr(fx, "fw_ver");
	snprintf(path, sizeof(path), "%s/class/infiniband/mlx5_0/fw_ver",
		 fixture_root(fx));
	if (mkfifo(path, 0644) < 0)
		perror("mkfifo");
}

static void g_odd_port_dirs(struct fixture *fx)
{
	set_attr(fx, "ports/abc/state", "4: ACTIVE\n");
	set_attr(fx, "ports/01/state", "4: ACTIVE\n");
	set_attr(fx, "ports/2 /state", "4: ACTIVE\n");
	set_attr(fx, "ports/-1/state", "4: ACTIVE\n");
	set_attr(fx, "ports/99999999999/state", "4: ACTIVE\n");
	set_attr(fx, "ports/7/state", "4: ACTIVE\n");
}

static void g_many_ports(struct fixture *fx)
{
	char rel[64];

	for (int i = 2; i <= 300; i++) {
		snprintf(rel, sizeof(rel), "ports/%d/state", i);
		set_attr(fx, rel, "1: DOWN\n");
	}
}

static const struct {
	const char *what;
	void (*setup)(struct fixture *fx);
	int want_r;	   /* of sysfs_scan_device("mlx5_0") */
	const char *key;   /* then this field ... */
	const char *value; /* ... reads this */
} garbage[] = {
	{"node_guid missing", g_guid_missing, -EBADMSG, NULL, NULL},
	{"node_guid empty", g_guid_empty, -EBADMSG, NULL, NULL},
	{"node_guid truncated", g_guid_truncated, -EBADMSG, NULL, NULL},
	{"node_guid not UTF-8", g_guid_binary, -EBADMSG, NULL, NULL},
	{"node_guid 4 KiB", g_guid_overlong, -EBADMSG, NULL, NULL},
	{"node_guid without newline", g_guid_no_newline, 0, "node_guid",
	 "0002:c903:0000:1234"},
	{"node_type without number", g_type_no_number, -EBADMSG, NULL, NULL},
	{"node_type missing", g_type_missing, -EBADMSG, NULL, NULL},
	{"node_type bare number", g_type_bare_number, -EBADMSG, NULL, NULL},
	/* Created before the add uevent, removed before the device goes:
	 * a device without is half created or half torn down. */
	{"ports dir missing", g_ports_missing, -EBADMSG, NULL, NULL},
	{"port state without number", g_state_no_number, 0, "state", ""},
	{"port state missing", g_state_missing, 0, "state", ""},
	{"rate not UTF-8", g_rate_binary, 0, "rate", ""},
	{"fw_ver too long for its field", g_fw_overlong, 0, "fw_ver", ""},
	{"fw_ver 4 KiB", g_fw_huge, 0, "fw_ver", ""},
	{"fw_ver a FIFO", g_fifo, 0, "fw_ver", ""},
	{"lid garbage", g_lid_garbage, 0, "lid", "0"},
	{"lid without 0x", g_lid_no_prefix, 0, "lid", "0"},
	{"netdev a directory", g_netdev_dir, 0, "netdev", ""},
	{"netdev with a space", g_netdev_spaces, 0, "netdev", ""},
	{"numa_node garbage", g_numa_garbage, 0, "numa", "-1"},
	{"numa_node past int", g_numa_overflow, 0, "numa", "-1"},
	{"numa_node below -1", g_numa_below, 0, "numa", "-1"},
	{"driver link missing", g_driver_missing, 0, "driver", ""},
	{"subsystem link missing", g_subsystem_missing, 0, "id",
	 "pci:0000:03:00.0"},
	{"odd port dir names", g_odd_port_dirs, 0, "nports", "2"},
	{"odd port dir names, order", g_odd_port_dirs, 0, "port2", "7"},
	{"300 ports", g_many_ports, 0, "nports", "256"},
};

#define N_GARBAGE (sizeof(garbage) / sizeof(garbage[0]))

/* Each garbage case: mlx5_0 broken one way, mlx5_1 untouched beside it. */
static void test_garbage(void)
{
	for (size_t i = 0; i < N_GARBAGE; i++) {
		struct fixture_device d0 =
			fixture_mlx5("mlx5_0", 0, "0000:03:00.0", 1);
		struct fixture_device d1 =
			fixture_mlx5("mlx5_1", 1, "0000:03:00.1", 1);
		struct fixture *fx = fixture_new();
		struct device_record *all, one;
		size_t n, skipped;
		char got[256];
		int r;

		fixture_add_device(fx, &d0);
		fixture_add_device(fx, &d1);
		garbage[i].setup(fx);
		r = sysfs_scan_device(fixture_root(fx), "mlx5_0", &one);
		CHECK(r == garbage[i].want_r, "%s: scan_device %d, want %d",
		      garbage[i].what, r, garbage[i].want_r);
		if (r < 0)
			CHECK(one.name[0] == '\0' && !one.ports,
			      "%s: not left zeroed", garbage[i].what);
		if (r == 0 && garbage[i].key) {
			field(&one, garbage[i].key, got, sizeof(got));
			CHECK(!strcmp(got, garbage[i].value),
			      "%s: %s is \"%s\", want \"%s\"", garbage[i].what,
			      garbage[i].key, got, garbage[i].value);
		}
		record_clear(&one);
		r = sysfs_scan_all(fixture_root(fx), &all, &n, &skipped);
		CHECK(r == 0 && n == (garbage[i].want_r ? 1u : 2u) &&
			      skipped == (garbage[i].want_r ? 1u : 0u),
		      "%s: scan_all r=%d n=%zu skipped=%zu", garbage[i].what, r,
		      n, skipped);
		CHECK(n > 0 && !strcmp(all[n - 1].name, "mlx5_1"),
		      "%s: the healthy device is missing", garbage[i].what);
		records_free(all, n);
		fixture_free(fx);
	}
}

/* Odd names in the class directory itself. */
static void test_odd_names(void)
{
	char longname[80];
	struct fixture_device d = fixture_mlx5("my dev", 0, "0000:03:00.0", 1);
	struct fixture_device l;
	struct fixture *fx = fixture_new();
	struct device_record *all, one;
	size_t n, skipped;
	int r;

	memset(longname, 'x', 70);
	longname[70] = '\0';
	l = fixture_mlx5(longname, 1, "0000:03:00.1", 1);
	fixture_add_device(fx, &d);
	fixture_add_device(fx, &l);
	fixture_write_str(fx, "class/infiniband/plainfile", "1\n");
	fixture_symlink(fx, "../../nowhere", "class/infiniband/dangling");
	r = sysfs_scan_all(fixture_root(fx), &all, &n, &skipped);
	/* A space is not in a name (proto/name.h): all four are skipped. */
	CHECK(r == 0 && n == 0 && skipped == 4,
	      "odd names: r=%d n=%zu skipped=%zu", r, n, skipped);
	records_free(all, n);
	r = sysfs_scan_device(fixture_root(fx), longname, &one);
	CHECK(r == -EBADMSG, "name longer than 63: %d", r);
	r = sysfs_scan_device(fixture_root(fx), "gone", &one);
	CHECK(r == -ENOENT, "missing device: %d", r);
	r = sysfs_scan_device(fixture_root(fx), "dangling", &one);
	CHECK(r == -ENOENT, "dangling link: %d", r);
	fixture_free(fx);
}

/* No class directory: a machine without RDMA has no devices. */
static void test_no_class_dir(void)
{
	struct fixture *fx = fixture_new();
	struct device_record *all, one;
	size_t n = 9, skipped = 9;
	int r;

	fixture_rm(fx, "class/infiniband");
	r = sysfs_scan_all(fixture_root(fx), &all, &n, &skipped);
	CHECK(r == 0 && n == 0 && skipped == 0 && !all,
	      "no class dir: r=%d n=%zu", r, n);
	r = sysfs_scan_device(fixture_root(fx), "mlx5_0", &one);
	CHECK(r == -ENOENT, "no class dir, one device: %d", r);
	fixture_free(fx);
}

/* Two ib devices under one parent get distinct, stable ids. */
static void test_shared_parent(void)
{
	struct fixture_device a = fixture_mlx5("mlx4_0", 0, "0000:04:00.0", 1);
	struct fixture_device b = fixture_mlx5("mlx4_1", 1, "0000:04:00.0", 1);
	struct fixture *fx = fixture_new();
	struct device_record *all, one;
	size_t n;
	int r;

	b.node_guid = "0002:c903:0000:9999";
	fixture_add_device(fx, &a);
	fixture_add_device(fx, &b);
	r = sysfs_scan_all(fixture_root(fx), &all, &n, NULL);
	CHECK(r == 0 && n == 2, "shared parent: r=%d n=%zu", r, n);
	CHECK(n == 2 && !strcmp(all[0].id,
				"pci:0000:04:00.0/guid:0002:c903:0000:1234"),
	      "id %s", n ? all[0].id : "");
	CHECK(n == 2 && strcmp(all[0].id, all[1].id), "ids collide");
	r = sysfs_scan_device(fixture_root(fx), "mlx4_1", &one);
	CHECK(r == 0 && n == 2 && !strcmp(one.id, all[1].id),
	      "single scan id %s differs from %s", one.id,
	      n == 2 ? all[1].id : "");
	CHECK(!strcmp(one.uverbs, "uverbs1"), "uverbs %s", one.uverbs);
	record_clear(&one);
	records_free(all, n);
	fixture_free(fx);
}

/* An SR-IOV VF: its PF from the physfn link, the PF's sriov_numvfs. */
static void test_sriov_links(void)
{
	struct fixture_device pf = fixture_mlx5("mlx5_0", 0, "0000:03:00.0", 1);
	struct fixture_device vf = fixture_mlx5("mlx5_1", 1, "0000:03:00.2", 1);
	struct fixture *fx = fixture_new();
	struct device_record *all;
	size_t n;
	int r;

	vf.node_guid = "0002:c903:0000:7777";
	fixture_add_device(fx, &pf);
	fixture_add_device(fx, &vf);
	fixture_write_str(fx, "devices/pci0000:00/0000:03:00.0/sriov_numvfs",
			  "4\n");
	fixture_symlink(fx, "../0000:03:00.0",
			"devices/pci0000:00/0000:03:00.2/physfn");
	r = sysfs_scan_all(fixture_root(fx), &all, &n, NULL);
	CHECK(r == 0 && n == 2, "r=%d n=%zu", r, n);
	CHECK(n == 2 && all[0].sriov_numvfs == 4 && !all[0].vf &&
		      !all[0].sriov_pf[0],
	      "the PF: numvfs %d", n ? all[0].sriov_numvfs : -9);
	CHECK(n == 2 && all[1].vf && !strcmp(all[1].sriov_pf, "0000:03:00.0") &&
		      all[1].sriov_numvfs == -1,
	      "the VF: pf '%s'", n > 1 ? all[1].sriov_pf : "");
	records_free(all, n);
	fixture_free(fx);
}

/* Soft-RoCE on a bond and on its slave: one MAC, so one node GUID; the
 * net device in their "parent" attribute tells them apart (seen on a 6.1
 * kernel: rxe0 and rxe1 both 6060:a8ff:fe69:0025, parent dummy0/dummy1). */
static void test_soft_roce_same_guid(void)
{
	struct fixture *fx = fixture_new();
	struct device_record *all;
	size_t n;
	int r;

	for (int i = 0; i < 2; i++) {
		struct fixture_device d = {
			.name = i ? "rxe1" : "rxe0",
			.uverbs = i,
			.node_guid = "6060:a8ff:fe69:0025",
			.node_type = "1: CA",
			.nports = 1,
			.ports = {{"4: ACTIVE", "5: LinkUp", "Ethernet", NULL,
				   NULL, i ? "bond0" : "eth0"}},
		};
		char path[64];

		fixture_add_device(fx, &d);
		snprintf(path, sizeof(path), "class/infiniband/%s/parent",
			 d.name);
		fixture_write_str(fx, path, i ? "bond0\n" : "eth0\n");
	}
	r = sysfs_scan_all(fixture_root(fx), &all, &n, NULL);
	CHECK(r == 0 && n == 2, "r=%d n=%zu", r, n);
	CHECK(n == 2 &&
		      !strcmp(all[0].id,
			      "guid:6060:a8ff:fe69:0025/netdev:eth0") &&
		      !strcmp(all[1].id,
			      "guid:6060:a8ff:fe69:0025/netdev:bond0"),
	      "ids %s, %s", n ? all[0].id : "", n > 1 ? all[1].id : "");
	records_free(all, n);
	fixture_free(fx);
}

/* A rename keeps the id; an unplug and re-plug of the same PCI function
 * gives the same id under a new name. */
static void test_identity_survives_rename(void)
{
	struct fixture_device a = fixture_mlx5("mlx5_0", 0, "0000:03:00.0", 1);
	struct fixture_device b = fixture_mlx5("ib_new", 7, "0000:03:00.0", 1);
	struct fixture *fx = fixture_new();
	struct device_record before, after;

	fixture_add_device(fx, &a);
	CHECK(sysfs_scan_device(fixture_root(fx), "mlx5_0", &before) == 0,
	      "scan before");
	fixture_remove_device(fx, "mlx5_0");
	CHECK(sysfs_scan_device(fixture_root(fx), "mlx5_0", &after) == -ENOENT,
	      "unplugged device still scans");
	fixture_add_device(fx, &b);
	CHECK(sysfs_scan_device(fixture_root(fx), "ib_new", &after) == 0,
	      "scan after");
	CHECK(!strcmp(before.id, after.id), "id %s became %s", before.id,
	      after.id);
	CHECK(!strcmp(after.uverbs, "uverbs7"), "uverbs %s", after.uverbs);
	record_clear(&before);
	record_clear(&after);
	fixture_free(fx);
}

/* A device's mad nodes, space separated. */
static const char *mad_list(const struct device_record *d)
{
	static char buf[RECORD_MAX_MAD_NODES * RECORD_MAD_NAME_MAX];

	buf[0] = '\0';
	for (unsigned int i = 0; i < d->nmad_nodes; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
			 i ? " " : "", d->mad_nodes[i]);
	return buf;
}

/* Each device's mad nodes from a full scan and from its own scan. */
static void check_mad(struct fixture *fx, const char *what,
		      const char *const want[][2], size_t nwant)
{
	struct device_record *all, one;
	size_t n;
	int r;

	r = sysfs_scan_all(fixture_root(fx), &all, &n, NULL);
	CHECK(r == 0 && n == nwant, "%s: r=%d n=%zu", what, r, n);
	for (size_t i = 0; i < n && i < nwant; i++) {
		CHECK(!strcmp(all[i].name, want[i][0]) &&
			      !strcmp(mad_list(&all[i]), want[i][1]),
		      "%s: full scan: %s has \"%s\", want %s \"%s\"", what,
		      all[i].name, mad_list(&all[i]), want[i][0], want[i][1]);
		r = sysfs_scan_device(fixture_root(fx), want[i][0], &one);
		CHECK(r == 0 && !strcmp(mad_list(&one), want[i][1]) &&
			      record_equal(&one, &all[i]),
		      "%s: %s alone: r=%d \"%s\"", what, want[i][0], r,
		      mad_list(&one));
		record_clear(&one);
	}
	records_free(all, n);
}

/* umad11 sits beside mlx5_0 but names mlx5_1. */
static void check_not_beside(struct fixture *fx)
{
	struct device_record *all, one;
	size_t n;
	int r;

	r = sysfs_scan_all(fixture_root(fx), &all, &n, NULL);
	CHECK(r == 0 && n == 3 &&
		      !strcmp(mad_list(&all[0]), "umad0 issm0 umad1 issm1"),
	      "other's: full scan: mlx5_0 \"%s\"", n ? mad_list(&all[0]) : "");
	CHECK(n == 3 && !strcmp(mad_list(&all[1]), "umad2 issm2 umad11"),
	      "other's: full scan: mlx5_1 \"%s\"", n ? mad_list(&all[1]) : "");
	records_free(all, n);
	r = sysfs_scan_device(fixture_root(fx), "mlx5_0", &one);
	CHECK(r == 0 && !strcmp(mad_list(&one), "umad0 issm0 umad1 issm1"),
	      "other's: mlx5_0 alone: \"%s\"", mad_list(&one));
	record_clear(&one);
}

/* ib_umad's umadN and issmN: in port order, umad first, from the parent
 * (PCI) or the class directory (rxe); garbage is left out, never more. */
static void test_mad_nodes(void)
{
	struct fixture_device a = fixture_mlx5("mlx5_0", 0, "0000:03:00.0", 2);
	struct fixture_device b = fixture_mlx5("mlx5_1", 1, "0000:04:00.0", 1);
	struct fixture_device rxe = {
		.name = "rxe0",
		.uverbs = 2,
		.node_guid = "6060:a8ff:fe69:0025",
		.node_type = "1: CA",
		.nports = 1,
		.ports = {ROCE_PORT},
	};
	static const char *const none[][2] = {
		{"mlx5_0", ""}, {"mlx5_1", ""}, {"rxe0", ""}};
	static const char *const good[][2] = {
		{"mlx5_0", "umad0 issm0 umad1 issm1"},
		{"mlx5_1", "umad2 issm2"},
		{"rxe0", "umad3 issm3"}};
	static const char *const capped[][2] = {
		{"mlx5_0", "umad0 issm0 umad1 issm1"},
		{"mlx5_1", "umad2 issm2 umad20 umad21 umad22 umad23 umad24 "
			   "umad25 umad26 umad27 umad28 umad29 umad30 umad31 "
			   "umad32 umad33"},
		{"rxe0", "umad3 issm3"}};
	struct fixture *fx = fixture_new();
	char name[16], port[16];

	fixture_add_device(fx, &a);
	fixture_add_device(fx, &b);
	fixture_add_device(fx, &rxe);
	/* ib_umad not loaded: no class directory. */
	check_mad(fx, "no ib_umad", none, 3);
	fixture_mkdir(fx, "class/infiniband_mad");
	fixture_write_str(fx, "class/infiniband_mad/abi_version", "5\n");
	check_mad(fx, "none yet", none, 3);
	/* Port 2 made first: the order is the ports', not the directory's. */
	fixture_add_mad(fx, &a, "issm1", "mlx5_0", "2");
	fixture_add_mad(fx, &a, "umad1", "mlx5_0", "2");
	fixture_add_mad(fx, &a, "umad0", "mlx5_0", "1");
	fixture_add_mad(fx, &a, "issm0", "mlx5_0", "1");
	fixture_add_mad(fx, &b, "umad2", "mlx5_1", "1");
	fixture_add_mad(fx, &b, "issm2", "mlx5_1", "1");
	fixture_add_mad(fx, &rxe, "umad3", "rxe0", "1");
	fixture_add_mad(fx, &rxe, "issm3", "rxe0", "1");
	/* Garbage: a device that is not there, a name too long for the
	 * field, names ib_umad never makes, no port, a bad port, a bad
	 * ibdev. */
	fixture_add_mad(fx, &a, "umad4", "mlx5_9", "1");
	fixture_add_mad(fx, &a, "umad12345678901234567890", "mlx5_0", "1");
	fixture_add_mad(fx, &a, "umad05", "mlx5_0", "1");
	fixture_add_mad(fx, &a, "umadx", "mlx5_0", "1");
	fixture_add_mad(fx, &a, "uverbs9", "mlx5_0", "1");
	fixture_add_mad(fx, &a, "umad6", "mlx5_0", NULL);
	fixture_add_mad(fx, &a, "umad7", "mlx5_0", "one");
	fixture_add_mad(fx, &a, "umad8", "mlx5_0", "-1");
	fixture_add_mad(fx, &a, "issm9", "mlx5\x01", "1");
	fixture_add_mad(fx, &a, "issm10", NULL, "1");
	check_mad(fx, "good and garbage", good, 3);
	/* One naming another device is that device's (the kernel never
	 * does this), never the one it sits beside. */
	fixture_add_mad(fx, &a, "umad11", "mlx5_1", "9");
	check_not_beside(fx);
	fixture_rm(fx, "class/infiniband_mad/umad11");
	fixture_rm(fx, "devices/pci0000:00/0000:03:00.0/infiniband_mad/umad11");
	/* Being removed (its class link gone first): not counted. */
	fixture_add_mad(fx, &a, "umad13", "mlx5_0", "3");
	fixture_rm(fx, "class/infiniband_mad/umad13");
	check_mad(fx, "class link gone", good, 3);
	/* More ports than kept: the lowest. */
	for (int i = 20; i < 40; i++) {
		snprintf(name, sizeof(name), "umad%d", i);
		snprintf(port, sizeof(port), "%d", i);
		fixture_add_mad(fx, &b, name, "mlx5_1", port);
	}
	check_mad(fx, "capped", capped, 3);
	fixture_free(fx);
}

static void test_uverbs_lookup(void)
{
	struct fixture_device a = fixture_mlx5("mlx5_0", 3, "0000:03:00.0", 1);
	struct fixture *fx = fixture_new();
	static const struct {
		const char *uverbs;
		int want_r;
		const char *want;
	} cases[] = {
		{"uverbs3", 0, "mlx5_0"},
		{"uverbs9", -ENOENT, ""},
		{"../uverbs3", -EINVAL, ""},
		{"", -EINVAL, ""},
	};
	char name[RECORD_NAME_MAX];

	fixture_add_device(fx, &a);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = sysfs_ibdev_of_uverbs(fixture_root(fx), cases[i].uverbs,
					      name);

		CHECK(r == cases[i].want_r && !strcmp(name, cases[i].want),
		      "ibdev of %s: %d \"%s\"", cases[i].uverbs, r, name);
	}
	fixture_write_str(fx, "class/infiniband_verbs/uverbs3/ibdev",
			  "\x80\x81\n");
	CHECK(sysfs_ibdev_of_uverbs(fixture_root(fx), "uverbs3", name) ==
		      -EBADMSG,
	      "garbage ibdev accepted");
	fixture_free(fx);
}

static void test_copy_equal(void)
{
	struct fixture_device a = fixture_mlx5("mlx5_0", 0, "0000:03:00.0", 2);
	struct fixture *fx = fixture_new();
	struct device_record one, copy;

	fixture_add_device(fx, &a);
	CHECK(sysfs_scan_device(fixture_root(fx), "mlx5_0", &one) == 0, "scan");
	CHECK(record_copy(&copy, &one) == 0, "copy");
	CHECK(copy.ports != one.ports, "copy shares ports");
	CHECK(record_equal(&one, &copy), "copy differs");
	strcpy(copy.ports[1].state, "DOWN");
	CHECK(!record_equal(&one, &copy), "port state ignored");
	strcpy(copy.ports[1].state, one.ports[1].state);
	copy.ports[1].netdev_up = 1;
	CHECK(!record_equal(&one, &copy), "netdev_up ignored");
	copy.ports[1].netdev_up = one.ports[1].netdev_up;
	strcpy(copy.fw_ver, "1.0");
	CHECK(!record_equal(&one, &copy), "fw_ver ignored");
	strcpy(copy.fw_ver, one.fw_ver);
	/* ib_umad loaded later, then its numbers changed. */
	strcpy(copy.mad_nodes[copy.nmad_nodes++], "umad0");
	CHECK(!record_equal(&one, &copy), "mad nodes ignored");
	strcpy(one.mad_nodes[one.nmad_nodes++], "umad1");
	CHECK(!record_equal(&one, &copy), "mad node names ignored");
	strcpy(one.mad_nodes[0], "umad0");
	CHECK(record_equal(&one, &copy), "same mad nodes differ");
	record_clear(&copy);
	record_clear(&one);
	CHECK(one.ports == NULL && one.nports == 0 && one.numa_node == -1,
	      "clear");
	fixture_free(fx);
}

/* More devices than a scan takes: the first 8192 listed, the rest
 * counted as skipped. */
static void test_device_cap(void)
{
	struct fixture *fx = fixture_new();
	struct device_record *all;
	size_t n, skipped;
	char rel[128], target[128];
	int r;

	for (int i = 0; i < 8200; i++) {
		snprintf(rel, sizeof(rel),
			 "devices/virtual/infiniband/d%d/node_guid", i);
		fixture_write_str(fx, rel, "0002:c903:0000:0001\n");
		snprintf(rel, sizeof(rel),
			 "devices/virtual/infiniband/d%d/node_type", i);
		fixture_write_str(fx, rel, "1: CA\n");
		snprintf(rel, sizeof(rel),
			 "devices/virtual/infiniband/d%d/ports/1/state", i);
		fixture_write_str(fx, rel, "4: ACTIVE\n");
		snprintf(target, sizeof(target),
			 "../../devices/virtual/infiniband/d%d", i);
		snprintf(rel, sizeof(rel), "class/infiniband/d%d", i);
		fixture_symlink(fx, target, rel);
	}
	r = sysfs_scan_all(fixture_root(fx), &all, &n, &skipped);
	CHECK(r == 0 && n == 8192 && skipped == 8,
	      "8200 devices: r=%d n=%zu skipped=%zu", r, n, skipped);
	records_free(all, n);
	fixture_free(fx);
}

/*
 * Races: openat() is wrapped at link time (-Wl,--wrap=openat and
 * openat64, the name it has with 64-bit file offsets, and __openat_2 and
 * __openat64_2, the names it has under -D_FORTIFY_SOURCE, as in a Debian
 * package build) so that a hook runs just before the scanner opens a
 * given path, making part of the tree vanish in the middle of a scan.
 */
int __real_openat(int dirfd, const char *path, int flags, ...);
int __real_openat64(int dirfd, const char *path, int flags, ...);
int __real___openat_2(int dirfd, const char *path, int flags);
int __real___openat64_2(int dirfd, const char *path, int flags);
int __wrap_openat(int dirfd, const char *path, int flags, ...);
int __wrap_openat64(int dirfd, const char *path, int flags, ...);
int __wrap___openat_2(int dirfd, const char *path, int flags);
int __wrap___openat64_2(int dirfd, const char *path, int flags);

static struct {
	const char *path;
	void (*fn)(struct fixture *fx);
	struct fixture *fx;
} hook;

static void fire_hook(const char *path)
{
	void (*fn)(struct fixture *) = hook.fn;

	if (fn && !strcmp(path, hook.path)) {
		hook.fn = NULL;
		fn(hook.fx);
	}
}

static unsigned int run_hook(const char *path, int flags, va_list ap)
{
	fire_hook(path);
	return flags & O_CREAT ? va_arg(ap, unsigned int) : 0;
}

int __wrap_openat(int dirfd, const char *path, int flags, ...)
{
	unsigned int mode;
	va_list ap;

	va_start(ap, flags);
	mode = run_hook(path, flags, ap);
	va_end(ap);
	return __real_openat(dirfd, path, flags, mode);
}

int __wrap_openat64(int dirfd, const char *path, int flags, ...)
{
	unsigned int mode;
	va_list ap;

	va_start(ap, flags);
	mode = run_hook(path, flags, ap);
	va_end(ap);
	return __real_openat64(dirfd, path, flags, mode);
}

int __wrap___openat_2(int dirfd, const char *path, int flags)
{
	fire_hook(path);
	return __real___openat_2(dirfd, path, flags);
}

int __wrap___openat64_2(int dirfd, const char *path, int flags)
{
	fire_hook(path);
	return __real___openat64_2(dirfd, path, flags);
}

static void r_unplug(struct fixture *fx)
{
	fixture_remove_device(fx, "mlx5_0");
}
static void r_rm_port(struct fixture *fx)
{
	fixture_rm(fx, "class/infiniband/mlx5_0/ports/1");
}
static void r_rm_guid(struct fixture *fx)
{
	fixture_rm(fx, "class/infiniband/mlx5_0/node_guid");
}
static void r_rm_uverbs(struct fixture *fx)
{
	fixture_rm(fx, "devices/pci0000:00/0000:03:00.0/infiniband_verbs");
	fixture_rm(fx, "class/infiniband_verbs/uverbs0");
}

static const struct {
	const char *what;
	const char *path; /* the open that triggers the hook */
	void (*fn)(struct fixture *fx);
	int want_r; /* for mlx5_0; full scans skip it if < 0 */
	const char *key;
	const char *value;
} races[] = {
	{"unplugged before node_type", "node_type", r_unplug, -ENOENT},
	{"unplugged before fw_ver", "fw_ver", r_unplug, -ENOENT},
	{"unplugged before the parent's numa_node", "device/numa_node",
	 r_unplug, -ENOENT},
	{"unplugged before a port's state", "1/state", r_unplug, -ENOENT},
	{"unplugged before its ports dir", "ports", r_unplug, -ENOENT},
	{"port gone after the listing", "1/state", r_rm_port, -EBADMSG},
	{"node_guid gone, device stays", "node_guid", r_rm_guid, -EBADMSG},
	{"uverbs gone mid-scan", "uverbs0/ibdev", r_rm_uverbs, 0, "uverbs", ""},
};

static void race_full_scan(size_t i)
{
	struct fixture_device d0 = fixture_mlx5("mlx5_0", 0, "0000:03:00.0", 1);
	struct fixture_device d1 = fixture_mlx5("mlx5_1", 1, "0000:03:00.1", 1);
	struct fixture *fx = fixture_new();
	struct device_record *all;
	size_t n, skipped, want_n = races[i].want_r < 0 ? 1 : 2;
	char got[256];
	int r;

	fixture_add_device(fx, &d0);
	fixture_add_device(fx, &d1);
	hook.path = races[i].path;
	hook.fn = races[i].fn;
	hook.fx = fx;
	r = sysfs_scan_all(fixture_root(fx), &all, &n, &skipped);
	CHECK(!hook.fn, "%s: full scan never opened %s", races[i].what,
	      races[i].path);
	hook.fn = NULL;
	CHECK(r == 0 && n == want_n && !strcmp(all[n - 1].name, "mlx5_1"),
	      "%s: full scan r=%d n=%zu", races[i].what, r, n);
	if (r == 0 && n == 2 && races[i].key) {
		field(&all[0], races[i].key, got, sizeof(got));
		CHECK(!strcmp(got, races[i].value), "%s: full scan %s \"%s\"",
		      races[i].what, races[i].key, got);
	}
	records_free(all, n);
	fixture_free(fx);
}

static void test_races(void)
{
	for (size_t i = 0; i < sizeof(races) / sizeof(races[0]); i++) {
		struct fixture_device d =
			fixture_mlx5("mlx5_0", 0, "0000:03:00.0", 1);
		struct fixture *fx = fixture_new();
		struct device_record one;
		char got[256];
		int r;

		fixture_add_device(fx, &d);
		hook.path = races[i].path;
		hook.fn = races[i].fn;
		hook.fx = fx;
		r = sysfs_scan_device(fixture_root(fx), "mlx5_0", &one);
		CHECK(!hook.fn, "%s: never opened %s", races[i].what,
		      races[i].path);
		hook.fn = NULL;
		CHECK(r == races[i].want_r, "%s: scan_device %d, want %d",
		      races[i].what, r, races[i].want_r);
		if (r == 0 && races[i].key) {
			field(&one, races[i].key, got, sizeof(got));
			CHECK(!strcmp(got, races[i].value), "%s: %s \"%s\"",
			      races[i].what, races[i].key, got);
		}
		record_clear(&one);
		fixture_free(fx);
		race_full_scan(i);
	}
}

/* 300 ports, more than a device may list: the lowest 256 are kept,
 * whatever the directory's order, so port 1 is always there. */
static void test_port_cap(void)
{
	struct fixture_device d = fixture_mlx5("mlx5_0", 0, "0000:03:00.0", 4);
	struct fixture *fx = fixture_new();
	struct device_record one;
	char rel[96];
	int r;

	fixture_add_device(fx, &d);
	for (int p = 300; p > 4; p--) { /* the fixture makes ports 1-4 */
		snprintf(rel, sizeof(rel),
			 "class/infiniband/mlx5_0/ports/%d/state", p);
		fixture_write_str(fx, rel, "4: ACTIVE\n");
	}
	r = sysfs_scan_device(fixture_root(fx), "mlx5_0", &one);
	CHECK(r == 0 && one.nports == 256 && one.ports[0].port == 1 &&
		      one.ports[255].port == 256,
	      "300 ports: r=%d n=%u first %u last %u", r, one.nports,
	      one.nports ? one.ports[0].port : 0,
	      one.nports ? one.ports[one.nports - 1].port : 0);
	record_clear(&one);
	fixture_free(fx);
}

/* Take every descriptor but @spare (the scan then runs out half-way);
 * returns how many were taken, to give back with give_back(). */
static int fds_taken[65536];

static size_t take_all_but(int spare)
{
	size_t n = 0;

	while (n < sizeof(fds_taken) / sizeof(fds_taken[0]) &&
	       (fds_taken[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	for (; spare > 0 && n > 0; spare--)
		close(fds_taken[--n]);
	return n;
}

static void give_back(size_t n)
{
	while (n > 0)
		close(fds_taken[--n]);
}

/* Out of descriptors at any point of a scan: the scan fails whole with
 * EMFILE, never a shorter list (which the table would take for devices
 * that left), and one device's scan fails with EMFILE, not "gone" or
 * "garbage". */
static void test_starvation(void)
{
	struct fixture *fx = fixture_new();
	struct device_record *all, one;
	size_t n, skipped, taken;
	int r, seen_emfile = 0;

	for (size_t i = 0; i < N_DEVICES; i++)
		fixture_add_device(fx, &devices[i].dev);
	for (int spare = 0; spare <= 8; spare++) {
		taken = take_all_but(spare);
		r = sysfs_scan_all(fixture_root(fx), &all, &n, &skipped);
		give_back(taken);
		CHECK((r == 0 && n == N_DEVICES && skipped == 0) ||
			      (r == -EMFILE && n == 0),
		      "%d spare descriptors: r=%d n=%zu skipped=%zu", spare, r,
		      n, skipped);
		seen_emfile += r == -EMFILE;
		if (r == 0)
			records_free(all, n);
		taken = take_all_but(spare);
		r = sysfs_scan_device(fixture_root(fx), devices[0].dev.name,
				      &one);
		give_back(taken);
		CHECK(r == 0 || r == -EMFILE, "%d spare: one device: %d", spare,
		      r);
		if (r == 0)
			record_clear(&one);
	}
	CHECK(seen_emfile > 0, "no scan ran out of descriptors");
	CHECK(sysfs_is_starvation(-EMFILE) && sysfs_is_starvation(-ENFILE) &&
	      sysfs_is_starvation(-ENOMEM) && !sysfs_is_starvation(-ENOENT) &&
	      !sysfs_is_starvation(-EBADMSG) && !sysfs_is_starvation(0));
	fixture_free(fx);
}

int main(void)
{
	memset(overlong, 'a', sizeof(overlong) - 1);
	test_good_devices();
	test_garbage();
	test_odd_names();
	test_no_class_dir();
	test_shared_parent();
	test_soft_roce_same_guid();
	test_sriov_links();
	test_identity_survives_rename();
	test_uverbs_lookup();
	test_mad_nodes();
	test_copy_equal();
	test_races();
	test_device_cap();
	test_starvation();
	test_port_cap();
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("test-sysfs: all passed\n");
	return failures ? 1 : 0;
}
