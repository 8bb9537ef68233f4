/* SPDX-License-Identifier: MIT */
/*
 * rdmactl's output.  JSON goes through json-c so escaping is never ours
 * to get wrong; the key names are the contract in rdmactl(8) and the
 * product brief, so add keys but never rename one.  The human forms read
 * like ibv_devinfo: a block per device, then its ports and holders.
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

static void add_string(struct json_object *obj, const char *key,
		       const char *value)
{
	json_object_object_add(obj, key, json_object_new_string(value));
}

static void add_int(struct json_object *obj, const char *key, int64_t value)
{
	json_object_object_add(obj, key, json_object_new_int64(value));
}

static void add_uint(struct json_object *obj, const char *key, uint64_t value)
{
	json_object_object_add(obj, key, json_object_new_uint64(value));
}

static void add_bool(struct json_object *obj, const char *key, bool value)
{
	json_object_object_add(obj, key, json_object_new_boolean(value));
}

static struct json_object *port_json(const Rdmad__Port *port)
{
	struct json_object *obj = json_object_new_object();

	add_uint(obj, "port", port->port);
	add_string(obj, "state", port->state);
	add_string(obj, "phys_state", port->phys_state);
	add_string(obj, "link_layer", port->link_layer);
	add_string(obj, "rate", port->rate);
	add_string(obj, "netdev", port->netdev);
	json_object_object_add(obj, "netdev_up",
			       json_object_new_boolean(port->netdev_up));
	add_uint(obj, "lid", port->lid);
	return obj;
}

/* A holder's namespaces (PROTOCOL.md 8b): only viewers that see all get
 * them, so a key is there only where the daemon filled it in. */
static void add_holder_namespaces(struct json_object *obj,
				  const Rdmad__Holder *holder)
{
	if (holder->pidns)
		add_uint(obj, "pidns", holder->pidns);
	if (holder->netns)
		add_uint(obj, "netns", holder->netns);
	if (holder->mntns)
		add_uint(obj, "mntns", holder->mntns);
	if (holder->pod_uid[0])
		add_string(obj, "pod_uid", holder->pod_uid);
}

static struct json_object *holder_json(const Rdmad__Holder *holder)
{
	struct json_object *obj = json_object_new_object();

	add_uint(obj, "pid", holder->pid);
	add_uint(obj, "uid", holder->uid);
	add_string(obj, "comm", holder->comm);
	add_holder_namespaces(obj, holder);
	return obj;
}

static struct json_object *ports_json(const Rdmad__Device *dev)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	for (i = 0; i < dev->n_ports; i++)
		json_object_array_add(arr, port_json(dev->ports[i]));
	return arr;
}

/* Every holder, also those past the ones listed (a daemon before
 * holder_count lists them all). */
static uint32_t holder_total(const Rdmad__Device *dev)
{
	return dev->holder_count > dev->n_holders ? dev->holder_count
						  : (uint32_t)dev->n_holders;
}

static struct json_object *strings_json(char *const *v, size_t n)
{
	struct json_object *arr = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, json_object_new_string(v[i]));
	return arr;
}

/* The lifecycle keys (PROTOCOL.md 8a); those that only mean something
 * in one state or event are left out elsewhere. */
static void add_lifecycle(struct json_object *obj, const Rdmad__Device *dev)
{
	add_string(obj, "identity", dev->identity);
	add_uint(obj, "incarnation", dev->incarnation);
	json_object_object_add(obj, "ready",
			       json_object_new_boolean(dev->ready));
	if (dev->removing)
		add_bool(obj, "removing", true);
	json_object_object_add(obj, "aliases",
			       strings_json(dev->aliases, dev->n_aliases));
	if (dev->state == RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY)
		add_uint(obj, "away_deadline_ms", dev->away_deadline_ms);
	if (dev->n_changed)
		json_object_object_add(
			obj, "changed",
			strings_json(dev->changed, dev->n_changed));
	if (dev->sriov_pf[0])
		add_string(obj, "sriov_pf", dev->sriov_pf);
}

/* The view's keys of a device (PROTOCOL.md 8b): "unusable" always,
 * "reason" only where the device left the view (a REMOVED event), and
 * "netns", "netns_cookie", "pod_uid" and "stranded" only for a device in
 * another network namespace (exclusive mode, shown to those who see all),
 * each where the daemon set it. */
static void add_view_keys(struct json_object *obj, const Rdmad__Device *dev)
{
	add_bool(obj, "unusable", dev->unusable);
	if (dev->reason[0])
		add_string(obj, "reason", dev->reason);
	if (dev->netns)
		add_uint(obj, "netns", dev->netns);
	if (dev->netns_cookie)
		add_uint(obj, "netns_cookie", dev->netns_cookie);
	if (dev->pod_uid[0])
		add_string(obj, "pod_uid", dev->pod_uid);
	if (dev->stranded)
		add_bool(obj, "stranded", true);
}

static struct json_object *holders_json(const Rdmad__Device *dev)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	for (i = 0; i < dev->n_holders; i++)
		json_object_array_add(arr, holder_json(dev->holders[i]));
	return arr;
}

struct json_object *output_device_json(const Rdmad__Device *dev)
{
	struct json_object *obj = json_object_new_object();

	add_string(obj, "name", dev->name);
	add_string(obj, "id", dev->id);
	add_string(obj, "uverbs", dev->uverbs);
	json_object_object_add(obj, "mad_nodes",
			       strings_json(dev->mad_nodes, dev->n_mad_nodes));
	add_string(obj, "node_guid", dev->node_guid);
	add_string(obj, "sys_image_guid", dev->sys_image_guid);
	add_string(obj, "node_type", dev->node_type);
	add_string(obj, "fw_ver", dev->fw_ver);
	add_string(obj, "pci_address", dev->pci_address);
	add_int(obj, "numa_node", dev->numa_node);
	add_string(obj, "driver", dev->driver);
	add_string(obj, "state", output_state_name(dev->state));
	add_uint(obj, "generation", dev->generation);
	json_object_object_add(obj, "ports", ports_json(dev));
	json_object_object_add(obj, "holders", holders_json(dev));
	add_uint(obj, "holder_count", holder_total(dev));
	add_lifecycle(obj, dev);
	add_view_keys(obj, dev);
	return obj;
}

struct json_object *output_devices_json(Rdmad__Device *const *devices, size_t n)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_array_add(arr, output_device_json(devices[i]));
	return arr;
}

struct json_object *output_view_json(const Rdmad__View *view)
{
	struct json_object *obj = json_object_new_object();

	add_uint(obj, "netns", view->netns);
	add_uint(obj, "mntns", view->mntns);
	add_uint(obj, "pidns", view->pidns);
	add_string(obj, "pod_uid", view->pod_uid);
	add_string(obj, "netns_mode", view->netns_mode);
	add_bool(obj, "all", view->all);
	add_bool(obj, "verified", view->verified);
	add_bool(obj, "host", view->host);
	add_bool(obj, "nodes", view->nodes);
	add_uint(obj, "netns_cookie", view->netns_cookie);
	return obj;
}

struct json_object *output_status_view_json(uint64_t generation,
					    const Rdmad__View *view,
					    Rdmad__Device *const *devices,
					    size_t n)
{
	struct json_object *obj = json_object_new_object();

	add_uint(obj, "generation", generation);
	if (view)
		json_object_object_add(obj, "view", output_view_json(view));
	json_object_object_add(obj, "devices", output_devices_json(devices, n));
	return obj;
}

void output_closing_json(struct json_object *status,
			 Rdmad__Closing *const *closing, size_t n)
{
	struct json_object *arr;

	if (!n)
		return;
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct json_object *obj = json_object_new_object();

		add_uint(obj, "uid", closing[i]->uid);
		add_uint(obj, "pending", closing[i]->pending);
		add_uint(obj, "quiet_ms", closing[i]->quiet_ms);
		json_object_array_add(arr, obj);
	}
	json_object_object_add(status, "closing", arr);
}

void output_closing_text(FILE *f, Rdmad__Closing *const *closing, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f,
			"\nrdmad is behind: %u descriptor%s uid %u passed "
			"wait%s to be closed (none closed for %.1f s)\n",
			closing[i]->pending,
			closing[i]->pending == 1 ? "" : "s", closing[i]->uid,
			closing[i]->pending == 1 ? "s" : "",
			(double)closing[i]->quiet_ms / 1000);
}

struct json_object *output_status_json(uint64_t generation,
				       Rdmad__Device *const *devices, size_t n)
{
	return output_status_view_json(generation, NULL, devices, n);
}

static struct json_object *sriov_json(const Rdmad__Sriov *sriov)
{
	struct json_object *obj = json_object_new_object();

	add_string(obj, "pf", sriov->pf);
	add_uint(obj, "expected", sriov->expected);
	add_uint(obj, "ready", sriov->ready);
	return obj;
}

static struct json_object *event_device_json(const Rdmad__Event *event)
{
	struct json_object *dev = output_device_json(event->device);

	/* A return that changed nothing still says so. */
	if (event->type == RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED &&
	    !event->device->n_changed)
		json_object_object_add(dev, "changed", json_object_new_array());
	return dev;
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

struct json_object *output_event_json(const Rdmad__Event *event)
{
	struct json_object *obj = json_object_new_object();
	const char *name = output_event_name(event->type);
	const char *base = base_event_name(event->type);

	add_uint(obj, "generation", event->generation);
	add_string(obj, "event", base);
	if (strcmp(base, name))
		add_string(obj, "lifecycle", name);
	/* EXPECTING and SETTLED: the PF's VFs; the device is the PF. */
	if (event->sriov)
		json_object_object_add(obj, "sriov", sriov_json(event->sriov));
	if (!event->device)
		return obj;
	if (event->type == RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED)
		add_string(obj, "old_name", event->device->old_name);
	json_object_object_add(obj, "device", event_device_json(event));
	return obj;
}

struct json_object *output_resync_json(uint64_t generation,
				       Rdmad__Device *const *devices, size_t n)
{
	struct json_object *obj = json_object_new_object();

	add_uint(obj, "generation", generation);
	add_string(obj, "event", "resync");
	json_object_object_add(obj, "devices", output_devices_json(devices, n));
	return obj;
}

int output_json_print(FILE *f, struct json_object *obj, bool pretty)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE;
	int r;

	if (pretty)
		flags |= JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED;
	else
		flags |= JSON_C_TO_STRING_PLAIN;
	r = fprintf(f, "%s\n", json_object_to_json_string_ext(obj, flags));
	json_object_put(obj);
	/* A monitor's reader must see each line as it happens. */
	if (fflush(f) != 0 || r < 0)
		return -EIO;
	return 0;
}

/*
 * A value for the terminal: "-" when empty (sysfs leaves some values
 * empty, a virtual device has no PCI address), and every byte that is not
 * printable ASCII as \xNN, so that nothing the daemon relays (a process
 * name, a sysfs value) can send escape sequences to the administrator's
 * terminal.  The result lives until the fourth call after this one.
 */
static const char *or_dash(const char *s)
{
	static char ring[4][4 * 64 + 1];
	static unsigned int next;
	char *out = ring[next++ % 4];
	size_t n = 0;

	if (!s || !*s)
		return "-";
	for (; *s && n + 5 <= sizeof(ring[0]); s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			out[n++] = (char)ch;
		else
			n += (size_t)snprintf(out + n, 5, "\\x%02x", ch);
	}
	out[n] = '\0';
	return out;
}

static void port_text(FILE *f, const Rdmad__Port *port)
{
	fprintf(f, "\tport:\t%u\n", port->port);
	fprintf(f, "\t\tstate:\t\t%s\n", or_dash(port->state));
	fprintf(f, "\t\tphys_state:\t%s\n", or_dash(port->phys_state));
	fprintf(f, "\t\tlink_layer:\t%s\n", or_dash(port->link_layer));
	fprintf(f, "\t\trate:\t\t%s\n", or_dash(port->rate));
	if (port->netdev[0])
		fprintf(f, "\t\tnetdev:\t\t%s (%s)\n", or_dash(port->netdev),
			port->netdev_up ? "up" : "down");
	if (port->lid)
		fprintf(f, "\t\tlid:\t\t%u\n", port->lid);
}

/* Names joined by ", " (at most a line's worth), "-" when none. */
static void list_text(FILE *f, char *const *v, size_t n)
{
	if (!n)
		fputc('-', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? ", " : "", or_dash(v[i]));
	fputc('\n', f);
}

static uint64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "away until 2024-05-01 12:00:05 UTC (25 s left)": the deadline the
 * daemon set, in local time, and how far off it is now. */
static void away_text(FILE *f, uint64_t deadline_ms)
{
	time_t t = (time_t)(deadline_ms / 1000);
	uint64_t now = realtime_ms();
	char when[64] = "?";
	struct tm tm;

	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
	fprintf(f, "away until %s (%llu s left)", when,
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
	return or_dash(reason);
}

/* ", unusable" and "(not in this view's ...)" after a state.  Where a
 * device of another network namespace is, its heading says
 * (netns_heading_text()). */
static void view_state_text(FILE *f, const Rdmad__Device *dev)
{
	if (dev->unusable)
		fputs(", unusable", f);
	if (dev->reason[0])
		fprintf(f, " (%s)", reason_text(dev->reason));
}

static void state_text(FILE *f, const Rdmad__Device *dev)
{
	fprintf(f, "\tstate:\t\t\t");
	if (dev->state == RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY)
		away_text(f, dev->away_deadline_ms);
	else
		fputs(output_state_name(dev->state), f);
	view_state_text(f, dev);
	fputc('\n', f);
}

static void lifecycle_text(FILE *f, const Rdmad__Device *dev)
{
	fprintf(f, "\tidentity:\t\t%s\n", or_dash(dev->identity));
	fprintf(f, "\tincarnation:\t\t%llu\n",
		(unsigned long long)dev->incarnation);
	fprintf(f, "\tready:\t\t\t%s\n",
		dev->removing ? "no (removing: close contexts on it)"
		: dev->ready  ? "yes"
			      : "no");
	fprintf(f, "\taliases:\t\t");
	list_text(f, dev->aliases, dev->n_aliases);
	if (dev->sriov_pf[0])
		fprintf(f, "\tsriov_pf:\t\t%s\n", or_dash(dev->sriov_pf));
}

/* "pid 4242 uid 1000 comm nccl-test", and for a viewer that sees all
 * (PROTOCOL.md 8b) where the holder runs: its pod, else its netns. */
static void holder_text(FILE *f, const Rdmad__Holder *holder)
{
	fprintf(f, "\tholder:\tpid %u uid %u comm %s", holder->pid, holder->uid,
		or_dash(holder->comm));
	if (holder->pod_uid[0])
		fprintf(f, " pod %s", or_dash(holder->pod_uid));
	else if (holder->netns)
		fprintf(f, " netns %llu", (unsigned long long)holder->netns);
	fputc('\n', f);
}

/* Whether devices[i] shares its name with a neighbour: one of several
 * lives of that name (output_order_lives() keeps them together). */
static bool has_other_lives(Rdmad__Device *const *devices, size_t n, size_t i)
{
	return (i > 0 && same_name(devices[i - 1], devices[i])) ||
	       (i + 1 < n && same_name(devices[i + 1], devices[i]));
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
static void life_text(FILE *f, const Rdmad__Device *dev, bool unusable)
{
	fprintf(f, " (%s, incarnation %llu%s: %s)",
		output_state_name(dev->state),
		(unsigned long long)dev->incarnation,
		unusable && dev->unusable ? ", unusable" : "",
		life_meaning(dev));
}

/* ib_umad's char devices, where it has any: "umad0 issm0". */
static void mad_nodes_text(FILE *f, const Rdmad__Device *dev)
{
	if (!dev->n_mad_nodes)
		return;
	fputs("\tmad_nodes:\t\t", f);
	for (size_t i = 0; i < dev->n_mad_nodes; i++)
		fprintf(f, "%s%s", i ? " " : "", or_dash(dev->mad_nodes[i]));
	fputc('\n', f);
}

/* @several: the name has other lives, so this block says which it is. */
static void device_text(FILE *f, const Rdmad__Device *dev, bool several)
{
	size_t i;

	fprintf(f, "hca_id:\t%s", or_dash(dev->name));
	if (several)
		life_text(f, dev, false);
	fputc('\n', f);
	state_text(f, dev);
	lifecycle_text(f, dev);
	fprintf(f, "\tuverbs:\t\t\t%s\n", or_dash(dev->uverbs));
	mad_nodes_text(f, dev);
	fprintf(f, "\tnode_type:\t\t%s\n", or_dash(dev->node_type));
	fprintf(f, "\tnode_guid:\t\t%s\n", or_dash(dev->node_guid));
	fprintf(f, "\tsys_image_guid:\t\t%s\n", or_dash(dev->sys_image_guid));
	fprintf(f, "\tfw_ver:\t\t\t%s\n", or_dash(dev->fw_ver));
	fprintf(f, "\tpci_address:\t\t%s\n", or_dash(dev->pci_address));
	if (dev->numa_node >= 0)
		fprintf(f, "\tnuma_node:\t\t%d\n", dev->numa_node);
	else
		fprintf(f, "\tnuma_node:\t\t-\n");
	fprintf(f, "\tdriver:\t\t\t%s\n", or_dash(dev->driver));
	for (i = 0; i < dev->n_ports; i++)
		port_text(f, dev->ports[i]);
	for (i = 0; i < dev->n_holders; i++)
		holder_text(f, dev->holders[i]);
	if (holder_total(dev) > dev->n_holders)
		fprintf(f, "\tholders:\t%u (%zu listed)\n", holder_total(dev),
			dev->n_holders);
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
static void view_who_text(FILE *f, const Rdmad__View *view)
{
	if (!view->verified) {
		fputs("host, unverified", f);
		return;
	}
	if (view->host) {
		fputs("host", f);
		return;
	}
	if (view->pod_uid[0])
		fprintf(f, "pod %s, ", or_dash(view->pod_uid));
	fprintf(f, "netns %llu, mount ns %llu", (unsigned long long)view->netns,
		(unsigned long long)view->mntns);
	if (view->all)
		fputs(", all devices", f);
}

void output_view_text(FILE *f, const Rdmad__View *view)
{
	if (!view || view_is_plain(view))
		return;
	fputs("view: ", f);
	view_who_text(f, view);
	fprintf(f, " (RDMA netns mode %s)\n",
		view->netns_mode[0] ? or_dash(view->netns_mode) : "unknown");
}

/* Whether devices[i] is the first of another network namespace's
 * (output_order_namespaces() keeps each namespace's together). */
static bool starts_netns(Rdmad__Device *const *devices, size_t i)
{
	return netns_foreign(devices[i]) &&
	       (i == 0 || !netns_same(devices[i - 1], devices[i]));
}

/* " (" before the first detail of a heading, ", " before the others. */
static void detail_sep(FILE *f, bool *opened)
{
	fputs(*opened ? ", " : " (", f);
	*opened = true;
}

/* "network namespace 4026532001 (cookie 7, pod UID, stranded):", with
 * what the daemon said of the namespace of @dev. */
static void netns_heading_text(FILE *f, const Rdmad__Device *dev)
{
	bool opened = false;

	fputs("network namespace", f);
	if (dev->netns)
		fprintf(f, " %" PRIu64, dev->netns);
	if (dev->netns_cookie) {
		detail_sep(f, &opened);
		fprintf(f, "cookie %" PRIu64, dev->netns_cookie);
	}
	if (dev->pod_uid[0]) {
		detail_sep(f, &opened);
		fprintf(f, "pod %s", or_dash(dev->pod_uid));
	}
	if (dev->stranded) {
		detail_sep(f, &opened);
		fputs("stranded", f);
	}
	fputs(opened ? "):\n" : ":\n", f);
}

/* A device's block a tab further in: under its namespace's heading. */
static void indented_device_text(FILE *f, const Rdmad__Device *dev,
				 bool several)
{
	char *text = NULL, *line, *end;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m) {
		device_text(f, dev, several);
		return;
	}
	device_text(m, dev, several);
	if (fclose(m) == 0)
		for (line = text; *line; line = end + (*end == '\n')) {
			end = strchrnul(line, '\n');
			fprintf(f, "\t%.*s\n", (int)(end - line), line);
		}
	free(text);
}

/* "generation 42, 4 devices (2 in 1 other network namespace)". */
static void status_head_text(FILE *f, uint64_t generation,
			     Rdmad__Device *const *devices, size_t n)
{
	size_t foreign = 0, namespaces = 0;

	for (size_t i = 0; i < n; i++) {
		foreign += netns_foreign(devices[i]);
		namespaces += starts_netns(devices, i);
	}
	fprintf(f, "generation %llu, %zu device%s",
		(unsigned long long)generation, n, n == 1 ? "" : "s");
	if (foreign)
		fprintf(f, " (%zu in %zu other network namespace%s)", foreign,
			namespaces, namespaces == 1 ? "" : "s");
	fputc('\n', f);
}

void output_status_view_text(FILE *f, uint64_t generation,
			     const Rdmad__View *view,
			     Rdmad__Device *const *devices, size_t n)
{
	size_t i;

	status_head_text(f, generation, devices, n);
	output_view_text(f, view);
	for (i = 0; i < n; i++) {
		bool several = has_other_lives(devices, n, i);

		if (starts_netns(devices, i)) {
			fputc('\n', f);
			netns_heading_text(f, devices[i]);
		}
		fputc('\n', f);
		if (netns_foreign(devices[i]))
			indented_device_text(f, devices[i], several);
		else
			device_text(f, devices[i], several);
	}
}

void output_status_text(FILE *f, uint64_t generation,
			Rdmad__Device *const *devices, size_t n)
{
	output_status_view_text(f, generation, NULL, devices, n);
}

/* A name a line; an unusable one says so after a space, and each life
 * of a name that has several says which it is, so that the first word
 * of each line is always the name (with @qualify, a device of another
 * namespace's qualified: netns_qualifier()). */
void output_list_text(FILE *f, Rdmad__Device *const *devices, size_t n,
		      bool qualify)
{
	char q[NETNS_QUALIFIER_MAX];

	for (size_t i = 0; i < n; i++) {
		fputs(or_dash(devices[i]->name), f);
		if (qualify)
			fputs(netns_qualifier(devices[i], q), f);
		if (has_other_lives(devices, n, i))
			life_text(f, devices[i], true);
		else if (devices[i]->unusable)
			fputs(" (unusable)", f);
		fputc('\n', f);
	}
}

/* "expecting 4 VFs of 0000:03:00.0", "settled 0000:03:00.0: 3 of 4
 * VFs ready". */
static void sriov_text(FILE *f, const Rdmad__Event *event)
{
	const Rdmad__Sriov *sriov = event->sriov;

	if (event->type == RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED)
		fprintf(f, " %s: %u of %u VF%s ready", or_dash(sriov->pf),
			sriov->ready, sriov->expected,
			sriov->expected == 1 ? "" : "s");
	else
		fprintf(f, " %u VF%s of %s", sriov->expected,
			sriov->expected == 1 ? "" : "s", or_dash(sriov->pf));
}

/* What an event adds after the name: the old name, what a return
 * changed. */
static void event_detail_text(FILE *f, const Rdmad__Event *event)
{
	const Rdmad__Device *dev = event->device;

	if (event->type == RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED)
		fprintf(f, " (was %s)", or_dash(dev->old_name));
	if (dev->reason[0])
		fprintf(f, " (%s)", reason_text(dev->reason));
	if (event->type != RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED)
		return;
	fprintf(f, " (incarnation %llu, changed: ",
		(unsigned long long)dev->incarnation);
	if (!dev->n_changed)
		fputs("nothing", f);
	for (size_t i = 0; i < dev->n_changed; i++)
		fprintf(f, "%s%s", i ? ", " : "", or_dash(dev->changed[i]));
	fputc(')', f);
}

static void device_event_text(FILE *f, const Rdmad__Device *dev)
{
	fprintf(f, " [%s", output_state_name(dev->state));
	if (dev->state == RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT)
		fprintf(f, ", %s", dev->ready ? "ready" : "not ready");
	if (dev->unusable)
		fputs(", unusable", f);
	fprintf(f, ", %s, %zu port%s, %u holder%s]", or_dash(dev->uverbs),
		dev->n_ports, dev->n_ports == 1 ? "" : "s", holder_total(dev),
		holder_total(dev) == 1 ? "" : "s");
}

void output_event_text(FILE *f, const Rdmad__Event *event)
{
	const Rdmad__Device *dev = event->device;
	char q[NETNS_QUALIFIER_MAX];

	fprintf(f, "generation %llu: %s", (unsigned long long)event->generation,
		output_event_name(event->type));
	if (event->sriov)
		sriov_text(f, event);
	if (dev) {
		/* Events of every namespace come to those who see all. */
		fprintf(f, " %s%s", or_dash(dev->name),
			netns_qualifier(dev, q));
		event_detail_text(f, event);
		device_event_text(f, dev);
	}
	fputc('\n', f);
	fflush(f);
}
