/* SPDX-License-Identifier: MIT */
/*
 * daemon/model/netdevs.c: what rtnetlink last said of each net device, table
 * by table: set, overwrite, names the kernel cannot have, and a table
 * grown well past its first buckets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "netdevs.h"

static void test_rows(void)
{
	static const struct {
		const char *name;
		bool up;
		int want; /* netdevs_set() */
	} rows[] = {
		{"eth0", true, 0},
		{"eth1", false, 0},
		{"eth0", false, 0}, /* overwritten */
		{"enp3s0f0np0", true, 0},
		{"fifteen_chars__", true, 0},
		{"sixteen_chars___", true, -EINVAL}, /* IFNAMSIZ is 16 */
		{"", true, -EINVAL},
	};
	struct netdevs *nd = netdevs_new();
	bool up;

	CHECK(nd != NULL, "new");
	CHECK(!netdevs_get(nd, "eth0", &up), "empty table knows nothing");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK(netdevs_set(nd, rows[i].name, rows[i].up) == rows[i].want,
		      "set %s", rows[i].name);
	CHECK(netdevs_get(nd, "eth0", &up) && !up, "eth0 last said down");
	CHECK(netdevs_get(nd, "eth1", &up) && !up, "eth1 down");
	CHECK(netdevs_get(nd, "enp3s0f0np0", &up) && up, "enp3s0f0np0 up");
	CHECK(!netdevs_get(nd, "sixteen_chars___", &up), "refused name");
	CHECK(!netdevs_get(nd, "eth2", &up), "unknown");
	netdevs_free(nd);
}

/* 5,000 netdevs: every one found again after the table grew. */
static void test_grow(void)
{
	struct netdevs *nd = netdevs_new();
	char name[16];
	bool up;
	int lost = 0;

	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "veth%d", i);
		CHECK(netdevs_set(nd, name, i % 2) == 0, "set %s", name);
	}
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "veth%d", i);
		lost += !netdevs_get(nd, name, &up) || up != (i % 2);
	}
	CHECK(lost == 0, "%d of 5000 lost", lost);
	netdevs_free(nd);
	netdevs_free(NULL);
}

/* Containers make and delete veths all day: what goes is forgotten. */
static void test_forget(void)
{
	struct netdevs *nd = netdevs_new();
	char name[16];
	bool up;

	netdevs_forget(nd, "eth0"); /* an empty table */
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 1000; i++) {
			snprintf(name, sizeof(name), "veth%d",
				 round * 1000 + i);
			CHECK(netdevs_set(nd, name, true) == 0, "set %s", name);
		}
		for (int i = 0; i < 1000; i++) {
			snprintf(name, sizeof(name), "veth%d",
				 round * 1000 + i);
			netdevs_forget(nd, name);
		}
	}
	CHECK(netdevs_count(nd) == 0, "%zu left of 10,000 made and deleted",
	      netdevs_count(nd));
	CHECK(!netdevs_get(nd, "veth5", &up), "forgotten");
	CHECK(netdevs_set(nd, "eth0", false) == 0 && netdevs_count(nd) == 1,
	      "set again");
	netdevs_forget(nd, "eth1"); /* unknown: nothing */
	CHECK(netdevs_count(nd) == 1, "unknown forget kept eth0");
	netdevs_free(nd);
}

int main(void)
{
	test_rows();
	test_grow();
	test_forget();
	if (failures)
		fprintf(stderr, "%u failures\n", failures);
	else
		printf("test-netdevs: all passed\n");
	return failures ? 1 : 0;
}
