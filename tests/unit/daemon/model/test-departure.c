/* SPDX-License-Identifier: MIT */
/*
 * daemon/model/departure.c: each rule of its table, row by row, on a real
 * device table (fixture-table.c) and a scripted sysfs: what each read
 * answers, and whether the rule read it at all (sysfs is read only where
 * a rule needs it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "departure.h"
#include "fixture-table.h"

#define GONE (-ENOENT)
#define TORN (-EBADMSG)

/* What sysfs answers, and how often it was asked. */
static struct {
	int look;	    /* look(): 0, GONE, TORN */
	bool mad_class;	    /* has_mad_class() */
	const char *ibdev;  /* ibdev_of_uverbs(); NULL: -ENOENT */
	unsigned int reads; /* calls of any of the three */
} sysfs;

static int look(void *arg, const char *name)
{
	sysfs.reads++;
	return sysfs.look;
}

static bool has_mad_class(void *arg)
{
	sysfs.reads++;
	return sysfs.mad_class;
}

static int ibdev_of_uverbs(void *arg, const char *uverbs,
			   char ret_name[RECORD_NAME_MAX])
{
	sysfs.reads++;
	if (!sysfs.ibdev)
		return -ENOENT;
	snprintf(ret_name, RECORD_NAME_MAX, "%s", sysfs.ibdev);
	return 0;
}

static const struct departure_sysfs fake_sysfs = {
	.look = look,
	.has_mad_class = has_mad_class,
	.ibdev_of_uverbs = ibdev_of_uverbs,
};

static const struct fixture_dev mlx5_0 = {"mlx5_0",  "pci:0000:08:00.0",
					  "uverbs0", 10,
					  "eth0",    {"umad0", "issm0"}};
static const struct fixture_dev rxe0 = {"rxe0", "rxe:eth1", "", 12, "eth1"};

enum life { PRESENT, REMOVING, REMOVED };

/* A table with mlx5_0 (@life) and rxe0 (present, no uverbs). */
static struct devices *table_with(enum life life)
{
	const struct fixture_dev specs[] = {mlx5_0, rxe0};
	struct devices *table = fixture_table(specs, 2);
	static struct holder h = {.owner = &h, .pid = 1};

	if (life == REMOVING)
		CHECK(devices_uverbs_gone(table, "uverbs0") == 1, "removing");
	if (life == REMOVED) {
		CHECK(devices_hold(table, "mlx5_0", &h) == 0, "hold");
		CHECK(devices_apply_one(table, "mlx5_0", NULL) > 0, "removed");
	}
	return table;
}

/* (1) A full pass without mlx5_0 (or with it: in_pass). */
static void test_torn(void)
{
	static const struct {
		const char *what;
		enum life life;
		bool in_pass;
		int look;
		int kept;
		unsigned int reads;
	} rows[] = {
		{"removing, torn down", REMOVING, false, TORN, 1, 1},
		{"removing, gone", REMOVING, false, GONE, 0, 1},
		{"removing, readable", REMOVING, false, 0, 0, 1},
		{"removing, in the pass", REMOVING, true, TORN, 0, 0},
		{"present, torn down", PRESENT, false, TORN, 0, 0},
		{"removed, held", REMOVED, false, TORN, 0, 0},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct devices *table = table_with(rows[i].life);
		struct device_record *devs = calloc(2, sizeof(*devs));
		size_t n = 0;
		int kept;

		if (rows[i].in_pass)
			fixture_record(&devs[n++], &mlx5_0);
		fixture_record(&devs[n++], &rxe0);
		sysfs = (typeof(sysfs)){.look = rows[i].look};
		kept = departure_keep_torn(table, &fake_sysfs, &devs, &n);
		CHECK(kept == rows[i].kept && sysfs.reads == rows[i].reads,
		      "%s: kept %d, %u reads", rows[i].what, kept, sysfs.reads);
		CHECK(n == 1 + (size_t)rows[i].in_pass + (size_t)kept,
		      "%s: %zu in the pass", rows[i].what, n);
		if (kept == 1)
			CHECK(!strcmp(devs[n - 1].name, "mlx5_0") &&
				      !devs[n - 1].uverbs[0] &&
				      devs[n - 1].nmad_nodes == 2,
			      "%s: kept as '%s' with uverbs '%s'", rows[i].what,
			      devs[n - 1].name, devs[n - 1].uverbs);
		records_free(devs, n);
		devices_free(table);
	}
}

/* (2) A look at mlx5_0's registration (or another) with fewer nodes. */
static void test_mad_nodes(void)
{
	static const struct {
		const char *what;
		struct fixture_dev look;
		bool mad_class;
		bool kept;
		unsigned int nodes, reads;
	} rows[] = {
		{"one went, class there",
		 {"mlx5_0", "pci:0000:08:00.0", "uverbs0", 10, "", {"umad0"}},
		 true,
		 true,
		 2,
		 1},
		{"both went, class there",
		 {"mlx5_0", "pci:0000:08:00.0", "uverbs0", 10},
		 true,
		 true,
		 2,
		 1},
		{"renamed, none, class there",
		 {"ib7", "pci:0000:08:00.0", "uverbs0", 10},
		 true,
		 true,
		 2,
		 1},
		{"both went, class gone (rmmod ib_umad)",
		 {"mlx5_0", "pci:0000:08:00.0", "uverbs0", 10},
		 false,
		 false,
		 0,
		 1},
		{"all there",
		 {"mlx5_0",
		  "pci:0000:08:00.0",
		  "uverbs0",
		  10,
		  "",
		  {"umad0", "issm0"}},
		 true,
		 false,
		 2,
		 0},
		{"a new registration",
		 {"mlx5_0", "pci:0000:08:00.0", "uverbs4", 20},
		 true,
		 false,
		 0,
		 0},
		{"another device",
		 {"mlx5_9", "pci:0000:0a:00.0", "uverbs9", 30},
		 true,
		 false,
		 0,
		 0},
	};
	struct devices *table = table_with(PRESENT);

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct device_record info;
		bool kept;

		fixture_record(&info, &rows[i].look);
		sysfs = (typeof(sysfs)){.mad_class = rows[i].mad_class};
		kept = departure_keep_mad_nodes(table, &fake_sysfs, &info);
		CHECK(kept == rows[i].kept &&
			      info.nmad_nodes == rows[i].nodes &&
			      sysfs.reads == rows[i].reads,
		      "%s: kept %d, %u nodes, %u reads", rows[i].what, kept,
		      info.nmad_nodes, sysfs.reads);
		if (kept)
			CHECK(!strcmp(info.mad_nodes[0], "umad0") &&
				      !strcmp(info.mad_nodes[1], "issm0"),
			      "%s: %s %s", rows[i].what, info.mad_nodes[0],
			      info.mad_nodes[1]);
		record_clear(&info);
	}
	devices_free(table);
}

/* (3) A name gone from sysfs: renamed where its uverbs names another. */
static void test_renamed(void)
{
	static const struct {
		const char *what, *name;
		enum life life;
		const char *ibdev, *want; /* want NULL: not renamed */
		unsigned int reads;
	} rows[] = {
		{"uverbs names another", "mlx5_0", PRESENT, "ib7", "ib7", 1},
		{"uverbs names it still", "mlx5_0", PRESENT, "mlx5_0", NULL, 1},
		{"uverbs gone too", "mlx5_0", PRESENT, NULL, NULL, 1},
		{"removing", "mlx5_0", REMOVING, "ib7", "ib7", 1},
		{"removed, held", "mlx5_0", REMOVED, "ib7", NULL, 0},
		{"no uverbs", "rxe0", PRESENT, "ib7", NULL, 0},
		{"not listed", "mlx5_9", PRESENT, "ib7", NULL, 0},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct devices *table = table_with(rows[i].life);
		char now[RECORD_NAME_MAX] = "";
		bool renamed;

		sysfs = (typeof(sysfs)){.ibdev = rows[i].ibdev};
		renamed = departure_renamed(table, &fake_sysfs, rows[i].name,
					    now);
		CHECK(rows[i].want ? renamed && !strcmp(now, rows[i].want)
				   : !renamed,
		      "%s: %d '%s'", rows[i].what, renamed, now);
		CHECK(sysfs.reads == rows[i].reads, "%s: %u reads",
		      rows[i].what, sysfs.reads);
		devices_free(table);
	}
}

/* (4) uverbs0 of mlx5_0 removed: does that end mlx5_0? */
static void test_uverbs_ends(void)
{
	static const struct {
		const char *what, *ibdev;
		bool ends;
	} rows[] = {
		{"gone from sysfs", NULL, true},
		{"back for mlx5_0 (a re-plug)", "mlx5_0", false},
		{"another device's already", "mlx5_1", true},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sysfs = (typeof(sysfs)){.ibdev = rows[i].ibdev};
		CHECK(departure_uverbs_ends(&fake_sysfs, "mlx5_0", "uverbs0") ==
			      rows[i].ends,
		      "%s", rows[i].what);
	}
}

int main(void)
{
	test_torn();
	test_mad_nodes();
	test_renamed();
	test_uverbs_ends();
	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
