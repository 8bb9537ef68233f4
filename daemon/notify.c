/* SPDX-License-Identifier: MIT */
/*
 * sd_notify wrappers for Type=notify and the watchdog.  systemd kills and
 * restarts the daemon when WATCHDOG=1 stops arriving within WatchdogSec;
 * the keep-alive runs on the main loop's own timer, so a stuck loop is
 * exactly what the watchdog catches.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "notify.h"

struct notify {
	struct event *watchdog;
	uint64_t watchdog_usec; /* keep-alive period, 0 when off */
	char last_status[256];
};

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	sd_notify(0, "WATCHDOG=1");
}

static int start_watchdog(struct notify *n, struct event_base *base)
{
	uint64_t usec = 0;
	struct timeval tv;
	int r;

	r = sd_watchdog_enabled(0, &usec);
	if (r <= 0 || usec == 0)
		return r < 0 ? r : 0;
	n->watchdog_usec = usec / 2;
	n->watchdog = event_new(base, -1, EV_PERSIST, on_watchdog, n);
	if (!n->watchdog)
		return -ENOMEM;
	tv.tv_sec = n->watchdog_usec / 1000000;
	tv.tv_usec = n->watchdog_usec % 1000000;
	if (event_add(n->watchdog, &tv) < 0)
		return -EINVAL;
	log_debug("watchdog keep-alive every %llu ms",
		  (unsigned long long)(n->watchdog_usec / 1000));
	return 0;
}

struct notify *notify_new(struct event_base *base)
{
	struct notify *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return NULL;
	r = start_watchdog(n, base);
	if (r < 0) {
		/* A broken $WATCHDOG_USEC is systemd's problem, not fatal. */
		log_warnc(r, "watchdog");
	}
	return n;
}

void notify_free(struct notify *n)
{
	if (!n)
		return;
	if (n->watchdog)
		event_free(n->watchdog);
	free(n);
}

uint64_t notify_watchdog_usec(const struct notify *n)
{
	return n->watchdog_usec;
}

void notify_ready(struct notify *n, const char *status)
{
	sd_notifyf(0, "READY=1\nSTATUS=%s", status);
	snprintf(n->last_status, sizeof(n->last_status), "%s", status);
}

void notify_status(struct notify *n, const char *fmt, ...)
{
	char status[sizeof(n->last_status)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	/* Events come in bursts; say nothing when nothing changed. */
	if (strcmp(status, n->last_status) == 0)
		return;
	snprintf(n->last_status, sizeof(n->last_status), "%s", status);
	sd_notifyf(0, "STATUS=%s", status);
}

void notify_reloading(struct notify *n)
{
	sd_notify(0, "RELOADING=1");
}

void notify_stopping(struct notify *n)
{
	sd_notify(0, "STOPPING=1");
}
