/* SPDX-License-Identifier: MIT */
/*
 * Departure: what a look at sysfs means for a device the table lists
 * while the kernel takes it away (unregisters, renames, or unloads one of
 * its clients).  The kernel tears a device down in steps, and a look
 * between two steps sees a device that is neither there nor gone
 * (docs/arrival-kernel.md, sections 2 and 3): these rules keep such a
 * look from telling clients something the next step takes back.  The
 * rules are the table at the top of departure.c.
 *
 * Pure: no descriptors, no timers, no logging.  What a rule needs of
 * sysfs it asks through struct departure_sysfs, only when it needs it;
 * scan.c reads sysfs for it, tests script the answers.
 */
#ifndef RDMAD_DEPARTURE_H
#define RDMAD_DEPARTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "devices.h"
#include "record.h"

/* What the rules ask of sysfs now. */
struct departure_sysfs {
	void *arg;
	/* sysfs_scan_device()'s verdict on ib device @name: 0, -ENOENT,
	 * -EBADMSG (torn down or half made), or another -errno. */
	int (*look)(void *arg, const char *name);
	/* Is ib_umad's class (/sys/class/infiniband_mad) there? */
	bool (*has_mad_class)(void *arg);
	/* The ib device that char device @uverbs names now; -errno. */
	int (*ibdev_of_uverbs)(void *arg, const char *uverbs,
			       char ret_name[RECORD_NAME_MAX]);
};

/* (1) A full pass (@devs, @n entries, realloc'd) that left out a present,
 * REMOVING device because its read is torn down gets it back as the
 * table lists it, without its uverbs.  Returns how many it got back;
 * -ENOMEM (@devs then holds what it had, and whatever was added). */
int departure_keep_torn(const struct devices *table,
			const struct departure_sysfs *sys,
			struct device_record **devs, size_t *n);
/* (2) A look at a registration the table lists (route_life()) with fewer
 * MAD nodes than listed, while ib_umad's class is there, keeps the
 * listed ones: true, and the caller looks again a moment later. */
bool departure_keep_mad_nodes(const struct devices *table,
			      const struct departure_sysfs *sys,
			      struct device_record *info);
/* (3) Ib device @name is gone from sysfs: where it was a present device
 * whose uverbs now names another device, it was renamed; that name in
 * @ret_name: true. */
bool departure_renamed(const struct devices *table,
		       const struct departure_sysfs *sys, const char *name,
		       char ret_name[RECORD_NAME_MAX]);
/* (4) The kernel removed char device @uverbs of present device @name:
 * true when that ends it (REMOVING, devices_uverbs_gone()), false when
 * sysfs already has @uverbs again for a device of that name. */
bool departure_uverbs_ends(const struct departure_sysfs *sys, const char *name,
			   const char *uverbs);

#endif
