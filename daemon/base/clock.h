/* SPDX-License-Identifier: MIT */
/*
 * The daemon's clocks, read one way everywhere: the monotonic clock for
 * deadlines and durations (timers, holds, scan times, connection ages),
 * the realtime clock where a time is shown to people or kept across
 * restarts (AWAY deadlines, which clients compare with their own clock).
 */
#ifndef RDMAD_CLOCK_H
#define RDMAD_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t clock_monotonic_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000;
}

static inline uint64_t clock_realtime_ms(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000000;
}

#endif
