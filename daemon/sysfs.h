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

/*
 * Scan every device under @sysroot (normally "/sys").  Returns 0 and a
 * malloc'd array (free with records_free()), or -errno when the
 * class directory cannot be read at all.  Devices that vanish or are
 * unreadable mid-scan are skipped; *ret_skipped (may be NULL) counts them.
 * When descriptors or memory run out anywhere in the scan (see
 * sysfs_is_starvation()) the whole scan fails with that error: a device
 * we could not read has not left.
 */
/* EMFILE, ENFILE or ENOMEM (as -errno): the machine, not the device, is
 * the problem; try again later and keep what is known. */
bool sysfs_is_starvation(int r);

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

/* How many MAD nodes ib_umad gives @dev once it is loaded: a umadN for
 * each port of a channel adapter (node type CA: InfiniBand and RoCE;
 * rdma_cap_ib_mad()), and an issmN beside it for InfiniBand ports, and for
 * RoCE ports too where @roce_issm (Linux before 6.11 makes one for every
 * port; later ones only where rdma_cap_ib_smi()).  0 for other nodes. */
unsigned int sysfs_mad_nodes_expected(const struct device_record *dev,
				      bool roce_issm);

/* What @dev's MAD nodes say of the kernel's issmN for RoCE ports: 1 it
 * makes them (more issmN than InfiniBand ports), 0 it does not (a umadN
 * for every port and an issmN for the InfiniBand ones only: trust it
 * only once the device had time to get them), -1 they cannot tell (no
 * RoCE port, or other nodes missing). */
int sysfs_roce_issm_seen(const struct device_record *dev);

#endif
