/* SPDX-License-Identifier: MIT */
/*
 * Unit test of daemon/metrics/metrics-expo.c: which format an Accept header
 * gets, how one family description reads in each format, and the escaping of
 * label values (backslash, double quote, newline; bytes that are not
 * UTF-8 become U+FFFD).  That Prometheus' own parsers accept the whole
 * exposition is tests/integration/test_metrics_formats.py's job.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "metrics-expo.h"

#define OM METRICS_FORMAT_OPENMETRICS
#define TEXT METRICS_FORMAT_TEXT

static const struct negotiate_case {
	const char *accept;
	enum metrics_format want;
} negotiate_cases[] = {
	{NULL, TEXT},
	{"", TEXT},
	{"*/*", TEXT},
	{"text/plain", TEXT},
	{"text/plain;version=0.0.4", TEXT},
	{"application/openmetrics-text", OM},
	{"application/openmetrics-text; version=1.0.0; charset=utf-8", OM},
	{"Application/OpenMetrics-Text;version=1.0.0", OM},
	/* Prometheus 2.x scrapes with this. */
	{"application/openmetrics-text;version=1.0.0,application/"
	 "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
	 "*/*;q=0.1",
	 OM},
	/* Prometheus 3.x, OpenMetrics off: text wins by q. */
	{"text/plain;version=0.0.4;q=0.9,application/"
	 "openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5",
	 TEXT},
	{"application/"
	 "openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
	 "text/plain;version=0.0.4;q=0.3",
	 OM},
	/* A version we do not write is not a match. */
	{"application/openmetrics-text;version=0.0.1", TEXT},
	{"application/openmetrics-text;version=2.0.0,text/plain;q=0.1", TEXT},
	/* Refused outright, or malformed q. */
	{"application/openmetrics-text;q=0", TEXT},
	{"application/openmetrics-text;q=abc", TEXT},
	{"application/openmetrics-text;q=1.5", TEXT},
	/* Equal q: the one listed first. */
	{"application/openmetrics-text, text/plain", OM},
	{"text/plain, application/openmetrics-text", TEXT},
	{"*/*, application/openmetrics-text", TEXT},
	{"application/json", TEXT},
	{" application/openmetrics-text ; q=0.2 , text/html", OM},
};

static void test_negotiate(void)
{
	for (size_t i = 0;
	     i < sizeof(negotiate_cases) / sizeof(*negotiate_cases); i++) {
		const struct negotiate_case *c = &negotiate_cases[i];

		CHECK(metrics_negotiate(c->accept) == c->want, "'%s'",
		      c->accept ? c->accept : "(null)");
	}
	CHECK(strstr(metrics_format_content_type(TEXT), "version=0.0.4"));
	CHECK(strstr(metrics_format_content_type(OM),
		     "application/openmetrics-text; version=1.0.0"));
}

static const struct metrics_family counter = {"x_events", METRICS_TYPE_COUNTER,
					      "Events."};
static const struct metrics_family info = {"x_build", METRICS_TYPE_INFO,
					   "Build."};
static const struct metrics_family gauge = {"x_devices", METRICS_TYPE_GAUGE,
					    "Devices."};

static void render(enum metrics_format format, char *buf, size_t size)
{
	struct expo e;

	expo_init(&e, format, buf, size);
	expo_family(&e, &info);
	expo_u64(&e, (const char *const[]){"version", "1.0", NULL}, 1);
	expo_family(&e, &counter);
	expo_u64(&e, (const char *const[]){"type", "a", "dev", "b", NULL}, 7);
	expo_family(&e, &gauge);
	expo_i64(&e, NULL, -1);
	expo_double(&e, NULL, 0.25);
	expo_end(&e);
}

static void test_formats(void)
{
	static const char text[] = "# TYPE x_build_info gauge\n"
				   "# HELP x_build_info Build.\n"
				   "x_build_info{version=\"1.0\"} 1\n"
				   "# TYPE x_events_total counter\n"
				   "# HELP x_events_total Events.\n"
				   "x_events_total{type=\"a\",dev=\"b\"} 7\n"
				   "# TYPE x_devices gauge\n"
				   "# HELP x_devices Devices.\n"
				   "x_devices -1\n"
				   "x_devices 0.25\n";
	static const char om[] = "# TYPE x_build info\n"
				 "# HELP x_build Build.\n"
				 "x_build_info{version=\"1.0\"} 1\n"
				 "# TYPE x_events counter\n"
				 "# HELP x_events Events.\n"
				 "x_events_total{type=\"a\",dev=\"b\"} 7\n"
				 "# TYPE x_devices gauge\n"
				 "# HELP x_devices Devices.\n"
				 "x_devices -1\n"
				 "x_devices 0.25\n"
				 "# EOF\n";
	char buf[1024];

	render(TEXT, buf, sizeof(buf));
	CHECK(strcmp(buf, text) == 0, "text:\n%s", buf);
	render(OM, buf, sizeof(buf));
	CHECK(strcmp(buf, om) == 0, "openmetrics:\n%s", buf);
}

static const struct escape_case {
	const char *value, *want;
} escape_cases[] = {
	{"mlx5_0", "mlx5_0"},
	{"", ""},
	{"a\"b", "a\\\"b"},
	{"a\\b", "a\\\\b"},
	{"a\nb", "a\\nb"},
	{"\\\"\n", "\\\\\\\"\\n"},
	{"tab\there", "tab\there"},
	/* UTF-8 stays; anything else is U+FFFD, a byte at a time. */
	{"caf\xc3\xa9", "caf\xc3\xa9"},
	{"\xe2\x82\xac\xf0\x9f\x98\x80", "\xe2\x82\xac\xf0\x9f\x98\x80"},
	{"a\xff"
	 "b",
	 "a\xef\xbf\xbd"
	 "b"},
	{"\xc3", "\xef\xbf\xbd"},
	{"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"}, /* overlong '/' */
	{"\xed\xa0\x80",
	 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* surrogate */
	{"\xf4\x90\x80\x80",
	 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
	{"\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd"},
};

static void test_escape(void)
{
	for (size_t i = 0; i < sizeof(escape_cases) / sizeof(*escape_cases);
	     i++) {
		const struct escape_case *c = &escape_cases[i];
		char buf[256], want[256];
		struct expo e;

		snprintf(want, sizeof(want), "x_devices{d=\"%s\"} 1\n",
			 c->want);
		expo_init(&e, TEXT, buf, sizeof(buf));
		e.family = &gauge;
		expo_u64(&e, (const char *const[]){"d", c->value, NULL}, 1);
		CHECK(strcmp(buf, want) == 0, "case %zu: '%s'", i, buf);
	}
}

/* Sizing with no buffer, and truncation, as snprintf does. */
static void test_bounds(void)
{
	char full[1024], small[16];
	struct expo e;
	size_t n;

	render(OM, full, sizeof(full));
	expo_init(&e, OM, NULL, 0);
	expo_family(&e, &info);
	expo_u64(&e, (const char *const[]){"version", "1.0", NULL}, 1);
	expo_family(&e, &counter);
	expo_u64(&e, (const char *const[]){"type", "a", "dev", "b", NULL}, 7);
	expo_family(&e, &gauge);
	expo_i64(&e, NULL, -1);
	expo_double(&e, NULL, 0.25);
	n = expo_end(&e);
	CHECK(n == strlen(full), "%zu vs %zu", n, strlen(full));
	render(OM, small, sizeof(small));
	CHECK(strlen(small) == sizeof(small) - 1 &&
	      strncmp(small, full, sizeof(small) - 1) == 0);
}

int main(void)
{
	test_negotiate();
	test_formats();
	test_escape();
	test_bounds();
	return failures ? 1 : 0;
}
