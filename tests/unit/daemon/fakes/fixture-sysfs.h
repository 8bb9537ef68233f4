/* SPDX-License-Identifier: MIT */
/*
 * Fake sysfs trees for tests and benchmarks: a temporary directory laid
 * out like /sys (devices/ with the real files, class/ with symlinks into
 * it), to be passed as the scanner's sysroot.  Helpers exit the process
 * on I/O failure: a fixture that cannot be built is a broken test.
 */
#ifndef RDMAD_FIXTURE_SYSFS_H
#define RDMAD_FIXTURE_SYSFS_H

#include <stddef.h>

#define FIXTURE_MAX_PORTS 4

struct fixture;

struct fixture_port {
	const char *state;	/* "4: ACTIVE" */
	const char *phys_state; /* "5: LinkUp" */
	const char *link_layer; /* "InfiniBand" */
	const char *rate;	/* "100 Gb/sec (4X EDR)" */
	const char *lid;	/* "0x5" */
	const char *netdev;	/* gid_attrs/ndevs/0; NULL: no file */
};

struct fixture_device {
	const char *name;      /* "mlx5_0" */
	int uverbs;	       /* N of uverbsN; -1 for none */
	const char *parent;    /* "0000:03:00.0"; NULL: virtual device */
	const char *bus;       /* "pci" (default when NULL) */
	const char *driver;    /* "mlx5_core" */
	const char *numa_node; /* "0" */
	const char *node_guid;
	const char *sys_image_guid;
	const char *node_type; /* "1: CA" */
	const char *fw_ver;
	unsigned int nports;
	struct fixture_port ports[FIXTURE_MAX_PORTS];
};

/* A new empty tree under $TMPDIR, else /dev/shm, else /tmp (the class
 * dirs and the class abi_version exist).  The root path is stable until
 * fixture_free(), which deletes the tree. */
struct fixture *fixture_new(void);
void fixture_free(struct fixture *fx);
const char *fixture_root(const struct fixture *fx);

/* Create a device: parent dir, ib device, uverbs device, class links. */
void fixture_add_device(struct fixture *fx, const struct fixture_device *d);
/* An ib_umad class device @name ("umad0", "issm0") where the kernel puts
 * it (beside @d's uverbs device), with its class link and attributes
 * ibdev and port (NULL: no such file). */
void fixture_add_mad(struct fixture *fx, const struct fixture_device *d,
		     const char *name, const char *ibdev, const char *port);
/* Remove a device's class links and directories (a hot unplug). */
void fixture_remove_device(struct fixture *fx, const char *name);

/* Write @len bytes to <root>/<relpath>, creating parent directories.
 * Paths may go through the class links, as in
 * "class/infiniband/mlx5_0/ports/1/state". */
void fixture_write(struct fixture *fx, const char *relpath, const void *data,
		   size_t len);
void fixture_write_str(struct fixture *fx, const char *relpath, const char *s);
/* Remove <root>/<relpath>, recursively. */
void fixture_rm(struct fixture *fx, const char *relpath);
void fixture_symlink(struct fixture *fx, const char *target,
		     const char *relpath);
void fixture_mkdir(struct fixture *fx, const char *relpath);

/* An mlx5-like IB CA with @nports active ports, PCI parent @pci. */
struct fixture_device fixture_mlx5(const char *name, int uverbs,
				   const char *pci, unsigned int nports);

#endif
