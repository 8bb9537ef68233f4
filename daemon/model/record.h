/* SPDX-License-Identifier: MIT */
/*
 * A device record: what rdmad knows of one registration of an RDMA device
 * at one look, from sysfs (sysfs.c, rdmad's own network namespace) or from
 * RDMA netlink (nlquery.c, another one).  The device table (devices.c)
 * keeps the last record of each device.
 *
 * Ownership: a record owns its ports array (malloc'd, nports entries);
 * everything else is inline.  record_clear() frees it and empties the
 * record, record_copy() copies it deep.  Whoever a record is handed to
 * (devices_apply_one(), devices_apply_scan()) takes its ports, also on
 * failure, and leaves it without them.
 */
#ifndef RDMAD_RECORD_H
#define RDMAD_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RECORD_NAME_MAX 64
/* ib_umad's char devices kept a device: umadN and issmN of each port, for
 * its lowest numbered ports (a switch has one, port 0; an HCA one or
 * two). */
#define RECORD_MAD_PORTS 8
#define RECORD_MAX_MAD_NODES (2 * RECORD_MAD_PORTS)
#define RECORD_MAD_NAME_MAX 16 /* "umad0", with its NUL */

struct port_record {
	uint32_t port;
	char state[16];	     /* "ACTIVE" (the "4: " prefix stripped) */
	char phys_state[24]; /* "LinkUp" */
	char link_layer[16]; /* "InfiniBand", "Ethernet" */
	char rate[48];	     /* "100 Gb/sec (4X EDR)" */
	char netdev[16];     /* IFNAMSIZ; from gid_attrs/ndevs/0 */
	uint32_t lid;
	int netdev_up; /* -1 unknown; filled by the device table */
	int gid0_zero; /* GID 0 all zeros: 1, set: 0, unreadable: -1 */
};

struct device_record {
	char name[RECORD_NAME_MAX]; /* ib device name, "mlx5_0" */
	char uverbs[16];	    /* "uverbs0", empty if none */
	dev_t uverbs_dev; /* its device number (231:192); 0: unknown */
	char id[160];	  /* stable identity, see sysfs.c */
	char node_guid[20];
	char sys_image_guid[20];
	char node_type[16]; /* "CA", "RNIC", "switch", "router" ... */
	char fw_ver[64];
	char pci_address[32]; /* empty when not a PCI device */
	char driver[32];      /* driver of the parent device */
	int numa_node;	      /* -1 unknown */
	char sriov_pf[32];    /* an SR-IOV VF: its PF (device/physfn) */
	int sriov_numvfs;     /* a PF: its sriov_numvfs; else -1 */
	/* A VF: an SR-IOV VF here (sriov_pf), or a PCI function on Hyper-V's
	 * VMBus, as Azure's VFs are (their PF is on the host). */
	bool vf;
	/* This registration: the inode of the device's sysfs directory,
	 * which the kernel makes anew each time it registers the device;
	 * with the uverbs name, see record_same_registration(). */
	uint64_t reg_key;
	unsigned int nports;
	struct port_record *ports; /* malloc'd, nports entries */
	/* ib_umad's char devices of its ports ("umad0", "issm0", ...: their
	 * names under /dev/infiniband), in port order, umad before issm
	 * (which only InfiniBand ports have); none where ib_umad is not
	 * loaded or the ports have no MADs (iWARP, EFA). */
	unsigned int nmad_nodes;
	char mad_nodes[RECORD_MAX_MAD_NODES][RECORD_MAD_NAME_MAX];
};

/* Free @dev's ports and empty it (numa_node -1: unknown). */
void record_clear(struct device_record *dev);
/* Free @n records and the array. */
void records_free(struct device_record *devices, size_t n);
/* Deep copy; -ENOMEM. */
int record_copy(struct device_record *dst, const struct device_record *src);
/* 1 when two looks at a device are alike in everything a client sees,
 * else 0. */
int record_equal(const struct device_record *a, const struct device_record *b);
/*
 * Are two looks at a device the same registration?  The same directory
 * inode (sysfs's are never reused: kernfs numbers them with a
 * generation) and, where both have one, the same uverbs device: a
 * filesystem that reuses inodes (umockdev's fake sysfs on ext4) still
 * tells a re-plug by its new uverbs number.  An unknown inode (0) is
 * never the same registration.
 */
bool record_same_registration(uint64_t reg_a, const char *uverbs_a,
			      uint64_t reg_b, const char *uverbs_b);
/* Has @dev a port on netdev @ifname? */
bool record_has_netdev(const struct device_record *dev, const char *ifname);

#endif
