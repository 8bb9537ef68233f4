/* SPDX-License-Identifier: MIT */
/*
 * sysfs scanner.  Reads /sys/class/infiniband/<dev> (guids, node type,
 * firmware, ports), /sys/class/infiniband_verbs/uverbsN (the char
 * device behind each ib device) and /sys/class/infiniband_mad/umadN and
 * issmN (ib_umad's char devices of its ports) into struct device_record.
 *
 * Everything here is outside input: files vanish mid-scan, hold garbage or
 * are half written while a device is being created.  Every file is read
 * with one bounded read() (opened O_NONBLOCK, so a FIFO cannot stall us);
 * values must be printable ASCII and fit their field.  At most
 * SYSFS_MAX_DEVICES devices a scan and SYSFS_MAX_PORTS ports a device,
 * and the mad devices of its lowest RECORD_MAD_PORTS ports; a mad device
 * whose name, ibdev or port is unusable is left out alone.  A
 * device read half created or half torn down (node_guid or node_type
 * unusable, no port, rxe's "(null)" parent) is left out (-EBADMSG,
 * counted as skipped) so that a later rescan picks it up whole and no
 * identity is ever built from a partial read; any other unusable value
 * becomes empty (numbers -1 or 0).
 *
 * Identity (device_record.id).  Names are reused and renamed, so the id is
 * built from what survives a rename:
 *   - a device with a parent (its "device" link): "<bus>:<parent name>",
 *     e.g. "pci:0000:03:00.0".  The bus is the basename of the parent's
 *     "subsystem" link, guessed from the name's shape when that is absent.
 *     If the parent carries more than one ib device (its "infiniband"
 *     directory lists several), "/guid:<node_guid>" is appended; this is
 *     read from the parent so a one-device scan agrees with a full scan.
 *   - a virtual device (rxe, siw; no parent): "guid:<node_guid>", with
 *     "/netdev:<parent attribute>" when it names its net device (two rxe
 *     on a bond and its slave share a MAC-derived GUID).
 *   - a virtual device with a zero node_guid: "name:<name>".
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "name.h"
#include "sysfs.h"

/* Bounds on what one scan reads: a sysfs attribute we keep is short. */
#define ATTR_READ_MAX 128
#define SYSFS_MAX_PORTS 256
#define SYSFS_MAX_DEVICES 8192
/* ib_umad's class devices one scan reads at most: two a port. */
#define SYSFS_MAX_MAD_ENTRIES (4 * SYSFS_MAX_DEVICES)
#define ZERO_GUID "0000:0000:0000:0000"

struct uverbs_map_entry {
	char ibdev[RECORD_NAME_MAX];
	char uverbs[16];
	dev_t dev;
};

struct uverbs_map {
	struct uverbs_map_entry *entries;
	size_t n;
};

/* One of ib_umad's char devices: umadN or issmN of @port of @ibdev. */
struct mad_entry {
	char ibdev[RECORD_NAME_MAX];
	char name[RECORD_MAD_NAME_MAX];
	uint32_t port;
};

struct mad_map {
	struct mad_entry *entries; /* sorted, see compare_mad() */
	size_t n;
};

static bool printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

/* A name we accept for an ib device, uverbs device or port directory,
 * that fits @max bytes with its NUL. */
static bool valid_name(const char *name, size_t max)
{
	size_t len = strnlen(name, max);

	return len < max && rdmad_name_valid(name, len);
}

/*
 * Descriptors or memory ran out while scanning (EMFILE, ENFILE, ENOMEM):
 * the first such error of the scan in progress, else 0.  A device we could
 * not read for want of a descriptor has not left, so any one makes the
 * whole scan fail and the caller keep what it had.  Errors of optional
 * files are otherwise swallowed, hence this flag rather than return
 * values.  The daemon scans from its one thread.
 */
static int starved;

bool sysfs_is_starvation(int r)
{
	return r == -EMFILE || r == -ENFILE || r == -ENOMEM;
}

static int note_starvation(int r)
{
	if (sysfs_is_starvation(r) && !starved)
		starved = r;
	return r;
}

/* openat(), noting starvation. */
static int open_at(int dirfd, const char *path, int flags)
{
	int fd = openat(dirfd, path, flags);

	if (fd < 0)
		note_starvation(-errno);
	return fd;
}

/*
 * Read one attribute into @buf (size @size) with a single bounded read.
 * The trailing newline and spaces are stripped.  -ENODATA if empty,
 * -EBADMSG if not printable ASCII, -EOVERFLOW if it does not fit.
 */
static int read_attr(int dirfd, const char *path, char *buf, size_t size)
{
	char tmp[ATTR_READ_MAX];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	fd = open_at(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	n = read(fd, tmp, sizeof(tmp));
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	if ((size_t)n == sizeof(tmp))
		return -EOVERFLOW;
	while (n > 0 && isspace((unsigned char)tmp[n - 1]))
		n--;
	if (n == 0)
		return -ENODATA;
	if (!printable(tmp, n))
		return -EBADMSG;
	if ((size_t)n >= size)
		return -EOVERFLOW;
	memcpy(buf, tmp, n);
	buf[n] = '\0';
	return 0;
}

/* Basename of a symlink's target, e.g. "device" -> "0000:03:00.0". */
static int read_link_base(int dirfd, const char *path, char *buf, size_t size)
{
	char target[PATH_MAX];
	const char *base;
	ssize_t n;

	buf[0] = '\0';
	n = readlinkat(dirfd, path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (!valid_name(base, size))
		return -EBADMSG;
	strcpy(buf, base);
	return 0;
}

/* Parse "<number>: <text>" (node_type, port state, phys_state). */
static int parse_numbered(const char *s, char *ret_text, size_t size)
{
	const char *p = s;

	while (isdigit((unsigned char)*p))
		p++;
	if (p == s || p - s > 4 || p[0] != ':' || p[1] != ' ' || !p[2])
		return -EBADMSG;
	p += 2;
	if (strlen(p) >= size)
		return -EOVERFLOW;
	strcpy(ret_text, p);
	return 0;
}

static bool valid_guid(const char *s)
{
	if (strlen(s) != 19)
		return false;
	for (int i = 0; i < 19; i++) {
		if (i % 5 == 4 ? s[i] != ':' : !isxdigit((unsigned char)s[i]))
			return false;
	}
	return true;
}

static int parse_uint(const char *s, int base, unsigned long max,
		      unsigned long *ret)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, base);
	if (errno || *end || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* ports/<n>/<attr>, read relative to the ports directory: opening each
 * port's directory too would cost two more syscalls a port. */
static int port_attr(int portsfd, uint32_t number, const char *attr, char *buf,
		     size_t size)
{
	char path[64];

	snprintf(path, sizeof(path), "%u/%s", number, attr);
	return read_attr(portsfd, path, buf, size);
}

static void read_port_numbered(int portsfd, uint32_t number, const char *attr,
			       char *buf, size_t size)
{
	char raw[ATTR_READ_MAX];

	buf[0] = '\0';
	if (port_attr(portsfd, number, attr, raw, sizeof(raw)) == 0 &&
	    parse_numbered(raw, buf, size) < 0)
		buf[0] = '\0';
}

/* A port whose GID 0 is all zeros has no address yet (RoCE before its
 * netdev has one; ucx #11820): not usable. */
static int read_gid0_zero(int portsfd, uint32_t number)
{
	char gid[ATTR_READ_MAX];

	if (port_attr(portsfd, number, "gids/0", gid, sizeof(gid)) < 0)
		return -1;
	return strspn(gid, "0:") == strlen(gid);
}

static void read_port(int portsfd, uint32_t number, struct port_record *port)
{
	char lid[ATTR_READ_MAX];
	unsigned long v;

	port->port = number;
	read_port_numbered(portsfd, number, "state", port->state,
			   sizeof(port->state));
	read_port_numbered(portsfd, number, "phys_state", port->phys_state,
			   sizeof(port->phys_state));
	port_attr(portsfd, number, "link_layer", port->link_layer,
		  sizeof(port->link_layer));
	port_attr(portsfd, number, "rate", port->rate, sizeof(port->rate));
	/* The netdev of GID 0: RoCE and iWARP only; EINVAL elsewhere. */
	if (port_attr(portsfd, number, "gid_attrs/ndevs/0", port->netdev,
		      sizeof(port->netdev)) < 0 ||
	    strchr(port->netdev, ' '))
		port->netdev[0] = '\0';
	port->gid0_zero = read_gid0_zero(portsfd, number);
	port->lid = 0;
	if (port_attr(portsfd, number, "lid", lid, sizeof(lid)) == 0 &&
	    strncmp(lid, "0x", 2) == 0 &&
	    parse_uint(lid + 2, 16, UINT32_MAX, &v) == 0)
		port->lid = v;
	port->netdev_up = -1;
}

static bool port_exists(int portsfd, uint32_t number)
{
	char name[16];

	snprintf(name, sizeof(name), "%u", number);
	return faccessat(portsfd, name, F_OK, 0) == 0;
}

/* qsort() with an empty array: its pointer may be NULL, which qsort()
 * must not be given. */
static void sort_array(void *base, size_t n, size_t size,
		       int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(base, n, size, cmp);
}

static int compare_ports(const void *a, const void *b)
{
	const struct port_record *pa = a, *pb = b;

	return (pa->port > pb->port) - (pa->port < pb->port);
}

/* A port directory name as the kernel makes it: "1", never "01". */
static bool port_number(const char *name, uint32_t *ret)
{
	unsigned long v;

	if (parse_uint(name, 10, UINT16_MAX, &v) < 0 ||
	    (name[0] == '0' && name[1]))
		return false;
	*ret = v;
	return true;
}

/* Port numbers from the entries of ports/, at most the cap.  Raw
 * getdents64(): a DIR stream would cost three more syscalls a device. */
/* Keep @number among the lowest SYSFS_MAX_PORTS seen: past the cap it
 * replaces the highest kept, so port 1 is never the one dropped whatever
 * the directory's order. */
static void keep_port(uint32_t *numbers, size_t *n, uint32_t number)
{
	size_t top = 0;

	if (*n < SYSFS_MAX_PORTS) {
		numbers[(*n)++] = number;
		return;
	}
	for (size_t i = 1; i < *n; i++)
		if (numbers[i] > numbers[top])
			top = i;
	if (number < numbers[top])
		numbers[top] = number;
}

static size_t list_ports(int fd, uint32_t *numbers)
{
	char buf[4096] __attribute__((aligned(8)));
	struct dirent64 *de;
	uint32_t number;
	size_t n = 0;
	ssize_t len;

	while ((len = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < len; off += de->d_reclen) {
			de = (struct dirent64 *)(buf + off);
			if (port_number(de->d_name, &number))
				keep_port(numbers, &n, number);
		}
	}
	return n;
}

/*
 * Read ports/<n>/ of an ib device.  A registered device has at least one
 * port, whose directory the kernel makes before it announces the device
 * and removes before the device goes (ib_setup_port_attrs(),
 * ib_free_port_attrs()): none is a device half created or half torn down.
 */
static int read_ports(int devfd, struct device_record *dev)
{
	uint32_t numbers[SYSFS_MAX_PORTS];
	struct port_record *port;
	size_t n;
	int fd;

	fd = open_at(devfd, "ports", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOMEM ? -ENOMEM : -EBADMSG;
	n = list_ports(fd, numbers);
	dev->ports = n ? calloc(n, sizeof(*dev->ports)) : NULL;
	if (n && !dev->ports) {
		close(fd);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		port = &dev->ports[dev->nports];
		read_port(fd, numbers[i], port);
		/* No state may mean the port vanished since the listing. */
		if (port->state[0] || port_exists(fd, numbers[i]))
			dev->nports++;
		else
			memset(port, 0, sizeof(*port));
	}
	close(fd);
	if (dev->nports == 0)
		return -EBADMSG;
	sort_array(dev->ports, dev->nports, sizeof(*dev->ports), compare_ports);
	return 0;
}

/* node_guid and node_type: without them the device is not usable yet. */
static int read_essentials(int devfd, struct device_record *dev)
{
	char raw[ATTR_READ_MAX];
	int r;

	r = read_attr(devfd, "node_guid", dev->node_guid,
		      sizeof(dev->node_guid));
	if (r == -ENOENT)
		return r;
	if (r < 0 || !valid_guid(dev->node_guid))
		return -EBADMSG;
	r = read_attr(devfd, "node_type", raw, sizeof(raw));
	if (r == -ENOENT)
		return r;
	if (r < 0 ||
	    parse_numbered(raw, dev->node_type, sizeof(dev->node_type)) < 0)
		return -EBADMSG;
	return 0;
}

static void read_optionals(int devfd, struct device_record *dev)
{
	if (read_attr(devfd, "sys_image_guid", dev->sys_image_guid,
		      sizeof(dev->sys_image_guid)) < 0 ||
	    !valid_guid(dev->sys_image_guid))
		dev->sys_image_guid[0] = '\0';
	read_attr(devfd, "fw_ver", dev->fw_ver, sizeof(dev->fw_ver));
}

/* "0000:03:00.0": the shape of a PCI address, for a parent whose
 * subsystem link is missing. */
static bool looks_like_pci(const char *s)
{
	unsigned int d, b, s2, f;
	char end;

	return sscanf(s, "%4x:%2x:%2x.%1x%c", &d, &b, &s2, &f, &end) == 4 &&
	       strlen(s) == 12;
}

/*
 * How many ib devices the parent carries: the subdirectories of its
 * infiniband/ dir.  sysfs (kernfs) keeps a directory's link count at two
 * plus its subdirectories, as ordinary filesystems do, so one fstatat()
 * answers without listing the directory.
 */
static size_t count_siblings(int devfd)
{
	struct stat st;

	if (fstatat(devfd, "device/infiniband", &st, 0) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_nlink < 2)
		return 0;
	return st.st_nlink - 2;
}

static void read_parent_attrs(int devfd, struct device_record *dev)
{
	char raw[ATTR_READ_MAX];
	unsigned long node;

	/* -1 (no NUMA) or a node number; anything else stays unknown (-1),
	 * an out-of-range number too (sscanf's %d would overflow). */
	if (read_attr(devfd, "device/numa_node", raw, sizeof(raw)) == 0 &&
	    parse_uint(raw, 10, INT_MAX, &node) == 0)
		dev->numa_node = (int)node;
	read_link_base(devfd, "device/driver", dev->driver,
		       sizeof(dev->driver));
	read_link_base(devfd, "device/physfn", dev->sriov_pf,
		       sizeof(dev->sriov_pf));
	dev->vf = dev->vf || dev->sriov_pf[0];
	if (read_attr(devfd, "device/sriov_numvfs", raw, sizeof(raw)) == 0 &&
	    parse_uint(raw, 10, INT_MAX, &node) == 0)
		dev->sriov_numvfs = (int)node;
}

static void build_parent_id(int devfd, const char *parent,
			    struct device_record *dev)
{
	char bus[32];
	size_t len;

	if (read_link_base(devfd, "device/subsystem", bus, sizeof(bus)) < 0)
		strcpy(bus, looks_like_pci(parent) ? "pci" : "dev");
	if (strcmp(bus, "pci") == 0 &&
	    strlen(parent) < sizeof(dev->pci_address))
		strcpy(dev->pci_address, parent);
	len = snprintf(dev->id, sizeof(dev->id), "%s:%s", bus, parent);
	if (len < sizeof(dev->id) && count_siblings(devfd) > 1)
		len += snprintf(dev->id + len, sizeof(dev->id) - len,
				"/guid:%s", dev->node_guid);
	/* A parent name too long to keep whole: the guid says more than a
	 * truncated path would. */
	if (len >= sizeof(dev->id))
		snprintf(dev->id, sizeof(dev->id), "guid:%s", dev->node_guid);
}

/*
 * A virtual device (rxe, siw) has no parent device; its node GUID comes
 * from its net device's MAC, which a bond and its slave share, so two
 * soft-RoCE devices can carry one GUID.  Their "parent" attribute names
 * the net device, which tells them apart.  Without a GUID, only the name
 * is left.  rxe says "(null)" there once its net device is detached,
 * which it is on the way out (Linux 6.12 __ib_unregister_device():
 * free_netdevs() before device_del()): that read is half torn down, and
 * an identity built from it would be a ghost's.
 */
static int build_virtual_id(int devfd, struct device_record *dev)
{
	char netdev[IFNAMSIZ + 1];
	int r;

	if (strcmp(dev->node_guid, ZERO_GUID) == 0) {
		snprintf(dev->id, sizeof(dev->id), "name:%s", dev->name);
		return 0;
	}
	r = read_attr(devfd, "parent", netdev, sizeof(netdev));
	if (r == -ENOENT) {
		snprintf(dev->id, sizeof(dev->id), "guid:%s", dev->node_guid);
		return 0;
	}
	if (r < 0 || !netdev[0] || netdev[0] == '(')
		return -EBADMSG;
	snprintf(dev->id, sizeof(dev->id), "guid:%s/netdev:%s", dev->node_guid,
		 netdev);
	return 0;
}

/* The parent device (the "device" link): id, PCI address, driver, NUMA
 * node.  *ret_has_parent is false for a virtual device, which has none.
 * -EBADMSG: an identity cannot be built from what sysfs says now. */
static int read_parent(int devfd, struct device_record *dev,
		       bool *ret_has_parent)
{
	char parent[RECORD_NAME_MAX * 2];

	dev->numa_node = -1;
	dev->sriov_numvfs = -1;
	*ret_has_parent = false;
	if (read_link_base(devfd, "device", parent, sizeof(parent)) < 0)
		return build_virtual_id(devfd, dev);
	*ret_has_parent = true;
	build_parent_id(devfd, parent, dev);
	read_parent_attrs(devfd, dev);
	return 0;
}

/* "231:192", the uverbs device's "dev": its number, 0 if unreadable. */
static dev_t read_devnum(int dirfd, const char *uverbs)
{
	char path[300], text[32];
	unsigned int major, minor;
	char end;

	snprintf(path, sizeof(path), "%s/dev", uverbs);
	if (read_attr(dirfd, path, text, sizeof(text)) < 0 ||
	    sscanf(text, "%u:%u%c", &major, &minor, &end) != 2)
		return 0;
	return makedev(major, minor);
}

/* uverbsN of @name among the entries of directory @fd (consumed), and
 * its device number. */
static int find_uverbs_in(int fd, const char *name, char *ret, size_t size,
			  dev_t *ret_dev)
{
	char ibdev[RECORD_NAME_MAX], path[300];
	struct dirent *de;
	DIR *dir;
	int r = -ENOENT;

	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return note_starvation(-ENOMEM);
	}
	while (r < 0 && (de = readdir(dir))) {
		if (strncmp(de->d_name, "uverbs", 6) != 0 ||
		    !valid_name(de->d_name, size))
			continue;
		snprintf(path, sizeof(path), "%s/ibdev", de->d_name);
		if (read_attr(dirfd(dir), path, ibdev, sizeof(ibdev)) == 0 &&
		    strcmp(ibdev, name) == 0) {
			strcpy(ret, de->d_name);
			*ret_dev = read_devnum(dirfd(dir), de->d_name);
			r = 0;
		}
	}
	closedir(dir);
	return r;
}

static int open_class(const char *sysroot, const char *class)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s/class/%s", sysroot, class) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open_at(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * The uverbs device of one ib device: first among the parent's
 * infiniband_verbs/ (where the kernel puts it, a short list), then the
 * whole class directory (virtual devices).  One found under the parent
 * counts only while its class link is there too, as a full scan reads
 * it: the kernel deletes that link before the remove uevent and the
 * directory only after (device_del()), and a device whose removal was
 * heard must not look whole again in between.
 */
static void find_uverbs(const char *sysroot, int devfd, bool has_parent,
			struct device_record *dev)
{
	int fd;

	if (has_parent) {
		fd = open_at(devfd, "device/infiniband_verbs",
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && find_uverbs_in(fd, dev->name, dev->uverbs,
					      sizeof(dev->uverbs),
					      &dev->uverbs_dev) == 0) {
			if (!sysfs_has_uverbs(sysroot, dev->uverbs)) {
				dev->uverbs[0] = '\0';
				dev->uverbs_dev = 0;
			}
			return;
		}
	}
	fd = open_class(sysroot, "infiniband_verbs");
	if (fd >= 0)
		find_uverbs_in(fd, dev->name, dev->uverbs, sizeof(dev->uverbs),
			       &dev->uverbs_dev);
}

static int compare_uverbs(const void *a, const void *b)
{
	const struct uverbs_map_entry *ea = a, *eb = b;

	return strcmp(ea->ibdev, eb->ibdev);
}

/* ibdev -> uverbsN for every uverbs device, sorted for bsearch. */
static int load_uverbs_map(const char *sysroot, struct uverbs_map *map)
{
	struct uverbs_map_entry *e, *grown;
	struct dirent *de;
	size_t cap = 0;
	char path[300];
	DIR *dir;
	int fd, r = 0;

	fd = open_class(sysroot, "infiniband_verbs");
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(dir)) && map->n < SYSFS_MAX_DEVICES) {
		if (strncmp(de->d_name, "uverbs", 6) != 0 ||
		    !valid_name(de->d_name, sizeof(e->uverbs)))
			continue;
		if (map->n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(map->entries, cap * sizeof(*e));
			if (!grown) {
				r = -ENOMEM;
				break;
			}
			map->entries = grown;
		}
		e = &map->entries[map->n];
		snprintf(path, sizeof(path), "%s/ibdev", de->d_name);
		if (read_attr(dirfd(dir), path, e->ibdev, sizeof(e->ibdev)) < 0)
			continue;
		strcpy(e->uverbs, de->d_name);
		e->dev = read_devnum(dirfd(dir), de->d_name);
		map->n++;
	}
	closedir(dir);
	sort_array(map->entries, map->n, sizeof(*map->entries), compare_uverbs);
	return r;
}

static void lookup_uverbs(const struct uverbs_map *map,
			  struct device_record *dev)
{
	struct uverbs_map_entry key, *e;

	if (!map->n)
		return;
	strcpy(key.ibdev, dev->name);
	e = map->n ? bsearch(&key, map->entries, map->n, sizeof(key),
			     compare_uverbs)
		   : NULL;
	if (e) {
		strcpy(dev->uverbs, e->uverbs);
		dev->uverbs_dev = e->dev;
	}
}

/* "umad3" or "issm3", as ib_umad names them, fitting mad_nodes[]. */
static bool mad_name(const char *name)
{
	unsigned long n;

	return (!strncmp(name, "umad", 4) || !strncmp(name, "issm", 4)) &&
	       valid_name(name, RECORD_MAD_NAME_MAX) &&
	       parse_uint(name + 4, 10, INT_MAX, &n) == 0 &&
	       !(name[4] == '0' && name[5]);
}

static int compare_mad_ibdev(const void *a, const void *b)
{
	const struct mad_entry *ea = a, *eb = b;

	return strcmp(ea->ibdev, eb->ibdev);
}

/* By device, then port, then umad before issm. */
static int compare_mad(const void *a, const void *b)
{
	const struct mad_entry *ea = a, *eb = b;
	int r = compare_mad_ibdev(a, b);

	if (r)
		return r;
	if (ea->port != eb->port)
		return ea->port < eb->port ? -1 : 1;
	r = (ea->name[0] == 'i') - (eb->name[0] == 'i');
	return r ? r : strcmp(ea->name, eb->name);
}

/* Entry @name of a directory of mad devices: true if it is one, of ib
 * device @only (NULL: of any), with a port number. */
static bool read_mad_entry(int dirfd, const char *name, const char *only,
			   struct mad_entry *e)
{
	char path[300], raw[ATTR_READ_MAX];
	unsigned long port;

	if (!mad_name(name))
		return false;
	snprintf(path, sizeof(path), "%s/ibdev", name);
	if (read_attr(dirfd, path, e->ibdev, sizeof(e->ibdev)) < 0 ||
	    !valid_name(e->ibdev, sizeof(e->ibdev)) ||
	    (only && strcmp(e->ibdev, only)))
		return false;
	snprintf(path, sizeof(path), "%s/port", name);
	if (read_attr(dirfd, path, raw, sizeof(raw)) < 0 ||
	    parse_uint(raw, 10, UINT16_MAX, &port) < 0)
		return false;
	strcpy(e->name, name);
	e->port = port;
	return true;
}

/* Room for one more entry in @map; -ENOMEM. */
static int mad_map_room(struct mad_map *map, size_t *cap)
{
	struct mad_entry *grown;

	if (map->n < *cap)
		return 0;
	grown = realloc(map->entries, (*cap ? *cap * 2 : 8) * sizeof(*grown));
	if (!grown)
		return note_starvation(-ENOMEM);
	*cap = *cap ? *cap * 2 : 8;
	map->entries = grown;
	return 0;
}

/*
 * The mad devices among the entries of directory @fd (consumed): those of
 * ib device @only (NULL: of every one) and, where @classfd is one, only
 * those whose class link is there too (see find_uverbs()).  0 or -ENOMEM.
 */
static int load_mad_map(int fd, const char *only, int classfd,
			struct mad_map *map)
{
	struct dirent *de;
	size_t cap = 0;
	DIR *dir;
	int r = 0;

	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return note_starvation(-ENOMEM);
	}
	while (map->n < SYSFS_MAX_MAD_ENTRIES && (de = readdir(dir))) {
		r = mad_map_room(map, &cap);
		if (r < 0)
			break;
		if (read_mad_entry(dirfd(dir), de->d_name, only,
				   &map->entries[map->n]) &&
		    (classfd < 0 || faccessat(classfd, de->d_name, F_OK,
					      AT_SYMLINK_NOFOLLOW) == 0))
			map->n++;
	}
	closedir(dir);
	sort_array(map->entries, map->n, sizeof(*map->entries), compare_mad);
	return r;
}

/* Every mad device, for a full scan; none where ib_umad is not loaded. */
static int load_mad_class(const char *sysroot, struct mad_map *map)
{
	int fd = open_class(sysroot, "infiniband_mad");

	if (fd < 0)
		return sysfs_is_starvation(fd) ? fd : 0;
	return load_mad_map(fd, NULL, -1, map);
}

/* @dev's entries of @map, the lowest ports first, as many as fit. */
static void lookup_mad(const struct mad_map *map, struct device_record *dev)
{
	const struct mad_entry *e, *end;
	struct mad_entry key;

	if (!map->n)
		return;
	end = map->entries + map->n;
	strcpy(key.ibdev, dev->name);
	e = bsearch(&key, map->entries, map->n, sizeof(key), compare_mad_ibdev);
	if (!e)
		return;
	while (e > map->entries && !strcmp(e[-1].ibdev, dev->name))
		e--;
	for (; e < end && !strcmp(e->ibdev, dev->name) &&
	       dev->nmad_nodes < RECORD_MAX_MAD_NODES;
	     e++)
		strcpy(dev->mad_nodes[dev->nmad_nodes++], e->name);
}

/*
 * The mad devices of one ib device: among its parent's infiniband_mad/
 * (where the kernel puts them), counted while their class links are
 * there, as for uverbs; in the class directory for a virtual device.  A
 * want of memory or descriptors is noted (note_starvation()).
 */
static void find_mad_nodes(const char *sysroot, int devfd, bool has_parent,
			   struct device_record *dev)
{
	struct mad_map map = {0};
	int classfd, fd;

	classfd = open_class(sysroot, "infiniband_mad");
	if (classfd < 0)
		return;
	if (!has_parent) {
		load_mad_map(classfd, dev->name, -1, &map);
	} else {
		fd = open_at(devfd, "device/infiniband_mad",
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			load_mad_map(fd, dev->name, classfd, &map);
		close(classfd);
	}
	lookup_mad(&map, dev);
	free(map.entries);
}

/* What one scan shares between its devices. */
struct scan_ctx {
	const char *sysroot;
	int classfd;		      /* class/infiniband */
	const struct uverbs_map *map; /* NULL: look each uverbs up */
	const struct mad_map *mad;    /* with map: every mad device */
};

/* Read what follows the essentials; returns 0, -EBADMSG or -ENOMEM. */
static int read_rest(const struct scan_ctx *ctx, int devfd,
		     struct device_record *dev)
{
	bool has_parent;
	int r;

	read_optionals(devfd, dev);
	r = read_parent(devfd, dev, &has_parent);
	if (r == 0)
		r = read_ports(devfd, dev);
	if (r < 0)
		return r;
	if (ctx->map) {
		lookup_uverbs(ctx->map, dev);
		lookup_mad(ctx->mad, dev);
	} else {
		find_uverbs(ctx->sysroot, devfd, has_parent, dev);
		find_mad_nodes(ctx->sysroot, devfd, has_parent, dev);
	}
	return 0;
}

/* Where the class link points: below a VMBus device on Hyper-V. */
static bool on_vmbus(int classfd, const char *name)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(classfd, name, target, sizeof(target) - 1);

	if (n < 0)
		return false;
	target[n] = '\0';
	return strstr(target, "/VMBUS:") != NULL;
}

static uint64_t registration(int devfd)
{
	struct stat st;

	return fstat(devfd, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static int scan_one(const struct scan_ctx *ctx, const char *name,
		    struct device_record *ret)
{
	int devfd, r;

	memset(ret, 0, sizeof(*ret));
	ret->numa_node = -1;
	if (!valid_name(name, sizeof(ret->name)))
		return -EBADMSG;
	devfd = open_at(ctx->classfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (devfd < 0)
		return errno == ENOTDIR ? -EBADMSG : -errno;
	strcpy(ret->name, name);
	ret->reg_key = registration(devfd);
	ret->vf = on_vmbus(ctx->classfd, name);
	r = read_essentials(devfd, ret);
	/* A file missing from a directory that is still there is a device
	 * being created or torn down: unusable now, maybe fine later. */
	if (r == -ENOENT && faccessat(ctx->classfd, name, F_OK, 0) == 0)
		r = -EBADMSG;
	if (r == 0)
		r = read_rest(ctx, devfd, ret);
	/* Gone while we read it: what we have may be half empty. */
	if ((r == 0 || r == -EBADMSG) &&
	    faccessat(ctx->classfd, name, F_OK, 0) < 0)
		r = -ENOENT;
	close(devfd);
	if (r < 0)
		record_clear(ret);
	return r;
}

int sysfs_scan_device(const char *sysroot, const char *name,
		      struct device_record *ret)
{
	struct scan_ctx ctx = {.sysroot = sysroot};
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->numa_node = -1;
	starved = 0;
	ctx.classfd = open_class(sysroot, "infiniband");
	if (ctx.classfd < 0)
		return ctx.classfd;
	r = scan_one(&ctx, name, ret);
	close(ctx.classfd);
	if (starved && r == 0)
		record_clear(ret);
	return starved ? starved : r;
}

int sysfs_ibdev_of_uverbs(const char *sysroot, const char *uverbs,
			  char ret_name[RECORD_NAME_MAX])
{
	char path[64];
	int classfd, r;

	ret_name[0] = '\0';
	if (!valid_name(uverbs, 32) || strchr(uverbs, '/'))
		return -EINVAL;
	classfd = open_class(sysroot, "infiniband_verbs");
	if (classfd < 0)
		return classfd;
	snprintf(path, sizeof(path), "%s/ibdev", uverbs);
	r = read_attr(classfd, path, ret_name, RECORD_NAME_MAX);
	close(classfd);
	if (sysfs_is_starvation(r)) {
		ret_name[0] = '\0';
		return r;
	}
	if (r < 0 && r != -ENOENT) {
		ret_name[0] = '\0';
		return -EBADMSG;
	}
	return r;
}

static int compare_devices(const void *a, const void *b)
{
	const struct device_record *da = a, *db = b;

	return strcmp(da->name, db->name);
}

static int scan_class(const struct scan_ctx *ctx,
		      struct device_record **ret_devices, size_t *ret_n,
		      size_t *ret_skipped)
{
	struct device_record *devs = NULL, *grown;
	size_t n = 0, cap = 0, skipped = 0;
	struct dirent *de;
	DIR *dir;
	int r = 0;

	dir = fdopendir(ctx->classfd);
	if (!dir) {
		close(ctx->classfd);
		return -ENOMEM;
	}
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == SYSFS_MAX_DEVICES) {
			skipped++;
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(devs, cap * sizeof(*devs));
			if (!grown) {
				r = -ENOMEM;
				break;
			}
			devs = grown;
		}
		r = scan_one(ctx, de->d_name, &devs[n]);
		if (r == -ENOMEM)
			break;
		if (r < 0)
			skipped++;
		else
			n++;
		r = 0;
	}
	closedir(dir);
	if (r == 0)
		r = starved;
	if (r < 0) {
		records_free(devs, n);
		return r;
	}
	sort_array(devs, n, sizeof(*devs), compare_devices);
	*ret_devices = devs;
	*ret_n = n;
	if (ret_skipped)
		*ret_skipped = skipped;
	return 0;
}

bool sysfs_has_class(const char *sysroot, const char *class)
{
	int fd = open_class(sysroot, class);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool sysfs_has_uverbs(const char *sysroot, const char *uverbs)
{
	int fd = open_class(sysroot, "infiniband_verbs");
	bool there;

	if (fd < 0)
		return false;
	there = valid_name(uverbs, RECORD_NAME_MAX) &&
		faccessat(fd, uverbs, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	close(fd);
	return there;
}

/* A missing class directory is a machine without RDMA: no devices. */
int sysfs_scan_all(const char *sysroot, struct device_record **ret_devices,
		   size_t *ret_n, size_t *ret_skipped)
{
	struct uverbs_map map = {0};
	struct mad_map mad = {0};
	struct scan_ctx ctx = {.sysroot = sysroot, .map = &map, .mad = &mad};
	int r;

	*ret_devices = NULL;
	*ret_n = 0;
	if (ret_skipped)
		*ret_skipped = 0;
	starved = 0;
	ctx.classfd = open_class(sysroot, "infiniband");
	if (ctx.classfd == -ENOENT)
		return 0;
	if (ctx.classfd < 0)
		return ctx.classfd;
	r = load_uverbs_map(sysroot, &map);
	if (r == 0)
		r = load_mad_class(sysroot, &mad);
	if (r == 0)
		r = scan_class(&ctx, ret_devices, ret_n, ret_skipped);
	else
		close(ctx.classfd);
	free(map.entries);
	free(mad.entries);
	return r;
}
