/* The profiler's clock; see clock.h. */
#include "common/clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

int sluice__clock_tsc;
static uint64_t cal_ticks, cal_ns;   /* calibration point, taken at load */

void sluice_clock_init(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every
     * power state, so it measures time. */
    if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8))) {
        cal_ns = sluice_clock_mono_ns();
        cal_ticks = __rdtsc();
        sluice__clock_tsc = 1;
        return;
    }
#endif
    sluice__clock_tsc = 0;
}

double sluice_clock_seconds_per_tick(void)
{
    if (!sluice__clock_tsc)
        return 1e-9;
    uint64_t ns = sluice_clock_mono_ns(), ticks = __rdtsc();
    if (ticks <= cal_ticks || ns <= cal_ns)
        return 1e-9;
    /* The longer the process has lived, the better the estimate: a read
     * jitter of ~50 ns is 0.05 % of a 100 us life. */
    return (double)(ns - cal_ns) * 1e-9 / (double)(ticks - cal_ticks);
}
