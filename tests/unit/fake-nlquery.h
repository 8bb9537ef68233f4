/* SPDX-License-Identifier: MIT */
/* The scripted namespace of fake-nlquery.c. */
#ifndef RDMAD_FAKE_NLQUERY_H
#define RDMAD_FAKE_NLQUERY_H

#include <stddef.h>

#include "sysfs.h"

#define FAKE_NLQUERY_MAX 8

/* What the next nlquery_devices() answers (copied). */
void fake_nlquery_set(const struct sysfs_device *devs, size_t n);

#endif
