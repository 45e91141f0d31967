/*
 * Updating counters. Every function takes a side mask (SLUICE_SIDES_*: the
 * app side, the fs side, or both at once in pass-through) and the start and
 * end of the real call in clock ticks (sluice_now()), and takes the record's lock.
 */
#ifndef SLUICE_CORE_COUNTERS_H
#define SLUICE_CORE_COUNTERS_H

#include <stdint.h>

#include "core/record.h"

#define SLUICE_SIDES_APP 1u
#define SLUICE_SIDES_FS 2u
#define SLUICE_SIDES_BOTH 3u

enum sluice_access { SLUICE_READ = 0, SLUICE_WRITE = 1 };

/* Process start in clock ticks (common/clock.h): timestamps are relative
 * to it. Times and timestamps are kept in ticks and converted to seconds
 * when the log is written. */
extern uint64_t sluice_start_ticks;

/* Darshan's access-size bucket of n bytes (0: 0-100 ... 9: more than 1 GiB),
 * for modules that keep their own histograms (src/hdf5). */
int sluice_size_bucket(int64_t n);

/* Clock tick t as a timestamp counter value: ticks since the process
 * started, at least 1 (0 means "never"). */
double sluice_ticks_since_start(uint64_t t);

/* A read or write of n bytes at offset off (off < 0: unknown position, the
 * offset-derived counters are left alone). */
void sluice_count_rw(struct sluice_record *r, unsigned sides, enum sluice_access kind,
                     int64_t off, int64_t n, uint64_t t0, uint64_t t1);

/* The same, counting the call under op_counter (an integer counter of r's
 * module: MPIIO_COLL_WRITES, say) instead of the module's plain read or write
 * counter; -1: the plain one. */
void sluice_count_rw_as(struct sluice_record *r, unsigned sides, enum sluice_access kind, int op_counter,
                        int64_t off, int64_t n, uint64_t t0, uint64_t t1);

/* The same, and whether the memory buffer of the call (any buffer of a
 * vector) was not aligned to SLUICE_MEM_ALIGNMENT: POSIX_MEM_NOT_ALIGNED.
 * Also counted by every kind: the access size and stride tables
 * (POSIX_ACCESS*, POSIX_STRIDE*; MPI-IO: MPIIO_ACCESS*), file alignment
 * (POSIX_FILE_NOT_ALIGNED, at a known offset), the slowest call's size. */
void sluice_count_rw_buf(struct sluice_record *r, unsigned sides, enum sluice_access kind, int op_counter,
                         int64_t off, int64_t n, int mem_misaligned, uint64_t t0, uint64_t t1);

/* An open (POSIX_OPENS / STDIO_OPENS, first-open timestamp, meta time). */
void sluice_count_open(struct sluice_record *r, unsigned sides, uint64_t t0, uint64_t t1);

/* The same, counted under `counter` (MPIIO_INDEP_OPENS, say). */
void sluice_count_open_as(struct sluice_record *r, unsigned sides, int counter, uint64_t t0, uint64_t t1);

/* How a successful open was made (POSIX_ or STDIO_OPENS_WRITE, _CREATE,
 * _EXCL, _TRUNC, _APPEND from its open(2) flags), on the sides its open was
 * counted on; nothing for a read-only open or an MPI-IO record. */
void sluice_count_open_flags(struct sluice_record *r, unsigned sides, int flags);

/* A close: meta time and the last-close timestamp. */
void sluice_count_close(struct sluice_record *r, unsigned sides, uint64_t t0, uint64_t t1);

/* Any other operation: counter (an integer counter index of r's module, or
 * -1 for none) plus one, and its time added to the meta or write time. */
void sluice_count_meta(struct sluice_record *r, unsigned sides, int counter, uint64_t t0, uint64_t t1);
void sluice_count_sync(struct sluice_record *r, unsigned sides, int counter, uint64_t t0, uint64_t t1);

/* A call that failed. */
void sluice_count_error(struct sluice_record *r, unsigned sides);

#endif
