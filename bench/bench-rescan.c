/* SPDX-License-Identifier: MIT */
/*
 * Rescan benchmark.  Builds fake sysfs trees of 8, 64 and 512 SR-IOV
 * VF-like mlx5 devices (one port each) and times, as the median of
 * several runs on CLOCK_MONOTONIC:
 *   - a full rescan (sysfs_scan_all + devices_apply_scan) into a table
 *     that already holds the devices, and into an empty one;
 *   - one device's change (a port state file rewritten, then
 *     sysfs_scan_device + devices_apply_one).
 * Each is set against the brief's targets (512 devices: full <= 50 ms,
 * one device <= 1 ms) and against two floors measured in the same run:
 * listing the two class directories, and opening and reading three
 * attributes per device (node_guid, node_type, port state), which any
 * scanner must do at least.
 *
 * The trees live where the test fixtures do: $TMPDIR, else /dev/shm (in
 * memory, as sysfs is), else /tmp.
 *
 * Usage: bench-rescan [runs]   (default 15)
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devices.h"
#include "fixture-sysfs.h"
#include "sysfs.h"

#define MAX_RUNS 101

struct bench {
	struct fixture *fx;
	unsigned int ndev;
	struct devices *table;
	unsigned int flips;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_us(struct bench *b, unsigned int runs,
			double (*fn)(struct bench *b))
{
	double t[MAX_RUNS];

	fn(b); /* warm the dentry cache and the allocator */
	for (unsigned int i = 0; i < runs; i++)
		t[i] = fn(b);
	qsort(t, runs, sizeof(t[0]), compare_double);
	return t[runs / 2];
}

static void fail(const char *what, int r)
{
	fprintf(stderr, "bench-rescan: %s failed: %d\n", what, r);
	exit(1);
}

static size_t list_dir(const char *root, const char *rel)
{
	char path[256];
	size_t n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	dir = opendir(path);
	if (!dir)
		fail("opendir", -1);
	while (readdir(dir))
		n++;
	closedir(dir);
	return n;
}

static double run_floor_readdir(struct bench *b)
{
	const char *root = fixture_root(b->fx);
	double t0 = now_us();

	list_dir(root, "class/infiniband");
	list_dir(root, "class/infiniband_verbs");
	return now_us() - t0;
}

static void read_one(const char *path)
{
	char buf[128];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0)
		fail(path, -1);
	close(fd);
}

static double run_floor_reads(struct bench *b)
{
	static const char *const attrs[] = {"node_guid", "node_type",
					    "ports/1/state"};
	const char *root = fixture_root(b->fx);
	char path[256];
	double t0 = now_us();

	for (unsigned int i = 0; i < b->ndev; i++) {
		for (size_t a = 0; a < 3; a++) {
			snprintf(path, sizeof(path),
				 "%s/class/infiniband/mlx5_%u/%s", root, i,
				 attrs[a]);
			read_one(path);
		}
	}
	return now_us() - t0;
}

static void rescan_into(struct bench *b, struct devices *table, int want_events)
{
	struct device_record *devs;
	size_t n, skipped;
	int r;

	r = sysfs_scan_all(fixture_root(b->fx), &devs, &n, &skipped);
	if (r < 0 || n != b->ndev || skipped)
		fail("sysfs_scan_all", r);
	r = devices_apply_scan(table, devs, n);
	if (r != want_events)
		fail("devices_apply_scan", r);
	free(devs);
}

static double run_full_populated(struct bench *b)
{
	double t0 = now_us();

	rescan_into(b, b->table, 0);
	return now_us() - t0;
}

static double run_full_empty(struct bench *b)
{
	struct devices *table = devices_new(0);
	double t0, t;

	t0 = now_us();
	rescan_into(b, table, b->ndev);
	t = now_us() - t0;
	devices_free(table);
	return t;
}

/* Flip the port state of the middle device, then rescan just it. */
static double run_one_device(struct bench *b)
{
	char rel[128], name[32];
	struct device_record dev;
	double t0, t;
	int r;

	snprintf(name, sizeof(name), "mlx5_%u", b->ndev / 2);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/state", name);
	fixture_write_str(b->fx, rel,
			  b->flips++ % 2 ? "4: ACTIVE\n" : "1: DOWN\n");
	t0 = now_us();
	r = sysfs_scan_device(fixture_root(b->fx), name, &dev);
	if (r < 0)
		fail("sysfs_scan_device", r);
	r = devices_apply_one(b->table, name, &dev);
	t = now_us() - t0;
	if (r != 1)
		fail("devices_apply_one", r);
	return t;
}

static void build(struct bench *b, unsigned int ndev)
{
	char name[32], pci[32];

	b->fx = fixture_new();
	b->ndev = ndev;
	for (unsigned int i = 0; i < ndev; i++) {
		struct fixture_device d;
		char guid[32];

		snprintf(name, sizeof(name), "mlx5_%u", i);
		/* VFs: function i of bus 0x80 + i / 256. */
		snprintf(pci, sizeof(pci), "0000:%02x:%02x.%x", 0x80 + i / 256,
			 (i % 256) / 8, i % 8);
		snprintf(guid, sizeof(guid), "0002:c903:00%02x:%04x", i >> 16,
			 i & 0xffff);
		d = fixture_mlx5(name, i, pci, 1);
		d.node_guid = guid;
		fixture_add_device(b->fx, &d);
	}
	b->table = devices_new(0);
	rescan_into(b, b->table, ndev);
}

static void row(unsigned int ndev, const char *what, double us,
		double target_us, double floor_us)
{
	char target[32] = "", vs_target[32] = "", vs_floor[32] = "";

	if (target_us > 0) {
		snprintf(target, sizeof(target), "%.3f ms", target_us / 1e3);
		snprintf(vs_target, sizeof(vs_target), "%.3f", us / target_us);
	}
	if (floor_us > 0)
		snprintf(vs_floor, sizeof(vs_floor), "%.1fx", us / floor_us);
	printf("%5u  %-34s %10.1f us %10s %9s %9s\n", ndev, what, us, target,
	       vs_target, vs_floor);
}

static void bench_size(unsigned int ndev, unsigned int runs)
{
	struct bench b = {0};
	double readdir_us, reads_us, full_pop, full_empty, one;
	/* The brief's targets are for 512 devices; scale them linearly. */
	double full_target = 50e3 * ndev / 512.0;

	build(&b, ndev);
	readdir_us = median_us(&b, runs, run_floor_readdir);
	reads_us = median_us(&b, runs, run_floor_reads);
	full_pop = median_us(&b, runs, run_full_populated);
	full_empty = median_us(&b, runs, run_full_empty);
	one = median_us(&b, runs, run_one_device);
	row(ndev, "floor: readdir of class dirs", readdir_us, 0, 0);
	row(ndev, "floor: 3 attribute reads/device", reads_us, 0, 0);
	row(ndev, "full rescan, table populated", full_pop, full_target,
	    reads_us);
	row(ndev, "full rescan, empty table", full_empty, full_target,
	    reads_us);
	row(ndev, "one device changed", one, 1e3, reads_us / ndev);
	devices_free(b.table);
	fixture_free(b.fx);
}

int main(int argc, char **argv)
{
	static const unsigned int sizes[] = {8, 64, 512};
	unsigned int runs = argc > 1 ? atoi(argv[1]) : 15;

	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: bench-rescan [runs 1..%d]\n", MAX_RUNS);
		return 2;
	}
	printf("median of %u runs, CLOCK_MONOTONIC; targets scale with the "
	       "device count\n(brief: 512 full <= 50 ms, one device <= 1 ms)"
	       ";\nvs floor: against the 3-reads-a-device floor (one device's "
	       "share "
	       "of it for\nthe one-device row)\n\n",
	       runs);
	printf("%5s  %-34s %13s %10s %9s %9s\n", "devs", "measurement",
	       "median", "target", "vs target", "vs floor");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		bench_size(sizes[i], runs);
	return 0;
}
