/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's output: each object once, for both forms, through the print
 * layer (print.h), where a field is one call.  The JSON key names are the
 * contract in rdmactl(8) and the product brief, so add keys but never
 * rename one; a new key goes after the old ones.  The human forms read
 * like ibv_devinfo: a block per device, then its ports and holders.
 * Where the forms say a thing differently (a summary in text, the whole
 * device in JSON), PRINT_FP and PRINT_JSON calls stand side by side.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "netns.h"
#include "output.h"

const char *output_event_name(Rdmad__EventType type)
{
	switch (type) {
	case RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED:
		return "added";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED:
		return "removed";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED:
		return "changed";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED:
		return "renamed";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RELEASED:
		return "released";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED:
		return "returned";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_READY:
		return "ready";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY:
		return "unready";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING:
		return "expecting";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED:
		return "settled";
	case RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING:
		return "removing";
	case _RDMAD__EVENT_TYPE_IS_INT_SIZE:
		break;
	}
	/* A newer daemon's event: show it rather than drop it. */
	return "unknown";
}

const char *output_state_name(Rdmad__DeviceState state)
{
	switch (state) {
	case RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT:
		return "present";
	case RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED:
		return "removed";
	case RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY:
		return "away";
	case _RDMAD__DEVICE_STATE_IS_INT_SIZE:
		break;
	}
	return "unknown";
}

/* Lives of one name, in the order they are shown (PROTOCOL.md 8a). */
static int life_rank(const Rdmad__Device *dev)
{
	switch (dev->state) {
	case RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT:
		return 0;
	case RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY:
		return 1;
	case RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED:
		return 2;
	case _RDMAD__DEVICE_STATE_IS_INT_SIZE:
		break;
	}
	return 3;
}

/* Lives of one name: the same name in the same network namespace (the
 * host's mlx5_0 and a pod's mlx5_0 are two devices). */
static bool same_name(const Rdmad__Device *a, const Rdmad__Device *b)
{
	return !strcmp(a->name, b->name) && netns_same(a, b);
}

/* Move the devices at or after @from that are in @key's namespace (NULL:
 * rdmad's own) to @from, keeping their order; returns the index past
 * them. */
static size_t gather_netns(Rdmad__Device **devices, size_t n, size_t from,
			   const Rdmad__Device *key)
{
	for (size_t i = from; i < n; i++) {
		Rdmad__Device *dev = devices[i];

		if (key ? !netns_same(dev, key) : netns_foreign(dev))
			continue;
		memmove(&devices[from + 1], &devices[from],
			(i - from) * sizeof(*devices));
		devices[from++] = dev;
	}
	return from;
}

void output_order_namespaces(Rdmad__Device **devices, size_t n)
{
	size_t from = gather_netns(devices, n, 0, NULL);

	while (from < n)
		from = gather_netns(devices, n, from, devices[from]);
}

/* An insertion sort within each run of one name: stable, and linear
 * where no name has several lives. */
void output_order_lives(Rdmad__Device **devices, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		Rdmad__Device *dev = devices[i];
		size_t j = i;

		for (; j > 0 && same_name(devices[j - 1], dev) &&
		       life_rank(devices[j - 1]) > life_rank(dev);
		     j--)
			devices[j] = devices[j - 1];
		devices[j] = dev;
	}
}

/* Every holder, also those past the ones listed (a daemon before
 * holder_count lists them all). */
static uint32_t holder_total(const Rdmad__Device *dev)
{
	return dev->holder_count > dev->n_holders ? dev->holder_count
						  : (uint32_t)dev->n_holders;
}

/* A list of names: an array under @key, and in the text form @label,
 * the names joined by @sep ("-" when there are none) and a newline. */
static void names_print(struct print *p, const char *key, const char *label,
			const char *sep, char *const *v, size_t n)
{
	print_open_array(p, key);
	print_fp(p, "%s%s", label, n ? "" : "-");
	for (size_t i = 0; i < n; i++) {
		print_fp(p, "%s", i ? sep : "");
		print_string(p, PRINT_ANY, NULL, "%s", v[i]);
	}
	print_close_array(p);
	print_fp(p, "\n");
}

/* "up", "down", or "unknown" where rdmad does not see the net device
 * (a daemon before netdev_unknown says down); "" without one. */
static const char *netdev_state(const Rdmad__Port *port)
{
	if (!port->netdev[0])
		return "";
	if (port->netdev_unknown)
		return "unknown";
	return port->netdev_up ? "up" : "down";
}

static void port_print(struct print *p, const Rdmad__Port *port)
{
	bool json = print_is_json(p);

	print_open_object(p, NULL);
	print_uint(p, PRINT_ANY, "port", "\tport:\t%" PRIu64 "\n", port->port);
	print_string(p, PRINT_ANY, "state", "\t\tstate:\t\t%s\n", port->state);
	print_string(p, PRINT_ANY, "phys_state", "\t\tphys_state:\t%s\n",
		     port->phys_state);
	print_string(p, PRINT_ANY, "link_layer", "\t\tlink_layer:\t%s\n",
		     port->link_layer);
	print_string(p, PRINT_ANY, "rate", "\t\trate:\t\t%s\n", port->rate);
	/* The text form leaves out what a port does not have. */
	if (port->netdev[0] || json)
		print_string(p, PRINT_ANY, "netdev", "\t\tnetdev:\t\t%s",
			     port->netdev);
	if (port->netdev[0])
		print_fp(p, " (%s)\n", netdev_state(port));
	print_bool(p, PRINT_JSON, "netdev_up", NULL, port->netdev_up);
	print_string(p, PRINT_JSON, "netdev_state", NULL, netdev_state(port));
	if (port->lid || json)
		print_uint(p, PRINT_ANY, "lid", "\t\tlid:\t\t%" PRIu64 "\n",
			   port->lid);
	print_close_object(p);
}

/* "pid 4242 uid 1000 comm nccl-test", and for a viewer that sees all
 * (PROTOCOL.md 8b) where the holder runs: in text its pod, else its
 * netns; in JSON each namespace key only where the daemon filled it in. */
static void holder_print(struct print *p, const Rdmad__Holder *holder)
{
	bool pod = holder->pod_uid[0];

	print_open_object(p, NULL);
	print_uint(p, PRINT_ANY, "pid", "\tholder:\tpid %" PRIu64, holder->pid);
	print_uint(p, PRINT_ANY, "uid", " uid %" PRIu64, holder->uid);
	print_string(p, PRINT_ANY, "comm", " comm %s", holder->comm);
	if (holder->pidns)
		print_uint(p, PRINT_JSON, "pidns", NULL, holder->pidns);
	if (holder->netns)
		print_uint(p, pod ? PRINT_JSON : PRINT_ANY, "netns",
			   " netns %" PRIu64, holder->netns);
	if (holder->mntns)
		print_uint(p, PRINT_JSON, "mntns", NULL, holder->mntns);
	if (pod)
		print_string(p, PRINT_ANY, "pod_uid", " pod %s",
			     holder->pod_uid);
	print_close_object(p);
	print_fp(p, "\n");
}

static void ports_print(struct print *p, const Rdmad__Device *dev)
{
	print_open_array(p, "ports");
	for (size_t i = 0; i < dev->n_ports; i++)
		port_print(p, dev->ports[i]);
	print_close_array(p);
}

static void holders_print(struct print *p, const Rdmad__Device *dev)
{
	print_open_array(p, "holders");
	for (size_t i = 0; i < dev->n_holders; i++)
		holder_print(p, dev->holders[i]);
	print_close_array(p);
	print_uint(p, PRINT_JSON, "holder_count", NULL, holder_total(dev));
	if (holder_total(dev) > dev->n_holders)
		print_fp(p, "\tholders:\t%u (%zu listed)\n", holder_total(dev),
			 dev->n_holders);
}

static uint64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "away until 2024-05-01 12:00:05 UTC (25 s left)": the deadline the
 * daemon set, in local time, and how far off it is now. */
static void away_text(struct print *p, uint64_t deadline_ms)
{
	time_t t = (time_t)(deadline_ms / 1000);
	uint64_t now = realtime_ms();
	char when[64] = "?";
	struct tm tm;

	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
	print_fp(
		p, "away until %s (%llu s left)", when,
		deadline_ms > now
			? (unsigned long long)((deadline_ms - now + 999) / 1000)
			: 0ULL);
}

/* Why a device left the view (Device.reason, PROTOCOL.md 8b). */
static const char *reason_text(const char *reason)
{
	if (!strcmp(reason, "mount"))
		return "not in this view's mount namespace";
	if (!strcmp(reason, "netns"))
		return "moved to another network namespace";
	return print_escaped(reason);
}

/* The state and the generation of its last change.  The text form says
 * after the state when a client of this view could not open the device,
 * and why it left the view (view_keys_print() has them in JSON); where
 * a device of another network namespace is, its heading says
 * (netns_heading_text()). */
static void state_print(struct print *p, const Rdmad__Device *dev)
{
	print_fp(p, "\tstate:\t\t\t");
	if (dev->state == RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY &&
	    !print_is_json(p))
		away_text(p, dev->away_deadline_ms);
	else
		print_string(p, PRINT_ANY, "state", "%s",
			     output_state_name(dev->state));
	if (dev->unusable)
		print_fp(p, ", unusable");
	if (dev->reason[0])
		print_fp(p, " (%s)", reason_text(dev->reason));
	print_fp(p, "\n");
	print_uint(p, PRINT_JSON, "generation", NULL, dev->generation);
}

/* The lifecycle keys (PROTOCOL.md 8a); those that only mean something
 * in one state or event are left out elsewhere. */
static void lifecycle_print(struct print *p, const Rdmad__Device *dev)
{
	print_string(p, PRINT_ANY, "identity", "\tidentity:\t\t%s\n",
		     dev->identity);
	print_uint(p, PRINT_ANY, "incarnation",
		   "\tincarnation:\t\t%" PRIu64 "\n", dev->incarnation);
	print_bool(p, PRINT_JSON, "ready", NULL, dev->ready);
	print_fp(p, "\tready:\t\t\t%s\n",
		 dev->removing ? "no (removing: close contexts on it)"
		 : dev->ready  ? "yes"
			       : "no");
	if (dev->removing)
		print_bool(p, PRINT_JSON, "removing", NULL, true);
	names_print(p, "aliases", "\taliases:\t\t", ", ", dev->aliases,
		    dev->n_aliases);
	if (dev->state == RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY)
		print_uint(p, PRINT_JSON, "away_deadline_ms", NULL,
			   dev->away_deadline_ms);
	/* What a return changed: in text, the event's line says it. */
	if (dev->n_changed && print_is_json(p))
		names_print(p, "changed", "", "", dev->changed, dev->n_changed);
	if (dev->sriov_pf[0])
		print_string(p, PRINT_ANY, "sriov_pf", "\tsriov_pf:\t\t%s\n",
			     dev->sriov_pf);
}

/* Where the device is and what it is, in ibv_devinfo's words.  The text
 * form puts the node type before the GUIDs as ibv_devinfo does, the
 * JSON keeps it after them, where it has always been. */
static void hardware_print(struct print *p, const Rdmad__Device *dev)
{
	print_string(p, PRINT_ANY, "uverbs", "\tuverbs:\t\t\t%s\n",
		     dev->uverbs);
	/* ib_umad's char devices, where it has any: "umad0 issm0". */
	if (dev->n_mad_nodes || print_is_json(p))
		names_print(p, "mad_nodes", "\tmad_nodes:\t\t", " ",
			    dev->mad_nodes, dev->n_mad_nodes);
	print_string(p, PRINT_FP, NULL, "\tnode_type:\t\t%s\n", dev->node_type);
	print_string(p, PRINT_ANY, "node_guid", "\tnode_guid:\t\t%s\n",
		     dev->node_guid);
	print_string(p, PRINT_ANY, "sys_image_guid",
		     "\tsys_image_guid:\t\t%s\n", dev->sys_image_guid);
	print_string(p, PRINT_JSON, "node_type", NULL, dev->node_type);
	print_string(p, PRINT_ANY, "fw_ver", "\tfw_ver:\t\t\t%s\n",
		     dev->fw_ver);
	print_string(p, PRINT_ANY, "pci_address", "\tpci_address:\t\t%s\n",
		     dev->pci_address);
	print_int(p, dev->numa_node >= 0 ? PRINT_ANY : PRINT_JSON, "numa_node",
		  "\tnuma_node:\t\t%" PRId64 "\n", dev->numa_node);
	if (dev->numa_node < 0)
		print_fp(p, "\tnuma_node:\t\t-\n");
	print_string(p, PRINT_ANY, "driver", "\tdriver:\t\t\t%s\n",
		     dev->driver);
}

/* The view's keys of a device (PROTOCOL.md 8b), JSON only: "unusable"
 * always, "reason" only where the device left the view (a REMOVED
 * event), and "netns", "netns_cookie", "pod_uid" and "stranded" only for
 * a device in another network namespace (exclusive mode, shown to those
 * who see all), each where the daemon set it.  The text form has them
 * after the state and in the namespace's heading. */
static void view_keys_print(struct print *p, const Rdmad__Device *dev)
{
	print_bool(p, PRINT_JSON, "unusable", NULL, dev->unusable);
	if (dev->reason[0])
		print_string(p, PRINT_JSON, "reason", NULL, dev->reason);
	if (dev->netns)
		print_uint(p, PRINT_JSON, "netns", NULL, dev->netns);
	if (dev->netns_cookie)
		print_uint(p, PRINT_JSON, "netns_cookie", NULL,
			   dev->netns_cookie);
	if (dev->pod_uid[0])
		print_string(p, PRINT_JSON, "pod_uid", NULL, dev->pod_uid);
	if (dev->stranded)
		print_bool(p, PRINT_JSON, "stranded", NULL, true);
}

/* What one life of a name means to a program that opens the name. */
static const char *life_meaning(const Rdmad__Device *dev)
{
	switch (dev->state) {
	case RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT:
		return "a new open gets this one";
	case RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY:
		return "gone, expected back";
	case RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED:
		return "ended, listed while held";
	case _RDMAD__DEVICE_STATE_IS_INT_SIZE:
		break;
	}
	return "unknown state";
}

/* " (present, incarnation 2: a new open gets this one)", with
 * ", unusable" after the incarnation where @unusable asks for it. */
static void life_text(struct print *p, const Rdmad__Device *dev, bool unusable)
{
	print_fp(p, " (%s, incarnation %llu%s: %s)",
		 output_state_name(dev->state),
		 (unsigned long long)dev->incarnation,
		 unusable && dev->unusable ? ", unusable" : "",
		 life_meaning(dev));
}

/*
 * A device's keys, or its block in the text form: "hca_id", then (@several:
 * the name has other lives) which life it is.  The text form reads as
 * ibv_devinfo with the device's state and life first; the JSON keys keep
 * the order they were added in, each new one after the old ones.
 */
static void device_fields(struct print *p, const Rdmad__Device *dev,
			  bool several)
{
	bool json = print_is_json(p);

	print_string(p, PRINT_ANY, "name", "hca_id:\t%s", dev->name);
	print_string(p, PRINT_JSON, "id", NULL, dev->id);
	if (several)
		life_text(p, dev, false);
	print_fp(p, "\n");
	if (!json) {
		state_print(p, dev);
		lifecycle_print(p, dev);
	}
	hardware_print(p, dev);
	if (json)
		state_print(p, dev);
	ports_print(p, dev);
	holders_print(p, dev);
	if (json)
		lifecycle_print(p, dev);
	view_keys_print(p, dev);
}

static void device_print(struct print *p, const Rdmad__Device *dev,
			 bool several)
{
	print_open_object(p, NULL);
	device_fields(p, dev, several);
	print_close_object(p);
}

void output_device(struct print *p, const Rdmad__Device *dev)
{
	device_print(p, dev, false);
}

/* The devices as "devices" (@key) or the outermost array (NULL). */
static void devices_print(struct print *p, const char *key,
			  Rdmad__Device *const *devices, size_t n)
{
	print_open_array(p, key);
	for (size_t i = 0; i < n; i++)
		device_print(p, devices[i], false);
	print_close_array(p);
}

/* Whether devices[i] shares its name with a neighbour: one of several
 * lives of that name (output_order_lives() keeps them together). */
static bool has_other_lives(Rdmad__Device *const *devices, size_t n, size_t i)
{
	return (i > 0 && same_name(devices[i - 1], devices[i])) ||
	       (i + 1 < n && same_name(devices[i + 1], devices[i]));
}

/*
 * The host's view as it was before views: rdmad could look, the client
 * is in rdmad's namespaces, and no exclusive RDMA netns mode narrows it.
 * ("unknown", where RDMA netlink is missing, is treated as shared.)
 */
static bool view_is_plain(const Rdmad__View *view)
{
	return view->verified && view->host &&
	       strcmp(view->netns_mode, "exclusive") != 0;
}

/* "host", "host, unverified", or "pod UID, netns N, mount ns M". */
static void view_who_text(struct print *p, const Rdmad__View *view)
{
	if (!view->verified) {
		print_fp(p, "host, unverified");
		return;
	}
	if (view->host) {
		print_fp(p, "host");
		return;
	}
	if (view->pod_uid[0])
		print_string(p, PRINT_FP, NULL, "pod %s, ", view->pod_uid);
	print_fp(p, "netns %" PRIu64 ", mount ns %" PRIu64, view->netns,
		 view->mntns);
	if (view->all)
		print_fp(p, ", all devices");
}

/* "view: pod UID, netns N, mount ns M (RDMA netns mode shared)\n", or
 * nothing for the host's view as before views. */
static void view_text(struct print *p, const Rdmad__View *view)
{
	if (view_is_plain(view))
		return;
	print_fp(p, "view: ");
	view_who_text(p, view);
	print_fp(p, " (RDMA netns mode %s)\n",
		 view->netns_mode[0] ? print_escaped(view->netns_mode)
				     : "unknown");
}

void output_view(struct print *p, const Rdmad__View *view)
{
	if (!view)
		return;
	print_open_object(p, "view");
	print_uint(p, PRINT_JSON, "netns", NULL, view->netns);
	print_uint(p, PRINT_JSON, "mntns", NULL, view->mntns);
	print_uint(p, PRINT_JSON, "pidns", NULL, view->pidns);
	print_string(p, PRINT_JSON, "pod_uid", NULL, view->pod_uid);
	print_string(p, PRINT_JSON, "netns_mode", NULL, view->netns_mode);
	print_bool(p, PRINT_JSON, "all", NULL, view->all);
	print_bool(p, PRINT_JSON, "verified", NULL, view->verified);
	print_bool(p, PRINT_JSON, "host", NULL, view->host);
	print_bool(p, PRINT_JSON, "nodes", NULL, view->nodes);
	print_uint(p, PRINT_JSON, "netns_cookie", NULL, view->netns_cookie);
	print_close_object(p);
	view_text(p, view);
}

/* Whether devices[i] is the first of another network namespace's
 * (output_order_namespaces() keeps each namespace's together). */
static bool starts_netns(Rdmad__Device *const *devices, size_t i)
{
	return netns_foreign(devices[i]) &&
	       (i == 0 || !netns_same(devices[i - 1], devices[i]));
}

/* " (" before the first detail of a heading, ", " before the others. */
static void detail_sep(struct print *p, bool *opened)
{
	print_fp(p, "%s", *opened ? ", " : " (");
	*opened = true;
}

/* "network namespace 4026532001 (cookie 7, pod UID, stranded):", with
 * what the daemon said of the namespace of @dev. */
static void netns_heading_text(struct print *p, const Rdmad__Device *dev)
{
	bool opened = false;

	print_fp(p, "\nnetwork namespace");
	if (dev->netns)
		print_fp(p, " %" PRIu64, dev->netns);
	if (dev->netns_cookie) {
		detail_sep(p, &opened);
		print_fp(p, "cookie %" PRIu64, dev->netns_cookie);
	}
	if (dev->pod_uid[0]) {
		detail_sep(p, &opened);
		print_string(p, PRINT_FP, NULL, "pod %s", dev->pod_uid);
	}
	if (dev->stranded) {
		detail_sep(p, &opened);
		print_fp(p, "stranded");
	}
	print_fp(p, "%s", opened ? "):\n" : ":\n");
}

/* A device's block a tab further in: under its namespace's heading. */
static void indented_device_text(struct print *p, const Rdmad__Device *dev,
				 bool several)
{
	char *text = NULL, *line, *end;
	FILE *out = p->f, *m;
	size_t len = 0;

	m = open_memstream(&text, &len);
	if (!m) {
		device_print(p, dev, several);
		return;
	}
	p->f = m;
	device_print(p, dev, several);
	p->f = out;
	if (fclose(m) == 0)
		for (line = text; *line; line = end + (*end == '\n')) {
			end = strchrnul(line, '\n');
			fprintf(out, "\t%.*s\n", (int)(end - line), line);
		}
	free(text);
}

/* The devices of status: in text each namespace's under its heading
 * (@devices in output_order_namespaces()'s order), a blank line before
 * each block, and each life of a name that has several marked. */
static void status_devices_print(struct print *p, Rdmad__Device *const *devices,
				 size_t n)
{
	if (print_is_json(p)) {
		devices_print(p, "devices", devices, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		bool several = has_other_lives(devices, n, i);

		if (starts_netns(devices, i))
			netns_heading_text(p, devices[i]);
		print_fp(p, "\n");
		if (netns_foreign(devices[i]))
			indented_device_text(p, devices[i], several);
		else
			device_print(p, devices[i], several);
	}
}

/* ", 4 devices (2 in 1 other network namespace)\n" after the
 * generation. */
static void status_count_text(struct print *p, Rdmad__Device *const *devices,
			      size_t n)
{
	size_t foreign = 0, namespaces = 0;

	for (size_t i = 0; i < n; i++) {
		foreign += netns_foreign(devices[i]);
		namespaces += starts_netns(devices, i);
	}
	print_fp(p, ", %zu device%s", n, n == 1 ? "" : "s");
	if (foreign)
		print_fp(p, " (%zu in %zu other network namespace%s)", foreign,
			 namespaces, namespaces == 1 ? "" : "s");
	print_fp(p, "\n");
}

void output_closing(struct print *p, Rdmad__Closing *const *closing, size_t n)
{
	if (!n)
		return;
	print_open_array(p, "closing");
	for (size_t i = 0; i < n; i++) {
		const Rdmad__Closing *c = closing[i];

		print_open_object(p, NULL);
		print_uint(p, PRINT_JSON, "uid", NULL, c->uid);
		print_uint(p, PRINT_JSON, "pending", NULL, c->pending);
		print_uint(p, PRINT_JSON, "quiet_ms", NULL, c->quiet_ms);
		print_close_object(p);
		print_fp(p,
			 "\nrdmad is behind: %u descriptor%s uid %u passed "
			 "wait%s to be closed (none closed for %.1f s)\n",
			 c->pending, c->pending == 1 ? "" : "s", c->uid,
			 c->pending == 1 ? "s" : "",
			 (double)c->quiet_ms / 1000);
	}
	print_close_array(p);
}

void output_status(struct print *p, uint64_t generation,
		   const Rdmad__View *view, Rdmad__Device *const *devices,
		   size_t n, Rdmad__Closing *const *closing, size_t n_closing)
{
	print_open_object(p, NULL);
	print_uint(p, PRINT_ANY, "generation", "generation %" PRIu64,
		   generation);
	status_count_text(p, devices, n);
	output_view(p, view);
	status_devices_print(p, devices, n);
	output_closing(p, closing, n_closing);
	print_close_object(p);
}

/* A name a line; an unusable one says so after a space, and each life
 * of a name that has several says which it is, so that the first word
 * of each line is always the name (with @qualify, a device of another
 * namespace's qualified: netns_qualifier()). */
static void list_line_text(struct print *p, Rdmad__Device *const *devices,
			   size_t n, size_t i, bool qualify)
{
	char q[NETNS_QUALIFIER_MAX];

	print_string(p, PRINT_FP, NULL, "%s", devices[i]->name);
	if (qualify)
		print_fp(p, "%s", netns_qualifier(devices[i], q));
	if (has_other_lives(devices, n, i))
		life_text(p, devices[i], true);
	else if (devices[i]->unusable)
		print_fp(p, " (unusable)");
	print_fp(p, "\n");
}

void output_list(struct print *p, Rdmad__Device *const *devices, size_t n,
		 bool qualify)
{
	if (print_is_json(p)) {
		devices_print(p, NULL, devices, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		list_line_text(p, devices, n, i, qualify);
}

/*
 * The "event" of monitor --json is a contract (added, removed, changed,
 * renamed, released): a lifecycle event keeps there the name a client
 * without the feature gets for it (PROTOCOL.md 8a) and adds its own in
 * "lifecycle"; EXPECTING and SETTLED are a change of the PF.
 */
static const char *base_event_name(Rdmad__EventType type)
{
	if (type == RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED)
		return "added";
	if (type == RDMAD__EVENT_TYPE__EVENT_TYPE_READY ||
	    type == RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY ||
	    type == RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING ||
	    type == RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED ||
	    type == RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING)
		return "changed";
	return output_event_name(type);
}

/* The text form names the event as it is; the JSON as base_event_name()
 * says, with its own name in "lifecycle" where they differ. */
static void event_name_print(struct print *p, Rdmad__EventType type)
{
	const char *name = output_event_name(type);
	const char *base = base_event_name(type);

	print_string(p, PRINT_JSON, "event", NULL, base);
	print_string(p, PRINT_FP, NULL, "%s", name);
	if (strcmp(base, name))
		print_string(p, PRINT_JSON, "lifecycle", NULL, name);
}

/* EXPECTING and SETTLED: the PF's VFs.  "expecting 4 VFs of
 * 0000:03:00.0", "settled 0000:03:00.0: 3 of 4 VFs ready". */
static void sriov_print(struct print *p, const Rdmad__Event *event)
{
	const Rdmad__Sriov *sriov = event->sriov;
	const char *vfs = sriov->expected == 1 ? "" : "s";

	print_open_object(p, "sriov");
	print_string(p, PRINT_JSON, "pf", NULL, sriov->pf);
	print_uint(p, PRINT_JSON, "expected", NULL, sriov->expected);
	print_uint(p, PRINT_JSON, "ready", NULL, sriov->ready);
	print_close_object(p);
	if (event->type == RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED)
		print_fp(p, " %s: %u of %u VF%s ready",
			 print_escaped(sriov->pf), sriov->ready,
			 sriov->expected, vfs);
	else
		print_fp(p, " %u VF%s of %s", sriov->expected, vfs,
			 print_escaped(sriov->pf));
}

/* What a return changed: " (incarnation 2, changed: guid, netdev)". */
static void returned_text(struct print *p, const Rdmad__Device *dev)
{
	print_fp(p, " (incarnation %llu, changed: ",
		 (unsigned long long)dev->incarnation);
	if (!dev->n_changed)
		print_fp(p, "nothing");
	for (size_t i = 0; i < dev->n_changed; i++)
		print_string(p, PRINT_FP, NULL, i ? ", %s" : "%s",
			     dev->changed[i]);
	print_fp(p, ")");
}

/* " [present, ready, uverbs0, 1 port, 2 holders]": the text form's
 * summary of the device that the JSON has whole. */
static void device_summary_text(struct print *p, const Rdmad__Device *dev)
{
	print_fp(p, " [%s", output_state_name(dev->state));
	if (dev->state == RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT)
		print_fp(p, ", %s", dev->ready ? "ready" : "not ready");
	if (dev->unusable)
		print_fp(p, ", unusable");
	print_string(p, PRINT_FP, NULL, ", %s", dev->uverbs);
	print_fp(p, ", %zu port%s, %u holder%s]", dev->n_ports,
		 dev->n_ports == 1 ? "" : "s", holder_total(dev),
		 holder_total(dev) == 1 ? "" : "s");
}

/* The device an event is about: in JSON whole (and a return that changed
 * nothing still says so), in text its name (qualified, as events of
 * every namespace come to those who see all), the old name, why it left
 * the view, what a return changed, and a summary. */
static void event_device_print(struct print *p, const Rdmad__Event *event)
{
	const Rdmad__Device *dev = event->device;
	bool returned = event->type == RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED;
	char q[NETNS_QUALIFIER_MAX];

	print_string(p, PRINT_FP, NULL, " %s", dev->name);
	print_fp(p, "%s", netns_qualifier(dev, q));
	if (event->type == RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED)
		print_string(p, PRINT_ANY, "old_name", " (was %s)",
			     dev->old_name);
	print_open_object(p, "device");
	if (print_is_json(p))
		device_fields(p, dev, false);
	if (returned && !dev->n_changed) {
		print_open_array(p, "changed");
		print_close_array(p);
	}
	print_close_object(p);
	if (dev->reason[0])
		print_fp(p, " (%s)", reason_text(dev->reason));
	if (returned)
		returned_text(p, dev);
	device_summary_text(p, dev);
}

void output_event(struct print *p, const Rdmad__Event *event)
{
	print_open_object(p, NULL);
	print_uint(p, PRINT_ANY, "generation", "generation %" PRIu64 ": ",
		   event->generation);
	event_name_print(p, event->type);
	if (event->sriov)
		sriov_print(p, event);
	if (event->device)
		event_device_print(p, event);
	print_close_object(p);
	print_fp(p, "\n");
}

void output_resync(struct print *p, uint64_t generation,
		   Rdmad__Device *const *devices, size_t n)
{
	print_open_object(p, NULL);
	print_uint(p, PRINT_ANY, "generation", "generation %" PRIu64 ": ",
		   generation);
	print_string(p, PRINT_ANY, "event", "%s", "resync");
	print_fp(p, ", %zu device%s\n", n, n == 1 ? "" : "s");
	if (print_is_json(p))
		devices_print(p, "devices", devices, n);
	print_close_object(p);
}
