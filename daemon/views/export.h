/* SPDX-License-Identifier: MIT */
/*
 * Conversion of the device table's objects into wire messages
 * (Rdmad__Device) for snapshots and events.  An exported message borrows
 * every string from the device it came from: encode it before the device
 * can change or go (the table only changes between event-loop callbacks,
 * and a freed device's last event is encoded inside the listener call).
 */
#ifndef RDMAD_EXPORT_H
#define RDMAD_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rdmad.pb-c.h"

struct devices;
struct view;
struct device;
enum devices_event;

/*
 * Who a message is for.  Root in the host's namespaces and the admin group
 * see every holder, with its namespaces; any other user sees the pids (in
 * its own PID namespace) and comms of its own holders in its own PID
 * namespace only, and the others as part of holder_count (PROTOCOL.md,
 * "Hold and Release" and section 8b).
 */
struct export_viewer {
	bool all;
	uid_t uid;	/* when !all */
	uint64_t pidns; /* when !all; 0: unknown, as the holders' may be */
	bool lifecycle; /* said "lifecycle" in Hello: AWAY, RETURNED, ... */
	bool wants_removing; /* said "removing": REMOVING as it is */
	/* Its view (views.h): which devices, which are unusable.  NULL:
	 * every device, none unusable. */
	const struct view *view;
};

extern const struct export_viewer export_viewer_all; /* with lifecycle */

/* One allocation per device; @old_name may be NULL.  -ENOMEM. */
int export_device(const struct device *dev, const char *old_name,
		  const struct export_viewer *viewer, Rdmad__Device **ret_msg);
void export_device_free(Rdmad__Device *msg);

/* Every device of @table in @viewer's view, in the table's iteration
 * order (name).  -ENOMEM. */
int export_table(const struct devices *table,
		 const struct export_viewer *viewer, Rdmad__Device ***ret_msgs,
		 size_t *ret_n);
void export_table_free(Rdmad__Device **msgs, size_t n);

/* The wire type of @event for @viewer: a client without the lifecycle
 * feature gets ADDED for RETURNED and CHANGED for READY/UNREADY; one
 * without the removing feature UNREADY (lifecycle) or CHANGED for
 * REMOVING. */
Rdmad__EventType export_event_type(enum devices_event event,
				   const struct export_viewer *viewer);

#endif
