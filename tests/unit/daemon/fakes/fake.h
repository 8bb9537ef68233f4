/* SPDX-License-Identifier: MIT */
/*
 * Fakes for engineer C2's event-source tests: a logger that counts
 * warnings, and a scan and device table that only record the calls the
 * event sources make on them ("dev:mlx5_0", "all", "netdev:eth0",
 * "uverbs:uverbs3", "state:eth0=up").
 */
#ifndef RDMAD_FAKE_H
#define RDMAD_FAKE_H

#include <stddef.h>

extern unsigned int fake_log_warnings;

void fake_calls_reset(void);
void fake_calls_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* How many recorded calls equal @call. */
unsigned int fake_calls_count(const char *call);
size_t fake_calls_total(void);
/* All calls, ';'-separated, for failure messages. */
const char *fake_calls_dump(void);

#endif
