/* SPDX-License-Identifier: MIT */
/*
 * Unit test of rescan coalescing: each case is a sequence of requests
 * (a name, or "*" for a full rescan) and what one take must then yield.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coalesce.h"
#include "check.h"

static const struct {
	const char *what;
	size_t threshold;
	const char *adds; /* space separated; "*" is NULL (everything) */
	bool want_full;
	const char *want; /* names in order of first request */
} cases[] = {
	{"nothing", 4, "", false, ""},
	{"one", 4, "mlx5_0", false, "mlx5_0"},
	{"duplicates collapse", 4, "a b a a b", false, "a b"},
	{"at the threshold", 3, "a b c", false, "a b c"},
	{"past the threshold", 3, "a b c d", true, ""},
	{"duplicates do not count", 3, "a a a b b c c", false, "a b c"},
	{"explicit full", 8, "a * b", true, ""},
	{"full first", 8, "* a", true, ""},
	{"threshold 0", 0, "a", true, ""},
};

static void join(char **names, size_t n, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += snprintf(buf + len, size - len, "%s%s", i ? " " : "",
				names[i]);
}

static void run_case(size_t i)
{
	struct coalesce *c = coalesce_new(cases[i].threshold);
	char buf[256], got[256], *save, *tok, **names;
	bool full;
	size_t n;

	snprintf(buf, sizeof(buf), "%s", cases[i].adds);
	for (tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		CHECK(coalesce_add(c, strcmp(tok, "*") ? tok : NULL) == 0,
		      "%s: add %s", cases[i].what, tok);
	CHECK(coalesce_pending(c) == (cases[i].adds[0] != '\0'), "%s: pending",
	      cases[i].what);
	CHECK(coalesce_take(c, &full, &names, &n) == 0, "take");
	join(names, n, got, sizeof(got));
	CHECK(full == cases[i].want_full && !strcmp(got, cases[i].want),
	      "%s: full=%d names \"%s\", want full=%d \"%s\"", cases[i].what,
	      full, got, cases[i].want_full, cases[i].want);
	coalesce_names_free(names, n);
	/* A take resets: nothing pending, and the next round starts over. */
	CHECK(!coalesce_pending(c), "%s: pending after take", cases[i].what);
	CHECK(coalesce_add(c, "z") == 0 &&
		      coalesce_take(c, &full, &names, &n) == 0,
	      "second round");
	CHECK(cases[i].threshold == 0
		      ? full
		      : (!full && n == 1 && !strcmp(names[0], "z")),
	      "%s: second round full=%d n=%zu", cases[i].what, full, n);
	coalesce_names_free(names, n);
	coalesce_free(c);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(i);
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("test-coalesce: all passed\n");
	return failures ? 1 : 0;
}
