/* SPDX-License-Identifier: MIT */
/*
 * sysfs scanner: reads /sys/class/infiniband_verbs,
 * /sys/class/infiniband_mad and /sys/class/infiniband/<dev> into plain
 * structs.  Owns no file
 * descriptors between calls and never logs: a device that vanishes or
 * holds garbage mid-scan is reported through the return value and left
 * out, never half filled in.
 */
#ifndef RDMAD_SYSFS_H
#define RDMAD_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SYSFS_NAME_MAX 64
/* ib_umad's char devices kept a device: umadN and issmN of each port, for
 * its lowest numbered ports (a switch has one, port 0; an HCA one or
 * two). */
#define SYSFS_MAD_PORTS 8
#define SYSFS_MAX_MAD_NODES (2 * SYSFS_MAD_PORTS)
#define SYSFS_MAD_NAME_MAX 16 /* "umad0", with its NUL */

struct sysfs_port {
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

struct sysfs_device {
	char name[SYSFS_NAME_MAX]; /* ib device name, "mlx5_0" */
	char uverbs[16];	   /* "uverbs0", empty if none */
	dev_t uverbs_dev;	   /* its device number (231:192); 0: unknown */
	char id[160];		   /* stable identity, see sysfs.c */
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
	 * with the uverbs name, see sysfs_same_registration(). */
	uint64_t reg_key;
	unsigned int nports;
	struct sysfs_port *ports; /* malloc'd, nports entries */
	/* ib_umad's char devices of its ports ("umad0", "issm0", ...: their
	 * names under /dev/infiniband), in port order, umad before issm
	 * (which only InfiniBand ports have); none where ib_umad is not
	 * loaded or the ports have no MADs (iWARP, EFA). */
	unsigned int nmad_nodes;
	char mad_nodes[SYSFS_MAX_MAD_NODES][SYSFS_MAD_NAME_MAX];
};

/*
 * Scan every device under @sysroot (normally "/sys").  Returns 0 and a
 * malloc'd array (free with sysfs_devices_free()), or -errno when the
 * class directory cannot be read at all.  Devices that vanish or are
 * unreadable mid-scan are skipped; *ret_skipped (may be NULL) counts them.
 * When descriptors or memory run out anywhere in the scan (see
 * sysfs_is_starvation()) the whole scan fails with that error: a device
 * we could not read has not left.
 */
/* EMFILE, ENFILE or ENOMEM (as -errno): the machine, not the device, is
 * the problem; try again later and keep what is known. */
bool sysfs_is_starvation(int r);

int sysfs_scan_all(const char *sysroot, struct sysfs_device **ret_devices,
		   size_t *ret_n, size_t *ret_skipped);

/* Scan one ib device by name.  -ENOENT if it is gone, -EBADMSG if what is
 * there is unusable (half-created, garbage), a starvation error when
 * descriptors or memory ran out; @ret is left zeroed then. */
int sysfs_scan_device(const char *sysroot, const char *name,
		      struct sysfs_device *ret);

/* Is /sys/class/@class there (its module loaded)? */
bool sysfs_has_class(const char *sysroot, const char *class);
/* Is char device @uverbs ("uverbs3") in /sys/class/infiniband_verbs? */
bool sysfs_has_uverbs(const char *sysroot, const char *uverbs);

/* Find the ib device name behind a uverbs name ("uverbs3" -> "mlx5_1"). */
int sysfs_ibdev_of_uverbs(const char *sysroot, const char *uverbs,
			  char ret_name[SYSFS_NAME_MAX]);

void sysfs_device_clear(struct sysfs_device *dev);
void sysfs_devices_free(struct sysfs_device *devices, size_t n);
/* Deep copy; -ENOMEM. */
int sysfs_device_copy(struct sysfs_device *dst, const struct sysfs_device *src);
/*
 * Are two looks at a device the same registration?  The same directory
 * inode (sysfs's are never reused: kernfs numbers them with a
 * generation) and, where both have one, the same uverbs device: a
 * filesystem that reuses inodes (umockdev's fake sysfs on ext4) still
 * tells a re-plug by its new uverbs number.  An unknown inode (0) is
 * never the same registration.
 */
bool sysfs_same_registration(uint64_t reg_a, const char *uverbs_a,
			     uint64_t reg_b, const char *uverbs_b);

/* How many MAD nodes ib_umad gives @dev once it is loaded: a umadN for
 * each port of a channel adapter (node type CA: InfiniBand and RoCE;
 * rdma_cap_ib_mad()), and an issmN beside it for InfiniBand ports, and for
 * RoCE ports too where @roce_issm (Linux before 6.11 makes one for every
 * port; later ones only where rdma_cap_ib_smi()).  0 for other nodes. */
unsigned int sysfs_mad_nodes_expected(const struct sysfs_device *dev,
				      bool roce_issm);

/* What @dev's MAD nodes say of the kernel's issmN for RoCE ports: 1 it
 * makes them (more issmN than InfiniBand ports), 0 it does not (a umadN
 * for every port and an issmN for the InfiniBand ones only: trust it
 * only once the device had time to get them), -1 they cannot tell (no
 * RoCE port, or other nodes missing). */
int sysfs_roce_issm_seen(const struct sysfs_device *dev);

/* True when two scans of a device differ in anything a client sees. */
int sysfs_device_equal(const struct sysfs_device *a,
		       const struct sysfs_device *b);

#endif
