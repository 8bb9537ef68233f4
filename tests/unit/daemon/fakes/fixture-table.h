/* SPDX-License-Identifier: MIT */
/*
 * A device table built from a few lines of specs, for the tests of the
 * modules that read the table (route.c, departure.c): each spec is one
 * device record with one port, applied by one full scan.
 */
#ifndef RDMAD_TEST_FIXTURE_TABLE_H
#define RDMAD_TEST_FIXTURE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "devices.h"

struct fixture_dev {
	const char *name, *id, *uverbs; /* uverbs "" or NULL: none */
	uint64_t reg;			/* device_record.reg_key */
	const char *netdev;		/* its port's; NULL: none */
	const char *mad[2];		/* MAD nodes; NULL: fewer */
};

/* @spec as a record (its ports malloc'd: record_clear()). */
void fixture_record(struct device_record *ret, const struct fixture_dev *spec);
/* A table listing the @n devices of @specs, present and ready. */
struct devices *fixture_table(const struct fixture_dev *specs, size_t n);

#endif
