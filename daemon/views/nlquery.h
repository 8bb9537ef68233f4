/* SPDX-License-Identifier: MIT */
/*
 * Another network namespace's RDMA devices, asked of the kernel through an
 * AF_NETLINK/NETLINK_RDMA socket that a client made in that namespace and
 * passed us (SCM_RIGHTS): the kernel answers for the socket's namespace
 * (sock_net()), so nothing the client controls, such as a /proc/PID/root
 * path, decides what we read.
 *
 * The socket is not ours.  Its other holder may read from it while we
 * do, leave junk queued, join multicast groups, and (with CAP_NET_ADMIN
 * in its user namespace) unicast forged messages to its port.  So every
 * send and receive is MSG_DONTWAIT, queued junk is drained first and
 * counts against a bounded number of reads, and a message counts only
 * when it comes from the kernel (sender port 0, no multicast group), is
 * addressed to the socket's own port and carries the sequence number of
 * the request just sent (a fresh random one each time).  The kernel
 * answers a request inside sendmsg() and each further dump batch inside
 * the recvmsg() that emptied the previous one, so an honest exchange
 * never sees EAGAIN; EAGAIN means someone else took our replies.  What a
 * hostile holder can do is hide devices from its own view (by taking
 * replies or trimming them with a socket filter); it cannot add one.
 *
 * Plain recvmsg()/sendto() on the borrowed descriptor, with libnl for
 * building requests and parsing attributes: libnl's socket wraps a
 * descriptor it then owns and closes, and receives without MSG_DONTWAIT
 * unless O_NONBLOCK is set on the file, which the other holder shares.
 *
 * What netlink does not give, compared with sysfs_scan_all():
 *   - pci_address, driver, sriov_pf: empty; numa_node, sriov_numvfs: -1;
 *     vf: false.  The kernel's netlink names no bus parent.
 *   - port rate: empty; gid0_zero and netdev_up: -1 (unknown).
 *   - port netdev: the port's net device (ib_device_get_netdev()), and
 *     only while that net device is in the socket's namespace; sysfs
 *     shows GID 0's net device whatever its namespace.
 *   - port link_layer: from the device's protocol (its first port's):
 *     "ib", "opa" -> "InfiniBand"; "roce", "iw", "usnic" -> "Ethernet";
 *     without the attribute, "Ethernet" if the port has a net device,
 *     else empty.  A device with ports of both kinds (mlx4) gets its
 *     first port's for all.
 *   - id: "guid:<node_guid>", or "name:<name>" for a zero GUID, with
 *     "/name:<name>" appended to every device of the answer that shares
 *     its GUID with another.  sysfs says "pci:<address>" for a device
 *     with a PCI parent and "guid:<g>/netdev:<parent>" for rxe and siw,
 *     so the same device has another id here than in a sysfs scan:
 *     compare ids only between answers of this module.
 *   - reg_key: the kernel's device index plus one (0 stays "unknown" for
 *     record_same_registration()).  Indices are allocated cyclically
 *     (xa_alloc_cyclic() in assign_name()), so a re-registered device
 *     gets a new one; a move between namespaces keeps it.  An index
 *     comes back only after 2^31 registrations or a reload of ib_core.
 *   - phys_state "PortConfigurationTraining" does not fit port_record's
 *     field and stays empty, as sysfs.c leaves it.
 *   - mad_nodes: none (not asked; RDMA_NLDEV_CMD_GET_CHARDEV of type
 *     "umad" would name them port by port).
 */
#ifndef RDMAD_NLQUERY_H
#define RDMAD_NLQUERY_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sysfs.h"

/* Ports kept a device: the lowest numbered, as sysfs.c keeps. */
#define NLQUERY_MAX_PORTS 256

/*
 * Is @sock an AF_NETLINK socket of protocol NETLINK_RDMA (SOCK_RAW or
 * SOCK_DGRAM)?  0 and its network namespace's cookie (SO_NETNS_COOKIE,
 * Linux 5.14) in *@ret_netns_cookie (may be NULL: not asked);
 * -EPROTOTYPE for another kind of socket; -EOPNOTSUPP where the kernel
 * has no SO_NETNS_COOKIE; -ENOTSOCK, -EBADF.
 */
int nlquery_check_socket(int sock, uint64_t *ret_netns_cookie);

/*
 * The RDMA devices that the kernel shows in @sock's network namespace,
 * sorted by name, each with its ports and uverbs device (see above for
 * what each field holds).  @sock is not owned and never blocked on.
 * Returns 0 and a malloc'd array (free with records_free(); NULL
 * when there are none), or:
 *   -E2BIG      more than @max_devices devices (none returned; the caller
 *               can log and cap);
 *   -EAGAIN     a reply went missing: someone else is reading the socket;
 *   -EBUSY      more than a bounded number of datagrams arrived (junk
 *               queued or sent meanwhile);
 *   -EMSGSIZE   a reply did not fit the receive buffer;
 *   -EPROTOTYPE not a NETLINK_RDMA socket;
 *   a kernel error answering the device dump (-EBUSY also when a dump
 *   the other holder started is still running), or a socket error.
 * A device that goes away between the dump and the questions about it is
 * left out; one whose uverbs device cannot be asked keeps an empty one.
 */
int nlquery_devices(int sock, struct device_record **ret, size_t *ret_n,
		    size_t max_devices);

/*
 * Does @r, what nlquery_devices() returned, say that @sock did not carry
 * the kernel's answer to our own request back?  Every outcome but the
 * answer (0, -E2BIG) and a shortage of rdmad's own (-ENOMEM, -EINVAL):
 * junk past the bound, a reply taken or cut short, a dump the other
 * holder left running, a socket that cannot be asked.  Whoever lent the
 * socket can cause each of these again at will, so such a socket is not
 * worth asking again.  Inline so that link-time fakes of this module
 * apply the same rule.
 */
static inline bool nlquery_socket_spoiled(int r)
{
	return r < 0 && r != -E2BIG && r != -ENOMEM && r != -EINVAL;
}

/* ---- decoding one reply message (exposed for the unit test and the
 * fuzzer).  @buf holds one message (nlmsghdr and payload) of at least
 * its nlmsg_len bytes, 4-byte aligned.  Each returns 0; -ENOMSG for
 * another message type or an ACK; -EBADMSG when malformed or missing
 * what is needed; a kernel error reply gives its -errno.  @ret is
 * zeroed (numbers unknown: -1) first. ---- */

/* An RDMA_NLDEV_CMD_GET reply: one device. */
struct nlquery_dev {
	uint32_t index;	    /* RDMA_NLDEV_ATTR_DEV_INDEX */
	uint32_t last_port; /* its highest port number */
	char protocol[8];   /* "ib", "roce", "iw", "opa", "usnic"; or "" */
	/* name, node_guid, sys_image_guid, node_type, fw_ver, id and
	 * reg_key; no ports, no uverbs yet. */
	struct device_record dev;
};
int nlquery_parse_dev(const void *buf, size_t len, struct nlquery_dev *ret);

/* An RDMA_NLDEV_CMD_PORT_GET dump message: one port of device
 * *@ret_dev_index (port, state, phys_state, lid, netdev; no link_layer:
 * that comes from the device). */
int nlquery_parse_port(const void *buf, size_t len, uint32_t *ret_dev_index,
		       struct port_record *ret);

/* An RDMA_NLDEV_CMD_GET_CHARDEV reply. */
struct nlquery_chardev {
	char name[16]; /* "uverbs0" */
	dev_t dev;     /* 0 if absent */
	uint64_t abi;
};
int nlquery_parse_chardev(const void *buf, size_t len,
			  struct nlquery_chardev *ret);

#endif
