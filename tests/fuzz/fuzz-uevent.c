/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for udev_decode(): a uevent's properties, all outside
 * input, mapped to the ib device or netdev to rescan.  The input is up to
 * six NUL-separated fields (action, subsystem, sysname, DEVPATH_OLD, the
 * ibdev attribute, INTERFACE_OLD); a field of a single 0x01 byte stands
 * for a property that is absent.  Aborts if a decoded name could escape
 * a sysfs directory or overflow its buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"
#include "udev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *name, bool may_be_empty)
{
	size_t len = strnlen(name, 64);

	if (len == 64 || (len == 0 && !may_be_empty))
		abort();
	if (strchr(name, '/') || strcmp(name, "..") == 0 ||
	    strcmp(name, ".") == 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *fields[6] = {NULL};
	struct udev_uevent ev;
	struct udev_target t;
	char *copy, *p, *end;
	size_t i;

	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	p = copy;
	end = copy + size;
	for (i = 0; i < 6 && p <= end; i++) {
		fields[i] = strcmp(p, "\x01") == 0 ? NULL : p;
		p += strlen(p) + 1;
	}
	ev = (struct udev_uevent){
		.action = fields[0],
		.subsystem = fields[1],
		.sysname = fields[2],
		.devpath_old = fields[3],
		.ibdev = fields[4],
		.ifname_old = fields[5],
	};
	if (udev_decode(&ev, &t) == 0) {
		check_name(t.name, false);
		check_name(t.old_name, true);
	}
	free(copy);
	return 0;
}
