/*
 * Where a flush's time goes: with SLUICE_ACB_TIMING set in the environment
 * every rank prints one line per flush on stderr (docs/acb.md).
 */
#ifndef SLUICE_ACB_FLUSH_CLOCK_H
#define SLUICE_ACB_FLUSH_CLOCK_H

#include <stdint.h>

#include "acb/acb.h"

enum flush_phase { PHASE_PLAN, PHASE_PACK, PHASE_HEADERS, PHASE_DATA, PHASE_SORT, PHASE_WRITE, PHASE_AGREE, PHASE_COUNT };

struct flush_clock {
    int on;
    double last, spent[PHASE_COUNT];
};

/* Starts the clock when SLUICE_ACB_TIMING is set (else every call is a no-op). */
void sluice_acb_clock_start(struct flush_clock *c);

/* The time since the previous mark goes to phase. */
void sluice_acb_clock_mark(struct flush_clock *c, enum flush_phase phase);

/* This rank's line: aggregators, rounds, bytes sent and received, writes
 * issued since writes_before, the phases. */
void sluice_acb_clock_print(const struct flush_clock *c, MPI_Comm comm, int naggs, int64_t sent, int64_t received,
                            const struct sluice_acb_stats *st, int64_t writes_before, int64_t rounds_before);

#endif
