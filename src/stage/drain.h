/*
 * `sluice drain` and `sluice recover`'s publishing (drain.c): the entries
 * named on standard input, published by the library's own steps, one line
 * of JSON per entry on standard output.
 */
#ifndef SLUICE_STAGE_DRAIN_H
#define SLUICE_STAGE_DRAIN_H

/* jobs: entries published at once (by owner); force_running: also those
 * of processes that still run here. 0, or 1 when the tier cannot be used
 * (one line on stderr). */
int stage_drain_named(const char *tier, int jobs, int force_running);

#endif
