/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the device table.  Each scenario is a script of steps (a
 * scan, a one-device rescan, a hold, a release, a netdev change ...),
 * each with the return value, the exact events the listener must hear and
 * the listing a client would see afterwards.  The listener also checks
 * that every event is exactly one generation after the one before.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "check.h"

enum op {
	OP_SCAN,	  /* arg: device specs */
	OP_ONE,		  /* arg: name, arg2: spec or NULL (gone) */
	OP_HOLD,	  /* arg: name, arg2: owner "o1" */
	OP_RELEASE,	  /* arg: name, arg2: owner */
	OP_RELEASE_OWNER, /* arg2: owner */
	OP_REF,		  /* arg: name (devices_find) */
	OP_UNREF,	  /* arg: name (the referenced one) */
	OP_NETDEV,	  /* arg: ifname, arg2: "up", "down" or "gone" */
	OP_PORT_UP,	  /* arg: name, want_r: its port's netdev_up */
	OP_UVERBS_GONE,	  /* arg: uverbs name */
	OP_GRACE,	  /* arg: grace period ms (devices_set_grace) */
	OP_EXPIRE,	  /* arg: ms the clock moves on, then expire */
};

struct step {
	enum op op;
	const char *arg;
	const char *arg2;
	int want_r;
	const char *want_events; /* "ADDED a, RENAMED c<a" */
	/* "name:P|R|G|A:holders ...", G for present and removing, A for
	 * away (and U for present but not ready, in the lives scenario);
	 * NULL: unchecked */
	const char *want_list;
};

static struct {
	struct devices *table;
	char events[1024];
	uint64_t last_generation;
	struct device *ref;
	uint64_t now_ms;  /* the table's clock (OP_GRACE) */
	bool ready_shown; /* listings tell U from P */
} ctx;

static uint64_t fake_now(void)
{
	return ctx.now_ms;
}

static const char *const event_names[] = {
	[DEVICES_EVENT_ADDED] = "ADDED",
	[DEVICES_EVENT_REMOVED] = "REMOVED",
	[DEVICES_EVENT_CHANGED] = "CHANGED",
	[DEVICES_EVENT_RENAMED] = "RENAMED",
	[DEVICES_EVENT_RELEASED] = "RELEASED",
	[DEVICES_EVENT_RETURNED] = "RETURNED",
	[DEVICES_EVENT_READY] = "READY",
	[DEVICES_EVENT_UNREADY] = "UNREADY",
	[DEVICES_EVENT_REMOVING] = "REMOVING",
};

static void listener(void *userdata, enum devices_event event,
		     const struct device *dev, const char *old_name)
{
	size_t len = strlen(ctx.events);
	uint64_t gen = devices_generation(ctx.table);

	CHECK(gen == ctx.last_generation + 1, "generation %llu after %llu",
	      (unsigned long long)gen, (unsigned long long)ctx.last_generation);
	CHECK(device_generation(dev) == gen, "device generation %llu, %llu",
	      (unsigned long long)device_generation(dev),
	      (unsigned long long)gen);
	CHECK((event == DEVICES_EVENT_RENAMED) == (old_name != NULL),
	      "old_name with %s", event_names[event]);
	ctx.last_generation = gen;
	snprintf(ctx.events + len, sizeof(ctx.events) - len, "%s%s %s%s%s",
		 len ? ", " : "", event_names[event], device_info(dev)->name,
		 old_name ? "<" : "", old_name ? old_name : "");
}

/* "name|id|state|netdev|uverbs": one device with one port. */
static void parse_spec(const char *spec, struct device_record *d)
{
	char buf[256], *fields[5] = {NULL}, *p = buf;

	memset(d, 0, sizeof(*d));
	snprintf(buf, sizeof(buf), "%s", spec);
	for (int i = 0; i < 5; i++) {
		char *end = strchr(p, '|');

		fields[i] = p;
		if (!end)
			break;
		*end = '\0';
		p = end + 1;
	}
	snprintf(d->name, sizeof(d->name), "%s", fields[0]);
	snprintf(d->id, sizeof(d->id), "%s", fields[1] ? fields[1] : "");
	strcpy(d->node_guid, "0002:c903:0000:0001");
	strcpy(d->node_type, "CA");
	d->numa_node = -1;
	d->nports = 1;
	d->ports = calloc(1, sizeof(*d->ports));
	d->ports[0].port = 1;
	d->ports[0].netdev_up = -1;
	snprintf(d->ports[0].state, sizeof(d->ports[0].state), "%s",
		 fields[2] && *fields[2] ? fields[2] : "ACTIVE");
	if (fields[3])
		snprintf(d->ports[0].netdev, sizeof(d->ports[0].netdev), "%s",
			 fields[3]);
	if (fields[4])
		snprintf(d->uverbs, sizeof(d->uverbs), "%s", fields[4]);
}

static int do_scan(const char *specs)
{
	struct device_record scan[16];
	char buf[512], *save, *tok;
	size_t n = 0;
	int r;

	snprintf(buf, sizeof(buf), "%s", specs);
	for (tok = strtok_r(buf, " ", &save); tok && n < 16;
	     tok = strtok_r(NULL, " ", &save))
		parse_spec(tok, &scan[n++]);
	r = devices_apply_scan(ctx.table, scan, n);
	for (size_t i = 0; i < n; i++)
		CHECK(!scan[i].ports, "scan entry %zu kept its ports", i);
	return r;
}

static int do_one(const char *name, const char *spec)
{
	struct device_record d;
	int r;

	if (!spec)
		return devices_apply_one(ctx.table, name, NULL);
	parse_spec(spec, &d);
	r = devices_apply_one(ctx.table, name, &d);
	CHECK(!d.ports, "apply_one kept the ports");
	return r;
}

static const int owners[3];

static const void *owner(const char *name)
{
	return &owners[name[1] - '0'];
}

static int do_hold(const char *name, const char *who)
{
	struct holder h = {
		.owner = owner(who), .pid = 100 + who[1] - '0', .uid = 1000};

	snprintf(h.comm, sizeof(h.comm), "proc-%s", who);
	return devices_hold(ctx.table, name, &h);
}

static int do_port_up(const char *name)
{
	const struct device *d = devices_find(ctx.table, name);

	if (!d || !device_info(d)->nports)
		return -99;
	return device_info(d)->ports[0].netdev_up;
}

static int run_step(const struct step *s)
{
	switch (s->op) {
	case OP_SCAN:
		return do_scan(s->arg);
	case OP_ONE:
		return do_one(s->arg, s->arg2);
	case OP_HOLD:
		return do_hold(s->arg, s->arg2);
	case OP_RELEASE:
		return devices_release(ctx.table, s->arg, owner(s->arg2));
	case OP_RELEASE_OWNER:
		devices_release_owner(ctx.table, owner(s->arg2));
		return 0;
	case OP_REF:
		ctx.ref = device_ref(
			(struct device *)devices_find(ctx.table, s->arg));
		return 0;
	case OP_UNREF:
		device_unref(ctx.table, ctx.ref);
		ctx.ref = NULL;
		return 0;
	case OP_NETDEV:
		if (!strcmp(s->arg2, "gone"))
			return devices_netdev_gone(ctx.table, s->arg);
		return devices_set_netdev_state(ctx.table, s->arg,
						!strcmp(s->arg2, "up"));
	case OP_PORT_UP:
		return do_port_up(s->arg);
	case OP_UVERBS_GONE:
		return devices_uverbs_gone(ctx.table, s->arg);
	case OP_GRACE:
		devices_set_grace(ctx.table, atoi(s->arg), atoi(s->arg),
				  fake_now);
		return 0;
	case OP_EXPIRE:
		ctx.now_ms += atoi(s->arg);
		return devices_expire(ctx.table, NULL);
	}
	return -99;
}

static char state_char(const struct device *d)
{
	if (device_state(d) == DEVICE_STATE_AWAY)
		return 'A';
	if (device_state(d) != DEVICE_STATE_PRESENT)
		return 'R';
	if (device_removing(d))
		return 'G';
	return ctx.ready_shown && !device_ready(d) ? 'U' : 'P';
}

static void listing(char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (const struct device *d = devices_first(ctx.table); d;
	     d = devices_next(ctx.table, d))
		len += snprintf(buf + len, size - len, "%s%s:%c:%zu",
				len ? " " : "", device_info(d)->name,
				state_char(d), device_holder_count(d));
}

static void run_scenario(const char *name, const struct step *steps, size_t n)
{
	char list[1024];

	memset(&ctx, 0, sizeof(ctx));
	ctx.ready_shown = !strcmp(name, "lives");
	ctx.table = devices_new(100);
	ctx.last_generation = 100;
	devices_set_listener(ctx.table, listener, NULL);
	for (size_t i = 0; i < n; i++) {
		const struct step *s = &steps[i];
		int r;

		ctx.events[0] = '\0';
		r = run_step(s);
		CHECK(r == s->want_r, "%s step %zu: returned %d, want %d", name,
		      i, r, s->want_r);
		CHECK(!strcmp(ctx.events, s->want_events),
		      "%s step %zu: events \"%s\", want \"%s\"", name, i,
		      ctx.events, s->want_events);
		if (!s->want_list)
			continue;
		listing(list, sizeof(list));
		CHECK(!strcmp(list, s->want_list),
		      "%s step %zu: listing \"%s\", want \"%s\"", name, i, list,
		      s->want_list);
	}
	devices_free(ctx.table);
}

static const struct step basic[] = {
	{OP_SCAN, "b|pci:2 a|pci:1", NULL, 2, "ADDED b, ADDED a",
	 "a:P:0 b:P:0"},
	{OP_SCAN, "a|pci:1 b|pci:2", NULL, 0, "", "a:P:0 b:P:0"},
	{OP_SCAN, "a|pci:1|DOWN b|pci:2", NULL, 1, "CHANGED a", NULL},
	{OP_SCAN, "c|pci:1|DOWN b|pci:2", NULL, 1, "RENAMED c<a",
	 "b:P:0 c:P:0"},
	{OP_SCAN, "b|pci:2", NULL, 1, "REMOVED c", "b:P:0"},
	{OP_HOLD, "b", "o1", 0, "CHANGED b", "b:P:1"},
	{OP_HOLD, "b", "o1", -EALREADY, "", "b:P:1"},
	{OP_HOLD, "zz", "o1", -ENODEV, "", NULL},
	{OP_SCAN, "", NULL, 1, "REMOVED b", "b:R:1"},
	{OP_HOLD, "b", "o2", -ENODEV, "", "b:R:1"},
	/* The same id plugged again: its next life, a new object beside the
	 * held one. */
	{OP_SCAN, "b|pci:2", NULL, 1, "RETURNED b", "b:R:1 b:P:0"},
	{OP_HOLD, "b", "o1", 0, "CHANGED b", "b:R:1 b:P:1"},
	{OP_RELEASE, "b", "o1", 0, "RELEASED b", "b:P:1"},
	{OP_RELEASE, "b", "o1", 0, "CHANGED b", "b:P:0"},
	{OP_RELEASE, "b", "o1", -ENOENT, "", "b:P:0"},
	{OP_RELEASE, "nope", "o1", -ENODEV, "", NULL},
	/* A name reused by another id within one scan: removal first. */
	{OP_SCAN, "b|pci:7", NULL, 2, "REMOVED b, ADDED b", "b:P:0"},
};

static const struct step owners_and_refs[] = {
	{OP_SCAN, "a|pci:1 b|pci:2 c|pci:3", NULL, 3,
	 "ADDED a, ADDED b, ADDED c", NULL},
	{OP_HOLD, "a", "o1", 0, "CHANGED a", NULL},
	{OP_HOLD, "b", "o1", 0, "CHANGED b", NULL},
	{OP_HOLD, "b", "o2", 0, "CHANGED b", NULL},
	{OP_HOLD, "c", "o2", 0, "CHANGED c", "a:P:1 b:P:2 c:P:1"},
	{OP_SCAN, "c|pci:3", NULL, 2, "REMOVED a, REMOVED b",
	 "a:R:1 b:R:2 c:P:1"},
	{OP_RELEASE_OWNER, NULL, "o1", 0, "RELEASED a, CHANGED b",
	 "b:R:1 c:P:1"},
	{OP_REF, "c", NULL, 0, "", NULL},
	{OP_SCAN, "", NULL, 1, "REMOVED c", "b:R:1 c:R:1"},
	{OP_RELEASE_OWNER, NULL, "o2", 0, "RELEASED b, CHANGED c", "c:R:0"},
	{OP_UNREF, NULL, NULL, 0, "RELEASED c", ""},
	/* Internal refs of a present device change nothing visible. */
	{OP_SCAN, "d|pci:4", NULL, 1, "ADDED d", NULL},
	{OP_REF, "d", NULL, 0, "", NULL},
	{OP_UNREF, NULL, NULL, 0, "", "d:P:0"},
	/* An unheld device with only an internal ref stays listed. */
	{OP_REF, "d", NULL, 0, "", NULL},
	{OP_SCAN, "", NULL, 1, "REMOVED d", "d:R:0"},
	{OP_UNREF, NULL, NULL, 0, "RELEASED d", ""},
	{OP_RELEASE_OWNER, NULL, "o1", 0, "", ""},
};

static const struct step one_device[] = {
	{OP_ONE, "a", "a|pci:1", 1, "ADDED a", "a:P:0"},
	{OP_ONE, "a", "a|pci:1", 0, "", "a:P:0"},
	{OP_ONE, "a", "a|pci:1|INIT", 1, "CHANGED a", NULL},
	{OP_ONE, "x", "x|pci:1|INIT", 1, "RENAMED x<a", "x:P:0"},
	{OP_ONE, "x", NULL, 1, "REMOVED x", ""},
	{OP_ONE, "x", NULL, 0, "", ""},
	{OP_ONE, "a", "a|pci:1", 1, "RETURNED a", NULL},
	/* The name now belongs to another id: the old device is gone. */
	{OP_ONE, "a", "a|pci:9", 2, "REMOVED a, ADDED a", "a:P:0"},
	{OP_HOLD, "a", "o1", 0, "CHANGED a", NULL},
	{OP_ONE, "a", "a|pci:8", 2, "REMOVED a, ADDED a", "a:P:0 a:R:1"},
	{OP_ONE, "a", "a||", -EINVAL, "", NULL},
};

static const struct step netdevs[] = {
	{OP_SCAN, "r|pci:1||eth0 s|pci:2||eth1", NULL, 2, "ADDED r, ADDED s",
	 NULL},
	{OP_PORT_UP, "r", NULL, -1, "", NULL},
	{OP_NETDEV, "eth0", "up", 1, "CHANGED r", NULL},
	{OP_PORT_UP, "r", NULL, 1, "", NULL},
	{OP_NETDEV, "eth0", "up", 0, "", NULL},
	{OP_NETDEV, "eth9", "down", 0, "", NULL},
	/* A rescan knows no link state; the table's must survive it. */
	{OP_SCAN, "r|pci:1||eth0 s|pci:2||eth1", NULL, 0, "", NULL},
	{OP_PORT_UP, "r", NULL, 1, "", NULL},
	{OP_NETDEV, "eth0", "down", 1, "CHANGED r", NULL},
	{OP_PORT_UP, "r", NULL, 0, "", NULL},
	{OP_SCAN, "r|pci:1||eth0 s|pci:2||eth1 t|pci:3||eth9", NULL, 1,
	 "ADDED t", NULL},
	{OP_PORT_UP, "t", NULL, 0, "", NULL},
	{OP_PORT_UP, "s", NULL, -1, "", NULL},
	{OP_SCAN, "r|pci:1||eth1 s|pci:2||eth1 t|pci:3||eth9", NULL, 1,
	 "CHANGED r", NULL},
	{OP_NETDEV, "eth1", "up", 2, "CHANGED r, CHANGED s", NULL},
	/* Deleted: its ports go down, and a later scan knows nothing of it. */
	{OP_NETDEV, "eth1", "gone", 2, "CHANGED r, CHANGED s", NULL},
	{OP_PORT_UP, "r", NULL, 0, "", NULL},
	{OP_SCAN, "r|pci:1||eth0 s|pci:2||eth1 t|pci:3||eth9", NULL, 2,
	 "CHANGED r, CHANGED s", NULL},
	{OP_PORT_UP, "s", NULL, -1, "", NULL},
	{OP_NETDEV, "", "up", -EINVAL, "", NULL},
	{OP_NETDEV, "a-name-far-too-long", "up", -EINVAL, "", NULL},
};

/* The kernel unregistering a device: its uverbs node goes first, and
 * then, for drivers without disassociate_ucontext, it waits for every
 * open context (devices.h "Removing"). */
static const struct step removing[] = {
	{OP_SCAN, "a|pci:1|||uverbs0 b|pci:2|||uverbs1", NULL, 2,
	 "ADDED a, ADDED b", "a:P:0 b:P:0"},
	{OP_HOLD, "a", "o1", 0, "CHANGED a", NULL},
	{OP_UVERBS_GONE, "uverbs9", NULL, 0, "", "a:P:1 b:P:0"},
	{OP_UVERBS_GONE, "uverbs0", NULL, 1, "REMOVING a", "a:G:1 b:P:0"},
	{OP_UVERBS_GONE, "uverbs0", NULL, 0, "", NULL},
	/* Torn down bit by bit: what scans read of it changes nothing, and
	 * neither does its net device. */
	{OP_SCAN, "a|pci:1|DOWN|eth0 b|pci:2|||uverbs1", NULL, 0, "",
	 "a:G:1 b:P:0"},
	{OP_ONE, "a", "a|pci:1|DOWN", 0, "", NULL},
	{OP_NETDEV, "eth0", "down", 0, "", NULL},
	{OP_HOLD, "a", "o2", 0, "CHANGED a", "a:G:2 b:P:0"},
	{OP_SCAN, "b|pci:2|||uverbs1", NULL, 1, "REMOVED a", "a:R:2 b:P:0"},
	{OP_RELEASE_OWNER, NULL, "o1", 0, "CHANGED a", NULL},
	{OP_RELEASE_OWNER, NULL, "o2", 0, "RELEASED a", "b:P:0"},
	/* Seen without its uverbs by a scan alone (no uevent heard). */
	{OP_ONE, "b", "b|pci:2", 1, "REMOVING b", "b:G:0"},
	/* Its uverbs back (ib_uverbs loaded again): usable again. */
	{OP_ONE, "b", "b|pci:2|||uverbs1", 1, "READY b", "b:P:0"},
	/* Back again under another uverbs number. */
	{OP_UVERBS_GONE, "uverbs1", NULL, 1, "REMOVING b", "b:G:0"},
	{OP_ONE, "b", "b|pci:2|||uverbs0", 1, "READY b", "b:P:0"},
};

/* Every row of the table at the top of daemon/model/devices.c, in its order
 * (P is READY, U UNREADY, G REMOVING, A AWAY, R REMOVED; a device that
 * is not listed any more went through GONE). */
static const struct step lives[] = {
	/* - -> READY, ADDED; - -> UNREADY, ADDED (no uverbs node) */
	{OP_SCAN, "a|pci:1|||uverbs0 b|pci:2", NULL, 2, "ADDED a, ADDED b",
	 "a:P:0 b:U:0"},
	/* READY -> UNREADY, UNREADY (its port went DOWN) */
	{OP_ONE, "a", "a|pci:1|DOWN||uverbs0", 1, "UNREADY a", "a:U:0 b:U:0"},
	/* UNREADY -> READY, READY */
	{OP_ONE, "a", "a|pci:1|||uverbs0", 1, "READY a", "a:P:0 b:U:0"},
	/* READY -> READY, CHANGED; and RENAMED */
	{OP_ONE, "a", "a|pci:1||eth0|uverbs0", 1, "CHANGED a", NULL},
	{OP_ONE, "c", "c|pci:1||eth0|uverbs0", 1, "RENAMED c<a", "b:U:0 c:P:0"},
	/* READY -> REMOVING, REMOVING; REMOVING -> READY, READY */
	{OP_UVERBS_GONE, "uverbs0", NULL, 1, "REMOVING c", "b:U:0 c:G:0"},
	{OP_ONE, "c", "c|pci:1||eth0|uverbs0", 1, "READY c", "b:U:0 c:P:0"},
	/* READY -> AWAY, REMOVED (a grace period); AWAY -> READY,
	 * RETURNED */
	{OP_GRACE, "1000", NULL, 0, "", NULL},
	{OP_HOLD, "c", "o1", 0, "CHANGED c", NULL},
	{OP_ONE, "c", NULL, 1, "REMOVED c", "b:U:0 c:A:1"},
	{OP_ONE, "c", "c|pci:1||eth0|uverbs3", 1, "RETURNED c", "b:U:0 c:P:1"},
	/* AWAY -> REMOVED, REMOVED (its grace over, held) */
	{OP_ONE, "c", NULL, 1, "REMOVED c", "b:U:0 c:A:1"},
	{OP_EXPIRE, "1000", NULL, 1, "REMOVED c", "b:U:0 c:R:1"},
	/* REMOVED -> GONE, RELEASED (its last hold) */
	{OP_RELEASE, "c", "o1", 0, "RELEASED c", "b:U:0"},
	/* UNREADY -> REMOVED, REMOVED (gone, held, no grace); UNREADY ->
	 * GONE, REMOVED (gone, not held) */
	{OP_GRACE, "0", NULL, 0, "", NULL},
	{OP_SCAN, "b|pci:2 d|pci:4", NULL, 1, "ADDED d", "b:U:0 d:U:0"},
	{OP_HOLD, "b", "o1", 0, "CHANGED b", NULL},
	{OP_SCAN, "", NULL, 2, "REMOVED b, REMOVED d", "b:R:1"},
	{OP_RELEASE_OWNER, NULL, "o1", 0, "RELEASED b", ""},
};

#define SCENARIO(s) run_scenario(#s, s, sizeof(s) / sizeof(s[0]))

/* Many devices: hash growth, iteration order, lookups, removal. */
static void test_scale(void)
{
	enum { N = 600 };
	struct device_record *scan = calloc(N, sizeof(*scan));
	struct devices *t = devices_new(0);
	const struct device *d, *prev = NULL;
	size_t count = 0;
	char name[32];
	int r;

	for (size_t i = 0; i < N; i++) {
		/* A scrambled order, so the table has to sort. */
		size_t k = (i * 7919) % N;

		snprintf(scan[i].name, sizeof(scan[i].name), "dev%04zu", k);
		snprintf(scan[i].id, sizeof(scan[i].id), "pci:%zu", k);
	}
	r = devices_apply_scan(t, scan, N);
	CHECK(r == N && devices_count(t) == N, "scale add: %d", r);
	for (d = devices_first(t); d; prev = d, d = devices_next(t, d)) {
		count++;
		CHECK(!prev || strcmp(device_info(prev)->name,
				      device_info(d)->name) < 0,
		      "order at %zu", count);
	}
	CHECK(count == N, "iterated %zu", count);
	for (size_t k = 0; k < N; k++) {
		snprintf(name, sizeof(name), "dev%04zu", k);
		d = devices_find(t, name);
		CHECK(d && !strcmp(device_info(d)->name, name), "find %s",
		      name);
	}
	r = devices_apply_scan(t, scan, N / 2);
	CHECK(r == N - N / 2 && devices_count(t) == N / 2, "scale remove %d",
	      r);
	CHECK(devices_generation(t) == N + N - N / 2, "generation %llu",
	      (unsigned long long)devices_generation(t));
	free(scan);
	devices_free(t);
}

/* At 2^64 - 1 the generation stays; it never wraps to 0. */
static void test_generation_ceiling(void)
{
	struct device_record scan[2] = {0};
	struct devices *t = devices_new(UINT64_MAX - 1);

	for (int i = 0; i < 2; i++) {
		snprintf(scan[i].name, sizeof(scan[i].name), "dev%d", i);
		snprintf(scan[i].id, sizeof(scan[i].id), "pci:%d", i);
	}
	CHECK(devices_apply_scan(t, scan, 2) == 2, "two added");
	CHECK(devices_generation(t) == UINT64_MAX, "saturated: %llu",
	      (unsigned long long)devices_generation(t));
	CHECK(devices_apply_scan(t, scan, 1) == 1, "one removed");
	CHECK(devices_generation(t) == UINT64_MAX, "still saturated");
	devices_free(t);
}

int main(void)
{
	SCENARIO(basic);
	SCENARIO(owners_and_refs);
	SCENARIO(one_device);
	SCENARIO(netdevs);
	SCENARIO(removing);
	SCENARIO(lives);
	test_scale();
	test_generation_ceiling();
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("test-devices: all passed\n");
	return failures ? 1 : 0;
}
