/* SPDX-License-Identifier: MIT */
/*
 * export.c on the real device table: every field of a device, its ports
 * and holders reaches the wire message; state, generation and old_name
 * follow the table's events; and what export produces encodes and decodes
 * back to the same values through proto/wire.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "export.h"
#include "wire.h"
#include "check.h"

static void make_device(struct device_record *d, const char *name,
			const char *id, unsigned int nports)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->id, sizeof(d->id), "%s", id);
	snprintf(d->uverbs, sizeof(d->uverbs), "uverbs%c", name[5]);
	snprintf(d->node_guid, sizeof(d->node_guid), "0002:c903:0000:123%c",
		 name[5]);
	snprintf(d->sys_image_guid, sizeof(d->sys_image_guid),
		 "0002:c903:0000:abcd");
	snprintf(d->node_type, sizeof(d->node_type), "CA");
	snprintf(d->fw_ver, sizeof(d->fw_ver), "16.35.2000");
	snprintf(d->pci_address, sizeof(d->pci_address), "0000:03:00.%c",
		 name[5]);
	snprintf(d->driver, sizeof(d->driver), "mlx5_core");
	d->numa_node = 1;
	d->nports = nports;
	d->ports = calloc(nports, sizeof(*d->ports));
	for (unsigned int i = 0; i < nports; i++) {
		struct port_record *p = &d->ports[i];

		p->port = i + 1;
		snprintf(p->state, sizeof(p->state), "ACTIVE");
		snprintf(p->phys_state, sizeof(p->phys_state), "LinkUp");
		snprintf(p->link_layer, sizeof(p->link_layer), "Ethernet");
		snprintf(p->rate, sizeof(p->rate), "100 Gb/sec (4X EDR)");
		snprintf(p->netdev, sizeof(p->netdev), "eth%u", i);
		p->lid = 7 + i;
		p->netdev_up = -1;
		snprintf(d->mad_nodes[d->nmad_nodes++], RECORD_MAD_NAME_MAX,
			 "umad%u", i);
		snprintf(d->mad_nodes[d->nmad_nodes++], RECORD_MAD_NAME_MAX,
			 "issm%u", i);
	}
}

struct seen {
	enum devices_event event;
	Rdmad__Device *msg; /* exported inside the listener */
	char old_name[64];
};

static void on_event(void *userdata, enum devices_event event,
		     const struct device *dev, const char *old_name)
{
	struct seen *s = userdata;
	int r;

	s->event = event;
	export_device_free(s->msg);
	s->msg = NULL;
	r = export_device(dev, old_name, &export_viewer_all, &s->msg);
	CHECK(r == 0, "export_device in listener: %d", r);
	/* Copy what a freed device's message borrows while we may. */
	snprintf(s->old_name, sizeof(s->old_name), "%s",
		 s->msg && old_name ? s->msg->old_name : "");
}

static void check_fields(const Rdmad__Device *m)
{
	CHECK(strcmp(m->name, "mlx5_0") == 0, "name %s", m->name);
	CHECK(strcmp(m->id, "pci-0000:03:00.0") == 0, "id %s", m->id);
	CHECK(strcmp(m->uverbs, "uverbs0") == 0, "uverbs %s", m->uverbs);
	CHECK(strcmp(m->node_guid, "0002:c903:0000:1230") == 0, "guid %s",
	      m->node_guid);
	CHECK(strcmp(m->sys_image_guid, "0002:c903:0000:abcd") == 0,
	      "sys_image_guid %s", m->sys_image_guid);
	CHECK(strcmp(m->node_type, "CA") == 0, "node_type %s", m->node_type);
	CHECK(strcmp(m->fw_ver, "16.35.2000") == 0, "fw %s", m->fw_ver);
	CHECK(strcmp(m->pci_address, "0000:03:00.0") == 0, "pci %s",
	      m->pci_address);
	CHECK(strcmp(m->driver, "mlx5_core") == 0, "driver %s", m->driver);
	CHECK(m->numa_node == 1, "numa %d", m->numa_node);
	CHECK(m->n_ports == 2, "ports %zu", m->n_ports);
	CHECK(m->n_mad_nodes == 4 && !strcmp(m->mad_nodes[0], "umad0") &&
		      !strcmp(m->mad_nodes[1], "issm0") &&
		      !strcmp(m->mad_nodes[3], "issm1"),
	      "mad nodes: %zu", m->n_mad_nodes);
	for (size_t i = 0; i < m->n_ports && i < 2; i++) {
		const Rdmad__Port *p = m->ports[i];

		CHECK(p->port == i + 1 && p->lid == 7 + i, "port %zu: %u %u", i,
		      p->port, p->lid);
		CHECK(strcmp(p->state, "ACTIVE") == 0 &&
			      strcmp(p->phys_state, "LinkUp") == 0 &&
			      strcmp(p->link_layer, "Ethernet") == 0 &&
			      strcmp(p->rate, "100 Gb/sec (4X EDR)") == 0,
		      "port %zu strings", i);
		CHECK(p->netdev[0] == 'e' && p->netdev[3] == '0' + (char)i,
		      "port %zu netdev %s", i, p->netdev);
	}
}

/* Encode a device as an Event frame and decode it back. */
static Rdmad__Frame *round_trip(Rdmad__Device *msg)
{
	Rdmad__Event ev = RDMAD__EVENT__INIT;
	Rdmad__Frame frame, *back = NULL;
	uint8_t *buf;
	size_t len;

	wire_frame_init(&frame, 0);
	frame.body_case = RDMAD__FRAME__BODY_EVENT;
	frame.event = &ev;
	ev.device = msg;
	ev.generation = msg->generation;
	CHECK(wire_encode(&frame, WIRE_MAX_FRAME, &buf, &len) == 0, "encode");
	CHECK(wire_decode(buf, len, WIRE_MAX_FRAME, &back) == 0, "decode");
	free(buf);
	return back;
}

static void test_table(void)
{
	struct holder h1 = {
		.owner = &h1, .pid = 100, .uid = 1000, .comm = "mpirun"};
	struct holder h2 = {.owner = &h2, .pid = 200, .uid = 0, .comm = "spdk"};
	struct device_record scan[2];
	struct seen seen = {0};
	struct devices *t = devices_new(41);
	Rdmad__Device **msgs;
	Rdmad__Frame *back;
	size_t n;

	devices_set_listener(t, on_event, &seen);
	make_device(&scan[0], "mlx5_0", "pci-0000:03:00.0", 2);
	make_device(&scan[1], "mlx5_1", "pci-0000:03:00.1", 1);
	CHECK(devices_apply_scan(t, scan, 2) == 2, "scan");
	CHECK(seen.event == DEVICES_EVENT_ADDED, "added");

	/* Two holders, in order, with pid, uid and comm. */
	CHECK(devices_hold(t, "mlx5_0", &h1) == 0, "hold 1");
	CHECK(devices_hold(t, "mlx5_0", &h2) == 0, "hold 2");
	CHECK(seen.event == DEVICES_EVENT_CHANGED && seen.msg, "changed");
	check_fields(seen.msg);
	CHECK(seen.msg->n_holders == 2, "holders %zu", seen.msg->n_holders);
	CHECK(seen.msg->holders[0]->pid == 100 &&
		      seen.msg->holders[0]->uid == 1000 &&
		      strcmp(seen.msg->holders[0]->comm, "mpirun") == 0,
	      "holder 0");
	CHECK(seen.msg->holders[1]->pid == 200 &&
		      strcmp(seen.msg->holders[1]->comm, "spdk") == 0,
	      "holder 1");
	CHECK(seen.msg->generation == 45, "generation %llu, want 45",
	      (unsigned long long)seen.msg->generation);
	CHECK(seen.msg->state == RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT,
	      "present");
	CHECK(seen.msg->old_name[0] == '\0', "old_name empty");

	/* The message survives the wire unchanged. */
	back = round_trip(seen.msg);
	if (back) {
		check_fields(back->event->device);
		CHECK(back->event->device->n_holders == 2, "holders on wire");
		CHECK(back->event->device->generation == 45, "gen on wire");
		wire_free(back);
	}

	/* Snapshot export: both, in name order. */
	CHECK(export_table(t, &export_viewer_all, &msgs, &n) == 0 && n == 2,
	      "export_table");
	if (n == 2) {
		CHECK(strcmp(msgs[0]->name, "mlx5_0") == 0 &&
			      strcmp(msgs[1]->name, "mlx5_1") == 0,
		      "order");
		CHECK(msgs[1]->n_ports == 1 && msgs[1]->n_holders == 0,
		      "mlx5_1 shape");
		export_table_free(msgs, n);
	}

	/* Unplugged while held: REMOVED state, holders kept. */
	make_device(&scan[0], "mlx5_1", "pci-0000:03:00.1", 1);
	CHECK(devices_apply_scan(t, scan, 1) == 1, "unplug mlx5_0");
	CHECK(seen.event == DEVICES_EVENT_REMOVED, "removed event");
	CHECK(seen.msg->state == RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED,
	      "removed state");
	CHECK(seen.msg->n_holders == 2, "removed keeps holders");

	/* Rename: old_name carried. */
	make_device(&scan[0], "mlx5_9", "pci-0000:03:00.1", 1);
	CHECK(devices_apply_scan(t, scan, 1) == 1, "rename");
	CHECK(seen.event == DEVICES_EVENT_RENAMED, "renamed event");
	CHECK(strcmp(seen.old_name, "mlx5_1") == 0, "old_name '%s'",
	      seen.old_name);
	CHECK(strcmp(seen.msg->name, "mlx5_9") == 0, "new name");

	/* Last holder of the removed device lets go: RELEASED. */
	devices_release_owner(t, &h1);
	devices_release_owner(t, &h2);
	CHECK(seen.event == DEVICES_EVENT_RELEASED, "released event");
	CHECK(seen.msg->n_holders == 0, "released without holders");

	export_device_free(seen.msg);
	devices_free(t);
}

/* A port's net device as clients read it: not known until rtnetlink
 * shows it (netdev_unknown, netdev_up false), then up or down; one that
 * leaves rdmad's namespace reads as down (its port cannot be used). */
static void test_netdev_states(void)
{
	static const struct {
		const char *step;
		int up; /* -1: gone */
		bool want_up, want_unknown;
	} steps[] = {
		{"before rtnetlink", -2, false, true},
		{"up", 1, true, false},
		{"down", 0, false, false},
		{"gone", -1, false, false},
	};
	struct device_record scan;
	struct seen seen = {0};
	struct devices *t = devices_new(1);

	devices_set_listener(t, on_event, &seen);
	make_device(&scan, "mlx5_0", "pci-0000:03:00.0", 1);
	CHECK(devices_apply_scan(t, &scan, 1) == 1, "scan");
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const Rdmad__Port *p;

		if (steps[i].up >= 0)
			devices_set_netdev_state(t, "eth0", steps[i].up);
		else if (steps[i].up == -1)
			devices_netdev_gone(t, "eth0");
		CHECK(seen.msg && seen.msg->n_ports == 1, "%s: a message",
		      steps[i].step);
		if (!seen.msg || seen.msg->n_ports != 1)
			continue;
		p = seen.msg->ports[0];
		CHECK(p->netdev_up == steps[i].want_up &&
			      p->netdev_unknown == steps[i].want_unknown,
		      "%s: netdev_up %d netdev_unknown %d", steps[i].step,
		      p->netdev_up, p->netdev_unknown);
	}
	export_device_free(seen.msg);
	devices_free(t);
}

static void test_event_types(void)
{
	CHECK(export_event_type(DEVICES_EVENT_ADDED, &export_viewer_all) ==
		      RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED,
	      "ADDED");
	CHECK(export_event_type(DEVICES_EVENT_REMOVED, &export_viewer_all) ==
		      RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED,
	      "REMOVED");
	CHECK(export_event_type(DEVICES_EVENT_CHANGED, &export_viewer_all) ==
		      RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED,
	      "CHANGED");
	CHECK(export_event_type(DEVICES_EVENT_RENAMED, &export_viewer_all) ==
		      RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED,
	      "RENAMED");
	CHECK(export_event_type(DEVICES_EVENT_RELEASED, &export_viewer_all) ==
		      RDMAD__EVENT_TYPE__EVENT_TYPE_RELEASED,
	      "RELEASED");
}

/* REMOVING as it is to clients that said "removing", else what they know:
 * UNREADY with "lifecycle", CHANGED without. */
static void test_removing_by_features(void)
{
	static const struct {
		bool lifecycle, removing;
		Rdmad__EventType want;
	} cases[] = {
		{false, false, RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED},
		{true, false, RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY},
		{false, true, RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING},
		{true, true, RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct export_viewer v = {.all = true,
					  .lifecycle = cases[i].lifecycle,
					  .wants_removing = cases[i].removing};

		CHECK(export_event_type(DEVICES_EVENT_REMOVING, &v) ==
			      cases[i].want,
		      "REMOVING, lifecycle %d removing %d", cases[i].lifecycle,
		      cases[i].removing);
	}
}

/* Held from 5,000 connections with the longest comm each: the device
 * lists the first WIRE_MAX_HOLDERS_LISTED with the count of all, and an
 * event and a snapshot of it still fit a frame. */
static void test_many_holders(void)
{
	enum { HOLDERS = 5000 };
	static struct holder h[HOLDERS];
	struct device_record scan;
	struct seen seen = {0};
	struct devices *t = devices_new(1);
	Rdmad__Device **msgs;
	Rdmad__Frame *back;
	size_t n;

	devices_set_listener(t, on_event, &seen);
	make_device(&scan, "mlx5_0", "pci-0000:03:00.0", 2);
	CHECK(devices_apply_scan(t, &scan, 1) == 1, "scan");
	for (int i = 0; i < HOLDERS; i++) {
		h[i] = (struct holder){
			.owner = &h[i], .pid = 1000 + i, .uid = 1001};
		memset(h[i].comm, 'x', sizeof(h[i].comm) - 1);
		CHECK(devices_hold(t, "mlx5_0", &h[i]) == 0, "hold %d", i);
	}
	CHECK(seen.msg && seen.msg->n_holders == WIRE_MAX_HOLDERS_LISTED &&
		      seen.msg->holder_count == HOLDERS,
	      "listed %zu of %u", seen.msg ? seen.msg->n_holders : 0,
	      seen.msg ? seen.msg->holder_count : 0);
	CHECK(seen.msg && seen.msg->holders[0]->pid == 1000 &&
		      seen.msg->holders[63]->pid == 1063,
	      "the first listed");
	back = seen.msg ? round_trip(seen.msg) : NULL;
	CHECK(back && back->event->device->holder_count == HOLDERS,
	      "count on the wire");
	wire_free(back);
	CHECK(export_table(t, &export_viewer_all, &msgs, &n) == 0 && n == 1,
	      "snapshot");
	export_table_free(msgs, n);
	export_device_free(seen.msg);
	devices_free(t);
}

/* Who sees whose holders: root all, with namespaces; a user its own in
 * its own PID namespace, by the pids it knows there; the rest counted. */
static void test_viewers(void)
{
	struct holder h[4] = {
		{.owner = &h[0],
		 .pid = 10,
		 .ns_pid = 10,
		 .uid = 1000,
		 .comm = "mine"},
		{.owner = &h[1],
		 .pid = 20,
		 .ns_pid = 20,
		 .uid = 2000,
		 .comm = "theirs"},
		{.owner = &h[2],
		 .pid = 30,
		 .ns_pid = 30,
		 .uid = 1000,
		 .comm = "mine2"},
		{.owner = &h[3],
		 .pid = 40,
		 .ns_pid = 7,
		 .uid = 1000,
		 .comm = "in-pod",
		 .ns = {.net = 5, .mnt = 6, .pid = 77},
		 .pod_uid = "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"},
	};
	const struct export_viewer u1000 = {.uid = 1000, .lifecycle = true},
				   u3000 = {.uid = 3000, .lifecycle = true},
				   pod1000 = {.uid = 1000, .pidns = 77};
	struct device_record scan;
	struct devices *t = devices_new(1);
	const struct device *dev;
	Rdmad__Device *msg;

	make_device(&scan, "mlx5_0", "pci-0000:03:00.0", 1);
	CHECK(devices_apply_scan(t, &scan, 1) == 1, "scan");
	dev = devices_first(t);
	for (int i = 0; i < 4; i++)
		CHECK(devices_hold(t, "mlx5_0", &h[i]) == 0, "hold %d", i);

	CHECK(export_device(dev, NULL, &u1000, &msg) == 0, "export as 1000");
	CHECK(msg->n_holders == 2 && msg->holder_count == 4 &&
		      msg->holders[0]->pid == 10 &&
		      msg->holders[0]->pidns == 0 &&
		      strcmp(msg->holders[1]->comm, "mine2") == 0,
	      "uid 1000 sees its own two of 4, no namespaces: %zu",
	      msg->n_holders);
	export_device_free(msg);
	CHECK(export_device(dev, NULL, &pod1000, &msg) == 0, "as the pod");
	CHECK(msg->n_holders == 1 && msg->holders[0]->pid == 7 &&
		      strcmp(msg->holders[0]->comm, "in-pod") == 0 &&
		      !msg->holders[0]->pod_uid[0],
	      "uid 1000 in the pod sees its own, by its pid there: %zu %u",
	      msg->n_holders, msg->n_holders ? msg->holders[0]->pid : 0);
	export_device_free(msg);
	CHECK(export_device(dev, NULL, &u3000, &msg) == 0, "export as 3000");
	CHECK(msg->n_holders == 0 && msg->holder_count == 4,
	      "uid 3000 sees a count only");
	export_device_free(msg);
	CHECK(export_device(dev, NULL, &export_viewer_all, &msg) == 0, "all");
	CHECK(msg->n_holders == 4 && msg->holders[3]->pid == 40 &&
		      msg->holders[3]->pidns == 77 &&
		      msg->holders[3]->netns == 5 &&
		      msg->holders[3]->mntns == 6 &&
		      strcmp(msg->holders[3]->pod_uid,
			     "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901") == 0,
	      "root sees all, by host pid, with namespaces and pod");
	export_device_free(msg);
	devices_free(t);
}

int main(void)
{
	test_table();
	test_netdev_states();
	test_viewers();
	test_many_holders();
	test_event_types();
	test_removing_by_features();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
