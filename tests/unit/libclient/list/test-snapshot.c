/* SPDX-License-Identifier: MIT */
/*
 * Unit test of libclient/list/snapshot.c: snapshots built from the daemon's
 * Device messages, every getter, out-of-range and NULL arguments, and the
 * snapshot that follows each kind of event (sharing unchanged devices);
 * the lifecycle (PROTOCOL.md 8a): entries keyed by identity and
 * incarnation, so a held ended life and the present one of the same PCI
 * function are two entries, every new event
 * type, the AWAY state as each client sees it, the ready set, resolving
 * names and aliases, and the rule of 1.0 against an older daemon.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "snapshot.h"
#include "check.h"

struct fake_device {
	Rdmad__Device msg;
	Rdmad__Port port;
	Rdmad__Port *ports[1];
	Rdmad__Holder holder;
	Rdmad__Holder *holders[1];
};

/* A device message: @holders 0 or 1, one ACTIVE Ethernet port. */
static void make_device(struct fake_device *f, const char *name, const char *id,
			int holders, bool removed)
{
	f->msg = (Rdmad__Device)RDMAD__DEVICE__INIT;
	f->port = (Rdmad__Port)RDMAD__PORT__INIT;
	f->holder = (Rdmad__Holder)RDMAD__HOLDER__INIT;
	f->msg.name = (char *)name;
	f->msg.id = (char *)id;
	f->msg.uverbs = "uverbs0";
	f->msg.node_guid = "0002:c903:0000:1234";
	f->msg.node_type = "CA";
	f->msg.fw_ver = "16.35.1012";
	f->msg.pci_address = "0000:03:00.0";
	f->msg.driver = "mlx5_core";
	f->msg.numa_node = 1;
	f->msg.generation = 7;
	f->msg.state = removed ? RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED
			       : RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
	f->port.port = 1;
	f->port.state = "ACTIVE";
	f->port.phys_state = "LinkUp";
	f->port.link_layer = "Ethernet";
	f->port.rate = "100 Gb/sec (4X EDR)";
	f->port.netdev = "eth0";
	f->port.netdev_up = 1;
	f->port.lid = 0;
	f->ports[0] = &f->port;
	f->msg.n_ports = 1;
	f->msg.ports = f->ports;
	f->holder.pid = 4242;
	f->holder.uid = 1000;
	f->holder.comm = "mpirun";
	f->holders[0] = &f->holder;
	f->msg.n_holders = (size_t)holders;
	f->msg.holders = f->holders;
}

static void test_build_and_getters(void)
{
	struct fake_device a, b;
	Rdmad__Device *msgs[2] = {&a.msg, &b.msg};
	struct rdmad_snapshot *snap;
	const struct rdmad_device *dev;
	const struct rdmad_port *port;
	pid_t pid = 0;
	uid_t uid = 0;

	make_device(&a, "mlx5_0", "pci-0000:03:00.0", 1, false);
	make_device(&b, "mlx5_1", "pci-0000:03:00.1", 0, true);
	snap = snapshot_new_from_wire(msgs, 2, 99, 0);
	CHECK(snap != NULL);
	CHECK(rdmad_snapshot_get_generation(snap) == 99);
	CHECK(rdmad_snapshot_get_count(snap) == 2);
	dev = rdmad_snapshot_get_device(snap, 0);
	CHECK(strcmp(rdmad_device_get_name(dev), "mlx5_0") == 0);
	CHECK(strcmp(rdmad_device_get_id(dev), "pci-0000:03:00.0") == 0);
	CHECK(strcmp(rdmad_device_get_uverbs(dev), "uverbs0") == 0);
	CHECK(strcmp(rdmad_device_get_node_guid(dev), "0002:c903:0000:1234") ==
	      0);
	CHECK(strcmp(rdmad_device_get_sys_image_guid(dev), "") == 0);
	CHECK(strcmp(rdmad_device_get_node_type(dev), "CA") == 0);
	CHECK(strcmp(rdmad_device_get_fw_ver(dev), "16.35.1012") == 0);
	CHECK(strcmp(rdmad_device_get_pci_address(dev), "0000:03:00.0") == 0);
	CHECK(strcmp(rdmad_device_get_driver(dev), "mlx5_core") == 0);
	CHECK(rdmad_device_get_numa_node(dev) == 1);
	CHECK(rdmad_device_get_state(dev) == RDMAD_DEVICE_PRESENT);
	CHECK(rdmad_device_get_generation(dev) == 7);
	CHECK(rdmad_device_get_port_count(dev) == 1);
	port = rdmad_device_get_port(dev, 0);
	CHECK(rdmad_port_get_number(port) == 1);
	CHECK(strcmp(rdmad_port_get_state(port), "ACTIVE") == 0);
	CHECK(strcmp(rdmad_port_get_phys_state(port), "LinkUp") == 0);
	CHECK(strcmp(rdmad_port_get_link_layer(port), "Ethernet") == 0);
	CHECK(strcmp(rdmad_port_get_rate(port), "100 Gb/sec (4X EDR)") == 0);
	CHECK(strcmp(rdmad_port_get_netdev(port), "eth0") == 0);
	CHECK(rdmad_port_get_netdev_up(port) == 1);
	CHECK(rdmad_port_get_netdev_state(port) == 1);
	CHECK(rdmad_device_get_holder_count(dev) == 1);
	CHECK(strcmp(rdmad_device_get_holder(dev, 0, &pid, &uid), "mpirun") ==
	      0);
	CHECK(pid == 4242 && uid == 1000);
	CHECK(rdmad_device_get_holder(dev, 0, NULL, NULL) != NULL);
	dev = rdmad_snapshot_find_device(snap, "mlx5_1");
	CHECK(dev == rdmad_snapshot_get_device(snap, 1));
	CHECK(rdmad_device_get_state(dev) == RDMAD_DEVICE_REMOVED);
	CHECK(rdmad_device_get_holder_count(dev) == 0);
	/* The strings are the snapshot's own, not the message's. */
	CHECK(rdmad_device_get_name(dev) != b.msg.name);
	rdmad_snapshot_unref(snap);
}

/* A port's net device up, down, not known (netdev_unknown), and down as
 * a daemon before netdev_unknown says of one it cannot see. */
static void test_netdev_state(void)
{
	static const struct {
		bool up, unknown;
		int want_up, want_state;
	} rows[] = {
		{true, false, 1, 1},
		{false, false, 0, 0},
		{false, true, 0, -1},
	};
	struct fake_device a;
	Rdmad__Device *msgs[1] = {&a.msg};
	struct rdmad_snapshot *snap;
	const struct rdmad_port *port;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		make_device(&a, "mlx5_0", "pci-0000:03:00.0", 0, false);
		a.port.netdev_up = rows[i].up;
		a.port.netdev_unknown = rows[i].unknown;
		snap = snapshot_new_from_wire(msgs, 1, 1, 0);
		CHECK(snap != NULL);
		if (!snap)
			continue;
		port = rdmad_device_get_port(rdmad_snapshot_get_device(snap, 0),
					     0);
		CHECK(rdmad_port_get_netdev_up(port) == rows[i].want_up);
		CHECK(rdmad_port_get_netdev_state(port) == rows[i].want_state);
		rdmad_snapshot_unref(snap);
	}
	CHECK(rdmad_port_get_netdev_state(NULL) == -1);
	CHECK(rdmad_port_get_netdev_up(NULL) == 0);
}

static void test_out_of_range(void)
{
	struct fake_device a;
	Rdmad__Device *msgs[1] = {&a.msg};
	struct rdmad_snapshot *snap;
	const struct rdmad_device *dev;

	make_device(&a, "mlx5_0", "x", 0, false);
	snap = snapshot_new_from_wire(msgs, 1, 1, 0);
	dev = rdmad_snapshot_get_device(snap, 0);
	CHECK(rdmad_snapshot_get_device(snap, 1) == NULL);
	CHECK(rdmad_snapshot_get_device(snap, (size_t)-1) == NULL);
	CHECK(rdmad_snapshot_find_device(snap, "mlx5_9") == NULL);
	CHECK(rdmad_snapshot_find_device(snap, NULL) == NULL);
	CHECK(rdmad_device_get_port(dev, 1) == NULL);
	CHECK(rdmad_device_get_holder(dev, 0, NULL, NULL) == NULL);
	/* NULL handles are not a crash. */
	CHECK(rdmad_snapshot_get_count(NULL) == 0);
	CHECK(rdmad_snapshot_get_device(NULL, 0) == NULL);
	CHECK(rdmad_device_get_name(NULL) == NULL);
	CHECK(rdmad_device_get_numa_node(NULL) == -1);
	CHECK(rdmad_port_get_state(NULL) == NULL);
	CHECK(rdmad_snapshot_unref(NULL) == NULL);
	/* An empty snapshot is valid. */
	rdmad_snapshot_unref(snap);
	snap = snapshot_new_from_wire(NULL, 0, 5, 0);
	CHECK(snap && rdmad_snapshot_get_count(snap) == 0);
	rdmad_snapshot_unref(snap);
}

static void test_nameless_rejected(void)
{
	struct fake_device a;
	Rdmad__Device *msgs[1] = {&a.msg};

	make_device(&a, "", "x", 0, false);
	CHECK(snapshot_device_new(&a.msg, 0) == NULL);
	CHECK(snapshot_new_from_wire(msgs, 1, 1, 0) == NULL);
}

/* One event applied to a base list of mlx5_0 (id A) and mlx5_1 (id B). */
static const struct {
	const char *what;
	enum rdmad_event_type type;
	const char *name, *id, *old_name;
	int holders;
	bool removed;
	const char *expect[3]; /* names after, in order */
} event_cases[] = {
	{"add new",
	 RDMAD_EVENT_ADDED,
	 "mlx5_2",
	 "C",
	 "",
	 0,
	 false,
	 {"mlx5_0", "mlx5_1", "mlx5_2"}},
	{"change in place",
	 RDMAD_EVENT_CHANGED,
	 "mlx5_0",
	 "A",
	 "",
	 0,
	 false,
	 {"mlx5_0", "mlx5_1"}},
	{"remove unheld",
	 RDMAD_EVENT_REMOVED,
	 "mlx5_0",
	 "A",
	 "",
	 0,
	 true,
	 {"mlx5_1"}},
	{"remove held stays",
	 RDMAD_EVENT_REMOVED,
	 "mlx5_1",
	 "B",
	 "",
	 1,
	 true,
	 {"mlx5_0", "mlx5_1"}},
	{"released goes",
	 RDMAD_EVENT_RELEASED,
	 "mlx5_1",
	 "B",
	 "",
	 0,
	 true,
	 {"mlx5_0"}},
	{"rename by id",
	 RDMAD_EVENT_RENAMED,
	 "roce0",
	 "A",
	 "mlx5_0",
	 0,
	 false,
	 {"roce0", "mlx5_1"}},
	{"rename by old name",
	 RDMAD_EVENT_RENAMED,
	 "roce1",
	 "",
	 "mlx5_1",
	 0,
	 false,
	 {"mlx5_0", "roce1"}},
};

static void test_events(void)
{
	struct fake_device a, b, e;
	Rdmad__Device *msgs[2] = {&a.msg, &b.msg};
	struct rdmad_snapshot *base, *next;
	struct rdmad_device *dev;
	size_t i, j, n;

	make_device(&a, "mlx5_0", "A", 0, false);
	make_device(&b, "mlx5_1", "B", 0, false);
	base = snapshot_new_from_wire(msgs, 2, 10, 0);
	for (i = 0; i < sizeof(event_cases) / sizeof(event_cases[0]); i++) {
		make_device(&e, event_cases[i].name, event_cases[i].id,
			    event_cases[i].holders, event_cases[i].removed);
		e.msg.old_name = (char *)event_cases[i].old_name;
		dev = snapshot_device_new(&e.msg, 0);
		CHECK(snapshot_apply_event(base, event_cases[i].type, dev, 11,
					   &next) == 0);
		for (n = 0; n < 3 && event_cases[i].expect[n]; n++)
			;
		if (rdmad_snapshot_get_count(next) != n)
			fprintf(stderr, "case %s\n", event_cases[i].what);
		CHECK(rdmad_snapshot_get_count(next) == n);
		for (j = 0; j < n; j++)
			CHECK(strcmp(rdmad_device_get_name(
					     rdmad_snapshot_get_device(next,
								       j)),
				     event_cases[i].expect[j]) == 0);
		CHECK(rdmad_snapshot_get_generation(next) == 11);
		/* The base snapshot is immutable. */
		CHECK(rdmad_snapshot_get_count(base) == 2);
		CHECK(rdmad_snapshot_get_generation(base) == 10);
		snapshot_device_unref(dev);
		rdmad_snapshot_unref(next);
	}
	rdmad_snapshot_unref(base);
}

static void test_sharing(void)
{
	struct fake_device a, b, e;
	Rdmad__Device *msgs[2] = {&a.msg, &b.msg};
	struct rdmad_snapshot *base, *next;
	struct rdmad_device *dev;

	make_device(&a, "mlx5_0", "A", 0, false);
	make_device(&b, "mlx5_1", "B", 0, false);
	make_device(&e, "mlx5_1", "B", 1, false);
	base = snapshot_new_from_wire(msgs, 2, 1, 0);
	dev = snapshot_device_new(&e.msg, 0);
	CHECK(snapshot_apply_event(base, RDMAD_EVENT_CHANGED, dev, 2, &next) ==
	      0);
	snapshot_device_unref(dev);
	/* Unchanged devices are shared, the changed one is new. */
	CHECK(rdmad_snapshot_get_device(next, 0) ==
	      rdmad_snapshot_get_device(base, 0));
	CHECK(rdmad_device_get_holder_count(
		      rdmad_snapshot_get_device(next, 1)) == 1);
	CHECK(rdmad_device_get_holder_count(
		      rdmad_snapshot_get_device(base, 1)) == 0);
	/* The new snapshot outlives the old one. */
	rdmad_snapshot_unref(base);
	CHECK(strcmp(rdmad_device_get_name(rdmad_snapshot_get_device(next, 0)),
		     "mlx5_0") == 0);
	CHECK(rdmad_snapshot_ref(next) == next);
	rdmad_snapshot_unref(next);
	rdmad_snapshot_unref(next);
}

/* Every prefix of an event sequence, applied in one batch, gives the
 * list (the very same device objects) and generation that applying it
 * one event at a time gives. */
static void test_batch(void)
{
	static const struct {
		enum rdmad_event_type type;
		const char *name, *id;
		int holders;
		bool removed;
	} seq[] = {
		{RDMAD_EVENT_ADDED, "mlx5_2", "C", 0, false},
		{RDMAD_EVENT_CHANGED, "mlx5_0", "A", 1, false},
		{RDMAD_EVENT_REMOVED, "mlx5_1", "B", 0, true},
		{RDMAD_EVENT_REMOVED, "mlx5_2", "C", 1, true},
		{RDMAD_EVENT_RELEASED, "mlx5_2", "C", 0, true},
		{RDMAD_EVENT_ADDED, "mlx5_3", "D", 0, false},
	};
	enum { N = sizeof(seq) / sizeof(seq[0]) };
	struct fake_device a, b, f;
	Rdmad__Device *msgs[2] = {&a.msg, &b.msg};
	struct client_event events[N];
	struct rdmad_snapshot *base, *batch, *one, *next;
	size_t i, k;

	make_device(&a, "mlx5_0", "A", 0, false);
	make_device(&b, "mlx5_1", "B", 0, false);
	base = snapshot_new_from_wire(msgs, 2, 10, 0);
	for (i = 0; i < N; i++) {
		make_device(&f, seq[i].name, seq[i].id, seq[i].holders,
			    seq[i].removed);
		events[i] = (struct client_event){
			.type = seq[i].type,
			.device = snapshot_device_new(&f.msg, 0),
			.generation = 11 + i,
		};
	}
	for (k = 0; k <= N; k++) {
		one = rdmad_snapshot_ref(base);
		for (i = 0; i < k; i++) {
			CHECK(snapshot_apply_event(
				      one, events[i].type, events[i].device,
				      events[i].generation, &next) == 0);
			rdmad_snapshot_unref(one);
			one = next;
		}
		CHECK(snapshot_apply_events(base, events, k, &batch) == 0);
		CHECK(rdmad_snapshot_get_generation(batch) == 10 + k,
		      "prefix %zu", k);
		CHECK(rdmad_snapshot_get_count(batch) ==
			      rdmad_snapshot_get_count(one),
		      "prefix %zu", k);
		for (i = 0; i < rdmad_snapshot_get_count(one); i++)
			CHECK(rdmad_snapshot_get_device(batch, i) ==
				      rdmad_snapshot_get_device(one, i),
			      "prefix %zu, device %zu", k, i);
		rdmad_snapshot_unref(batch);
		rdmad_snapshot_unref(one);
	}
	/* All six: mlx5_0 changed, mlx5_1 and mlx5_2 gone, mlx5_3 added. */
	CHECK(snapshot_apply_events(base, events, N, &batch) == 0);
	CHECK(rdmad_snapshot_get_count(batch) == 2 &&
	      rdmad_device_get_holder_count(
		      rdmad_snapshot_get_device(batch, 0)) == 1 &&
	      strcmp(rdmad_device_get_name(rdmad_snapshot_get_device(batch, 1)),
		     "mlx5_3") == 0);
	rdmad_snapshot_unref(batch);
	for (i = 0; i < N; i++)
		snapshot_device_unref(events[i].device);
	rdmad_snapshot_unref(base);
}

/* ---- the lifecycle ------------------------------------------------------ */

/* One life: NAME@IDENTITY#INCARNATION in STATE ('P' present, 'R' removed,
 * 'A' away), @holders 0 or 1, @ready. */
struct life {
	const char *name;
	const char *identity;
	uint64_t incarnation;
	char state;
	int holders;
	bool ready;
};

static void make_life(struct fake_device *f, const struct life *l)
{
	make_device(f, l->name, l->identity, l->holders, l->state == 'R');
	f->msg.identity = (char *)l->identity;
	f->msg.incarnation = l->incarnation;
	f->msg.ready = l->ready;
	if (l->state == 'A') {
		f->msg.state = RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY;
		f->msg.away_deadline_ms = 1700000000000ull;
	}
}

static struct rdmad_device *life_device(const struct life *l,
					unsigned int features)
{
	struct fake_device f;

	make_life(&f, l);
	return snapshot_device_new(&f.msg, features);
}

/* "name#inc:state" of every entry, space-separated. */
static void describe(const struct rdmad_snapshot *snap, char *buf, size_t size)
{
	const struct rdmad_device *dev;
	static const char states[] = {'P', 'R', 'A'};
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; (dev = rdmad_snapshot_get_device(snap, i)); i++)
		len += (size_t)snprintf(
			buf + len, size - len, "%s%s#%llu:%c", i ? " " : "",
			rdmad_device_get_name(dev),
			(unsigned long long)rdmad_device_get_incarnation(dev),
			states[rdmad_device_get_state(dev)]);
}

/* A sequence of events from a base list, and the list after each. */
struct life_case {
	const char *what;
	struct life base[3];
	struct {
		enum rdmad_event_type type; /* EXPECTING: no device */
		struct life dev;
		const char *expect;
	} steps[4];
};

/* clang-format off */ /* 14 and 19 differ here: check-format.sh */
#define P(n, id, inc) {n, id, inc, 'P', 0, true}
#define HELD(n, id, inc) {n, id, inc, 'R', 1, false}
#define GONE(n, id, inc) {n, id, inc, 'R', 0, false}
#define AWAY(n, id, inc) {n, id, inc, 'A', 1, false}
/* clang-format on */

static const struct life_case life_cases[] = {
	{"a held life and the same PCI function again: two entries",
	 {P("mlx5_0", "pci:0000:03:00.0", 1)},
	 {{RDMAD_EVENT_REMOVED, HELD("mlx5_0", "pci:0000:03:00.0", 1),
	   "mlx5_0#1:R"},
	  {RDMAD_EVENT_RETURNED, P("mlx5_0", "pci:0000:03:00.0", 2),
	   "mlx5_0#1:R mlx5_0#2:P"},
	  {RDMAD_EVENT_RELEASED, GONE("mlx5_0", "pci:0000:03:00.0", 1),
	   "mlx5_0#2:P"}}},
	{"the same with ADDED, then a change of the new life first",
	 {P("mlx5_0", "pci:0000:03:00.0", 1), P("mlx5_1", "pci:B", 1)},
	 {{RDMAD_EVENT_REMOVED, HELD("mlx5_0", "pci:0000:03:00.0", 1),
	   "mlx5_0#1:R mlx5_1#1:P"},
	  {RDMAD_EVENT_ADDED, P("mlx5_0", "pci:0000:03:00.0", 2),
	   "mlx5_0#1:R mlx5_1#1:P mlx5_0#2:P"},
	  {RDMAD_EVENT_CHANGED, P("mlx5_0", "pci:0000:03:00.0", 2),
	   "mlx5_0#1:R mlx5_1#1:P mlx5_0#2:P"},
	  {RDMAD_EVENT_RELEASED, GONE("mlx5_0", "pci:0000:03:00.0", 1),
	   "mlx5_1#1:P mlx5_0#2:P"}}},
	{"away, then returned under a new name in its place",
	 {P("mlx5_0", "pci:A", 3), P("mlx5_1", "pci:B", 1)},
	 {{RDMAD_EVENT_REMOVED, AWAY("mlx5_0", "pci:A", 3),
	   "mlx5_0#3:A mlx5_1#1:P"},
	  {RDMAD_EVENT_RETURNED, P("mlx5_7", "pci:A", 4),
	   "mlx5_7#4:P mlx5_1#1:P"}}},
	{"away even unheld stays; the deadline's REMOVED drops it",
	 {P("mlx5_0", "pci:A", 1)},
	 {{RDMAD_EVENT_REMOVED,
	   {"mlx5_0", "pci:A", 1, 'A', 0, false},
	   "mlx5_0#1:A"},
	  {RDMAD_EVENT_REMOVED, GONE("mlx5_0", "pci:A", 1), ""}}},
	{"returned with no away entry is added; a held old life stays",
	 {HELD("mlx5_0", "pci:A", 1)},
	 {{RDMAD_EVENT_RETURNED, P("mlx5_0", "pci:A", 2),
	   "mlx5_0#1:R mlx5_0#2:P"}}},
	{"ready and unready replace their life only",
	 {HELD("mlx5_0", "pci:A", 1), {"mlx5_0", "pci:A", 2, 'P', 0, false}},
	 {{RDMAD_EVENT_READY, P("mlx5_0", "pci:A", 2), "mlx5_0#1:R mlx5_0#2:P"},
	  {RDMAD_EVENT_UNREADY,
	   {"mlx5_0", "pci:A", 2, 'P', 0, false},
	   "mlx5_0#1:R mlx5_0#2:P"}}},
	{"renamed: the life, not the name",
	 {HELD("mlx5_0", "pci:A", 1), P("mlx5_0", "pci:A", 2)},
	 {{RDMAD_EVENT_RENAMED, P("roce0", "pci:A", 2),
	   "mlx5_0#1:R roce0#2:P"}}},
	{"EXPECTING and SETTLED change no entry",
	 {P("mlx5_0", "pci:A", 1)},
	 {{RDMAD_EVENT_EXPECTING, {NULL}, "mlx5_0#1:P"},
	  {RDMAD_EVENT_SETTLED, {NULL}, "mlx5_0#1:P"}}},
	{"a daemon before lifecycle: by id, as 1.0",
	 {{"mlx5_0", "pci:A", 0, 'R', 1, false}},
	 {{RDMAD_EVENT_ADDED,
	   {"mlx5_0", "pci:A", 0, 'P', 0, false},
	   "mlx5_0#0:P"}}},
};

static struct rdmad_snapshot *life_base(const struct life *base)
{
	struct fake_device f[3];
	Rdmad__Device *msgs[3];
	size_t n;

	for (n = 0; n < 3 && base[n].name; n++) {
		make_life(&f[n], &base[n]);
		msgs[n] = &f[n].msg;
	}
	return snapshot_new_from_wire(msgs, n, 10,
				      RDMAD_CLIENT_FEATURE_LIFECYCLE);
}

static void run_life_case(const struct life_case *c)
{
	struct rdmad_snapshot *snap = life_base(c->base), *next;
	struct rdmad_device *dev;
	char got[256];
	size_t s;

	for (s = 0; s < 4 && c->steps[s].expect; s++) {
		dev = c->steps[s].dev.name
			      ? life_device(&c->steps[s].dev,
					    RDMAD_CLIENT_FEATURE_LIFECYCLE)
			      : NULL;
		CHECK(snapshot_apply_event(snap, c->steps[s].type, dev, 11 + s,
					   &next) == 0);
		describe(next, got, sizeof(got));
		CHECK(strcmp(got, c->steps[s].expect) == 0,
		      "%s, step %zu: \"%s\", not \"%s\"", c->what, s, got,
		      c->steps[s].expect);
		CHECK(rdmad_snapshot_get_generation(next) == 11 + s);
		snapshot_device_unref(dev);
		rdmad_snapshot_unref(snap);
		snap = next;
	}
	rdmad_snapshot_unref(snap);
}

static void test_lives(void)
{
	size_t i;

	for (i = 0; i < sizeof(life_cases) / sizeof(life_cases[0]); i++)
		run_life_case(&life_cases[i]);
}

static void test_life_getters(void)
{
	static char *aliases[] = {"ib0", "rail0"};
	static char *changed[] = {"name", "fw_ver"};
	struct fake_device f;
	struct rdmad_device *dev, *compat;
	struct life l = AWAY("mlx5_0", "pci:0000:c1:00.1", 7);

	make_life(&f, &l);
	f.msg.aliases = aliases;
	f.msg.n_aliases = 2;
	f.msg.changed = changed;
	f.msg.n_changed = 2;
	f.msg.sriov_pf = "0000:c1:00.0";
	dev = snapshot_device_new(&f.msg, RDMAD_CLIENT_FEATURE_LIFECYCLE);
	compat = snapshot_device_new(&f.msg, 0);
	CHECK(strcmp(rdmad_device_get_identity(dev), "pci:0000:c1:00.1") == 0);
	CHECK(rdmad_device_get_incarnation(dev) == 7);
	CHECK(rdmad_device_get_state(dev) == RDMAD_DEVICE_AWAY);
	/* A client of 1.0 sees an AWAY device as removed. */
	CHECK(rdmad_device_get_state(compat) == RDMAD_DEVICE_REMOVED);
	CHECK(rdmad_device_get_away_deadline(dev) == 1700000000000ull);
	CHECK(rdmad_device_get_away_deadline(compat) == 1700000000000ull);
	CHECK(!rdmad_device_is_ready(dev));
	CHECK(rdmad_device_get_alias_count(dev) == 2);
	CHECK(strcmp(rdmad_device_get_alias(dev, 0), "ib0") == 0);
	CHECK(strcmp(rdmad_device_get_alias(dev, 1), "rail0") == 0);
	CHECK(rdmad_device_get_alias(dev, 2) == NULL);
	CHECK(rdmad_device_get_alias(dev, 1) != aliases[1]);
	CHECK(rdmad_device_get_changed_count(dev) == 2);
	CHECK(strcmp(rdmad_device_get_changed(dev, 1), "fw_ver") == 0);
	CHECK(rdmad_device_get_changed(dev, 2) == NULL);
	CHECK(strcmp(rdmad_device_get_sriov_pf(dev), "0000:c1:00.0") == 0);
	/* The port and holder still read right past the new arrays. */
	CHECK(strcmp(rdmad_port_get_netdev(rdmad_device_get_port(dev, 0)),
		     "eth0") == 0);
	CHECK(strcmp(rdmad_device_get_holder(dev, 0, NULL, NULL), "mpirun") ==
	      0);
	snapshot_device_unref(dev);
	snapshot_device_unref(compat);
	/* Present and ready; then a daemon before lifecycle: identity is
	 * the id, present means ready, no deadline. */
	l = (struct life)P("mlx5_0", "pci:A", 1);
	dev = life_device(&l, 0);
	CHECK(rdmad_device_is_ready(dev) == 1);
	CHECK(rdmad_device_get_away_deadline(dev) == 0);
	snapshot_device_unref(dev);
	make_device(&f, "mlx5_0", "pci:old", 0, false);
	dev = snapshot_device_new(&f.msg, 0);
	CHECK(strcmp(rdmad_device_get_identity(dev), "pci:old") == 0);
	CHECK(rdmad_device_get_incarnation(dev) == 0);
	CHECK(rdmad_device_is_ready(dev) == 1);
	snapshot_device_unref(dev);
	/* NULL handles. */
	CHECK(rdmad_device_get_identity(NULL) == NULL);
	CHECK(rdmad_device_get_incarnation(NULL) == 0);
	CHECK(rdmad_device_is_ready(NULL) == 0);
	CHECK(rdmad_device_get_alias_count(NULL) == 0);
	CHECK(rdmad_device_get_alias(NULL, 0) == NULL);
	CHECK(rdmad_device_get_changed(NULL, 0) == NULL);
	CHECK(rdmad_device_get_sriov_pf(NULL) == NULL);
}

static void test_ready_set(void)
{
	static const struct life base[3] = {
		{"mlx5_0", "pci:A", 1, 'P', 0, false},
		P("mlx5_1", "pci:B", 1),
		AWAY("mlx5_2", "pci:C", 1),
	};
	struct life ready0 = P("mlx5_0", "pci:A", 1);
	struct rdmad_snapshot *snap = life_base(base), *next;
	struct rdmad_device *dev;

	CHECK(rdmad_snapshot_get_count(snap) == 3);
	CHECK(rdmad_snapshot_get_ready_count(snap) == 1);
	CHECK(strcmp(rdmad_device_get_name(
			     rdmad_snapshot_get_ready_device(snap, 0)),
		     "mlx5_1") == 0);
	CHECK(rdmad_snapshot_get_ready_device(snap, 1) == NULL);
	dev = life_device(&ready0, 0);
	CHECK(snapshot_apply_event(snap, RDMAD_EVENT_READY, dev, 11, &next) ==
	      0);
	snapshot_device_unref(dev);
	/* In list order; the old snapshot's set is its own. */
	CHECK(rdmad_snapshot_get_ready_count(next) == 2);
	CHECK(rdmad_snapshot_get_ready_device(next, 0) ==
	      rdmad_snapshot_get_device(next, 0));
	CHECK(rdmad_snapshot_get_ready_device(next, 1) ==
	      rdmad_snapshot_get_device(next, 1));
	CHECK(rdmad_snapshot_get_ready_count(snap) == 1);
	CHECK(rdmad_snapshot_get_ready_count(NULL) == 0);
	CHECK(rdmad_snapshot_get_ready_device(NULL, 0) == NULL);
	rdmad_snapshot_unref(snap);
	rdmad_snapshot_unref(next);
}

/* Names win over aliases, aliases over identities; only present devices;
 * find_device prefers the present life. */
static void test_resolve(void)
{
	static char *a0[] = {"ib0", "mlx5_1"};
	static char *a2[] = {"ib2"};
	static const struct life lives[3] = {
		HELD("mlx5_0", "pci:A", 1),
		P("mlx5_0", "pci:A", 2),
		P("mlx5_1", "pci:B", 1),
	};
	struct fake_device f[4];
	Rdmad__Device *msgs[4];
	struct rdmad_snapshot *snap;
	struct life away = AWAY("mlx5_5", "pci:E", 1);
	size_t i;

	for (i = 0; i < 3; i++) {
		make_life(&f[i], &lives[i]);
		msgs[i] = &f[i].msg;
	}
	make_life(&f[3], &away);
	msgs[3] = &f[3].msg;
	f[1].msg.aliases = a0;
	f[1].msg.n_aliases = 2;
	f[3].msg.aliases = a2;
	f[3].msg.n_aliases = 1;
	snap = snapshot_new_from_wire(msgs, 4, 1, 0);
	CHECK(rdmad_snapshot_resolve(snap, "mlx5_0") ==
	      rdmad_snapshot_get_device(snap, 1));
	CHECK(rdmad_snapshot_find_device(snap, "mlx5_0") ==
	      rdmad_snapshot_get_device(snap, 1));
	CHECK(rdmad_snapshot_resolve(snap, "ib0") ==
	      rdmad_snapshot_get_device(snap, 1));
	CHECK(rdmad_snapshot_resolve(snap, "mlx5_1") ==
	      rdmad_snapshot_get_device(snap, 2));
	CHECK(rdmad_snapshot_resolve(snap, "pci:B") ==
	      rdmad_snapshot_get_device(snap, 2));
	/* An AWAY device's alias names nothing present. */
	CHECK(rdmad_snapshot_resolve(snap, "ib2") == NULL);
	CHECK(rdmad_snapshot_resolve(snap, "mlx5_5") == NULL);
	CHECK(rdmad_snapshot_find_device(snap, "mlx5_5") ==
	      rdmad_snapshot_get_device(snap, 3));
	CHECK(rdmad_snapshot_resolve(snap, "nope") == NULL);
	CHECK(rdmad_snapshot_resolve(snap, NULL) == NULL);
	CHECK(rdmad_snapshot_resolve(NULL, "mlx5_0") == NULL);
	rdmad_snapshot_unref(snap);
}

static void test_sriov(void)
{
	Rdmad__Sriov msg = RDMAD__SRIOV__INIT;
	struct rdmad_sriov *sriov;

	msg.pf = "0000:c1:00.0";
	msg.expected = 8;
	msg.ready = 3;
	sriov = snapshot_sriov_new(&msg);
	CHECK(strcmp(rdmad_sriov_get_pf(sriov), "0000:c1:00.0") == 0 &&
	      rdmad_sriov_get_pf(sriov) != msg.pf);
	CHECK(rdmad_sriov_get_expected(sriov) == 8 &&
	      rdmad_sriov_get_ready(sriov) == 3);
	snapshot_sriov_free(sriov);
	sriov = snapshot_sriov_new(NULL);
	CHECK(strcmp(rdmad_sriov_get_pf(sriov), "") == 0 &&
	      rdmad_sriov_get_expected(sriov) == 0);
	snapshot_sriov_free(sriov);
	CHECK(rdmad_sriov_get_pf(NULL) == NULL);
	CHECK(rdmad_sriov_get_ready(NULL) == 0);
}

int main(void)
{
	test_build_and_getters();
	test_netdev_state();
	test_out_of_range();
	test_nameless_rejected();
	test_events();
	test_sharing();
	test_batch();
	test_lives();
	test_life_getters();
	test_ready_set();
	test_resolve();
	test_sriov();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
