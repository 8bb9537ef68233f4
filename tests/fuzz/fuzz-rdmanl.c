/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the RDMA netlink decoders (netlink_parse_sys(),
 * netlink_parse_monitor()): what the kernel, or anyone able to send to
 * the socket, puts in a message.  Aborts if a decoded name is not a
 * terminated, plausible device name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netlink.h"
#include "scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *name, size_t size)
{
	if (strnlen(name, size) == size || strchr(name, '/'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netlink_rdma_sys sys;
	struct netlink_rdma_notice n;
	void *buf;

	/* Netlink messages arrive 4-byte aligned in a receive buffer. */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (netlink_parse_sys(buf, size, &sys) == 0 && sys.copy_on_fork &&
	    !sys.has_copy_on_fork)
		abort();
	if (netlink_parse_monitor(buf, size, &n) == 0) {
		check_name(n.ibdev, sizeof(n.ibdev));
		check_name(n.netdev, sizeof(n.netdev));
	}
	free(buf);
	return 0;
}
