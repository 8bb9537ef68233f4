/* SPDX-License-Identifier: MIT */
/*
 * systemd notification (sd_notify): READY=1, STATUS=, STOPPING=1, and the
 * watchdog keep-alive on a libevent timer at half of WatchdogSec.  Every
 * call is a no-op when not started by systemd (no $NOTIFY_SOCKET).
 */
#ifndef RDMAD_NOTIFY_H
#define RDMAD_NOTIFY_H

#include <stdint.h>

struct event_base;
struct notify;

/* NULL with errno set on failure. */
struct notify *notify_new(struct event_base *base);
void notify_free(struct notify *n);
/* Interval of the watchdog keep-alive in microseconds, 0 when off. */
uint64_t notify_watchdog_usec(const struct notify *n);
void notify_ready(struct notify *n, const char *status);
void notify_status(struct notify *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void notify_reloading(struct notify *n);
void notify_stopping(struct notify *n);

#endif
