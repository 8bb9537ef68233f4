/* SPDX-License-Identifier: MIT */
/*
 * A device's lives in the device table (devices.c, lives.c, alias.c):
 * RETURNED with the next incarnation, the end of a life whose registration
 * changed under it, AWAY and its grace, READY/UNREADY, identities across a
 * restart (the lives text), aliases that follow the hardware, and a PF's
 * VFs EXPECTING then SETTLED.  A fake clock drives the deadlines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alias.h"
#include "devices.h"
#include "lives.h"
#include "check.h"

static uint64_t now = 1000000;
static char events[2048];

static uint64_t fake_now(void)
{
	return now;
}

static void listener(void *userdata, enum devices_event event,
		     const struct device *dev, const char *old_name)
{
	size_t len = strlen(events);

	snprintf(events + len, sizeof(events) - len, "%s%s %s/%llu",
		 len ? ", " : "", devices_event_name(event),
		 device_info(dev)->name,
		 (unsigned long long)device_incarnation(dev));
}

/* One device, one port; @reg its registration. */
static struct device_record dev(const char *name, const char *pci, uint64_t reg,
				const char *state)
{
	struct device_record d;

	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.id, sizeof(d.id), "pci:%s", pci);
	snprintf(d.pci_address, sizeof(d.pci_address), "%s", pci);
	snprintf(d.uverbs, sizeof(d.uverbs), "uverbs%llu",
		 (unsigned long long)reg);
	strcpy(d.node_guid, "0002:c903:0000:0001");
	strcpy(d.node_type, "CA");
	d.numa_node = -1;
	d.sriov_numvfs = -1;
	d.reg_key = reg;
	d.nports = 1;
	d.ports = calloc(1, sizeof(*d.ports));
	d.ports[0].port = 1;
	d.ports[0].netdev_up = -1;
	d.ports[0].gid0_zero = 0;
	strcpy(d.ports[0].state, state);
	strcpy(d.ports[0].link_layer, "InfiniBand");
	return d;
}

static int scan(struct devices *t, struct device_record *devs, size_t n)
{
	events[0] = '\0';
	return devices_apply_scan(t, devs, n);
}

static struct devices *table(void)
{
	struct devices *t = devices_new(0);

	devices_set_listener(t, listener, NULL);
	devices_set_grace(t, 5000, 0, fake_now);
	return t;
}

#define EXPECT(want)                                                           \
	CHECK(!strcmp(events, want), "events \"%s\", want \"%s\"", events, want)

static void test_returned(void)
{
	struct devices *t = table();
	struct device_record d[1];
	struct holder h = {.owner = &h, .pid = 7, .uid = 0};

	d[0] = dev("mlx5_0", "0000:03:00.0", 11, "ACTIVE");
	scan(t, d, 1);
	EXPECT("added mlx5_0/1");
	CHECK(device_ready(devices_find(t, "mlx5_0")), "ready");
	scan(t, d, 0);
	EXPECT("removed mlx5_0/1");
	/* Back as another name: the same identity, its next life. */
	d[0] = dev("mlx5_4", "0000:03:00.0", 12, "ACTIVE");
	scan(t, d, 1);
	EXPECT("returned mlx5_4/2");
	CHECK(device_changed(devices_find(t, "mlx5_4")) == LIFE_NAME,
	      "changed: the name");
	/* Held, and re-registered between two looks: the old life ends. */
	CHECK(devices_hold(t, "mlx5_4", &h) == 0, "hold");
	d[0] = dev("mlx5_4", "0000:03:00.0", 13, "ACTIVE");
	scan(t, d, 1);
	EXPECT("removed mlx5_4/2, returned mlx5_4/3");
	CHECK(devices_count(t) == 2, "the held old life stays listed");
	CHECK(!device_ready(devices_first(t)) &&
		      device_ready(devices_next(t, devices_first(t))),
	      "the ended life is not ready, the new one is");
	events[0] = '\0';
	devices_release_owner(t, &h);
	EXPECT("released mlx5_4/2");
	/* A filesystem that reused the inode: the new uverbs tells. */
	d[0] = dev("mlx5_4", "0000:03:00.0", 13, "ACTIVE");
	strcpy(d[0].uverbs, "uverbs99");
	scan(t, d, 1);
	EXPECT("removed mlx5_4/3, returned mlx5_4/4");
	devices_free(t);
}

/* Seen to go, then back with the very same key (a filesystem that
 * reused the inode, a uverbs node not there yet): still a new life. */
static void test_seen_gone_is_a_new_life(void)
{
	struct devices *t = table();
	struct device_record d[1];

	d[0] = dev("mlx5_0", "0000:03:00.0", 71, "ACTIVE");
	scan(t, d, 1);
	scan(t, d, 0);
	d[0] = dev("mlx5_0", "0000:03:00.0", 71, "ACTIVE");
	d[0].uverbs[0] = '\0';
	scan(t, d, 1);
	EXPECT("returned mlx5_0/2");
	devices_free(t);
}

/* The daemon restarts: the lives text carries identities and lives. */
static void test_restart(void)
{
	struct devices *t = table(), *t2;
	struct device_record d[1];
	size_t bad = 9;
	char *text;

	d[0] = dev("mlx5_0", "0000:03:00.0", 21, "ACTIVE");
	scan(t, d, 1);
	d[0] = dev("mlx5_0", "0000:03:00.0", 22, "ACTIVE");
	scan(t, d, 1);
	EXPECT("removed mlx5_0/1, returned mlx5_0/2");
	text = lives_format(devices_lives(t));
	devices_free(t);

	t2 = table();
	CHECK(lives_parse(devices_lives(t2), text, &bad) == 0 && bad == 0,
	      "parse: %zu bad", bad);
	d[0] = dev("mlx5_0", "0000:03:00.0", 22, "ACTIVE");
	scan(t2, d, 1);
	EXPECT("added mlx5_0/2");
	devices_free(t2);

	t2 = table();
	lives_parse(devices_lives(t2), text, NULL);
	d[0] = dev("mlx5_0", "0000:03:00.0", 23, "ACTIVE");
	scan(t2, d, 1);
	EXPECT("returned mlx5_0/3");
	devices_free(t2);

	t2 = table();
	CHECK(lives_parse(devices_lives(t2), "garbage\nx\t1\n", &bad) == 0 &&
		      bad == 2 && lives_count(devices_lives(t2)) == 0,
	      "garbage lines skipped: %zu", bad);
	devices_free(t2);
	free(text);
}

static void test_lives_bounded(void)
{
	struct lives *lives = lives_new();
	struct device_record d;

	for (int i = 0; i < LIVES_MAX + 100; i++) {
		d = dev("x", "0000:00:00.0", i, "ACTIVE");
		snprintf(d.id, sizeof(d.id), "pci:%d", i);
		lives_note(lives, &d, 1);
		free(d.ports);
	}
	CHECK(lives_count(lives) == LIVES_MAX, "%zu lives kept",
	      lives_count(lives));
	CHECK(!lives_find(lives, "pci:0") && lives_find(lives, "pci:4195"),
	      "the oldest forgotten, the newest kept");
	lives_free(lives);
}

static void test_away(void)
{
	struct devices *t = table();
	struct device_record d[2];
	struct holder h = {.owner = &h, .pid = 7, .uid = 0};
	uint64_t next;

	d[0] = dev("mlx5_0", "0000:03:00.0", 31, "ACTIVE");
	d[1] = dev("mlx5_1", "0000:03:00.1", 32, "ACTIVE");
	strcpy(d[1].sriov_pf, "0000:03:00.0");
	d[1].vf = true;
	scan(t, d, 2);
	CHECK(devices_hold(t, "mlx5_1", &h) == 0, "hold the VF");
	d[0] = dev("mlx5_0", "0000:03:00.0", 31, "ACTIVE");
	scan(t, d, 1);
	EXPECT("removed mlx5_1/1");
	CHECK(device_state(devices_find(t, "mlx5_1")) == DEVICE_STATE_AWAY &&
		      device_away_deadline(devices_find(t, "mlx5_1")) ==
			      now + 5000,
	      "away until now + grace");
	d[0] = dev("mlx5_0", "0000:03:00.0", 31, "ACTIVE");
	d[1] = dev("mlx5_1", "0000:03:00.1", 33, "ACTIVE");
	strcpy(d[1].sriov_pf, "0000:03:00.0");
	d[1].vf = true;
	scan(t, d, 2);
	EXPECT("returned mlx5_1/2");
	CHECK(device_holder_count(devices_find(t, "mlx5_1")) == 1 &&
		      devices_count(t) == 2,
	      "the same entry, holds kept");
	/* Gone again, and the grace runs out. */
	d[0] = dev("mlx5_0", "0000:03:00.0", 31, "ACTIVE");
	scan(t, d, 1);
	now += 4999;
	CHECK(devices_expire(t, &next) == 0 && next == now + 1, "not yet");
	now += 1;
	events[0] = '\0';
	CHECK(devices_expire(t, &next) == 1 && next == 0, "expired");
	EXPECT("removed mlx5_1/2");
	CHECK(device_state(devices_find(t, "mlx5_1")) == DEVICE_STATE_REMOVED,
	      "removed, still held");
	devices_free(t);
}

/* [lifecycle] grace rules come before the VF/other defaults. */
static void test_grace_rules(void)
{
	struct devices *t = table();
	struct device_record d[2];
	struct grace_rule rules[2];
	char why[128];

	CHECK(grace_rule_parse("0 vf driver:mlx5_core", &rules[0], why,
			       sizeof(why)) == 0 &&
		      grace_rule_parse("7000 pci:0000:04:00.0", &rules[1], why,
				       sizeof(why)) == 0,
	      "%s", why);
	CHECK(grace_rule_parse("soon vf", &rules[0], why, sizeof(why)) < 0 &&
		      grace_rule_parse("10", &rules[0], why, sizeof(why)) < 0,
	      "bad grace rules refused");
	grace_rule_parse("0 vf driver:mlx5_core", &rules[0], why, sizeof(why));
	devices_set_grace_rules(t, rules, 2);
	d[0] = dev("mlx5_1", "0000:03:00.1", 81, "ACTIVE");
	d[0].vf = true;
	strcpy(d[0].driver, "mlx5_core");
	d[1] = dev("mlx5_9", "0000:04:00.0", 82, "ACTIVE");
	scan(t, d, 2);
	scan(t, d, 0);
	EXPECT("removed mlx5_1/1, removed mlx5_9/1");
	CHECK(!devices_find(t, "mlx5_1"), "the matched VF: no grace");
	CHECK(devices_find(t, "mlx5_9") &&
		      device_state(devices_find(t, "mlx5_9")) ==
			      DEVICE_STATE_AWAY &&
		      device_away_deadline(devices_find(t, "mlx5_9")) ==
			      now + 7000,
	      "the PF by its rule: 7 s");
	devices_free(t);
}

/* A VF's node GUID set after it registered: the same life, changed. */
static void test_guid_set_later(void)
{
	struct devices *t = table();
	struct device_record d[1];

	d[0] = dev("mlx5_1", "0000:03:00.1", 91, "ACTIVE");
	strcpy(d[0].node_guid, "0000:0000:0000:0000");
	scan(t, d, 1);
	d[0] = dev("mlx5_1", "0000:03:00.1", 91, "ACTIVE");
	strcpy(d[0].node_guid, "0002:c903:00a1:0001");
	scan(t, d, 1);
	EXPECT("changed mlx5_1/1");
	devices_free(t);
}

static void test_ready(void)
{
	struct devices *t = table();
	struct device_record d[1];

	d[0] = dev("mlx5_0", "0000:03:00.0", 41, "INIT");
	scan(t, d, 1);
	EXPECT("added mlx5_0/1");
	CHECK(!device_ready(devices_find(t, "mlx5_0")), "INIT: not ready");
	d[0] = dev("mlx5_0", "0000:03:00.0", 41, "ACTIVE");
	scan(t, d, 1);
	EXPECT("ready mlx5_0/1");
	d[0] = dev("mlx5_0", "0000:03:00.0", 41, "ACTIVE");
	d[0].ports[0].gid0_zero = 1;
	scan(t, d, 1);
	EXPECT("unready mlx5_0/1");
	d[0] = dev("mlx5_0", "0000:03:00.0", 41, "ACTIVE");
	strcpy(d[0].ports[0].netdev, "eth0");
	strcpy(d[0].ports[0].link_layer, "Ethernet");
	scan(t, d, 1);
	EXPECT("ready mlx5_0/1");
	events[0] = '\0';
	devices_set_netdev_state(t, "eth0", false);
	EXPECT("unready mlx5_0/1");
	devices_free(t);
}

static void test_aliases(void)
{
	struct devices *t = table();
	struct device_record d[3];
	struct alias_rule rules[2];
	char why[128];

	CHECK(alias_rule_parse("ib%d", "link_layer:InfiniBand", &rules[0], why,
			       sizeof(why)) == 0,
	      "%s", why);
	CHECK(alias_rule_parse("storage", "pci:0000:05:00.0", &rules[1], why,
			       sizeof(why)) == 0,
	      "%s", why);
	CHECK(alias_rule_parse("bad/name", "vf", &rules[0], why, sizeof(why)) <
			      0 &&
		      alias_rule_parse("x", "colour:blue", &rules[0], why,
				       sizeof(why)) < 0 &&
		      alias_rule_parse("x", "", &rules[0], why, sizeof(why)) <
			      0,
	      "bad rules refused");
	alias_rule_parse("ib%d", "link_layer:InfiniBand", &rules[0], why,
			 sizeof(why));
	devices_set_aliases(t, rules, 2);
	d[0] = dev("mlx5_1", "0000:04:00.0", 51, "ACTIVE");
	d[1] = dev("mlx5_0", "0000:05:00.0", 52, "ACTIVE");
	scan(t, d, 2);
	CHECK(device_alias_count(devices_find(t, "mlx5_1")) == 1 &&
		      !strcmp(device_alias(devices_find(t, "mlx5_1"), 0),
			      "ib0"),
	      "PCI order, not name order");
	CHECK(device_alias_count(devices_find(t, "mlx5_0")) == 2 &&
		      !strcmp(device_alias(devices_find(t, "mlx5_0"), 0),
			      "ib1") &&
		      !strcmp(device_alias(devices_find(t, "mlx5_0"), 1),
			      "storage"),
	      "numbered and named");
	/* A device earlier in PCI order shifts the numbers: CHANGED. */
	d[0] = dev("mlx5_1", "0000:04:00.0", 51, "ACTIVE");
	d[1] = dev("mlx5_0", "0000:05:00.0", 52, "ACTIVE");
	d[2] = dev("mlx5_9", "0000:01:00.0", 53, "ACTIVE");
	scan(t, d, 3);
	EXPECT("changed mlx5_1/1, changed mlx5_0/1, added mlx5_9/1");
	CHECK(!strcmp(device_alias(devices_find(t, "mlx5_9"), 0), "ib0"),
	      "the new one first");
	devices_free(t);
}

static void test_sriov(void)
{
	struct devices *t = table();
	struct device_record d[3];
	unsigned int expected, ready;
	uint64_t next;

	devices_set_sriov_settle(t, 1000);
	d[0] = dev("mlx5_0", "0000:03:00.0", 61, "ACTIVE");
	d[0].sriov_numvfs = 0;
	scan(t, d, 1);
	d[0] = dev("mlx5_0", "0000:03:00.0", 61, "ACTIVE");
	d[0].sriov_numvfs = 2;
	scan(t, d, 1);
	EXPECT("changed mlx5_0/1, expecting mlx5_0/1");
	device_sriov(devices_find(t, "mlx5_0"), &expected, &ready);
	CHECK(expected == 2 && ready == 0, "expecting 2: %u %u", expected,
	      ready);
	for (int n = 1; n <= 2; n++) {
		d[0] = dev("mlx5_0", "0000:03:00.0", 61, "ACTIVE");
		d[0].sriov_numvfs = 2;
		for (int i = 1; i <= n; i++) {
			char name[16], pci[16];

			snprintf(name, sizeof(name), "mlx5_%d", i);
			snprintf(pci, sizeof(pci), "0000:03:00.%d", i);
			d[i] = dev(name, pci, 61 + i, "ACTIVE");
			strcpy(d[i].sriov_pf, "0000:03:00.0");
		}
		scan(t, d, n + 1);
	}
	EXPECT("added mlx5_2/1, settled mlx5_0/1");
	device_sriov(devices_find(t, "mlx5_0"), &expected, &ready);
	CHECK(expected == 2 && ready == 2, "settled: %u %u", expected, ready);

	/* More VFs announced; only one comes: settled at the deadline. */
	d[0] = dev("mlx5_0", "0000:03:00.0", 61, "ACTIVE");
	d[0].sriov_numvfs = 4;
	scan(t, d, 1);
	now += 1000;
	events[0] = '\0';
	devices_expire(t, &next);
	CHECK(strstr(events, "settled mlx5_0/1") != NULL, "%s", events);
	devices_free(t);
}

int main(void)
{
	test_returned();
	test_seen_gone_is_a_new_life();
	test_restart();
	test_lives_bounded();
	test_away();
	test_grace_rules();
	test_guid_set_later();
	test_ready();
	test_aliases();
	test_sriov();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
