/* SPDX-License-Identifier: MIT */
/*
 * Routing (route.h): which listed device a char device, a netdev or a
 * look at sysfs names.  Each lookup walks the table in its stable order
 * (by name), so where two devices share a name (a removed one still held
 * and a new one) the answer is the same on every call.
 */
#include <stdbool.h>
#include <string.h>

#include "route.h"

static bool has_uverbs(const struct device_record *info, const char *uverbs)
{
	return !strcmp(info->uverbs, uverbs);
}

static bool has_mad_node(const struct device_record *info, const char *mad)
{
	for (unsigned int i = 0; i < info->nmad_nodes; i++)
		if (!strcmp(info->mad_nodes[i], mad))
			return true;
	return false;
}

/* The name of the first device that has char device @node (@has). */
static const char *owner(const struct devices *table, const char *node,
			 bool (*has)(const struct device_record *,
				     const char *))
{
	const struct device *dev;

	for (dev = devices_first(table); dev; dev = devices_next(table, dev))
		if (has(device_info(dev), node))
			return device_info(dev)->name;
	return NULL;
}

const char *route_uverbs(const struct devices *table, const char *uverbs)
{
	return owner(table, uverbs, has_uverbs);
}

const char *route_mad(const struct devices *table, const char *mad)
{
	return owner(table, mad, has_mad_node);
}

const char *route_present_uverbs(const struct devices *table,
				 const char *uverbs)
{
	const struct device *dev;

	for (dev = devices_first(table); dev; dev = devices_next(table, dev))
		if (device_state(dev) == DEVICE_STATE_PRESENT &&
		    has_uverbs(device_info(dev), uverbs))
			return device_info(dev)->name;
	return NULL;
}

const struct device *route_netdev(const struct devices *table,
				  const struct device *prev, const char *ifname)
{
	const struct device *dev;

	dev = prev ? devices_next(table, prev) : devices_first(table);
	for (; dev; dev = devices_next(table, dev))
		if (record_has_netdev(device_info(dev), ifname))
			return dev;
	return NULL;
}

const struct device *route_life(const struct devices *table,
				const struct device_record *info)
{
	const struct device *dev = devices_find_identity(table, info->id);

	if (!dev || device_state(dev) != DEVICE_STATE_PRESENT ||
	    !record_same_registration(device_info(dev)->reg_key,
				      device_info(dev)->uverbs, info->reg_key,
				      info->uverbs))
		return NULL;
	return dev;
}
