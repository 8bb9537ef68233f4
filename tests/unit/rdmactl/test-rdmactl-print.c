/* SPDX-License-Identifier: MIT */
/*
 * Unit test of rdmactl/print.c, the print layer: which form each of
 * PRINT_ANY, PRINT_JSON and PRINT_FP reaches (a table, row by row), where
 * a value goes in the JSON (an object's key, an array's element, the
 * outermost value), and what the text form does to what the daemon
 * relays.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"
#include "check.h"

enum kind { KIND_STRING, KIND_UINT, KIND_INT, KIND_BOOL };

/* One call inside an object, in each form: the JSON and the text. */
static const struct row {
	enum kind kind;
	enum print_type type;
	const char *fmt;
	const char *json;
	const char *text;
} rows[] = {
	{KIND_STRING, PRINT_ANY, "s=%s;", "{\"k\":\"v\\\"1\"}", "s=v\"1;"},
	{KIND_STRING, PRINT_JSON, "s=%s;", "{\"k\":\"v\\\"1\"}", ""},
	{KIND_STRING, PRINT_FP, "s=%s;", "{}", "s=v\"1;"},
	{KIND_UINT, PRINT_ANY, "u=%" PRIu64 ";", "{\"k\":18446744073709551615}",
	 "u=18446744073709551615;"},
	{KIND_UINT, PRINT_FP, "u=%" PRIu64 ";", "{}",
	 "u=18446744073709551615;"},
	{KIND_INT, PRINT_ANY, "i=%" PRId64 ";", "{\"k\":-1}", "i=-1;"},
	{KIND_INT, PRINT_JSON, "i=%" PRId64 ";", "{\"k\":-1}", ""},
	{KIND_BOOL, PRINT_ANY, "b=%s;", "{\"k\":true}", "b=true;"},
	{KIND_BOOL, PRINT_FP, "b=%s;", "{}", "b=true;"},
};

static void call(struct print *p, const struct row *r)
{
	switch (r->kind) {
	case KIND_STRING:
		print_string(p, r->type, "k", r->fmt, "v\"1");
		break;
	case KIND_UINT:
		print_uint(p, r->type, "k", r->fmt, UINT64_MAX);
		break;
	case KIND_INT:
		print_int(p, r->type, "k", r->fmt, -1);
		break;
	case KIND_BOOL:
		print_bool(p, r->type, "k", r->fmt, true);
		break;
	}
}

/* What @r prints in one form, an object around it. */
static char *form(const struct row *r, bool json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct print p;

	print_start(&p, f, json);
	print_open_object(&p, NULL);
	call(&p, r);
	print_close_object(&p);
	CHECK(print_end(&p, false) == 0, "print_end");
	fclose(f);
	return text;
}

static void test_rows(void)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char want[128], *got;

		snprintf(want, sizeof(want), "%s\n", rows[i].json);
		got = form(&rows[i], true);
		CHECK(!strcmp(got, want), "row %zu json: %s", i, got);
		free(got);
		got = form(&rows[i], false);
		CHECK(!strcmp(got, rows[i].text), "row %zu text: %s", i, got);
		free(got);
	}
}

/* Arrays of strings and of objects, nested; the text form has none of
 * the structure, only what PRINT_FP and PRINT_ANY print. */
static char *nested(bool json, bool pretty)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct print p;

	print_start(&p, f, json);
	print_open_object(&p, NULL);
	print_open_array(&p, "names");
	print_string(&p, PRINT_ANY, NULL, "%s", "a");
	print_fp(&p, "%s", ",");
	print_string(&p, PRINT_ANY, NULL, "%s", "b");
	print_close_array(&p);
	print_open_array(&p, "objs");
	print_open_object(&p, NULL);
	print_uint(&p, PRINT_JSON, "n", NULL, 1);
	print_close_object(&p);
	print_close_array(&p);
	print_uint(&p, PRINT_ANY, "after", " after=%" PRIu64, 2);
	print_close_object(&p);
	CHECK(print_end(&p, pretty) == 0, "print_end");
	fclose(f);
	return text;
}

static void test_nesting(void)
{
	char *t = nested(true, false);

	CHECK(!strcmp(t, "{\"names\":[\"a\",\"b\"],\"objs\":[{\"n\":1}],"
			 "\"after\":2}\n"),
	      "json: %s", t);
	free(t);
	t = nested(true, true);
	CHECK(strchr(t, '\n') != t + strlen(t) - 1 && strstr(t, "\"after\": 2"),
	      "pretty: %s", t);
	free(t);
	t = nested(false, false);
	CHECK(!strcmp(t, "a,b after=2"), "text: %s", t);
	free(t);
}

/* print_take(): the outermost value, also a bare one; NULL in text. */
static void test_take(void)
{
	struct json_object *v;
	struct print p;

	print_start(&p, NULL, true);
	print_uint(&p, PRINT_ANY, NULL, NULL, 7);
	v = print_take(&p);
	CHECK(v && json_object_get_uint64(v) == 7, "bare value");
	json_object_put(v);
	print_start(&p, stdout, false);
	print_uint(&p, PRINT_JSON, "k", NULL, 7);
	CHECK(print_take(&p) == NULL, "text form builds nothing");
}

/* The terminal never gets a control byte, a byte past ASCII or a bare
 * backslash from the daemon; an empty value is "-". */
static void test_escaped(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"mlx5_0", "mlx5_0"}, {"", "-"},
		{NULL, "-"},	      {"\x1b[2J", "\\x1b[2J"},
		{"a\\b", "a\\x5cb"},  {"\xff\x07", "\\xff\\x07"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(!strcmp(print_escaped(cases[i].in), cases[i].out),
		      "%zu: %s", i, print_escaped(cases[i].in));
}

int main(void)
{
	test_rows();
	test_nesting();
	test_take();
	test_escaped();
	return failures ? 1 : 0;
}
