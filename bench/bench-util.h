/* SPDX-License-Identifier: MIT */
/*
 * What the benchmarks share: clocks, sleeping, sorting, and percentiles of
 * sorted nanosecond samples.
 */
#ifndef RDMAD_BENCH_UTIL_H
#define RDMAD_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline void sleep_us(unsigned int us)
{
	struct timespec ts = {.tv_sec = us / 1000000,
			      .tv_nsec = (long)(us % 1000000) * 1000};

	nanosleep(&ts, NULL);
}

/* For qsort() of uint64_t samples. */
static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* For qsort() of double figures. */
static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The @pct-th percentile of @n sorted nanosecond samples, in ms. */
static inline double pct_ms(const uint64_t *sorted, size_t n, unsigned int pct)
{
	size_t i = (n * pct) / 100;

	return (double)sorted[i < n ? i : n - 1] / 1e6;
}

/*
 * Sort @lat (@n samples, ns) and print one row of the latency tables:
 * what, receivers, samples, missing, p50, p99, max (ms), p99 against
 * @target_ms and, when @floor_p99 > 0, against the floor.  @width: the
 * first column's.  Returns the p99 in ms.
 */
static inline double print_row(const char *what, int width,
			       unsigned int receivers, uint64_t *lat, size_t n,
			       size_t missing, double target_ms,
			       double floor_p99)
{
	double p99;

	if (n == 0) {
		printf("%-*s %7u %8zu %7zu   (no samples)\n", width, what,
		       receivers, n, missing);
		return 0;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	p99 = pct_ms(lat, n, 99);
	printf("%-*s %7u %8zu %7zu %8.3f %8.3f %8.3f %7.2fx", width, what,
	       receivers, n, missing, pct_ms(lat, n, 50), p99,
	       pct_ms(lat, n, 100), p99 / target_ms);
	if (floor_p99 > 0)
		printf(" %8.1fx", p99 / floor_p99);
	printf("\n");
	return p99;
}

#endif
