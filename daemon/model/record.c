/* SPDX-License-Identifier: MIT */
/*
 * Device records (record.h): what one look at sysfs or RDMA netlink
 * found of one registration, copied, compared and freed here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

void record_clear(struct device_record *dev)
{
	free(dev->ports);
	memset(dev, 0, sizeof(*dev));
	dev->numa_node = -1;
}

void records_free(struct device_record *devices, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(devices[i].ports);
	free(devices);
}

int record_copy(struct device_record *dst, const struct device_record *src)
{
	struct port_record *ports = NULL;

	if (src->nports) {
		ports = malloc(src->nports * sizeof(*ports));
		if (!ports)
			return -ENOMEM;
		memcpy(ports, src->ports, src->nports * sizeof(*ports));
	}
	*dst = *src;
	dst->ports = ports;
	return 0;
}

bool record_same_registration(uint64_t reg_a, const char *uverbs_a,
			      uint64_t reg_b, const char *uverbs_b)
{
	return reg_a && reg_a == reg_b &&
	       (!uverbs_a[0] || !uverbs_b[0] || !strcmp(uverbs_a, uverbs_b));
}

static bool ports_equal(const struct port_record *a,
			const struct port_record *b)
{
	return a->port == b->port && a->lid == b->lid &&
	       a->netdev_up == b->netdev_up && a->gid0_zero == b->gid0_zero &&
	       !strcmp(a->state, b->state) &&
	       !strcmp(a->phys_state, b->phys_state) &&
	       !strcmp(a->link_layer, b->link_layer) &&
	       !strcmp(a->rate, b->rate) && !strcmp(a->netdev, b->netdev);
}

static bool mad_nodes_equal(const struct device_record *a,
			    const struct device_record *b)
{
	if (a->nmad_nodes != b->nmad_nodes)
		return false;
	for (unsigned int i = 0; i < a->nmad_nodes; i++)
		if (strcmp(a->mad_nodes[i], b->mad_nodes[i]))
			return false;
	return true;
}

int record_equal(const struct device_record *a, const struct device_record *b)
{
	if (strcmp(a->name, b->name) || strcmp(a->uverbs, b->uverbs) ||
	    strcmp(a->id, b->id) || strcmp(a->node_guid, b->node_guid) ||
	    strcmp(a->sys_image_guid, b->sys_image_guid) ||
	    strcmp(a->node_type, b->node_type) ||
	    strcmp(a->fw_ver, b->fw_ver) ||
	    strcmp(a->pci_address, b->pci_address) ||
	    strcmp(a->driver, b->driver) || a->numa_node != b->numa_node ||
	    strcmp(a->sriov_pf, b->sriov_pf) || a->vf != b->vf ||
	    a->sriov_numvfs != b->sriov_numvfs || a->nports != b->nports ||
	    !mad_nodes_equal(a, b))
		return 0;
	for (unsigned int i = 0; i < a->nports; i++)
		if (!ports_equal(&a->ports[i], &b->ports[i]))
			return 0;
	return 1;
}

bool record_has_netdev(const struct device_record *dev, const char *ifname)
{
	for (unsigned int i = 0; i < dev->nports; i++)
		if (!strcmp(dev->ports[i].netdev, ifname))
			return true;
	return false;
}
