/* SPDX-License-Identifier: MIT */
/*
 * Departure (departure.h): what a look at sysfs means for a listed device
 * while the kernel takes it away.  The rules, one row each:
 *
 *   rule        the table lists       a look finds           so
 *   (1) torn    present, REMOVING,    it torn down           keep it as
 *       down    not in a full pass    (-EBADMSG)             listed, less
 *                                                            its uverbs
 *   (2) MAD     this registration     fewer MAD nodes,       keep the
 *       nodes   (route_life())        ib_umad's class there  listed, look
 *                                                            again
 *   (3) rename  present, uverbsN      its name gone,         look at NEW
 *                                     uverbsN names NEW      first
 *   (4) uverbs  present NAME,         uverbsN removed, and   REMOVING now
 *       gone    uverbsN               not back for NAME
 *
 * Why, from what the kernel does (docs/arrival-kernel.md):
 * (1) The kernel unregisters a device's clients first (the uverbs node
 *     goes, then, for a driver without disassociate_ucontext, a wait for
 *     every open context) and its ports and sysfs directory last (section
 *     2; devices.h "Removing").  A read in between finds the directory
 *     without ports.  Taken as it is, the full pass would end the device
 *     (REMOVED) while the kernel still waits for its contexts; kept, the
 *     table changes nothing until the name is gone.  Only such devices
 *     are read again.
 * (2) ib_umad removes a device's MAD nodes when the device is
 *     unregistered, a moment before ib_uverbs removes its uverbs node
 *     (clients leave in the reverse order of their registration, section
 *     2).  A look in between must not say CHANGED for them just before
 *     REMOVING.  Only rmmod ib_umad takes MAD nodes from a device that
 *     stays: it removes the nodes, then the class (no uevent for it), so
 *     a later look that finds the class gone drops them.
 * (3) A rename (rdma dev set OLD name NEW) moves the ib device only
 *     (KOBJ_MOVE, section 3): its uverbs node stays, and names the new
 *     name.  Looking at the new name first makes the look at the old one,
 *     whichever came first, a RENAMED and not a REMOVED then an ADDED.
 * (4) The uverbs node's removal is the first sign of an unregistration,
 *     before the uverbs wait, RDMA netlink's UNREGISTER and the device's
 *     own remove (sections 2 and 5).  Minors are reused at once: a
 *     removal read after the same uverbsN came back for a device of that
 *     name does not end it (its look tells whether it is a new
 *     registration); a node now another device's, or gone, does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "departure.h"
#include "route.h"

static bool in_pass(const struct device_record *devs, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(devs[i].id, id))
			return true;
	return false;
}

/* (1) Is @dev present, REMOVING, left out of the pass and torn down? */
static bool torn(const struct device *dev, const struct departure_sysfs *sys,
		 const struct device_record *devs, size_t n)
{
	return device_state(dev) == DEVICE_STATE_PRESENT &&
	       device_removing(dev) &&
	       !in_pass(devs, n, device_info(dev)->id) &&
	       sys->look(sys->arg, device_info(dev)->name) == -EBADMSG;
}

/* Append a copy of @info, without its uverbs, to the pass. */
static int append(struct device_record **devs, size_t *n,
		  const struct device_record *info)
{
	struct device_record *grown;

	grown = realloc(*devs, (*n + 1) * sizeof(**devs));
	if (!grown)
		return -ENOMEM;
	*devs = grown;
	if (record_copy(&grown[*n], info) < 0)
		return -ENOMEM;
	grown[*n].uverbs[0] = '\0';
	(*n)++;
	return 0;
}

int departure_keep_torn(const struct devices *table,
			const struct departure_sysfs *sys,
			struct device_record **devs, size_t *n)
{
	const struct device *dev;
	int kept = 0, r;

	for (dev = devices_first(table); dev; dev = devices_next(table, dev)) {
		if (!torn(dev, sys, *devs, *n))
			continue;
		r = append(devs, n, device_info(dev));
		if (r < 0)
			return r;
		kept++;
	}
	return kept;
}

bool departure_keep_mad_nodes(const struct devices *table,
			      const struct departure_sysfs *sys,
			      struct device_record *info)
{
	const struct device *dev = route_life(table, info);
	const struct device_record *known;

	if (!dev)
		return false;
	known = device_info(dev);
	if (info->nmad_nodes >= known->nmad_nodes ||
	    !sys->has_mad_class(sys->arg))
		return false;
	info->nmad_nodes = known->nmad_nodes;
	memcpy(info->mad_nodes, known->mad_nodes, sizeof(info->mad_nodes));
	return true;
}

bool departure_renamed(const struct devices *table,
		       const struct departure_sysfs *sys, const char *name,
		       char ret_name[RECORD_NAME_MAX])
{
	const struct device *dev = devices_find(table, name);

	return dev && device_state(dev) == DEVICE_STATE_PRESENT &&
	       device_info(dev)->uverbs[0] &&
	       sys->ibdev_of_uverbs(sys->arg, device_info(dev)->uverbs,
				    ret_name) >= 0 &&
	       strcmp(ret_name, name) != 0;
}

bool departure_uverbs_ends(const struct departure_sysfs *sys, const char *name,
			   const char *uverbs)
{
	char now[RECORD_NAME_MAX];

	return sys->ibdev_of_uverbs(sys->arg, uverbs, now) < 0 ||
	       strcmp(now, name) != 0;
}
