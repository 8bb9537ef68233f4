/* SPDX-License-Identifier: MIT */
/*
 * Unit test of libclient/snapshot.c: snapshots built from the daemon's
 * Device messages, every getter, out-of-range and NULL arguments, and the
 * snapshot that follows each kind of event (sharing unchanged devices).
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
	snap = snapshot_new_from_wire(msgs, 2, 99);
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

static void test_out_of_range(void)
{
	struct fake_device a;
	Rdmad__Device *msgs[1] = {&a.msg};
	struct rdmad_snapshot *snap;
	const struct rdmad_device *dev;

	make_device(&a, "mlx5_0", "x", 0, false);
	snap = snapshot_new_from_wire(msgs, 1, 1);
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
	snap = snapshot_new_from_wire(NULL, 0, 5);
	CHECK(snap && rdmad_snapshot_get_count(snap) == 0);
	rdmad_snapshot_unref(snap);
}

static void test_nameless_rejected(void)
{
	struct fake_device a;
	Rdmad__Device *msgs[1] = {&a.msg};

	make_device(&a, "", "x", 0, false);
	CHECK(snapshot_device_new(&a.msg) == NULL);
	CHECK(snapshot_new_from_wire(msgs, 1, 1) == NULL);
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
	base = snapshot_new_from_wire(msgs, 2, 10);
	for (i = 0; i < sizeof(event_cases) / sizeof(event_cases[0]); i++) {
		make_device(&e, event_cases[i].name, event_cases[i].id,
			    event_cases[i].holders, event_cases[i].removed);
		e.msg.old_name = (char *)event_cases[i].old_name;
		dev = snapshot_device_new(&e.msg);
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
	base = snapshot_new_from_wire(msgs, 2, 1);
	dev = snapshot_device_new(&e.msg);
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
	base = snapshot_new_from_wire(msgs, 2, 10);
	for (i = 0; i < N; i++) {
		make_device(&f, seq[i].name, seq[i].id, seq[i].holders,
			    seq[i].removed);
		events[i] = (struct client_event){
			.type = seq[i].type,
			.device = snapshot_device_new(&f.msg),
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

int main(void)
{
	test_build_and_getters();
	test_out_of_range();
	test_nameless_rejected();
	test_events();
	test_sharing();
	test_batch();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
