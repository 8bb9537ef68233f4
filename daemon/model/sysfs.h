/* SPDX-License-Identifier: MIT */
/*
 * sysfs scanner: reads /sys/class/infiniband_verbs,
 * /sys/class/infiniband_mad and /sys/class/infiniband/<dev> into device
 * records (record.h).  Owns no file descriptors between calls and never
 * logs: a device that vanishes or
 * holds garbage mid-scan is reported through the return value and left
 * out, never half filled in.
 */
#ifndef RDMAD_SYSFS_H
#define RDMAD_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"

/* EMFILE, ENFILE or ENOMEM (as -errno): the machine, not the device, is
 * the problem; try again later and keep what is known. */
bool sysfs_is_starvation(int r);

/*
 * Scan every device under @sysroot (normally "/sys").  Returns 0 and a
 * malloc'd array (free with records_free()), or -errno when the
 * class directory cannot be read at all.  Devices that vanish or are
 * unreadable mid-scan are skipped; *ret_skipped (may be NULL) counts them.
 * When descriptors or memory run out anywhere in the scan (see
 * sysfs_is_starvation()) the whole scan fails with that error: a device
 * we could not read has not left.
 */
int sysfs_scan_all(const char *sysroot, struct device_record **ret_devices,
		   size_t *ret_n, size_t *ret_skipped);

/* Scan one ib device by name.  -ENOENT if it is gone, -EBADMSG if what is
 * there is unusable (half-created, garbage), a starvation error when
 * descriptors or memory ran out; @ret is left zeroed then. */
int sysfs_scan_device(const char *sysroot, const char *name,
		      struct device_record *ret);

/* Is /sys/class/@class there (its module loaded)? */
bool sysfs_has_class(const char *sysroot, const char *class);
/* Is char device @uverbs ("uverbs3") in /sys/class/infiniband_verbs? */
bool sysfs_has_uverbs(const char *sysroot, const char *uverbs);

/* Find the ib device name behind a uverbs name ("uverbs3" -> "mlx5_1"). */
int sysfs_ibdev_of_uverbs(const char *sysroot, const char *uverbs,
			  char ret_name[RECORD_NAME_MAX]);

#endif
