/* SPDX-License-Identifier: MIT */
/*
 * The one assertion of the unit tests: CHECK(cond) or CHECK(cond, "fmt",
 * ...) reports a failed condition with its place and an optional message
 * (the format must be a string literal), counts it and goes on, so one run
 * shows every failing row of a table.  A test's main() returns
 * failures ? 1 : 0 (or 77 to skip).
 */
#ifndef RDMAD_TEST_CHECK_H
#define RDMAD_TEST_CHECK_H

#include <stdio.h>

static unsigned int failures;

/* UNDER_ASAN: built with AddressSanitizer (gcc or clang), for the cases
 * its runtime cannot run, each skipped with its reason. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			failures++;                                            \
			fprintf(stderr, "%s:%d: %s: FAIL %s", __FILE__,        \
				__LINE__, __func__, #cond);                    \
			fprintf(stderr, ": " __VA_ARGS__);                     \
			fputc('\n', stderr);                                   \
		}                                                              \
	} while (0)

#endif
