/* SPDX-License-Identifier: MIT */
/*
 * Routing: which device the table lists for a name an event source knows
 * (a uverbs or ib_umad char device, a netdev) or for a look at sysfs (a
 * registration under any name).  Event sources know char devices and
 * netdevs, the table knows ib devices; scan.c asks here which device to
 * rescan.  Pure lookups on the table: no descriptors, no sysfs, no
 * logging.
 */
#ifndef RDMAD_ROUTE_H
#define RDMAD_ROUTE_H

#include "devices.h"
#include "record.h"

/* The name of the first device, in any state, with uverbs char device
 * @uverbs ("uverbs3"); NULL when none has it. */
const char *route_uverbs(const struct devices *table, const char *uverbs);
/* The name of the first device, in any state, with ib_umad char device
 * @mad ("umad0", "issm0"); NULL when none has it. */
const char *route_mad(const struct devices *table, const char *mad);
/* The name of the present device with uverbs char device @uverbs; NULL
 * when no present device has it. */
const char *route_present_uverbs(const struct devices *table,
				 const char *uverbs);
/* The next device after @prev (NULL: from the first) with a port on
 * netdev @ifname, or NULL at the end. */
const struct device *route_netdev(const struct devices *table,
				  const struct device *prev,
				  const char *ifname);
/* The present device the table lists as @info's registration, under any
 * name (a rename is the same life), or NULL: not a new registration
 * plugged while the last is still listed, nor one coming back while a
 * held or away life of it waits (record_same_registration()). */
const struct device *route_life(const struct devices *table,
				const struct device_record *info);

#endif
