/* SPDX-License-Identifier: MIT */
/*
 * Fake sysfs trees, laid out as the kernel does: the ib device and its
 * uverbs device are children of the parent (PCI) device, and
 * /sys/class/infiniband{,_verbs}/ hold relative symlinks to them.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture-sysfs.h"

struct fixture {
	char root[256];
};

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fixture: %s %s: %s\n", what, path, strerror(errno));
	exit(99);
}

/* snprintf that treats truncation as the fixture bug it would be. */
static void pathf(char *buf, size_t size, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t size, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, size, f, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		die("path", f);
	}
}

static void full_path(const struct fixture *fx, const char *rel, char *buf,
		      size_t size)
{
	pathf(buf, size, "%s/%s", fx->root, rel);
}

static void mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			die("mkdir", path);
		*p = '/';
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die("mkdir", path);
}

void fixture_mkdir(struct fixture *fx, const char *relpath)
{
	char path[PATH_MAX];

	full_path(fx, relpath, path, sizeof(path));
	mkdir_p(path);
}

static void mkdir_parent(char *path)
{
	char *slash = strrchr(path, '/');

	*slash = '\0';
	mkdir_p(path);
	*slash = '/';
}

void fixture_write(struct fixture *fx, const char *relpath, const void *data,
		   size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	full_path(fx, relpath, path, sizeof(path));
	mkdir_parent(path);
	f = fopen(path, "w");
	if (!f)
		die("open", path);
	if (len && fwrite(data, 1, len, f) != len)
		die("write", path);
	if (fclose(f) != 0)
		die("close", path);
}

void fixture_write_str(struct fixture *fx, const char *relpath, const char *s)
{
	fixture_write(fx, relpath, s, strlen(s));
}

/* Write a value the way sysfs shows it: with a trailing newline. */
static void attr(struct fixture *fx, const char *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void attr(struct fixture *fx, const char *s, const char *fmt, ...)
{
	char rel[PATH_MAX], line[256];
	va_list ap;

	if (!s)
		return;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	pathf(line, sizeof(line), "%s\n", s);
	fixture_write_str(fx, rel, line);
}

void fixture_symlink(struct fixture *fx, const char *target,
		     const char *relpath)
{
	char path[PATH_MAX];

	full_path(fx, relpath, path, sizeof(path));
	mkdir_parent(path);
	unlink(path);
	if (symlink(target, path) < 0)
		die("symlink", path);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

void fixture_rm(struct fixture *fx, const char *relpath)
{
	char path[PATH_MAX];

	full_path(fx, relpath, path, sizeof(path));
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		die("remove", path);
}

struct fixture *fixture_new(void)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	const char *tmp;

	if (!fx)
		die("alloc", "");
	tmp = getenv("TMPDIR");
	/* sysfs lives in memory; so should its fakes (and building them on
	 * a disk can be twenty times slower). */
	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	pathf(fx->root, sizeof(fx->root), "%s/rdmad-fixture-XXXXXX", tmp);
	if (!mkdtemp(fx->root))
		die("mkdtemp", fx->root);
	fixture_mkdir(fx, "class/infiniband");
	fixture_write_str(fx, "class/infiniband_verbs/abi_version", "6\n");
	fixture_mkdir(fx, "devices/virtual");
	return fx;
}

void fixture_free(struct fixture *fx)
{
	if (!fx)
		return;
	fixture_rm(fx, "");
	free(fx);
}

const char *fixture_root(const struct fixture *fx)
{
	return fx->root;
}

/* Where the parent device lives: "devices/pci0000:00/0000:03:00.0". */
static void parent_dir(const struct fixture_device *d, char *buf, size_t size)
{
	const char *bus = d->bus ? d->bus : "pci";

	if (!strcmp(bus, "pci"))
		pathf(buf, size, "devices/pci0000:00/%s", d->parent);
	else
		pathf(buf, size, "devices/%s/%s", bus, d->parent);
}

static void add_parent(struct fixture *fx, const struct fixture_device *d,
		       const char *pdir)
{
	const char *bus = d->bus ? d->bus : "pci";
	char rel[PATH_MAX], target[PATH_MAX];

	fixture_mkdir(fx, pdir);
	pathf(target, sizeof(target), "../../../bus/%s", bus);
	pathf(rel, sizeof(rel), "%s/subsystem", pdir);
	fixture_symlink(fx, target, rel);
	if (d->driver) {
		pathf(target, sizeof(target), "../../../bus/%s/drivers/%s", bus,
		      d->driver);
		pathf(rel, sizeof(rel), "bus/%s/drivers/%s", bus, d->driver);
		fixture_mkdir(fx, rel);
		pathf(rel, sizeof(rel), "%s/driver", pdir);
		fixture_symlink(fx, target, rel);
	}
	attr(fx, d->numa_node, "%s/numa_node", pdir);
}

static void add_port(struct fixture *fx, const char *ibdir, unsigned int n,
		     const struct fixture_port *p)
{
	attr(fx, p->state, "%s/ports/%u/state", ibdir, n);
	attr(fx, p->phys_state, "%s/ports/%u/phys_state", ibdir, n);
	attr(fx, p->link_layer, "%s/ports/%u/link_layer", ibdir, n);
	attr(fx, p->rate, "%s/ports/%u/rate", ibdir, n);
	attr(fx, p->lid, "%s/ports/%u/lid", ibdir, n);
	attr(fx, p->netdev, "%s/ports/%u/gid_attrs/ndevs/0", ibdir, n);
}

static void add_ibdev(struct fixture *fx, const struct fixture_device *d,
		      const char *ibdir)
{
	char rel[PATH_MAX], target[PATH_MAX];

	fixture_mkdir(fx, ibdir);
	attr(fx, d->node_guid, "%s/node_guid", ibdir);
	attr(fx, d->sys_image_guid, "%s/sys_image_guid", ibdir);
	attr(fx, d->node_type, "%s/node_type", ibdir);
	attr(fx, d->fw_ver, "%s/fw_ver", ibdir);
	if (d->parent) {
		pathf(target, sizeof(target), "../../../%s", d->parent);
		pathf(rel, sizeof(rel), "%s/device", ibdir);
		fixture_symlink(fx, target, rel);
	}
	for (unsigned int i = 0; i < d->nports; i++)
		add_port(fx, ibdir, i + 1, &d->ports[i]);
	pathf(target, sizeof(target), "../../%s", ibdir);
	pathf(rel, sizeof(rel), "class/infiniband/%s", d->name);
	fixture_symlink(fx, target, rel);
}

static void add_uverbs(struct fixture *fx, const struct fixture_device *d,
		       const char *base)
{
	char uvdir[PATH_MAX], rel[PATH_MAX], target[PATH_MAX], dev[32];

	pathf(uvdir, sizeof(uvdir), "%s/infiniband_verbs/uverbs%d", base,
	      d->uverbs);
	attr(fx, d->name, "%s/ibdev", uvdir);
	pathf(dev, sizeof(dev), "231:%d", 192 + d->uverbs);
	attr(fx, dev, "%s/dev", uvdir);
	attr(fx, "6", "%s/abi_version", uvdir);
	if (d->parent) {
		pathf(target, sizeof(target), "../../../%s", d->parent);
		pathf(rel, sizeof(rel), "%s/device", uvdir);
		fixture_symlink(fx, target, rel);
	}
	pathf(target, sizeof(target), "../../%s", uvdir);
	pathf(rel, sizeof(rel), "class/infiniband_verbs/uverbs%d", d->uverbs);
	fixture_symlink(fx, target, rel);
}

void fixture_add_device(struct fixture *fx, const struct fixture_device *d)
{
	char base[PATH_MAX], ibdir[PATH_MAX + 64];

	if (d->parent) {
		parent_dir(d, base, sizeof(base));
		add_parent(fx, d, base);
	} else {
		strcpy(base, "devices/virtual");
	}
	pathf(ibdir, sizeof(ibdir), "%s/infiniband/%s", base, d->name);
	add_ibdev(fx, d, ibdir);
	if (d->uverbs >= 0)
		add_uverbs(fx, d, base);
}

void fixture_add_mad(struct fixture *fx, const struct fixture_device *d,
		     const char *name, const char *ibdev, const char *port)
{
	char base[PATH_MAX], dir[PATH_MAX + 64], rel[PATH_MAX],
		target[PATH_MAX];

	if (d->parent)
		parent_dir(d, base, sizeof(base));
	else
		strcpy(base, "devices/virtual");
	pathf(dir, sizeof(dir), "%s/infiniband_mad/%s", base, name);
	fixture_mkdir(fx, dir);
	attr(fx, ibdev, "%s/ibdev", dir);
	attr(fx, port, "%s/port", dir);
	pathf(target, sizeof(target), "../../%s", dir);
	pathf(rel, sizeof(rel), "class/infiniband_mad/%s", name);
	fixture_symlink(fx, target, rel);
}

/* The uverbs class entry whose ibdev is @name, or -1. */
static int find_uverbs(struct fixture *fx, const char *name)
{
	char path[PATH_MAX], line[128];

	for (int n = 0; n < 1024; n++) {
		FILE *f;

		pathf(path, sizeof(path),
		      "%s/class/infiniband_verbs/uverbs%d/ibdev", fx->root, n);
		f = fopen(path, "r");
		if (!f)
			continue;
		line[0] = '\0';
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, name))
			return n;
	}
	return -1;
}

/* Unplug: the class links and the uverbs and ib device directories.  The
 * parent stays, as a PCI function does when only its driver unbinds. */
void fixture_remove_device(struct fixture *fx, const char *name)
{
	char rel[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
	int uv = find_uverbs(fx, name);
	ssize_t n;

	if (uv >= 0) {
		pathf(rel, sizeof(rel), "class/infiniband_verbs/uverbs%d", uv);
		full_path(fx, rel, link, sizeof(link));
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			fixture_rm(fx, target + 6); /* strip "../../" */
		}
		fixture_rm(fx, rel);
	}
	pathf(rel, sizeof(rel), "class/infiniband/%s", name);
	full_path(fx, rel, link, sizeof(link));
	n = readlink(link, target, sizeof(target) - 1);
	fixture_rm(fx, rel);
	if (n <= 0)
		return;
	target[n] = '\0';
	fixture_rm(fx, target + 6);
}

struct fixture_device fixture_mlx5(const char *name, int uverbs,
				   const char *pci, unsigned int nports)
{
	struct fixture_device d = {
		.name = name,
		.uverbs = uverbs,
		.parent = pci,
		.driver = "mlx5_core",
		.numa_node = "0",
		.node_guid = "0002:c903:0000:1234",
		.sys_image_guid = "0002:c903:0000:1234",
		.node_type = "1: CA",
		.fw_ver = "16.35.2000",
		.nports =
			nports > FIXTURE_MAX_PORTS ? FIXTURE_MAX_PORTS : nports,
	};
	static const struct fixture_port ib = {
		.state = "4: ACTIVE",
		.phys_state = "5: LinkUp",
		.link_layer = "InfiniBand",
		.rate = "100 Gb/sec (4X EDR)",
		.lid = "0x5",
	};

	for (unsigned int i = 0; i < d.nports; i++)
		d.ports[i] = ib;
	return d;
}
