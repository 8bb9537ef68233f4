/* SPDX-License-Identifier: MIT */
/*
 * The public getters of what a snapshot holds: its generation, its
 * devices and ready set, a device looked up by name, alias or identity,
 * and what a device, a port, a holder, a view and an SR-IOV count say.
 * Each reads list/'s structs (snapshot.h) and takes no lock: a snapshot
 * never changes once handed out.  A NULL handle or an index out of range
 * gets the answer rdmad.h gives for it, never a crash.
 */

#include <string.h>

#include "snapshot.h"

RDMAD_EXPORT uint64_t
rdmad_snapshot_get_generation(const struct rdmad_snapshot *snapshot)
{
	return snapshot ? snapshot->generation : 0;
}

RDMAD_EXPORT size_t
rdmad_snapshot_get_count(const struct rdmad_snapshot *snapshot)
{
	return snapshot ? snapshot->count : 0;
}

RDMAD_EXPORT const struct rdmad_device *
rdmad_snapshot_get_device(const struct rdmad_snapshot *snapshot, size_t index)
{
	if (!snapshot || index >= snapshot->count)
		return NULL;
	return snapshot->devices[index];
}

RDMAD_EXPORT const struct rdmad_device *
rdmad_snapshot_find_device(const struct rdmad_snapshot *snapshot,
			   const char *name)
{
	const struct rdmad_device *found = NULL, *dev;
	size_t i;

	if (!snapshot || !name)
		return NULL;
	for (i = 0; i < snapshot->count; i++) {
		dev = snapshot->devices[i];
		if (strcmp(dev->name, name) != 0)
			continue;
		/* An ended life that is still held may share the name. */
		if (dev->state == RDMAD_DEVICE_PRESENT)
			return dev;
		if (!found)
			found = dev;
	}
	return found;
}

RDMAD_EXPORT size_t
rdmad_snapshot_get_ready_count(const struct rdmad_snapshot *snapshot)
{
	return snapshot ? snapshot->n_ready : 0;
}

RDMAD_EXPORT const struct rdmad_device *
rdmad_snapshot_get_ready_device(const struct rdmad_snapshot *snapshot,
				size_t index)
{
	if (!snapshot || index >= snapshot->n_ready)
		return NULL;
	return snapshot->ready[index];
}

static bool has_name(const struct rdmad_device *dev, const char *name)
{
	return strcmp(dev->name, name) == 0;
}

static bool has_alias(const struct rdmad_device *dev, const char *alias)
{
	unsigned int i;

	for (i = 0; i < dev->n_aliases; i++)
		if (strcmp(dev->aliases[i], alias) == 0)
			return true;
	return false;
}

static bool has_identity(const struct rdmad_device *dev, const char *identity)
{
	return dev->identity[0] && strcmp(dev->identity, identity) == 0;
}

/* A name wins over an alias, an alias over an identity: an alias that
 * happens to be another device's kernel name does not hide that device. */
RDMAD_EXPORT const struct rdmad_device *
rdmad_snapshot_resolve(const struct rdmad_snapshot *snapshot,
		       const char *name_or_alias)
{
	static bool (*const matches[])(const struct rdmad_device *,
				       const char *) = {
		has_name,
		has_alias,
		has_identity,
	};
	const struct rdmad_device *dev;
	size_t m, i;

	if (!snapshot || !name_or_alias)
		return NULL;
	for (m = 0; m < sizeof(matches) / sizeof(matches[0]); m++)
		for (i = 0; i < snapshot->count; i++) {
			dev = snapshot->devices[i];
			if (dev->state == RDMAD_DEVICE_PRESENT &&
			    matches[m](dev, name_or_alias))
				return dev;
		}
	return NULL;
}

/* String getters: NULL for a NULL device. */
#define DEVICE_STR_GETTER(field)                                               \
	RDMAD_EXPORT const char *rdmad_device_get_##field(                     \
		const struct rdmad_device *device)                             \
	{                                                                      \
		return device ? device->field : NULL;                          \
	}

DEVICE_STR_GETTER(name)
DEVICE_STR_GETTER(old_name)
DEVICE_STR_GETTER(id)
DEVICE_STR_GETTER(uverbs)
DEVICE_STR_GETTER(node_guid)
DEVICE_STR_GETTER(sys_image_guid)
DEVICE_STR_GETTER(node_type)
DEVICE_STR_GETTER(fw_ver)
DEVICE_STR_GETTER(pci_address)
DEVICE_STR_GETTER(driver)
DEVICE_STR_GETTER(identity)
DEVICE_STR_GETTER(sriov_pf)
DEVICE_STR_GETTER(reason)

RDMAD_EXPORT int rdmad_device_get_numa_node(const struct rdmad_device *device)
{
	return device ? device->numa_node : -1;
}

RDMAD_EXPORT enum rdmad_device_state
rdmad_device_get_state(const struct rdmad_device *device)
{
	return device ? device->state : RDMAD_DEVICE_REMOVED;
}

RDMAD_EXPORT uint64_t
rdmad_device_get_generation(const struct rdmad_device *device)
{
	return device ? device->generation : 0;
}

RDMAD_EXPORT uint64_t
rdmad_device_get_incarnation(const struct rdmad_device *device)
{
	return device ? device->incarnation : 0;
}

RDMAD_EXPORT int rdmad_device_is_ready(const struct rdmad_device *device)
{
	return device && device->ready;
}

RDMAD_EXPORT int rdmad_device_is_removing(const struct rdmad_device *device)
{
	return device && device->removing;
}

RDMAD_EXPORT int rdmad_device_is_unusable(const struct rdmad_device *device)
{
	return device && device->unusable;
}

RDMAD_EXPORT uint64_t
rdmad_device_get_away_deadline(const struct rdmad_device *device)
{
	return device ? device->away_deadline : 0;
}

RDMAD_EXPORT unsigned int
rdmad_device_get_alias_count(const struct rdmad_device *device)
{
	return device ? device->n_aliases : 0;
}

RDMAD_EXPORT const char *
rdmad_device_get_alias(const struct rdmad_device *device, unsigned int index)
{
	if (!device || index >= device->n_aliases)
		return NULL;
	return device->aliases[index];
}

RDMAD_EXPORT unsigned int
rdmad_device_get_changed_count(const struct rdmad_device *device)
{
	return device ? device->n_changed : 0;
}

RDMAD_EXPORT const char *
rdmad_device_get_changed(const struct rdmad_device *device, unsigned int index)
{
	if (!device || index >= device->n_changed)
		return NULL;
	return device->changed[index];
}

RDMAD_EXPORT unsigned int
rdmad_device_get_port_count(const struct rdmad_device *device)
{
	return device ? device->n_ports : 0;
}

RDMAD_EXPORT const struct rdmad_port *
rdmad_device_get_port(const struct rdmad_device *device, unsigned int index)
{
	if (!device || index >= device->n_ports)
		return NULL;
	return &device->ports[index];
}

RDMAD_EXPORT unsigned int rdmad_port_get_number(const struct rdmad_port *port)
{
	return port ? port->number : 0;
}

#define PORT_STR_GETTER(field)                                                 \
	RDMAD_EXPORT const char *rdmad_port_get_##field(                       \
		const struct rdmad_port *port)                                 \
	{                                                                      \
		return port ? port->field : NULL;                              \
	}

PORT_STR_GETTER(state)
PORT_STR_GETTER(phys_state)
PORT_STR_GETTER(link_layer)
PORT_STR_GETTER(rate)
PORT_STR_GETTER(netdev)

RDMAD_EXPORT int rdmad_port_get_netdev_up(const struct rdmad_port *port)
{
	return port && port->netdev_up > 0;
}

RDMAD_EXPORT int rdmad_port_get_netdev_state(const struct rdmad_port *port)
{
	return port ? port->netdev_up : -1;
}

RDMAD_EXPORT unsigned int rdmad_port_get_lid(const struct rdmad_port *port)
{
	return port ? port->lid : 0;
}

RDMAD_EXPORT unsigned int
rdmad_device_get_holder_count(const struct rdmad_device *device)
{
	return device ? device->holder_count : 0;
}

static const struct rdmad_holder *holder_at(const struct rdmad_device *device,
					    unsigned int index)
{
	if (!device || index >= device->n_holders)
		return NULL;
	return &device->holders[index];
}

RDMAD_EXPORT const char *
rdmad_device_get_holder(const struct rdmad_device *device, unsigned int index,
			pid_t *ret_pid, uid_t *ret_uid)
{
	const struct rdmad_holder *holder = holder_at(device, index);

	if (!holder)
		return NULL;
	if (ret_pid)
		*ret_pid = holder->pid;
	if (ret_uid)
		*ret_uid = holder->uid;
	return holder->comm;
}

RDMAD_EXPORT uint64_t rdmad_device_get_holder_pidns(
	const struct rdmad_device *device, unsigned int index)
{
	const struct rdmad_holder *holder = holder_at(device, index);

	return holder ? holder->pidns : 0;
}

RDMAD_EXPORT uint64_t rdmad_device_get_holder_netns(
	const struct rdmad_device *device, unsigned int index)
{
	const struct rdmad_holder *holder = holder_at(device, index);

	return holder ? holder->netns : 0;
}

RDMAD_EXPORT uint64_t rdmad_device_get_holder_mntns(
	const struct rdmad_device *device, unsigned int index)
{
	const struct rdmad_holder *holder = holder_at(device, index);

	return holder ? holder->mntns : 0;
}

RDMAD_EXPORT const char *
rdmad_device_get_holder_pod_uid(const struct rdmad_device *device,
				unsigned int index)
{
	const struct rdmad_holder *holder = holder_at(device, index);

	return holder ? holder->pod_uid : NULL;
}

RDMAD_EXPORT const struct rdmad_view *
rdmad_snapshot_get_view(const struct rdmad_snapshot *snapshot)
{
	return snapshot ? snapshot->view : NULL;
}

RDMAD_EXPORT uint64_t rdmad_view_get_netns(const struct rdmad_view *view)
{
	return view ? view->netns : 0;
}

RDMAD_EXPORT uint64_t rdmad_view_get_mntns(const struct rdmad_view *view)
{
	return view ? view->mntns : 0;
}

RDMAD_EXPORT uint64_t rdmad_view_get_pidns(const struct rdmad_view *view)
{
	return view ? view->pidns : 0;
}

RDMAD_EXPORT const char *rdmad_view_get_pod_uid(const struct rdmad_view *view)
{
	return view ? view->pod_uid : NULL;
}

RDMAD_EXPORT const char *
rdmad_view_get_netns_mode(const struct rdmad_view *view)
{
	return view ? view->netns_mode : NULL;
}

RDMAD_EXPORT int rdmad_view_get_all(const struct rdmad_view *view)
{
	return view && view->all;
}

RDMAD_EXPORT int rdmad_view_get_verified(const struct rdmad_view *view)
{
	return view && view->verified;
}

RDMAD_EXPORT int rdmad_view_get_host(const struct rdmad_view *view)
{
	return view && view->host;
}

RDMAD_EXPORT const char *rdmad_sriov_get_pf(const struct rdmad_sriov *sriov)
{
	return sriov ? sriov->pf : NULL;
}

RDMAD_EXPORT unsigned int
rdmad_sriov_get_expected(const struct rdmad_sriov *sriov)
{
	return sriov ? sriov->expected : 0;
}

RDMAD_EXPORT unsigned int rdmad_sriov_get_ready(const struct rdmad_sriov *sriov)
{
	return sriov ? sriov->ready : 0;
}
