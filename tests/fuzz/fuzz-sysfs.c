/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the sysfs scanner (and the device table behind it).
 * The input, split at NUL bytes, becomes the contents of the files of one
 * fake device: field i goes to files[i] below; a missing field leaves
 * that file out.  Two fields name things instead: the ib device's
 * directory and an extra port directory.  The tree is then scanned whole
 * and by name, and the result fed to a device table.  Any crash, leak or
 * broken invariant (an unterminated or non-printable string, too many
 * ports) is a bug: the target aborts on the latter.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "fixture-sysfs.h"
#include "sysfs.h"

enum field {
	F_NAME,	    /* the ib device's name (a directory name) */
	F_PORT_DIR, /* an extra entry under ports/ */
	F_FILES,    /* from here on: file contents */
};

/* Relative to the ib device directory, except those starting with "/". */
static const char *const files[] = {
	"node_guid",
	"node_type",
	"sys_image_guid",
	"fw_ver",
	"ports/1/state",
	"ports/1/phys_state",
	"ports/1/link_layer",
	"ports/1/rate",
	"ports/1/lid",
	"ports/1/gid_attrs/ndevs/0",
	"/devices/pci0000:00/0000:03:00.0/numa_node",
	"/class/infiniband_verbs/uverbs0/ibdev",
	"ports/%s/state",
	"ports/%s/link_layer",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_FILES (sizeof(files) / sizeof(files[0]))
#define N_FIELDS (F_FILES + N_FILES)

struct split {
	const uint8_t *data[N_FIELDS];
	size_t len[N_FIELDS];
	size_t n;
};

static void split_input(const uint8_t *data, size_t size, struct split *s)
{
	size_t start = 0;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i <= size && s->n < N_FIELDS; i++) {
		if (i < size && data[i] != '\0')
			continue;
		s->data[s->n] = data + start;
		s->len[s->n++] = i - start;
		start = i + 1;
	}
}

/* A usable directory name from fuzz bytes: no '/', not "." or "..". */
static void dir_name(const struct split *s, enum field f, const char *dflt,
		     char *buf, size_t size)
{
	size_t len = f < s->n ? s->len[f] : 0;

	if (len >= size)
		len = size - 1;
	memcpy(buf, f < s->n ? s->data[f] : (const uint8_t *)"", len);
	buf[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '/')
			buf[i] = '_';
	if (!len || !strcmp(buf, ".") || !strcmp(buf, ".."))
		snprintf(buf, size, "%s", dflt);
}

static void check_string(const char *s, size_t size)
{
	size_t len = strnlen(s, size);

	if (len == size)
		abort();
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			abort();
}

#define CHECK_FIELD(x) check_string((x), sizeof(x))

static void check_device(const struct device_record *d)
{
	CHECK_FIELD(d->name);
	CHECK_FIELD(d->uverbs);
	CHECK_FIELD(d->id);
	CHECK_FIELD(d->node_guid);
	CHECK_FIELD(d->sys_image_guid);
	CHECK_FIELD(d->node_type);
	CHECK_FIELD(d->fw_ver);
	CHECK_FIELD(d->pci_address);
	CHECK_FIELD(d->driver);
	if (!d->id[0] || d->nports > 256 || (d->nports && !d->ports))
		abort();
	for (unsigned int i = 0; i < d->nports; i++) {
		CHECK_FIELD(d->ports[i].state);
		CHECK_FIELD(d->ports[i].phys_state);
		CHECK_FIELD(d->ports[i].link_layer);
		CHECK_FIELD(d->ports[i].rate);
		CHECK_FIELD(d->ports[i].netdev);
		if (i && d->ports[i].port <= d->ports[i - 1].port)
			abort();
	}
}

static void write_files(struct fixture *fx, const struct split *s,
			const char *name, const char *port_dir)
{
	char rel[600], file[300];

	for (size_t i = F_FILES; i < s->n; i++) {
		const char *f = files[i - F_FILES];

		if (strstr(f, "%s"))
			snprintf(file, sizeof(file), "ports/%s/%s", port_dir,
				 strrchr(f, '/') + 1);
		else
			snprintf(file, sizeof(file), "%s", f);
		if (file[0] == '/')
			snprintf(rel, sizeof(rel), "%s", file + 1);
		else
			snprintf(rel, sizeof(rel), "class/infiniband/%s/%s",
				 name, file);
		fixture_write(fx, rel, s->data[i], s->len[i]);
	}
}

static void scan(struct fixture *fx, const char *name)
{
	struct devices *table = devices_new(0);
	struct device_record *all, one;
	char ibdev[RECORD_NAME_MAX];
	size_t n, skipped;

	if (sysfs_scan_all(fixture_root(fx), &all, &n, &skipped) == 0) {
		for (size_t i = 0; i < n; i++)
			check_device(&all[i]);
		if (table)
			devices_apply_scan(table, all, n);
		records_free(all, n);
	}
	if (sysfs_scan_device(fixture_root(fx), name, &one) == 0) {
		check_device(&one);
		if (table)
			devices_apply_one(table, name, &one);
		record_clear(&one);
	}
	if (sysfs_ibdev_of_uverbs(fixture_root(fx), "uverbs0", ibdev) == 0)
		check_string(ibdev, sizeof(ibdev));
	devices_free(table);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[200], port_dir[200];
	struct fixture_device dev;
	struct fixture *fx;
	struct split s;

	split_input(data, size, &s);
	dir_name(&s, F_NAME, "mlx5_0", name, sizeof(name));
	dir_name(&s, F_PORT_DIR, "2", port_dir, sizeof(port_dir));
	fx = fixture_new();
	dev = fixture_mlx5(name, 0, "0000:03:00.0", 1);
	fixture_add_device(fx, &dev);
	write_files(fx, &s, name, port_dir);
	scan(fx, name);
	fixture_free(fx);
	return 0;
}
