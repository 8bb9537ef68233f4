/* SPDX-License-Identifier: MIT */
/*
 * device -> Rdmad__Device.  Each message, its ports and its holders live
 * in one malloc'd block whose strings point into the device itself, so a
 * snapshot of 512 devices costs 512 allocations and no string copies.
 * At most WIRE_MAX_HOLDERS_LISTED holders are listed, with their count, so
 * that one device held from thousands of connections still encodes; and
 * only those the viewer may see (export.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "devices.h"
#include "export.h"
#include "lives.h"
#include "views.h"
#include "wire.h"

/* One block: the Device, the two pointer arrays, the sub-messages, then
 * the changed field names, the aliases and the mad nodes (all
 * pointer-aligned, so no padding). */
static size_t block_size(size_t nports, size_t nholders)
{
	return sizeof(Rdmad__Device) +
	       nports * (sizeof(Rdmad__Port *) + sizeof(Rdmad__Port)) +
	       nholders * (sizeof(Rdmad__Holder *) + sizeof(Rdmad__Holder)) +
	       (LIFE_FIELDS + ALIAS_MAX_PER_DEVICE + RECORD_MAX_MAD_NODES) *
		       sizeof(char *);
}

static void fill_port(Rdmad__Port *msg, const struct port_record *port)
{
	rdmad__port__init(msg);
	msg->port = port->port;
	msg->state = (char *)port->state;
	msg->phys_state = (char *)port->phys_state;
	msg->link_layer = (char *)port->link_layer;
	msg->rate = (char *)port->rate;
	msg->netdev = (char *)port->netdev;
	msg->netdev_up = port->netdev_up > 0;
	msg->netdev_unknown = port->netdev_up < 0;
	msg->lid = port->lid;
}

/* A pid is a number in a PID namespace: the viewer's own.  The
 * namespaces themselves only for those who see all. */
static void fill_holder(Rdmad__Holder *msg, const struct holder *h,
			const struct export_viewer *viewer)
{
	rdmad__holder__init(msg);
	msg->pid = viewer->all ? h->pid : h->ns_pid;
	msg->uid = h->uid;
	msg->comm = (char *)h->comm;
	if (!viewer->all)
		return;
	msg->pidns = h->ns.pid;
	msg->netns = h->ns.net;
	msg->mntns = h->ns.mnt;
	msg->pod_uid = (char *)h->pod_uid;
}

static Rdmad__DeviceState wire_state(const struct device *dev,
				     const struct export_viewer *viewer)
{
	switch (device_state(dev)) {
	case DEVICE_STATE_PRESENT:
		return RDMAD__DEVICE_STATE__DEVICE_STATE_PRESENT;
	case DEVICE_STATE_REMOVED:
		return RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED;
	case DEVICE_STATE_AWAY:
		break;
	}
	/* Older clients know no AWAY: for them it is gone. */
	return viewer->lifecycle ? RDMAD__DEVICE_STATE__DEVICE_STATE_AWAY
				 : RDMAD__DEVICE_STATE__DEVICE_STATE_REMOVED;
}

/* RETURNED: the names of the fields unlike the last life. */
static void fill_changed(Rdmad__Device *msg, const struct device *dev,
			 char **names)
{
	unsigned int mask = device_changed(dev);

	msg->changed = names;
	for (unsigned int i = 0; i < LIFE_FIELDS; i++)
		if (mask & (1u << i))
			names[msg->n_changed++] = (char *)life_field_name(i);
}

static void fill_aliases(Rdmad__Device *msg, const struct device *dev,
			 char **names)
{
	msg->aliases = names;
	msg->n_aliases = device_alias_count(dev);
	for (size_t i = 0; i < msg->n_aliases; i++)
		names[i] = (char *)device_alias(dev, i);
}

static void fill_mad_nodes(Rdmad__Device *msg, const struct device *dev,
			   char **names)
{
	const struct device_record *info = device_info(dev);

	msg->mad_nodes = names;
	msg->n_mad_nodes = info->nmad_nodes;
	for (size_t i = 0; i < msg->n_mad_nodes; i++)
		names[i] = (char *)info->mad_nodes[i];
}

static void fill_device(Rdmad__Device *msg, const struct device *dev,
			const char *old_name)
{
	const struct device_record *info = device_info(dev);

	msg->name = (char *)info->name;
	msg->uverbs = (char *)info->uverbs;
	msg->node_guid = (char *)info->node_guid;
	msg->sys_image_guid = (char *)info->sys_image_guid;
	msg->node_type = (char *)info->node_type;
	msg->fw_ver = (char *)info->fw_ver;
	msg->pci_address = (char *)info->pci_address;
	msg->numa_node = info->numa_node;
	msg->id = (char *)info->id;
	msg->driver = (char *)info->driver;
	msg->generation = device_generation(dev);
	if (old_name)
		msg->old_name = (char *)old_name;
	msg->identity = (char *)info->id;
	msg->incarnation = device_incarnation(dev);
	msg->ready = device_ready(dev);
	msg->removing = device_removing(dev);
	msg->away_deadline_ms = device_away_deadline(dev);
	msg->sriov_pf = (char *)info->sriov_pf;
}

const struct export_viewer export_viewer_all = {
	.all = true, .lifecycle = true, .wants_removing = true};

static bool may_see(const struct export_viewer *viewer, const struct holder *h)
{
	return viewer->all ||
	       (h->uid == viewer->uid && h->ns.pid == viewer->pidns);
}

/* The holders @viewer gets listed, up to WIRE_MAX_HOLDERS_LISTED. */
static size_t visible_holders(const struct device *dev,
			      const struct export_viewer *viewer)
{
	size_t total = device_holder_count(dev), n = 0;

	for (size_t i = 0; i < total && n < WIRE_MAX_HOLDERS_LISTED; i++)
		n += may_see(viewer, device_holder(dev, i));
	return n;
}

static void fill_holders(Rdmad__Device *msg, Rdmad__Holder *holders,
			 const struct device *dev,
			 const struct export_viewer *viewer)
{
	size_t total = device_holder_count(dev), n = 0;

	for (size_t i = 0; i < total && n < msg->n_holders; i++) {
		const struct holder *h = device_holder(dev, i);

		if (!may_see(viewer, h))
			continue;
		fill_holder(&holders[n], h, viewer);
		msg->holders[n] = &holders[n];
		n++;
	}
}

int export_device(const struct device *dev, const char *old_name,
		  const struct export_viewer *viewer, Rdmad__Device **ret_msg)
{
	const struct device_record *info = device_info(dev);
	size_t nports = info->nports;
	size_t nholders = visible_holders(dev, viewer);
	Rdmad__Device *msg = malloc(block_size(nports, nholders));
	Rdmad__Port *ports;
	Rdmad__Holder *holders;

	if (!msg)
		return -ENOMEM;
	rdmad__device__init(msg);
	fill_device(msg, dev, old_name);
	msg->state = wire_state(dev, viewer);
	msg->unusable = viewer->view && view_unusable(viewer->view, dev);
	msg->n_ports = nports;
	msg->ports = (Rdmad__Port **)(msg + 1);
	msg->n_holders = nholders;
	msg->holder_count = device_holder_count(dev);
	msg->holders = (Rdmad__Holder **)(msg->ports + nports);
	ports = (Rdmad__Port *)(msg->holders + nholders);
	holders = (Rdmad__Holder *)(ports + nports);
	for (size_t i = 0; i < nports; i++) {
		fill_port(&ports[i], &info->ports[i]);
		msg->ports[i] = &ports[i];
	}
	fill_holders(msg, holders, dev, viewer);
	fill_changed(msg, dev, (char **)(holders + nholders));
	fill_aliases(msg, dev, msg->changed + LIFE_FIELDS);
	fill_mad_nodes(msg, dev, msg->aliases + ALIAS_MAX_PER_DEVICE);
	*ret_msg = msg;
	return 0;
}

void export_device_free(Rdmad__Device *msg)
{
	free(msg);
}

int export_table(const struct devices *table,
		 const struct export_viewer *viewer, Rdmad__Device ***ret_msgs,
		 size_t *ret_n)
{
	size_t n = 0, cap = devices_count(table);
	Rdmad__Device **msgs = calloc(cap ? cap : 1, sizeof(*msgs));
	const struct device *dev;
	int r;

	if (!msgs)
		return -ENOMEM;
	for (dev = devices_first(table); dev && n < cap;
	     dev = devices_next(table, dev)) {
		if (viewer->view && !view_has(viewer->view, dev))
			continue;
		r = export_device(dev, NULL, viewer, &msgs[n]);
		if (r < 0) {
			export_table_free(msgs, n);
			return r;
		}
		n++;
	}
	*ret_msgs = msgs;
	*ret_n = n;
	return 0;
}

void export_table_free(Rdmad__Device **msgs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		export_device_free(msgs[i]);
	free(msgs);
}

Rdmad__EventType export_event_type(enum devices_event event,
				   const struct export_viewer *viewer)
{
	switch (event) {
	case DEVICES_EVENT_RETURNED:
		return viewer->lifecycle
			       ? RDMAD__EVENT_TYPE__EVENT_TYPE_RETURNED
			       : RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED;
	case DEVICES_EVENT_READY:
		return viewer->lifecycle
			       ? RDMAD__EVENT_TYPE__EVENT_TYPE_READY
			       : RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED;
	case DEVICES_EVENT_UNREADY:
		return viewer->lifecycle
			       ? RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY
			       : RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED;
	/* Older clients: a CHANGED of the PF keeps their generations whole. */
	case DEVICES_EVENT_EXPECTING:
		return viewer->lifecycle
			       ? RDMAD__EVENT_TYPE__EVENT_TYPE_EXPECTING
			       : RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED;
	case DEVICES_EVENT_SETTLED:
		return viewer->lifecycle
			       ? RDMAD__EVENT_TYPE__EVENT_TYPE_SETTLED
			       : RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED;
	case DEVICES_EVENT_REMOVING:
		if (viewer->wants_removing)
			return RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVING;
		return viewer->lifecycle
			       ? RDMAD__EVENT_TYPE__EVENT_TYPE_UNREADY
			       : RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED;
	case DEVICES_EVENT_ADDED:
		return RDMAD__EVENT_TYPE__EVENT_TYPE_ADDED;
	case DEVICES_EVENT_REMOVED:
		return RDMAD__EVENT_TYPE__EVENT_TYPE_REMOVED;
	case DEVICES_EVENT_CHANGED:
		return RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED;
	case DEVICES_EVENT_RENAMED:
		return RDMAD__EVENT_TYPE__EVENT_TYPE_RENAMED;
	case DEVICES_EVENT_RELEASED:
		return RDMAD__EVENT_TYPE__EVENT_TYPE_RELEASED;
	}
	return RDMAD__EVENT_TYPE__EVENT_TYPE_CHANGED;
}
