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

#include <stddef.h>

#include "rdmad.pb-c.h"

struct devices;
struct device;
enum devices_event;

/* One allocation per device; @old_name may be NULL.  -ENOMEM. */
int export_device(const struct device *dev, const char *old_name,
		  Rdmad__Device **ret_msg);
void export_device_free(Rdmad__Device *msg);

/* Every device of @table in its iteration order (name).  -ENOMEM. */
int export_table(const struct devices *table, Rdmad__Device ***ret_msgs,
		 size_t *ret_n);
void export_table_free(Rdmad__Device **msgs, size_t n);

Rdmad__EventType export_event_type(enum devices_event event);

#endif
