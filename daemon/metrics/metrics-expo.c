/* SPDX-License-Identifier: MIT */
/*
 * The two exposition formats a scraper may get, written from one
 * description of each family.  They differ in little: OpenMetrics names a
 * counter's family without "_total" and has an info type, which the text
 * format 0.0.4 lacks (a gauge NAME_info there); OpenMetrics ends with
 * "# EOF".  Both escape backslash, double quote and newline in label
 * values and require UTF-8, so bytes that are not are replaced with
 * U+FFFD: a sysfs value must never make a scrape unparseable.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "metrics-expo.h"

/* Bytes of an Accept header we look at; evhttp caps headers anyway. */
#define ACCEPT_MAX 1024

const char *metrics_format_content_type(enum metrics_format format)
{
	switch (format) {
	case METRICS_FORMAT_TEXT:
		return "text/plain; version=0.0.4; charset=utf-8";
	case METRICS_FORMAT_OPENMETRICS:
		return "application/openmetrics-text; version=1.0.0; "
		       "charset=utf-8";
	}
	return "text/plain";
}

/* ---- Accept negotiation ---- */

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return s;
}

/* What one media range of an Accept header offers us. */
struct accept_range {
	int format; /* an enum metrics_format, or -1: neither */
	double q;
};

/* "version=..." must be one we write, when given at all. */
static int range_format(const char *type, const char *version)
{
	if (!strcasecmp(type, "application/openmetrics-text"))
		return !version || !strcmp(version, "1.0.0")
			       ? METRICS_FORMAT_OPENMETRICS
			       : -1;
	if (!strcasecmp(type, "text/plain"))
		return !version || !strcmp(version, "0.0.4")
			       ? METRICS_FORMAT_TEXT
			       : -1;
	/* Wildcards get the default; OpenMetrics is asked for by name. */
	if (!strcmp(type, "*/*") || !strcasecmp(type, "text/*"))
		return METRICS_FORMAT_TEXT;
	return -1;
}

/* Parse "type/subtype;param=value;q=0.5" in place. */
static struct accept_range parse_range(char *range)
{
	struct accept_range r = {.format = -1, .q = 1.0};
	const char *version = NULL;
	char *save = NULL, *type, *param, *end;

	type = trim(strtok_r(range, ";", &save) ?: "");
	while ((param = strtok_r(NULL, ";", &save))) {
		param = trim(param);
		if (!strncasecmp(param, "version=", 8)) {
			version = param + 8;
		} else if (!strncasecmp(param, "q=", 2)) {
			r.q = strtod(param + 2, &end);
			if (end == param + 2 || *end || r.q < 0 || r.q > 1)
				return (struct accept_range){.format = -1};
		}
	}
	r.format = range_format(type, version);
	return r;
}

enum metrics_format metrics_negotiate(const char *accept)
{
	/* The best q of each format; ties go to the range listed first. */
	double best[2] = {0, 0};
	int first[2] = {-1, -1}, i = 0;
	char buf[ACCEPT_MAX], *save = NULL, *range;

	if (!accept)
		return METRICS_FORMAT_TEXT;
	snprintf(buf, sizeof(buf), "%s", accept);
	for (range = strtok_r(buf, ",", &save); range;
	     range = strtok_r(NULL, ",", &save), i++) {
		struct accept_range r = parse_range(range);

		if (r.format < 0 || r.q <= best[r.format])
			continue;
		best[r.format] = r.q;
		first[r.format] = i;
	}
	if (best[METRICS_FORMAT_OPENMETRICS] > best[METRICS_FORMAT_TEXT] ||
	    (best[METRICS_FORMAT_OPENMETRICS] > 0 &&
	     best[METRICS_FORMAT_OPENMETRICS] == best[METRICS_FORMAT_TEXT] &&
	     first[METRICS_FORMAT_OPENMETRICS] < first[METRICS_FORMAT_TEXT]))
		return METRICS_FORMAT_OPENMETRICS;
	return METRICS_FORMAT_TEXT;
}

/* ---- writing ---- */

static void out(struct expo *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out(struct expo *e, const char *fmt, ...)
{
	size_t room = e->len < e->size ? e->size - e->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	/* Sizing with a NULL buffer: no pointer arithmetic on it. */
	n = vsnprintf(room ? e->buf + e->len : e->buf, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		e->len += n;
}

static void out_bytes(struct expo *e, const char *s, size_t n)
{
	out(e, "%.*s", (int)n, s);
}

void expo_init(struct expo *e, enum metrics_format format, char *buf,
	       size_t size)
{
	*e = (struct expo){.buf = buf, .size = size, .format = format};
	if (size)
		buf[0] = '\0';
}

static const char *type_name(const struct expo *e, enum metrics_type type)
{
	switch (type) {
	case METRICS_TYPE_GAUGE:
		return "gauge";
	case METRICS_TYPE_COUNTER:
		return "counter";
	case METRICS_TYPE_INFO:
		return e->format == METRICS_FORMAT_OPENMETRICS ? "info"
							       : "gauge";
	}
	return "unknown";
}

/* What samples add to the family's name. */
static const char *sample_suffix(enum metrics_type type)
{
	switch (type) {
	case METRICS_TYPE_GAUGE:
		return "";
	case METRICS_TYPE_COUNTER:
		return "_total";
	case METRICS_TYPE_INFO:
		return "_info";
	}
	return "";
}

/* The text format has no family apart from its samples' name. */
static const char *family_suffix(const struct expo *e, enum metrics_type type)
{
	return e->format == METRICS_FORMAT_TEXT ? sample_suffix(type) : "";
}

void expo_family(struct expo *e, const struct metrics_family *family)
{
	const char *suffix = family_suffix(e, family->type);

	e->family = family;
	out(e, "# TYPE %s%s %s\n", family->name, suffix,
	    type_name(e, family->type));
	out(e, "# HELP %s%s %s\n", family->name, suffix, family->help);
}

/* Length of the valid UTF-8 sequence at @s, or 0 if there is none. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* No overlong forms, no surrogates, nothing past U+10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

static void out_label_value(struct expo *e, const char *value)
{
	const unsigned char *s = (const unsigned char *)value;
	size_t n;

	while (*s) {
		if (*s == '\\' || *s == '"') {
			out(e, "\\%c", *s++);
			continue;
		}
		if (*s == '\n') {
			out(e, "\\n");
			s++;
			continue;
		}
		n = utf8_len(s);
		if (n == 0) {
			out(e, "\xef\xbf\xbd");
			s++;
			continue;
		}
		out_bytes(e, (const char *)s, n);
		s += n;
	}
}

static void out_name_labels(struct expo *e, const char *const *labels)
{
	out(e, "%s%s", e->family->name, sample_suffix(e->family->type));
	if (!labels || !labels[0])
		return;
	out(e, "{");
	for (size_t i = 0; labels[i] && labels[i + 1]; i += 2) {
		out(e, "%s%s=\"", i ? "," : "", labels[i]);
		out_label_value(e, labels[i + 1]);
		out(e, "\"");
	}
	out(e, "}");
}

void expo_u64(struct expo *e, const char *const *labels, uint64_t value)
{
	out_name_labels(e, labels);
	out(e, " %llu\n", (unsigned long long)value);
}

void expo_i64(struct expo *e, const char *const *labels, int64_t value)
{
	out_name_labels(e, labels);
	out(e, " %lld\n", (long long)value);
}

void expo_double(struct expo *e, const char *const *labels, double value)
{
	out_name_labels(e, labels);
	out(e, " %.15g\n", value);
}

size_t expo_end(struct expo *e)
{
	if (e->format == METRICS_FORMAT_OPENMETRICS)
		out(e, "# EOF\n");
	return e->len;
}
