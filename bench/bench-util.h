/* SPDX-License-Identifier: MIT */
/*
 * What the benchmarks share: clocks, sleeping, and percentiles of sorted
 * nanosecond samples.
 */
#ifndef RDMAD_BENCH_UTIL_H
#define RDMAD_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
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

/* The @pct-th percentile of @n sorted nanosecond samples, in ms. */
static inline double pct_ms(const uint64_t *sorted, size_t n, unsigned int pct)
{
	size_t i = (n * pct) / 100;

	return (double)sorted[i < n ? i : n - 1] / 1e6;
}

#endif
