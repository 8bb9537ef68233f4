/* SPDX-License-Identifier: MIT */
/*
 * Snapshots: immutable, reference-counted device lists built from the
 * daemon's Device messages; their references are taken and dropped here,
 * as every layer above hands them on, and what the public getters read of
 * them is client/getters.c's.  Each device is one allocation holding its
 * ports, holders and every string, and is itself reference counted so
 * that the snapshot after an event shares every unchanged device with the
 * one before.  An entry of the list is one life of a device (PROTOCOL.md
 * 8a): its identity and incarnation name it, so
 * a held entry of an ended life and the present life of the same PCI
 * function, often under the same name, are two entries.  Each snapshot
 * also indexes its ready set, the usable devices, and carries the view
 * the daemon says this client has (PROTOCOL.md 8b), if it said one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"

/* Protobuf-c leaves unset strings as "" but be safe with NULL too. */
static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

/* The identity; a daemon before lifecycle sends only the id, its equal. */
static const char *identity_of(const Rdmad__Device *msg)
{
	const char *identity = str_or_empty(msg->identity);

	return identity[0] ? identity : msg->id;
}

static size_t device_strings_size(const Rdmad__Device *msg)
{
	const char *fields[] = {
		msg->name,	msg->old_name,	  msg->id,
		msg->uverbs,	msg->node_guid,	  msg->sys_image_guid,
		msg->node_type, msg->fw_ver,	  msg->pci_address,
		msg->driver,	identity_of(msg), msg->sriov_pf,
		msg->reason,
	};
	size_t size = 0;
	size_t i;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		size += strlen(str_or_empty(fields[i])) + 1;
	for (i = 0; i < msg->n_aliases; i++)
		size += strlen(str_or_empty(msg->aliases[i])) + 1;
	for (i = 0; i < msg->n_changed; i++)
		size += strlen(str_or_empty(msg->changed[i])) + 1;
	for (i = 0; i < msg->n_ports; i++) {
		const Rdmad__Port *p = msg->ports[i];

		size += strlen(str_or_empty(p->state)) + 1;
		size += strlen(str_or_empty(p->phys_state)) + 1;
		size += strlen(str_or_empty(p->link_layer)) + 1;
		size += strlen(str_or_empty(p->rate)) + 1;
		size += strlen(str_or_empty(p->netdev)) + 1;
	}
	for (i = 0; i < msg->n_holders; i++) {
		size += strlen(str_or_empty(msg->holders[i]->comm)) + 1;
		size += strlen(str_or_empty(msg->holders[i]->pod_uid)) + 1;
	}
	return size;
}

/* Copy @s to the string area at *@cursor and advance it. */
static const char *put_str(char **cursor, const char *s)
{
	size_t len = strlen(str_or_empty(s)) + 1;
	char *dst = *cursor;

	memcpy(dst, str_or_empty(s), len);
	*cursor += len;
	return dst;
}

static void fill_ports(struct rdmad_device *dev, const Rdmad__Device *msg,
		       char **cursor)
{
	unsigned int i;

	for (i = 0; i < dev->n_ports; i++) {
		const Rdmad__Port *p = msg->ports[i];
		struct rdmad_port *port = &dev->ports[i];

		port->number = p->port;
		port->state = put_str(cursor, p->state);
		port->phys_state = put_str(cursor, p->phys_state);
		port->link_layer = put_str(cursor, p->link_layer);
		port->rate = put_str(cursor, p->rate);
		port->netdev = put_str(cursor, p->netdev);
		port->netdev_up = p->netdev_unknown ? -1 : p->netdev_up;
		port->lid = p->lid;
	}
}

static void fill_holders(struct rdmad_device *dev, const Rdmad__Device *msg,
			 char **cursor)
{
	unsigned int i;

	for (i = 0; i < dev->n_holders; i++) {
		const Rdmad__Holder *h = msg->holders[i];
		struct rdmad_holder *holder = &dev->holders[i];

		holder->pid = h->pid;
		holder->uid = h->uid;
		holder->comm = put_str(cursor, h->comm);
		holder->pidns = h->pidns;
		holder->netns = h->netns;
		holder->mntns = h->mntns;
		holder->pod_uid = put_str(cursor, h->pod_uid);
	}
}

static void fill_strings(const char **dst, char *const *src, unsigned int n,
			 char **cursor)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		dst[i] = put_str(cursor, src[i]);
}

/* AWAY is shown only to a client that knows it: to others it is gone,
 * as the daemon tells its older clients.  A state newer than this
 * library is not present either. */
static enum rdmad_device_state public_state(Rdmad__DeviceState state,
					    unsigned int features)
{
	if (state == RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT)
		return RDMAD_DEVICE_PRESENT;
	if (state == RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY &&
	    (features & RDMAD_CLIENT_FEATURE_LIFECYCLE))
		return RDMAD_DEVICE_AWAY;
	return RDMAD_DEVICE_REMOVED;
}

/* The lifecycle fields; a daemon before them sends no incarnation. */
static void fill_life(struct rdmad_device *dev, const Rdmad__Device *msg,
		      unsigned int features, char **cursor)
{
	dev->identity = put_str(cursor, identity_of(msg));
	dev->sriov_pf = put_str(cursor, msg->sriov_pf);
	dev->incarnation = msg->incarnation;
	dev->away = msg->state == RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY;
	dev->away_deadline = dev->away ? msg->away_deadline_ms : 0;
	dev->state = public_state(msg->state, features);
	dev->removing = dev->state == RDMAD_DEVICE_PRESENT && msg->removing;
	/* Without readiness from the daemon, present means usable. */
	dev->ready = dev->state == RDMAD_DEVICE_PRESENT && !dev->removing &&
		     (msg->ready || !msg->incarnation);
	fill_strings(dev->aliases, msg->aliases, dev->n_aliases, cursor);
	fill_strings(dev->changed, msg->changed, dev->n_changed, cursor);
}

static void fill_device(struct rdmad_device *dev, const Rdmad__Device *msg,
			unsigned int features, char **cursor)
{
	dev->name = put_str(cursor, msg->name);
	dev->old_name = put_str(cursor, msg->old_name);
	dev->id = put_str(cursor, msg->id);
	dev->uverbs = put_str(cursor, msg->uverbs);
	dev->node_guid = put_str(cursor, msg->node_guid);
	dev->sys_image_guid = put_str(cursor, msg->sys_image_guid);
	dev->node_type = put_str(cursor, msg->node_type);
	dev->fw_ver = put_str(cursor, msg->fw_ver);
	dev->pci_address = put_str(cursor, msg->pci_address);
	dev->driver = put_str(cursor, msg->driver);
	/* Views: a daemon before them sends neither (usable, no reason). */
	dev->reason = put_str(cursor, msg->reason);
	dev->unusable = msg->unusable;
	dev->numa_node = msg->numa_node;
	dev->generation = msg->generation;
	fill_life(dev, msg, features, cursor);
	fill_ports(dev, msg, cursor);
	fill_holders(dev, msg, cursor);
}

struct rdmad_device *snapshot_device_new(const Rdmad__Device *msg,
					 unsigned int features)
{
	size_t ports_size, holders_size, strv_size;
	struct rdmad_device *dev;
	char *cursor;

	if (!msg || !msg->name || !msg->name[0]) {
		errno = EINVAL;
		return NULL;
	}
	ports_size = msg->n_ports * sizeof(struct rdmad_port);
	holders_size = msg->n_holders * sizeof(struct rdmad_holder);
	strv_size = (msg->n_aliases + msg->n_changed) * sizeof(char *);
	dev = calloc(1, sizeof(*dev) + ports_size + holders_size + strv_size +
				device_strings_size(msg));
	if (!dev)
		return NULL;
	atomic_init(&dev->refs, 1);
	dev->n_ports = msg->n_ports;
	dev->n_holders = msg->n_holders;
	dev->n_aliases = msg->n_aliases;
	dev->n_changed = msg->n_changed;
	/* A daemon before holder_count lists every holder. */
	dev->holder_count = msg->holder_count > msg->n_holders
				    ? msg->holder_count
				    : msg->n_holders;
	dev->ports = (struct rdmad_port *)(dev + 1);
	dev->holders = (struct rdmad_holder *)((char *)dev->ports + ports_size);
	dev->aliases = (const char **)((char *)dev->holders + holders_size);
	dev->changed = dev->aliases + dev->n_aliases;
	cursor = (char *)(dev->changed + dev->n_changed);
	fill_device(dev, msg, features, &cursor);
	return dev;
}

struct rdmad_device *snapshot_device_ref(struct rdmad_device *device)
{
	atomic_fetch_add_explicit(&device->refs, 1, memory_order_relaxed);
	return device;
}

void snapshot_device_unref(struct rdmad_device *device)
{
	if (!device)
		return;
	if (atomic_fetch_sub_explicit(&device->refs, 1, memory_order_acq_rel) ==
	    1)
		free(device);
}

static struct rdmad_view *view_new(const Rdmad__View *msg)
{
	const char *pod_uid = str_or_empty(msg->pod_uid);
	const char *mode = str_or_empty(msg->netns_mode);
	size_t pod_len = strlen(pod_uid) + 1, mode_len = strlen(mode) + 1;
	struct rdmad_view *view;
	char *cursor;

	view = calloc(1, sizeof(*view) + pod_len + mode_len);
	if (!view)
		return NULL;
	atomic_init(&view->refs, 1);
	cursor = (char *)(view + 1);
	view->pod_uid = put_str(&cursor, pod_uid);
	view->netns_mode = put_str(&cursor, mode);
	view->netns = msg->netns;
	view->mntns = msg->mntns;
	view->pidns = msg->pidns;
	view->all = msg->all;
	view->verified = msg->verified;
	view->host = msg->host;
	return view;
}

static struct rdmad_view *view_ref(struct rdmad_view *view)
{
	if (view)
		atomic_fetch_add_explicit(&view->refs, 1, memory_order_relaxed);
	return view;
}

static void view_unref(struct rdmad_view *view)
{
	if (view && atomic_fetch_sub_explicit(&view->refs, 1,
					      memory_order_acq_rel) == 1)
		free(view);
}

int snapshot_set_view(struct rdmad_snapshot *snap, const Rdmad__View *msg)
{
	struct rdmad_view *view = NULL;

	if (msg) {
		view = view_new(msg);
		if (!view)
			return -ENOMEM;
	}
	view_unref(snap->view);
	snap->view = view;
	return 0;
}

/* Room for @count devices and as many in the ready set. */
static struct rdmad_snapshot *snapshot_alloc(size_t count, uint64_t generation)
{
	struct rdmad_snapshot *snap;

	snap = calloc(1, sizeof(*snap) + 2 * count * sizeof(snap->devices[0]));
	if (!snap)
		return NULL;
	atomic_init(&snap->refs, 1);
	snap->generation = generation;
	snap->ready = &snap->devices[count];
	return snap;
}

/* The ready set, once the list is complete. */
static void index_ready(struct rdmad_snapshot *snap)
{
	size_t i;

	snap->n_ready = 0;
	for (i = 0; i < snap->count; i++)
		if (snap->devices[i]->ready)
			snap->ready[snap->n_ready++] = snap->devices[i];
}

struct rdmad_snapshot *snapshot_new_from_wire(Rdmad__Device *const *msgs,
					      size_t n, uint64_t generation,
					      unsigned int features)
{
	struct rdmad_snapshot *snap = snapshot_alloc(n, generation);
	size_t i;

	if (!snap)
		return NULL;
	for (i = 0; i < n; i++) {
		snap->devices[i] = snapshot_device_new(msgs[i], features);
		if (!snap->devices[i])
			goto fail;
		snap->count++;
	}
	index_ready(snap);
	return snap;
fail:
	rdmad_snapshot_unref(snap);
	return NULL;
}

struct rdmad_sriov *snapshot_sriov_new(const Rdmad__Sriov *msg)
{
	const char *pf = msg ? str_or_empty(msg->pf) : "";
	size_t len = strlen(pf) + 1;
	struct rdmad_sriov *sriov = calloc(1, sizeof(*sriov) + len);

	if (!sriov)
		return NULL;
	memcpy(sriov + 1, pf, len);
	sriov->pf = (const char *)(sriov + 1);
	sriov->expected = msg ? msg->expected : 0;
	sriov->ready = msg ? msg->ready : 0;
	return sriov;
}

void snapshot_sriov_free(struct rdmad_sriov *sriov)
{
	free(sriov);
}

/* Whether @a and @b are the same life of a device: its identity and
 * incarnation.  From a daemon before lifecycle, which sends no
 * incarnation, the rule of librdmad 1.0: the id, else the name (or, for
 * RENAMED, the old name). */
static bool same_life(const struct rdmad_device *a,
		      const struct rdmad_device *b, enum rdmad_event_type type)
{
	if (a->incarnation && b->incarnation)
		return a->incarnation == b->incarnation &&
		       strcmp(a->identity, b->identity) == 0;
	if (a->id[0] && b->id[0])
		return strcmp(a->id, b->id) == 0;
	if (type == RDMAD_EVENT_RENAMED && b->old_name[0])
		return strcmp(a->name, b->old_name) == 0;
	return strcmp(a->name, b->name) == 0;
}

/* The entry @device's event is about; @snap->count when none.  A return
 * takes the place of the AWAY entry of its identity. */
static size_t find_entry(const struct rdmad_snapshot *snap,
			 const struct rdmad_device *device,
			 enum rdmad_event_type type)
{
	size_t i;

	for (i = 0; i < snap->count; i++)
		if (same_life(snap->devices[i], device, type))
			return i;
	if (type != RDMAD_EVENT_RETURNED)
		return snap->count;
	for (i = 0; i < snap->count; i++)
		if (snap->devices[i]->away &&
		    strcmp(snap->devices[i]->identity, device->identity) == 0)
			return i;
	return snap->count;
}

/* Whether the event leaves the device listed. */
static bool event_keeps(enum rdmad_event_type type,
			const struct rdmad_device *device)
{
	switch (type) {
	case RDMAD_EVENT_ADDED:
	case RDMAD_EVENT_CHANGED:
	case RDMAD_EVENT_RENAMED:
	case RDMAD_EVENT_RESYNC:
	case RDMAD_EVENT_RETURNED:
	case RDMAD_EVENT_READY:
	case RDMAD_EVENT_UNREADY:
	case RDMAD_EVENT_REMOVING:
		return true;
	case RDMAD_EVENT_REMOVED:
		/* The daemon keeps a removed device listed while held, and
		 * an AWAY one until its deadline. */
		return device->away || device->holder_count > 0;
	case RDMAD_EVENT_RELEASED:
	case RDMAD_EVENT_EXPECTING:
	case RDMAD_EVENT_SETTLED:
		return false;
	}
	return false;
}

/* Apply one event to @snap, which has room for one more device. */
static void apply_in_place(struct rdmad_snapshot *snap,
			   enum rdmad_event_type type,
			   struct rdmad_device *device)
{
	bool keep;
	size_t i;

	/* EXPECTING and SETTLED: no entry changes. */
	if (!device)
		return;
	keep = event_keeps(type, device);
	i = find_entry(snap, device, type);
	if (i == snap->count) {
		if (keep)
			snap->devices[snap->count++] =
				snapshot_device_ref(device);
		return;
	}
	snapshot_device_unref(snap->devices[i]);
	if (keep) {
		snap->devices[i] = snapshot_device_ref(device);
		return;
	}
	snap->count--;
	memmove(&snap->devices[i], &snap->devices[i + 1],
		(snap->count - i) * sizeof(snap->devices[0]));
}

int snapshot_apply_events(const struct rdmad_snapshot *old,
			  const struct client_event *events, size_t n,
			  struct rdmad_snapshot **ret_snapshot)
{
	size_t old_count = old ? old->count : 0;
	struct rdmad_snapshot *snap;
	size_t i;

	snap = snapshot_alloc(old_count + n,
			      n ? events[n - 1].generation
				: rdmad_snapshot_get_generation(old));
	if (!snap)
		return -ENOMEM;
	/* Events say nothing of the view: it stays until a snapshot. */
	snap->view = view_ref(old ? old->view : NULL);
	for (i = 0; i < old_count; i++)
		snap->devices[snap->count++] =
			snapshot_device_ref(old->devices[i]);
	for (i = 0; i < n; i++)
		apply_in_place(snap, events[i].type, events[i].device);
	index_ready(snap);
	*ret_snapshot = snap;
	return 0;
}

int snapshot_apply_event(const struct rdmad_snapshot *old,
			 enum rdmad_event_type type,
			 struct rdmad_device *device, uint64_t generation,
			 struct rdmad_snapshot **ret_snapshot)
{
	struct client_event event = {
		.type = type,
		.device = device,
		.generation = generation,
	};

	return snapshot_apply_events(old, &event, 1, ret_snapshot);
}

RDMAD_EXPORT struct rdmad_snapshot *
rdmad_snapshot_ref(struct rdmad_snapshot *snapshot)
{
	if (snapshot)
		atomic_fetch_add_explicit(&snapshot->refs, 1,
					  memory_order_relaxed);
	return snapshot;
}

RDMAD_EXPORT struct rdmad_snapshot *
rdmad_snapshot_unref(struct rdmad_snapshot *snapshot)
{
	size_t i;

	if (!snapshot)
		return NULL;
	if (atomic_fetch_sub_explicit(&snapshot->refs, 1,
				      memory_order_acq_rel) != 1)
		return NULL;
	for (i = 0; i < snapshot->count; i++)
		snapshot_device_unref(snapshot->devices[i]);
	view_unref(snapshot->view);
	free(snapshot);
	return NULL;
}
