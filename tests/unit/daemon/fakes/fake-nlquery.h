/* SPDX-License-Identifier: MIT */
/* The scripted namespace of fake-nlquery.c. */
#ifndef RDMAD_FAKE_NLQUERY_H
#define RDMAD_FAKE_NLQUERY_H

#include <stddef.h>

#include "sysfs.h"

#define FAKE_NLQUERY_MAX 8

/* What the next nlquery_devices() answers (copied). */
void fake_nlquery_set(const struct device_record *devs, size_t n);
/* nlquery_devices() on @sock, or any dup of it, fails with @err from now
 * on (0: answers again), as a socket whose other holder fills it with
 * junk (-EBUSY) or takes our replies (-EAGAIN). */
void fake_nlquery_fail(int sock, int err);
/* nlquery_devices() calls so far. */
unsigned int fake_nlquery_calls(void);

#endif
