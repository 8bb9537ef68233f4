/* SPDX-License-Identifier: MIT */
/*
 * Daemon logging after OpenBSD's log.c.  Three sinks, chosen once at
 * start: stderr with sd-daemon "<N>" level prefixes when systemd reads our
 * stderr (JOURNAL_STREAM is set), plain stderr in an interactive
 * foreground run, and syslog(3) otherwise.  Messages above the current
 * level are dropped before they are formatted.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

enum log_sink {
	LOG_SINK_STDERR,
	LOG_SINK_JOURNAL,
	LOG_SINK_SYSLOG,
};

static enum log_sink sink = LOG_SINK_STDERR;
static int level = LOG_INFO;

void log_init(bool foreground, int max_level)
{
	if (getenv("JOURNAL_STREAM"))
		sink = LOG_SINK_JOURNAL;
	else if (foreground)
		sink = LOG_SINK_STDERR;
	else
		sink = LOG_SINK_SYSLOG;
	if (sink == LOG_SINK_SYSLOG)
		openlog("rdmad", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_set_level(max_level);
}

void log_set_level(int max_level)
{
	if (max_level < LOG_ERR)
		max_level = LOG_ERR;
	if (max_level > LOG_DEBUG)
		max_level = LOG_DEBUG;
	level = max_level;
}

/* printf-like, their callers checked (clang's -Wformat-nonliteral). */
static void vlog(int prio, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static void vlog_errno(int prio, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void vlog(int prio, const char *fmt, va_list ap)
{
	char line[1024];

	if (prio > level)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	switch (sink) {
	case LOG_SINK_JOURNAL:
		fprintf(stderr, "<%d>%s\n", prio, line);
		break;
	case LOG_SINK_STDERR:
		fprintf(stderr, "rdmad: %s\n", line);
		break;
	case LOG_SINK_SYSLOG:
		syslog(prio, "%s", line);
		break;
	}
}

static void log_line(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void log_line(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(prio, fmt, ap);
	va_end(ap);
}

/* Appends ": strerror(errno)", keeping errno as it was on entry. */
static void vlog_errno(int prio, const char *fmt, va_list ap)
{
	int saved = errno;
	char msg[900];

	if (prio > level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	log_line(prio, "%s: %s", msg, strerror(saved));
	errno = saved;
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_errno(LOG_WARNING, fmt, ap);
	va_end(ap);
}

void log_warnc(int err, const char *fmt, ...)
{
	va_list ap;

	errno = err < 0 ? -err : err;
	va_start(ap, fmt);
	vlog_errno(LOG_WARNING, fmt, ap);
	va_end(ap);
}

void log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_WARNING, fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_INFO, fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_errno(LOG_CRIT, fmt, ap);
	va_end(ap);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, fmt, ap);
	va_end(ap);
	exit(1);
}
