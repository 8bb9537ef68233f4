/* SPDX-License-Identifier: MIT */
/*
 * The exposition writer behind /metrics: one description of a metric
 * family (name, type, help) rendered in either of the two formats a
 * scraper may ask for, with the label escaping both require.  Pure code:
 * no I/O, tested on its own (tests/unit/daemon/metrics/test-metrics-expo.c).
 */
#ifndef RDMAD_METRICS_EXPO_H
#define RDMAD_METRICS_EXPO_H

#include <stddef.h>
#include <stdint.h>

enum metrics_format {
	/* Prometheus text format 0.0.4: the default. */
	METRICS_FORMAT_TEXT,
	/* OpenMetrics 1.0.0, for scrapers that ask for it. */
	METRICS_FORMAT_OPENMETRICS,
};

/* Content-Type of each format. */
const char *metrics_format_content_type(enum metrics_format format);
/* The format an HTTP Accept header (may be NULL) asks for: OpenMetrics
 * only when it is acceptable (q > 0) and preferred to text/plain. */
enum metrics_format metrics_negotiate(const char *accept);

enum metrics_type {
	METRICS_TYPE_GAUGE,
	/* Samples get "_total"; the text format names the family so too. */
	METRICS_TYPE_COUNTER,
	/* OpenMetrics' info type; a gauge named NAME_info in text, value 1. */
	METRICS_TYPE_INFO,
};

struct metrics_family {
	const char *name; /* without _total or _info */
	enum metrics_type type;
	const char *help; /* one line, no backslash */
};

/* A bounded appender: keeps counting past the end like snprintf. */
struct expo {
	char *buf;
	size_t size, len;
	enum metrics_format format;
	const struct metrics_family *family; /* the one being written */
};

void expo_init(struct expo *e, enum metrics_format format, char *buf,
	       size_t size);
/* Start @family: its TYPE and HELP lines. */
void expo_family(struct expo *e, const struct metrics_family *family);
/*
 * One sample of the current family.  @labels is NULL or a NULL-terminated
 * list of name, value, name, value...; values are escaped here (and bytes
 * that are not UTF-8 replaced), names are ours and used as they are.
 */
void expo_u64(struct expo *e, const char *const *labels, uint64_t value);
void expo_i64(struct expo *e, const char *const *labels, int64_t value);
void expo_double(struct expo *e, const char *const *labels, double value);
/* Close the exposition ("# EOF" in OpenMetrics); returns its length. */
size_t expo_end(struct expo *e);

#endif
