/* SPDX-License-Identifier: MIT */
/*
 * Unit test of daemon/sources/scan.c: a real event_base, the real sysfs reader
 * and device table, and a fixture sysfs tree in a temporary directory.
 * sysfs_scan_all() and sysfs_scan_device() are wrapped at link time
 * (-Wl,--wrap) to count the passes a burst of requests costs.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "arrival.h"
#include "devices.h"
#include "fake.h"
#include "scan.h"
#include "check.h"
#include "sysfs.h"

#define DEBOUNCE_MS 10
#define STORM 64

static char root[64];
static unsigned int nscan_all, nscan_device;
static int starve; /* -errno the wrapped scans fail with, or 0 */
static char last_scanned[RECORD_NAME_MAX];
/* The lowest free descriptor while the last device was read. */
static int free_fd_in_read = -1;
static struct event_base *base;
static struct devices *table;
static struct scan *scan;

int __real_sysfs_scan_all(const char *sysroot, struct device_record **ret,
			  size_t *ret_n, size_t *ret_skipped);
int __wrap_sysfs_scan_all(const char *sysroot, struct device_record **ret,
			  size_t *ret_n, size_t *ret_skipped);
int __real_sysfs_scan_device(const char *sysroot, const char *name,
			     struct device_record *ret);
int __wrap_sysfs_scan_device(const char *sysroot, const char *name,
			     struct device_record *ret);

int __wrap_sysfs_scan_all(const char *sysroot, struct device_record **ret,
			  size_t *ret_n, size_t *ret_skipped)
{
	nscan_all++;
	if (starve)
		return starve;
	return __real_sysfs_scan_all(sysroot, ret, ret_n, ret_skipped);
}

/* The lowest free descriptor (-1 where none is). */
static int lowest_free_fd(void)
{
	int fd = fcntl(0, F_DUPFD, 0);

	if (fd >= 0)
		close(fd);
	return fd;
}

int __wrap_sysfs_scan_device(const char *sysroot, const char *name,
			     struct device_record *ret)
{
	nscan_device++;
	free_fd_in_read = lowest_free_fd();
	snprintf(last_scanned, sizeof(last_scanned), "%s", name);
	if (starve)
		return starve;
	return __real_sysfs_scan_device(sysroot, name, ret);
}

/* ---- fixture sysfs ---- */

static void put(const char *rel, const char *content)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert(f);
	fputs(content, f);
	fclose(f);
}

static void put_dev(const char *name, const char *guid, const char *state,
		    const char *netdev)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "class/infiniband/%s/node_guid", name);
	put(rel, guid);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/node_type", name);
	put(rel, "1: CA\n");
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/state", name);
	put(rel, state);
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/link_layer",
		 name);
	put(rel, "Ethernet\n");
	snprintf(rel, sizeof(rel),
		 "class/infiniband/%s/ports/1/gid_attrs/ndevs/0", name);
	put(rel, netdev);
}

static void remove_tree(const char *rel)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", root, rel);
	assert(system(cmd) == 0);
}

/* ---- table listener ---- */

static void on_event(void *userdata, enum devices_event event,
		     const struct device *dev, const char *old_name)
{
	fake_calls_add("%s:%s", devices_event_name(event),
		       device_info(dev)->name);
}

static void run_for(unsigned int ms)
{
	struct timeval tv = {.tv_sec = ms / 1000,
			     .tv_usec = (ms % 1000) * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void reset_counts(void)
{
	nscan_all = nscan_device = 0;
	fake_log_warnings = 0;
	fake_calls_reset();
}

static void setup(void)
{
	struct scan_options opts = {
		.sysroot = root,
		.debounce_ms = DEBOUNCE_MS,
		.storm_threshold = STORM,
	};

	put_dev("dev0", "0002:c903:0000:0000\n", "4: ACTIVE\n", "eth0\n");
	put_dev("dev1", "0002:c903:0000:0001\n", "4: ACTIVE\n", "eth1\n");
	put_dev("dev2", "0002:c903:0000:0002\n", "4: ACTIVE\n", "eth2\n");
	base = event_base_new();
	table = devices_new(0);
	assert(base && table);
	devices_set_listener(table, on_event, NULL);
	scan = scan_new(base, table, &opts);
	assert(scan);
}

/* ---- cases ---- */

static void test_full_now(void)
{
	reset_counts();
	CHECK(scan_full_now(scan) == 0, "full scan failed");
	CHECK(devices_count(table) == 3, "%zu devices", devices_count(table));
	CHECK(fake_calls_count("added:dev0") == 1, "%s", fake_calls_dump());
	CHECK(nscan_all == 1, "%u full passes", nscan_all);
}

/* Thousands of requests inside one window: one pass.  Requests for one
 * device rescan that device; more distinct names than the threshold
 * become one full pass. */
static void test_storms(void)
{
	static const struct {
		const char *what;
		unsigned int requests, distinct;
		unsigned int want_all, want_device;
	} cases[] = {
		{"one device, 5000 times", 5000, 1, 0, 1},
		{"three devices, 3000 times", 3000, 3, 0, 3},
		{"200 names", 200, 200, 1, 0},
		{"everything, 5000 times", 5000, 0, 1, 0},
	};
	char name[32];
	size_t i;
	unsigned int j;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		reset_counts();
		for (j = 0; j < cases[i].requests; j++) {
			if (cases[i].distinct == 0) {
				scan_request(scan, NULL);
				continue;
			}
			snprintf(name, sizeof(name), "dev%u",
				 j % cases[i].distinct);
			scan_request(scan, name);
		}
		CHECK(nscan_all + nscan_device == 0,
		      "%s: scanned before "
		      "the window closed",
		      cases[i].what);
		run_for(5 * DEBOUNCE_MS);
		CHECK(nscan_all == cases[i].want_all &&
			      nscan_device == cases[i].want_device,
		      "%s: %u full, %u device passes", cases[i].what, nscan_all,
		      nscan_device);
		/* Nothing changed on disk: nothing to tell anyone. */
		CHECK(fake_calls_total() == 0, "%s: %s", cases[i].what,
		      fake_calls_dump());
	}
}

static void test_one_device_changes(void)
{
	reset_counts();
	put("class/infiniband/dev1/ports/1/state", "1: DOWN\n");
	scan_request(scan, "dev1");
	run_for(5 * DEBOUNCE_MS);
	CHECK(nscan_device == 1 && nscan_all == 0 &&
		      strcmp(last_scanned, "dev1") == 0,
	      "%u device passes of %s", nscan_device, last_scanned);
	CHECK(fake_calls_count("changed:dev1") == 1 && fake_calls_total() == 1,
	      "%s", fake_calls_dump());
	CHECK(strcmp(device_info(devices_find(table, "dev1"))->ports[0].state,
		     "DOWN") == 0,
	      "state not updated");
}

static void test_removed_before_scan(void)
{
	reset_counts();
	scan_request(scan, "dev2");
	remove_tree("class/infiniband/dev2");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("removed:dev2") == 1, "%s", fake_calls_dump());
	CHECK(devices_find(table, "dev2") == NULL ||
		      device_state(devices_find(table, "dev2")) ==
			      DEVICE_STATE_REMOVED,
	      "dev2 still present");
}

/* A removal announced while sysfs still shows the device (the kernel's
 * order): the first pass finds it, the second, a moment later, does not. */
static void test_removal_announced_early(void)
{
	reset_counts();
	put_dev("dev5", "0002:c903:0000:0005\n", "4: ACTIVE\n", "eth5\n");
	scan_kernel_added(scan, "dev5");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("added:dev5") == 1, "%s", fake_calls_dump());
	reset_counts();
	scan_request_removed(scan, "dev5");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_total() == 0, "first pass: %s", fake_calls_dump());
	remove_tree("class/infiniband/dev5");
	run_for(300);
	CHECK(fake_calls_count("removed:dev5") == 1, "second pass: %s",
	      fake_calls_dump());
	CHECK(nscan_device == 2, "%u passes", nscan_device);
}

/* A device with a garbage node_guid is looked at three times (at once,
 * 200 ms and 2 s later), then left alone with a single warning however
 * often it is asked for. */
static void test_half_created(void)
{
	unsigned int round;

	reset_counts();
	put_dev("dev3", "garbage\n", "4: ACTIVE\n", "eth3\n");
	for (round = 0; round < 2; round++) {
		scan_request(scan, "dev3");
		run_for(5 * DEBOUNCE_MS);
		CHECK(nscan_device == 3 * round + 1, "round %u: %u passes",
		      round, nscan_device);
		run_for(300);
		CHECK(nscan_device == 3 * round + 2, "round %u: %u passes",
		      round, nscan_device);
		run_for(2100);
		CHECK(nscan_device == 3 * round + 3, "round %u: %u passes",
		      round, nscan_device);
	}
	CHECK(fake_log_warnings == 1, "%u warnings", fake_log_warnings);
	CHECK(fake_calls_total() == 0, "%s", fake_calls_dump());

	/* Finished between the first try and the retry: held by the retry
	 * (the kernel has not said it is complete), added at its word. */
	reset_counts();
	put_dev("dev4", "garbage\n", "4: ACTIVE\n", "eth4\n");
	scan_request(scan, "dev4");
	run_for(5 * DEBOUNCE_MS);
	put("class/infiniband/dev4/node_guid", "0002:c903:0000:0004\n");
	run_for(300);
	CHECK(fake_calls_total() == 0, "the retry: %s", fake_calls_dump());
	scan_kernel_added(scan, "dev4");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("added:dev4") == 1, "%s", fake_calls_dump());
}

/*
 * Arrival (daemon/model/arrival.h): a look before the kernel's word holds a new
 * registration back, however many looks come; the word's look announces
 * it once, with every node it has then.  Without the word, it is
 * announced as it is ARRIVAL_WAIT_MS after the first look that held it,
 * with a warning.
 */
static void test_arrival(void)
{
	reset_counts();
	put_dev("dev5", "0002:c903:0000:0005\n", "4: ACTIVE\n", "eth5\n");
	scan_request(scan, "dev5");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_total() == 0, "%s", fake_calls_dump());
	put("class/infiniband_verbs/uverbs5/ibdev", "dev5\n");
	scan_request_uverbs(scan, "uverbs5");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_total() == 0, "its node's uevent: %s",
	      fake_calls_dump());
	scan_kernel_added(scan, "dev5");
	run_for(5 * DEBOUNCE_MS);
	/* dev5's identity may have lived in an earlier test: RETURNED. */
	CHECK(fake_calls_count("added:dev5") +
				      fake_calls_count("returned:dev5") ==
			      1 &&
		      fake_calls_total() == 1,
	      "%s", fake_calls_dump());
	CHECK(strcmp(device_info(devices_find(table, "dev5"))->uverbs,
		     "uverbs5") == 0,
	      "uverbs '%s'", device_info(devices_find(table, "dev5"))->uverbs);
	run_for(ARRIVAL_WAIT_MS + 100);
	CHECK(fake_calls_total() == 1, "later: %s", fake_calls_dump());

	reset_counts();
	put_dev("dev6", "0002:c903:0000:0006\n", "4: ACTIVE\n", "eth6\n");
	scan_request(scan, "dev6");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_total() == 0, "%s", fake_calls_dump());
	run_for(ARRIVAL_WAIT_MS - 200);
	CHECK(fake_calls_total() == 0, "within its wait: %s",
	      fake_calls_dump());
	run_for(300);
	CHECK(fake_calls_count("added:dev6") == 1 && fake_calls_total() == 1,
	      "%s", fake_calls_dump());
	CHECK(fake_log_warnings == 1, "%u warnings", fake_log_warnings);

	/* Unplug seen half done: uverbs gone (REMOVING: the kernel
	 * unregisters it), the ib device not yet; REMOVED at the removal's
	 * own uevent. */
	reset_counts();
	remove_tree("class/infiniband_verbs/uverbs5");
	scan_request(scan, "dev5");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("removing:dev5") == 1 && fake_calls_total() == 1,
	      "%s", fake_calls_dump());
	remove_tree("class/infiniband/dev5");
	scan_request_removed(scan, "dev5");
	run_for(300);
	CHECK(fake_calls_count("removed:dev5") == 1 && fake_calls_total() == 2,
	      "%s", fake_calls_dump());
}

/*
 * The kernel deleted a device's uverbs node (its uevent): REMOVING at once,
 * before any pass; what passes then read of the half torn down device
 * (uverbs gone, no ports) changes nothing; REMOVED once it is gone.  A
 * removal read late, after a new device took the same uverbsN, ends
 * nothing.  A present device found without its uverbs by a look alone
 * (no uevent heard) is REMOVING too.
 */
static void test_uverbs_gone(void)
{
	const struct device *d;

	put_dev("dev8", "0002:c903:0000:0008\n", "4: ACTIVE\n", "eth8\n");
	put("class/infiniband_verbs/uverbs8/ibdev", "dev8\n");
	scan_kernel_added(scan, "dev8");
	run_for(5 * DEBOUNCE_MS);
	reset_counts();
	scan_uverbs_gone(scan, "uverbs8");
	CHECK(fake_calls_count("removing:dev8") == 0,
	      "uverbs8 still in sysfs: %s", fake_calls_dump());
	remove_tree("class/infiniband_verbs/uverbs8");
	scan_uverbs_gone(scan, "uverbs8");
	CHECK(fake_calls_count("removing:dev8") == 1 &&
		      fake_calls_total() == 1 && nscan_device == 0,
	      "at once: %s, %u passes", fake_calls_dump(), nscan_device);
	d = devices_find(table, "dev8");
	CHECK(d && device_removing(d) && !device_ready(d) &&
		      device_state(d) == DEVICE_STATE_PRESENT,
	      "dev8 not removing");
	scan_uverbs_gone(scan, "uverbs8");
	remove_tree("class/infiniband/dev8/ports");
	run_for(300);
	CHECK(fake_calls_total() == 1, "torn down: %s", fake_calls_dump());
	/* A full pass skips the torn down read; the device stays removing. */
	CHECK(scan_full_now(scan) == 0 && fake_calls_total() == 1,
	      "full pass while torn down: %s", fake_calls_dump());
	d = devices_find(table, "dev8");
	CHECK(d && device_removing(d), "dev8 ended by a full pass");
	remove_tree("class/infiniband/dev8");
	scan_request_removed(scan, "dev8");
	run_for(300);
	CHECK(fake_calls_count("removed:dev8") == 1 && fake_calls_total() == 2,
	      "gone: %s", fake_calls_dump());

	/* Its uverbs number already another device's: dev10 is going. */
	put_dev("dev10", "0002:c903:0000:000a\n", "4: ACTIVE\n", "eth10\n");
	put("class/infiniband_verbs/uverbs10/ibdev", "dev10\n");
	scan_kernel_added(scan, "dev10");
	run_for(5 * DEBOUNCE_MS);
	reset_counts();
	put("class/infiniband_verbs/uverbs10/ibdev", "dev11\n");
	scan_uverbs_gone(scan, "uverbs10");
	CHECK(fake_calls_count("removing:dev10") == 1, "reused: %s",
	      fake_calls_dump());
	remove_tree("class/infiniband/dev10");
	remove_tree("class/infiniband_verbs/uverbs10");
	scan_request_removed(scan, "dev10");
	run_for(300);

	put_dev("dev9", "0002:c903:0000:0009\n", "4: ACTIVE\n", "eth9\n");
	put("class/infiniband_verbs/uverbs9/ibdev", "dev9\n");
	scan_kernel_added(scan, "dev9");
	run_for(5 * DEBOUNCE_MS);
	reset_counts();
	remove_tree("class/infiniband_verbs/uverbs9");
	scan_request(scan, "dev9");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("removing:dev9") == 1 && fake_calls_total() == 1,
	      "the look: %s", fake_calls_dump());
	remove_tree("class/infiniband/dev9");
	scan_request_removed(scan, "dev9");
	run_for(300);
	CHECK(fake_calls_count("removed:dev9") == 1, "%s", fake_calls_dump());
}

static void test_netdev_and_uverbs(void)
{
	reset_counts();
	CHECK(scan_request_netdev(scan, "eth0") == 1, "eth0 not found");
	CHECK(scan_request_netdev(scan, "nosuch0") == 0, "nosuch0 found");
	run_for(5 * DEBOUNCE_MS);
	CHECK(nscan_device == 1 && strcmp(last_scanned, "dev0") == 0,
	      "%u passes, last %s", nscan_device, last_scanned);

	/* No device has that uverbs: everything is rescanned. */
	reset_counts();
	scan_request_uverbs(scan, "uverbs9");
	run_for(5 * DEBOUNCE_MS);
	CHECK(nscan_all == 1, "%u full passes", nscan_all);
}

/* An isolated request is served at once; requests inside the window
 * wait for its end, but not the kernel's word: it says the device is
 * complete, and its look is taken at once.  Windows of a second keep
 * this independent of the machine's speed. */
static void test_leading_edge(void)
{
	struct scan_options opts = {
		.sysroot = root,
		.debounce_ms = 1000,
		.storm_threshold = STORM,
	};
	struct scan *slow = scan_new(base, table, &opts);
	struct scan *fresh = scan_new(base, table, &opts);
	const struct device *dev7;

	/* As the daemon starts (main.c): what is there is taken as it is. */
	scan_full_now(slow);
	scan_full_now(fresh);
	reset_counts();
	put_dev("dev7", "0002:c903:0000:0007\n", "4: ACTIVE\n", "eth7\n");
	scan_request(slow, "dev7");
	run_for(5);
	CHECK(nscan_device == 1 && fake_calls_total() == 0,
	      "isolated request: %u passes, %s", nscan_device,
	      fake_calls_dump());
	put("class/infiniband_verbs/uverbs7/ibdev", "dev7\n");
	scan_kernel_added(slow, "dev7");
	CHECK(fake_calls_count("added:dev7") == 1 && fake_calls_total() == 1,
	      "the kernel's word, inside the window: %s", fake_calls_dump());
	dev7 = devices_find(table, "dev7");
	CHECK(dev7 && strcmp(device_info(dev7)->uverbs, "uverbs7") == 0,
	      "with its node: uverbs '%s'",
	      dev7 ? device_info(dev7)->uverbs : "(not listed)");
	put("class/infiniband/dev0/ports/1/state", "1: DOWN\n");
	scan_request(slow, "dev0");
	run_for(5);
	CHECK(fake_calls_total() == 1, "inside the window: %s",
	      fake_calls_dump());
	run_for(600);
	run_for(600);
	CHECK(fake_calls_count("added:dev7") == 1 &&
		      fake_calls_count("changed:dev0") == 1 &&
		      fake_calls_total() == 2,
	      "at the window's end: %s", fake_calls_dump());

	put("class/infiniband/dev0/ports/1/state", "4: ACTIVE\n");
	scan_request(fresh, "dev0");
	run_for(5);
	CHECK(fake_calls_count("changed:dev0") == 2, "isolated change: %s",
	      fake_calls_dump());
	scan_free(fresh);
	scan_free(slow);
}

static unsigned int present(void)
{
	unsigned int n = 0;

	for (const struct device *d = devices_first(table); d;
	     d = devices_next(table, d))
		n += device_state(d) == DEVICE_STATE_PRESENT;
	return n;
}

/* A look that has descriptors to spare keeps the reserve: the common
 * read, on the way of every event, opens and closes nothing for it. */
static void test_reserve_kept(void)
{
	int lowest = lowest_free_fd();

	reset_counts();
	put("class/infiniband/dev0/ports/1/state", "1: DOWN\n");
	scan_request(scan, "dev0");
	run_for(5 * DEBOUNCE_MS);
	CHECK(nscan_device == 1, "%u device passes", nscan_device);
	CHECK(free_fd_in_read == lowest,
	      "lowest free descriptor %d in the read, %d outside it: the "
	      "reserve was given back",
	      free_fd_in_read, lowest);
	CHECK(lowest_free_fd() == lowest, "a descriptor leaked or moved");
	put("class/infiniband/dev0/ports/1/state", "4: ACTIVE\n");
	scan_request(scan, "dev0");
	run_for(5 * DEBOUNCE_MS);
}

/* Every descriptor taken, as a local user filling rdmad's table with
 * connections would: the scanner's reserve still reads sysfs whole (each
 * read runs short first, then is read again with the reserve). */
static void test_fd_table_full(void)
{
	static int fds[4096];
	unsigned int before = present(), n = 0;
	struct rlimit old, low;

	reset_counts();
	getrlimit(RLIMIT_NOFILE, &old);
	low = old;
	low.rlim_cur = old.rlim_cur < 1024 ? old.rlim_cur : 1024;
	setrlimit(RLIMIT_NOFILE, &low);
	while (n < sizeof(fds) / sizeof(fds[0]) &&
	       (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	CHECK(errno == EMFILE, "filled %u descriptors: %s", n, strerror(errno));
	CHECK(scan_full_now(scan) == 0, "full rescan with no descriptor left");
	scan_request(scan, "dev0");
	run_for(5 * DEBOUNCE_MS);
	while (n > 0)
		close(fds[--n]);
	setrlimit(RLIMIT_NOFILE, &old);
	CHECK(nscan_all == 2 && nscan_device == 2, "%u full, %u one", nscan_all,
	      nscan_device);
	CHECK(fake_calls_total() == 0, "events: %s", fake_calls_dump());
	CHECK(present() == before, "%u of %u present", present(), before);
}

/* A scan that runs out anyway (ENFILE, ENOMEM) fails whole: nothing is
 * reported removed, one warning, and the pass is retried until it
 * works. */
static void test_starved(void)
{
	unsigned int before = present();

	reset_counts();
	starve = -ENFILE;
	CHECK(scan_full_now(scan) == -ENFILE, "a starved scan succeeded");
	scan_request(scan, "dev1");
	run_for(5 * DEBOUNCE_MS);
	run_for(2500); /* two retries, both starved */
	CHECK(fake_calls_total() == 0, "events: %s", fake_calls_dump());
	CHECK(present() == before, "%u of %u present", present(), before);
	CHECK(nscan_all >= 2, "%u full passes", nscan_all);
	CHECK(fake_log_warnings == 1, "%u warnings", fake_log_warnings);
	starve = 0;
	remove_tree("class/infiniband/dev1");
	run_for(1500);
	CHECK(fake_calls_count("removed:dev1") == 1,
	      "the retry after starvation: %s", fake_calls_dump());
	put_dev("dev1", "0002:c903:0000:0001\n", "4: ACTIVE\n", "eth1\n");
	scan_kernel_added(scan, "dev1");
	run_for(5 * DEBOUNCE_MS);
}

/* @name with one port of @link_layer ("InfiniBand", "Ethernet"), its
 * uverbsN and umadN (an InfiniBand port gets an issmN too: put_issm()). */
static void put_mad_dev(const char *name, unsigned int n,
			const char *link_layer)
{
	char rel[256], ibdev[64], guid[64];

	snprintf(guid, sizeof(guid), "0002:c903:0000:%04x\n", n);
	put_dev(name, guid, "4: ACTIVE\n", "");
	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/link_layer",
		 name);
	snprintf(ibdev, sizeof(ibdev), "%s\n", link_layer);
	put(rel, ibdev);
	snprintf(ibdev, sizeof(ibdev), "%s\n", name);
	snprintf(rel, sizeof(rel), "class/infiniband_verbs/uverbs%u/ibdev", n);
	put(rel, ibdev);
	snprintf(rel, sizeof(rel), "class/infiniband_mad/umad%u/ibdev", n);
	put(rel, ibdev);
	snprintf(rel, sizeof(rel), "class/infiniband_mad/umad%u/port", n);
	put(rel, "1\n");
}

static void put_issm(unsigned int n, const char *name)
{
	char rel[256], ibdev[64];

	snprintf(ibdev, sizeof(ibdev), "%s\n", name);
	snprintf(rel, sizeof(rel), "class/infiniband_mad/issm%u/ibdev", n);
	put(rel, ibdev);
	snprintf(rel, sizeof(rel), "class/infiniband_mad/issm%u/port", n);
	put(rel, "1\n");
}

static unsigned int mad_nodes_of(const char *name)
{
	const struct device *d = devices_find(table, name);

	return d ? device_info(d)->nmad_nodes : 0;
}

/*
 * A device plugged again while the retry its removal asked for is still
 * pending (the real-kernel storm on 6.1 with udevd): that retry, and the
 * full pass its issmN's uevent asks for, are looks at the new
 * registration before the kernel's word; it is announced once, by the
 * word, with both MAD nodes, and no CHANGED follows.
 */
static void test_replug(void)
{
	run_for(2300); /* no look of earlier cases pending */
	put_mad_dev("dev12", 12, "InfiniBand");
	put_issm(12, "dev12");
	scan_kernel_added(scan, "dev12");
	run_for(5 * DEBOUNCE_MS);
	CHECK(mad_nodes_of("dev12") == 2, "plugged: %u MAD nodes",
	      mad_nodes_of("dev12"));
	reset_counts();
	remove_tree("class/infiniband_verbs/uverbs12");
	scan_uverbs_gone(scan, "uverbs12");
	remove_tree("class/infiniband_mad/issm12");
	remove_tree("class/infiniband_mad/umad12");
	remove_tree("class/infiniband/dev12");
	scan_request_removed(scan, "dev12");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("removing:dev12") == 1 &&
		      fake_calls_count("removed:dev12") == 1 &&
		      fake_calls_total() == 2,
	      "unplugged: %s", fake_calls_dump());
	put_mad_dev("dev12", 12, "InfiniBand");
	run_for(200);
	CHECK(fake_calls_total() == 2, "the retry took it without issm12: %s",
	      fake_calls_dump());
	put_issm(12, "dev12");
	scan_request_mad(scan, "issm12");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_total() == 2, "the full pass took it: %s",
	      fake_calls_dump());
	scan_kernel_added(scan, "dev12");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("returned:dev12") == 1 &&
		      fake_calls_count("changed:dev12") == 0 &&
		      mad_nodes_of("dev12") == 2,
	      "plugged again: %s, %u MAD nodes", fake_calls_dump(),
	      mad_nodes_of("dev12"));
	run_for(ARRIVAL_WAIT_MS + 300);
	CHECK(fake_calls_count("returned:dev12") == 1 &&
		      fake_calls_count("changed:dev12") == 0,
	      "later: %s", fake_calls_dump());
	remove_tree("class/infiniband_mad");
}

/*
 * The last look at a name, asked for by an earlier half-created read, is
 * the first at a registration still without its uverbs: it is held like
 * any other, and announced with uverbs13 at the kernel's word.
 */
static void test_late_look(void)
{
	run_for(2300); /* no look of earlier cases pending */
	reset_counts();
	put_dev("dev13", "garbage\n", "4: ACTIVE\n", "eth13\n");
	scan_request(scan, "dev13");
	run_for(5 * DEBOUNCE_MS + 300);
	CHECK(nscan_device == 2, "%u looks", nscan_device);
	put("class/infiniband/dev13/node_guid", "0002:c903:0000:000d\n");
	run_for(2000);
	CHECK(nscan_device == 3 && fake_calls_total() == 0,
	      "the last look took it without uverbs13: %s", fake_calls_dump());
	put("class/infiniband_verbs/uverbs13/ibdev", "dev13\n");
	scan_kernel_added(scan, "dev13");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("added:dev13") == 1 &&
		      fake_calls_count("changed:dev13") == 0 &&
		      !strcmp(device_info(devices_find(table, "dev13"))->uverbs,
			      "uverbs13"),
	      "with uverbs13: %s", fake_calls_dump());
}

/* A rename (rdma dev set dev14 name dev15) whose old name is looked at
 * first, or alone: RENAMED, not REMOVED then ADDED. */
static void test_rename_old_name_first(void)
{
	char from[128], to[128];

	put_dev("dev14", "0002:c903:0000:000e\n", "4: ACTIVE\n", "eth14\n");
	put("class/infiniband_verbs/uverbs14/ibdev", "dev14\n");
	scan_kernel_added(scan, "dev14");
	run_for(5 * DEBOUNCE_MS);
	reset_counts();
	snprintf(from, sizeof(from), "%s/class/infiniband/dev14", root);
	snprintf(to, sizeof(to), "%s/class/infiniband/dev15", root);
	CHECK(rename(from, to) == 0, "rename: %s", strerror(errno));
	put("class/infiniband_verbs/uverbs14/ibdev", "dev15\n");
	scan_request(scan, "dev14");
	scan_request(scan, "dev15");
	run_for(5 * DEBOUNCE_MS);
	CHECK(fake_calls_count("renamed:dev15") == 1 && fake_calls_total() == 1,
	      "%s", fake_calls_dump());
}

static void test_no_class_dir(void)
{
	reset_counts();
	remove_tree("class");
	CHECK(scan_full_now(scan) == 0, "a kernel without RDMA is an error");
	CHECK(fake_calls_count("removed:dev0") == 1, "%s", fake_calls_dump());
}

int main(void)
{
	snprintf(root, sizeof(root), "/tmp/test-scan-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	setup();
	test_full_now();
	test_storms();
	test_one_device_changes();
	test_removed_before_scan();
	test_removal_announced_early();
	test_half_created();
	test_arrival();
	test_uverbs_gone();
	test_netdev_and_uverbs();
	test_leading_edge();
	test_reserve_kept();
	test_fd_table_full();
	test_starved();
	test_replug();
	test_late_look();
	test_rename_old_name_first();
	test_no_class_dir();

	scan_free(scan);
	devices_free(table);
	event_base_free(base);
	remove_tree("");
	if (failures)
		fprintf(stderr, "%u failures\n", failures);
	return failures ? 1 : 0;
}
