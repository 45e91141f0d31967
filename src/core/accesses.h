/*
 * The four most frequent accesses of a dataset or variable, as Darshan's
 * H5D_ACCESS* and PNETCDF_VAR_ACCESS* counters have them: an access is a
 * tuple (size in bytes, lengths D1..D5, strides D1..D5). The first
 * SLUICE_CVAL_SLOTS distinct tuples are kept as a 64-bit hash and a count;
 * the four most frequent are in the record's counters in full, with their
 * counts (an access that enters them is the one being counted, so its
 * tuple is at hand). Callers hold the record's lock.
 */
#ifndef SLUICE_CORE_ACCESSES_H
#define SLUICE_CORE_ACCESSES_H

#include <stdint.h>

#include "core/record.h"

#define SLUICE_ACCESS_VALS 11   /* size, 5 lengths, 5 strides */

struct sluice_access_table {
    uint32_t n;
    uint32_t freq[SLUICE_CVAL_SLOTS];
    uint64_t key[SLUICE_CVAL_SLOTS];
};

/* One more access v. top: the record's ACCESS1_ACCESS counter, followed by
 * the four tuples of SLUICE_ACCESS_VALS counters; cnt: ACCESS1_COUNT and
 * the three counts after it. An access of size 0 is counted in the table
 * only. Ties in the top four go to the larger tuple. */
void sluice_access_count(struct sluice_access_table *t, int64_t *top, int64_t *cnt, const int64_t *v);

#endif
