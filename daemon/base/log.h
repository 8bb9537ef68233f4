/* SPDX-License-Identifier: MIT */
/*
 * Daemon logging, after OpenBSD's log.h: stderr with sd-daemon "<N>"
 * level prefixes in the foreground or under systemd, syslog otherwise.
 * log_warn() appends strerror(errno), log_warnc() that of an -errno
 * value as our functions return it; the *x variants append nothing.
 */
#ifndef RDMAD_LOG_H
#define RDMAD_LOG_H

#include <stdarg.h>
#include <stdbool.h>

void log_init(bool foreground, int max_level);
void log_set_level(int max_level); /* LOG_ERR .. LOG_DEBUG */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnc(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#endif
