/* SPDX-License-Identifier: MIT */
/*
 * The one description of rdmad's metric families: the table at the end
 * names each family with its type and help, and the function that writes
 * its samples from the current state.  metrics-expo.c turns it into the
 * text format or OpenMetrics, so the two can never list different things.
 * Each scrape renders on the spot; nothing is sampled in the background.
 *
 * Per-device and per-port series carry the labels device= (the ib device
 * name) and port=; a device gone while held stays until it is released,
 * as in `rdmactl status`.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "devices.h"
#include "metrics-families.h"
#include "netlink.h"
#include "rdmad-config.h"
#include "scan.h"
#include "publish.h"
#include "server.h"
#include "views.h"

#define LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})

typedef void (*samples_fn)(const struct metrics_state *st, struct expo *e);

/* ---- the daemon ---- */

static void build(const struct metrics_state *st, struct expo *e)
{
	expo_u64(e, LABELS("version", RDMAD_VERSION), 1);
}

static void start_time(const struct metrics_state *st, struct expo *e)
{
	const struct timespec *t = &st->src.start_time;

	expo_double(e, NULL, (double)t->tv_sec + (double)t->tv_nsec / 1e9);
}

static void generation(const struct metrics_state *st, struct expo *e)
{
	expo_u64(e, NULL, devices_generation(st->src.table));
}

/* 1 copies, 0 does not (or predates the attribute, < 5.13), -1 unknown:
 * no RDMA netlink to ask (no RDMA in the kernel, or netlink is off). */
static void copy_on_fork(const struct metrics_state *st, struct expo *e)
{
	const struct netlink_source *nl = st->src.netlink;
	int64_t v = -1;

	if (nl && netlink_has_rdma(nl))
		v = netlink_copy_on_fork(nl) ? 1 : 0;
	expo_i64(e, NULL, v);
}

/* ---- the device table, summed ---- */

static const char *state_name(enum device_state state)
{
	switch (state) {
	case DEVICE_STATE_PRESENT:
		return "present";
	case DEVICE_STATE_REMOVED:
		return "removed";
	case DEVICE_STATE_AWAY:
		return "away";
	}
	return "unknown";
}

static void devices_by_state(const struct metrics_state *st, struct expo *e)
{
	const struct devices *t = st->src.table;
	uint64_t n[DEVICE_STATE_AWAY + 1] = {0};

	for (const struct device *d = devices_first(t); d;
	     d = devices_next(t, d))
		n[device_state(d)]++;
	for (int s = DEVICE_STATE_PRESENT; s <= DEVICE_STATE_AWAY; s++)
		expo_u64(e, LABELS("state", state_name(s)), n[s]);
}

static void holds(const struct metrics_state *st, struct expo *e)
{
	const struct devices *t = st->src.table;
	uint64_t n = 0;

	for (const struct device *d = devices_first(t); d;
	     d = devices_next(t, d))
		n += device_holder_count(d);
	expo_u64(e, NULL, n);
}

static void ports_active(const struct metrics_state *st, struct expo *e)
{
	const struct devices *t = st->src.table;
	uint64_t n = 0;

	for (const struct device *d = devices_first(t); d;
	     d = devices_next(t, d)) {
		const struct device_record *info = device_info(d);

		for (unsigned int i = 0; i < info->nports; i++)
			n += strcmp(info->ports[i].state, "ACTIVE") == 0;
	}
	expo_u64(e, NULL, n);
}

static void events(const struct metrics_state *st, struct expo *e)
{
	for (int i = 0; i < METRICS_N_EVENTS; i++)
		expo_u64(e, LABELS("type", devices_event_name(i)),
			 st->events[i]);
}

/* ---- per device and per port ---- */

static void device_info_samples(const struct metrics_state *st, struct expo *e)
{
	const struct devices *t = st->src.table;

	for (const struct device *d = devices_first(t); d;
	     d = devices_next(t, d)) {
		const struct device_record *i = device_info(d);

		expo_u64(e,
			 LABELS("device", i->name, "uverbs", i->uverbs,
				"node_type", i->node_type, "node_guid",
				i->node_guid, "driver", i->driver,
				"pci_address", i->pci_address),
			 1);
	}
}

/* A state set: one series per state, 1 for the device's own. */
static void device_state_samples(const struct metrics_state *st, struct expo *e)
{
	const struct devices *t = st->src.table;

	for (const struct device *d = devices_first(t); d;
	     d = devices_next(t, d))
		for (int s = DEVICE_STATE_PRESENT; s <= DEVICE_STATE_AWAY; s++)
			expo_u64(e,
				 LABELS("device", device_info(d)->name, "state",
					state_name(s)),
				 device_state(d) == (enum device_state)s);
}

static void device_ready_samples(const struct metrics_state *st, struct expo *e)
{
	const struct devices *t = st->src.table;

	for (const struct device *d = devices_first(t); d;
	     d = devices_next(t, d))
		expo_u64(e, LABELS("device", device_info(d)->name),
			 device_ready(d));
}

static void device_holders(const struct metrics_state *st, struct expo *e)
{
	const struct devices *t = st->src.table;

	for (const struct device *d = devices_first(t); d;
	     d = devices_next(t, d))
		expo_u64(e, LABELS("device", device_info(d)->name),
			 device_holder_count(d));
}

/* The kernel's enum ib_port_state, as `rdma link` and sysfs name it. */
static uint64_t port_state_number(const char *state)
{
	static const char *const names[] = {"NOP",   "DOWN",   "INIT",
					    "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	for (size_t i = 1; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(state, names[i]) == 0)
			return i;
	return 0;
}

/* Calls @fn for every port of every device, with its port number. */
static void each_port(const struct metrics_state *st, struct expo *e,
		      void (*fn)(struct expo *e, const char *device,
				 const char *port, const struct port_record *p))
{
	const struct devices *t = st->src.table;
	char port[16];

	for (const struct device *d = devices_first(t); d;
	     d = devices_next(t, d)) {
		const struct device_record *info = device_info(d);

		for (unsigned int i = 0; i < info->nports; i++) {
			snprintf(port, sizeof(port), "%" PRIu32,
				 info->ports[i].port);
			fn(e, info->name, port, &info->ports[i]);
		}
	}
}

static void port_info_one(struct expo *e, const char *device, const char *port,
			  const struct port_record *p)
{
	expo_u64(e,
		 LABELS("device", device, "port", port, "link_layer",
			p->link_layer, "netdev", p->netdev),
		 1);
}

static void port_state_one(struct expo *e, const char *device, const char *port,
			   const struct port_record *p)
{
	expo_u64(e, LABELS("device", device, "port", port),
		 port_state_number(p->state));
}

static void port_info(const struct metrics_state *st, struct expo *e)
{
	each_port(st, e, port_info_one);
}

static void port_state(const struct metrics_state *st, struct expo *e)
{
	each_port(st, e, port_state_one);
}

/* ---- the server ---- */

static void clients(const struct metrics_state *st, struct expo *e)
{
	expo_u64(e, NULL, st->src.srv ? server_client_count(st->src.srv) : 0);
}

/* Views by kind (PROTOCOL.md 8b), every kind listed. */
static void views(const struct metrics_state *st, struct expo *e)
{
	unsigned int counts[VIEW_KIND_COUNT] = {0};

	if (st->src.srv)
		publish_count_views(st->src.srv, counts);
	for (enum view_kind k = 0; k < VIEW_KIND_COUNT; k++)
		expo_u64(e, LABELS("kind", view_kind_name(k)), counts[k]);
}

/* What each limit of the server turned away, by the limit's rdmad.conf key. */
static const char *const limit_key[SERVER_REFUSED_COUNT] = {
	[SERVER_REFUSED_FULL] = "max_clients",
	[SERVER_REFUSED_RESERVED] = "reserved_clients",
	[SERVER_REFUSED_PER_UID] = "max_clients_per_uid",
	[SERVER_REFUSED_PER_NAMESPACE] = "max_clients_per_namespace",
	[SERVER_REFUSED_REAPING] = "passed_descriptors",
	[SERVER_REFUSED_CONTROL] = "control_socket",
	[SERVER_REFUSED_NO_HELLO] = "hello_timeout",
	[SERVER_REFUSED_HOLDS] = "max_holds_per_client",
	[SERVER_REFUSED_HOLDS_PER_UID] = "max_holds_per_uid",
	[SERVER_REFUSED_QUEUE] = "max_queue",
};

static void refusals(const struct metrics_state *st, struct expo *e,
		     enum server_refusal first, enum server_refusal last)
{
	for (enum server_refusal r = first; r <= last; r++)
		expo_u64(e, LABELS("limit", limit_key[r]),
			 st->src.srv ? server_refusals(st->src.srv, r) : 0);
}

static void clients_refused(const struct metrics_state *st, struct expo *e)
{
	refusals(st, e, SERVER_REFUSED_FULL, SERVER_REFUSED_NO_HELLO);
}

static void holds_refused(const struct metrics_state *st, struct expo *e)
{
	refusals(st, e, SERVER_REFUSED_HOLDS, SERVER_REFUSED_HOLDS_PER_UID);
}

/* rdmad drops no slow client: it drops its queued events and sends it a
 * snapshot instead, so these count the slow clients too. */
static void client_resyncs(const struct metrics_state *st, struct expo *e)
{
	refusals(st, e, SERVER_REFUSED_QUEUE, SERVER_REFUSED_QUEUE);
}

/* Descriptors clients passed that rdmad's helpers have not closed, by
 * owner (its uid: owner.h), only while they are behind (reaper.h). */
static void closing_behind(const struct metrics_state *st, struct expo *e)
{
	struct reaper_behind behind[64];
	char uid[16];
	size_t n = st->src.srv ? server_closing_behind(st->src.srv, behind, 64)
			       : 0;

	for (size_t i = 0; i < n; i++) {
		snprintf(uid, sizeof(uid), "%u", (unsigned int)behind[i].owner);
		expo_u64(e, LABELS("uid", uid), behind[i].pending);
	}
}

/* ---- the scanner ---- */

static const char *const scan_kind_name[SCAN_KIND_COUNT] = {
	[SCAN_KIND_FULL] = "full",
	[SCAN_KIND_DEVICE] = "device",
};

static void rescans(const struct metrics_state *st, struct expo *e)
{
	for (int k = 0; k < SCAN_KIND_COUNT; k++)
		expo_u64(e, LABELS("kind", scan_kind_name[k]),
			 st->src.scan ? scan_get_stats(st->src.scan)->passes[k]
				      : 0);
}

static void rescan_seconds(const struct metrics_state *st, struct expo *e)
{
	for (int k = 0; k < SCAN_KIND_COUNT; k++)
		expo_double(
			e, LABELS("kind", scan_kind_name[k]),
			st->src.scan
				? scan_get_stats(st->src.scan)->total_ns[k] /
					  1e9
				: 0);
}

static void last_rescan(const struct metrics_state *st, struct expo *e)
{
	for (int k = 0; k < SCAN_KIND_COUNT; k++)
		expo_double(e, LABELS("kind", scan_kind_name[k]),
			    st->src.scan
				    ? scan_get_stats(st->src.scan)->last_ns[k] /
					      1e9
				    : 0);
}

/* ---- the table ---- */

static const struct {
	struct metrics_family family;
	samples_fn samples;
} families[] = {
	{{"rdmad_build", METRICS_TYPE_INFO, "rdmad version."}, build},
	{{"process_start_time_seconds", METRICS_TYPE_GAUGE,
	  "When rdmad started, in seconds since the Unix epoch."},
	 start_time},
	{{"rdmad_generation", METRICS_TYPE_GAUGE,
	  "Generation of the device list."},
	 generation},
	{{"rdmad_kernel_copy_on_fork", METRICS_TYPE_GAUGE,
	  "1 if the kernel copies pinned pages at fork (no fork tracking "
	  "needed), 0 if not, -1 unknown (no RDMA netlink)."},
	 copy_on_fork},
	{{"rdmad_devices", METRICS_TYPE_GAUGE,
	  "RDMA devices listed, by state."},
	 devices_by_state},
	{{"rdmad_holds", METRICS_TYPE_GAUGE,
	  "Holds of devices by client connections."},
	 holds},
	{{"rdmad_ports_active", METRICS_TYPE_GAUGE, "Ports in state ACTIVE."},
	 ports_active},
	{{"rdmad_device", METRICS_TYPE_INFO,
	  "Each listed device, with what identifies it."},
	 device_info_samples},
	{{"rdmad_device_state", METRICS_TYPE_GAUGE,
	  "Device state as a state set: 1 for the device's state, else 0."},
	 device_state_samples},
	{{"rdmad_device_holders", METRICS_TYPE_GAUGE,
	  "Client connections holding the device."},
	 device_holders},
	{{"rdmad_device_ready", METRICS_TYPE_GAUGE,
	  "1 when the device is ready for applications (PROTOCOL.md), else "
	  "0."},
	 device_ready_samples},
	{{"rdmad_port", METRICS_TYPE_INFO,
	  "Each port of a listed device, with its link layer and netdev."},
	 port_info},
	{{"rdmad_port_state", METRICS_TYPE_GAUGE,
	  "Port state: 0 unknown, 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, "
	  "5 ACTIVE_DEFER."},
	 port_state},
	{{"rdmad_clients", METRICS_TYPE_GAUGE, "Connected clients."}, clients},
	{{"rdmad_views", METRICS_TYPE_GAUGE,
	  "Views of the connected clients, by kind: all, host, mount, netns, "
	  "unverified."},
	 views},
	{{"rdmad_clients_refused", METRICS_TYPE_COUNTER,
	  "Connections turned away or closed, by the limit that did it."},
	 clients_refused},
	{{"rdmad_holds_refused", METRICS_TYPE_COUNTER,
	  "Hold requests refused, by the limit that did it."},
	 holds_refused},
	{{"rdmad_client_resyncs", METRICS_TYPE_COUNTER,
	  "Subscribers whose queue overflowed (max_queue): their events "
	  "were dropped for a snapshot."},
	 client_resyncs},
	{{"rdmad_closing_behind", METRICS_TYPE_GAUGE,
	  "Descriptors clients passed that wait to be closed, by uid, while "
	  "rdmad's helpers closed none for a second (a client's file holds "
	  "them)."},
	 closing_behind},
	{{"rdmad_events", METRICS_TYPE_COUNTER,
	  "Device table events, by type."},
	 events},
	{{"rdmad_rescans", METRICS_TYPE_COUNTER,
	  "Passes over sysfs, full or of one device."},
	 rescans},
	{{"rdmad_rescan_seconds", METRICS_TYPE_COUNTER,
	  "Time spent in passes over sysfs, by kind."},
	 rescan_seconds},
	{{"rdmad_last_rescan_duration_seconds", METRICS_TYPE_GAUGE,
	  "How long the latest pass over sysfs of each kind took."},
	 last_rescan},
};

void metrics_families_render(const struct metrics_state *st, struct expo *e)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		expo_family(e, &families[i].family);
		families[i].samples(st, e);
	}
}
