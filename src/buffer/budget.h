/*
 * The process's buffer memory: one cap across every write-behind window,
 * flush in flight and read-ahead cache, so that 10,000 open files cannot
 * exhaust memory. Reservations that would pass the cap are refused; the
 * caller then waits for flushes in flight or evicts idle windows.
 */
#ifndef SLUICE_BUFFER_BUDGET_H
#define SLUICE_BUFFER_BUDGET_H

#include <stdint.h>

void budget_init(int64_t cap);

/* Reserve delta bytes (give back when negative): 0, or -ENOMEM past the cap. */
int budget_reserve(int64_t delta);

/* Wait until `want` more bytes would fit or nothing is in flight that
 * could free memory (flush jobs report their end with budget_wake). */
void budget_wait(int64_t want);
void budget_wake(void);

int64_t budget_used(void);
int64_t budget_high_water(void);
int64_t budget_cap(void);

/* In a forked child: the parent's lock state means nothing. */
void budget_after_fork_child(void);

#endif
