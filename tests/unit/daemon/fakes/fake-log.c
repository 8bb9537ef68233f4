/* SPDX-License-Identifier: MIT */
/*
 * A logger for unit tests: messages go to stderr (meson keeps them in the
 * test log) and warnings are counted, so a test can check that garbage is
 * logged once and not once per event.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake.h"
#include "log.h"

unsigned int fake_log_warnings;

static void vlog(const char *level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void vlog(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

#define LOG_BODY(level)                                                        \
	va_list ap;                                                            \
	va_start(ap, fmt);                                                     \
	vlog(level, fmt, ap);                                                  \
	va_end(ap)

void log_init(bool foreground, int max_level)
{
}

void log_set_level(int max_level)
{
}

void log_warn(const char *fmt, ...)
{
	fake_log_warnings++;
	LOG_BODY("warn");
}

void log_warnc(int err, const char *fmt, ...)
{
	fake_log_warnings++;
	LOG_BODY("warn");
}

void log_warnx(const char *fmt, ...)
{
	fake_log_warnings++;
	LOG_BODY("warn");
}

void log_info(const char *fmt, ...)
{
	LOG_BODY("info");
}

void log_debug(const char *fmt, ...)
{
	LOG_BODY("debug");
}

void fatal(const char *fmt, ...)
{
	LOG_BODY("fatal");
	abort();
}

void fatalx(const char *fmt, ...)
{
	LOG_BODY("fatal");
	abort();
}
