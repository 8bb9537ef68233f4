/* SPDX-License-Identifier: MIT */
/*
 * daemon/model/route.c: which device the table names for a uverbs or ib_umad
 * char device, a netdev, or a look at a registration, row by row, on a
 * real table (fixture-table.c) with one device removed but still held.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixture-table.h"
#include "route.h"

static const struct fixture_dev specs[] = {
	{"mlx5_0",
	 "pci:0000:08:00.0",
	 "uverbs0",
	 10,
	 "eth0",
	 {"umad0", "issm0"}},
	{"mlx5_1", "pci:0000:08:00.1", "uverbs1", 11, "eth1", {"umad1"}},
	{"old0", "pci:0000:09:00.0", "uverbs3", 13, "eth3", {NULL}},
	{"rxe0", "rxe:eth0", "uverbs2", 12, "eth0", {NULL}},
};

enum lookup { BY_UVERBS, BY_PRESENT_UVERBS, BY_MAD };

/* Char devices to names; old0 is REMOVED (held). */
static const struct name_row {
	enum lookup by;
	const char *node, *want; /* want NULL: none */
} name_rows[] = {
	{BY_UVERBS, "uverbs0", "mlx5_0"},
	{BY_UVERBS, "uverbs2", "rxe0"},
	{BY_UVERBS, "uverbs3", "old0"}, /* any state */
	{BY_UVERBS, "uverbs9", NULL},
	{BY_UVERBS, "", NULL},
	{BY_PRESENT_UVERBS, "uverbs1", "mlx5_1"},
	{BY_PRESENT_UVERBS, "uverbs3", NULL}, /* removed */
	{BY_PRESENT_UVERBS, "uverbs9", NULL},
	{BY_MAD, "umad0", "mlx5_0"},
	{BY_MAD, "issm0", "mlx5_0"},
	{BY_MAD, "umad1", "mlx5_1"},
	{BY_MAD, "issm1", NULL},
	{BY_MAD, "umad9", NULL},
};

/* A look at a registration: the device it is, under any name. */
static const struct life_row {
	const char *what;
	struct fixture_dev look;
	const char *want; /* NULL: not a listed life */
} life_rows[] = {
	{"the same look",
	 {"mlx5_0", "pci:0000:08:00.0", "uverbs0", 10},
	 "mlx5_0"},
	{"renamed", {"ib7", "pci:0000:08:00.0", "uverbs0", 10}, "mlx5_0"},
	{"no uverbs yet", {"mlx5_0", "pci:0000:08:00.0", "", 10}, "mlx5_0"},
	{"registered again",
	 {"mlx5_0", "pci:0000:08:00.0", "uverbs0", 20},
	 NULL},
	{"another uverbs", {"mlx5_0", "pci:0000:08:00.0", "uverbs5", 10}, NULL},
	{"unknown inode", {"mlx5_0", "pci:0000:08:00.0", "uverbs0", 0}, NULL},
	{"unknown identity",
	 {"mlx5_0", "pci:0000:0a:00.0", "uverbs0", 10},
	 NULL},
	{"removed, held", {"old0", "pci:0000:09:00.0", "uverbs3", 13}, NULL},
};

static struct devices *table_with_old0_removed(void)
{
	struct devices *table = fixture_table(specs, 4);
	struct holder h = {.owner = &h, .pid = 1};

	CHECK(devices_hold(table, "old0", &h) == 0, "hold old0");
	CHECK(devices_apply_one(table, "old0", NULL) > 0, "remove old0");
	CHECK(device_state(devices_find(table, "old0")) == DEVICE_STATE_REMOVED,
	      "old0 not removed");
	return table;
}

static const char *lookup(const struct devices *table, enum lookup by,
			  const char *node)
{
	switch (by) {
	case BY_UVERBS:
		return route_uverbs(table, node);
	case BY_PRESENT_UVERBS:
		return route_present_uverbs(table, node);
	case BY_MAD:
		return route_mad(table, node);
	}
	return NULL;
}

static void test_names(struct devices *table)
{
	for (size_t i = 0; i < sizeof(name_rows) / sizeof(name_rows[0]); i++) {
		const struct name_row *r = &name_rows[i];
		const char *got = lookup(table, r->by, r->node);

		CHECK(got == r->want ||
			      (got && r->want && !strcmp(got, r->want)),
		      "row %zu: %s: %s", i, r->node, got ? got : "none");
	}
}

/* Every device with a port on the netdev, in the table's order. */
static void test_netdevs(struct devices *table)
{
	static const struct {
		const char *ifname, *want;
	} rows[] = {
		{"eth0", "mlx5_0 rxe0"},
		{"eth1", "mlx5_1"},
		{"eth3", "old0"},
		{"eth9", ""},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct device *dev = NULL;
		char got[128] = "";

		while ((dev = route_netdev(table, dev, rows[i].ifname)))
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
				 "%s%s", got[0] ? " " : "",
				 device_info(dev)->name);
		CHECK(!strcmp(got, rows[i].want), "%s: '%s'", rows[i].ifname,
		      got);
	}
}

static void test_lives(struct devices *table)
{
	for (size_t i = 0; i < sizeof(life_rows) / sizeof(life_rows[0]); i++) {
		const struct life_row *r = &life_rows[i];
		struct device_record look;
		const struct device *got;

		fixture_record(&look, &r->look);
		got = route_life(table, &look);
		CHECK(r->want ? got && !strcmp(device_info(got)->name, r->want)
			      : !got,
		      "%s: %s", r->what, got ? device_info(got)->name : "none");
		record_clear(&look);
	}
}

int main(void)
{
	struct devices *table = table_with_old0_removed();

	test_names(table);
	test_netdevs(table);
	test_lives(table);
	devices_free(table);
	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
