/*
 * The profiler's clock. Every counted call reads it twice, so it must be
 * cheap: on x86-64 with an invariant TSC it is the time-stamp counter
 * (a few ns), converted to seconds only when the log is written, with a
 * rate measured against CLOCK_MONOTONIC over the process's whole life;
 * elsewhere it is CLOCK_MONOTONIC in nanoseconds. Async-signal-safe.
 */
#ifndef SLUICE_COMMON_CLOCK_H
#define SLUICE_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

extern int sluice__clock_tsc;   /* 1: ticks are TSC cycles; 0: nanoseconds */

/* Choose the clock and take the calibration point. Called once at load. */
void sluice_clock_init(void);

static inline uint64_t sluice_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Now, in ticks. */
static inline uint64_t sluice_now(void)
{
#if defined(__x86_64__)
    if (__builtin_expect(sluice__clock_tsc, 1))
        return __rdtsc();
#endif
    return sluice_clock_mono_ns();
}

/* Seconds per tick, measured from the calibration point to now. */
double sluice_clock_seconds_per_tick(void);

#endif
