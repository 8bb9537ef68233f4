/* SPDX-License-Identifier: MIT */
/* The call recorder behind fake-scan.c and fake-devices.c. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fake.h"

#define FAKE_CALLS_MAX 4096

static char calls[FAKE_CALLS_MAX][96];
static size_t ncalls;
static char dump[FAKE_CALLS_MAX * 8];

void fake_calls_reset(void)
{
	ncalls = 0;
}

void fake_calls_add(const char *fmt, ...)
{
	va_list ap;

	if (ncalls == FAKE_CALLS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(calls[ncalls++], sizeof(calls[0]), fmt, ap);
	va_end(ap);
}

unsigned int fake_calls_count(const char *call)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < ncalls; i++)
		n += strcmp(calls[i], call) == 0;
	return n;
}

size_t fake_calls_total(void)
{
	return ncalls;
}

const char *fake_calls_dump(void)
{
	size_t i, off = 0;

	dump[0] = '\0';
	for (i = 0; i < ncalls && off < sizeof(dump) - 100; i++)
		off += snprintf(dump + off, sizeof(dump) - off, "%s;",
				calls[i]);
	return dump;
}
