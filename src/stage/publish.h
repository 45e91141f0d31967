/*
 * Publishing a staged file on the shared file system (docs/stage.md,
 * "Publishing"): into the existing file (entries that keep their inode),
 * created under its name (one write unit at most), or copied under a
 * temporary name and renamed; mode, times and fsync only where needed or
 * asked for. The caller holds the entry's lock.
 */
#ifndef SLUICE_STAGE_PUBLISH_H
#define SLUICE_STAGE_PUBLISH_H

#include <stddef.h>
#include <stdint.h>

#include "stage/journal.h"

struct sluice_record;

/* Publish data file ddir/ID as e->path, in writes of `unit` bytes (rounded
 * as buffer mode rounds its unit: to the stripe or block size). Counts what
 * reaches the shared file system on rec's fs side (rec may be NULL). 0, or
 * -errno with a one-line reason in why (the temporary file is removed). */
int publish_entry(int ddir, const struct journal_entry *e, size_t unit, struct sluice_record *rec,
                  char *why, size_t whylen);

/* The steps of a publish started early, while the program still writes
 * (a large file): create the temporary file (returns its descriptor and
 * its name in tmp, or -errno); copy [from, to) of the data into it; later
 * complete: copy [from, end), cut to the data's size, sync, mode, times,
 * close dst, rename. */
int publish_begin(const struct journal_entry *e, struct sluice_record *rec, char *tmp, size_t tmplen,
                  char *why, size_t whylen);
int publish_copy_range(int src, int dst, int64_t from, int64_t to, size_t unit, struct sluice_record *rec);
/* [from, to) of src into dst, which holds [0, from) already: a sparse src's
 * holes stay holes (dst is cut to `from` first, then its data extents
 * written; dst's size is the caller's to set). *sparse: 1 when holes were
 * skipped. 0 or -errno. */
int publish_copy_from(int src, int dst, int64_t from, int64_t to, size_t unit, struct sluice_record *rec,
                      int *sparse);
int publish_complete(int ddir, const struct journal_entry *e, int dst, const char *tmp, int64_t from, size_t unit,
                     struct sluice_record *rec, char *why, size_t whylen);

/* The temporary file a publish of e cut short left (DIR/.NAME.sluice-ID),
 * removed: recover's clean-up (a publish that creates the file under its
 * name would not meet it). */
void publish_drop_stale_temp(const struct journal_entry *e);

/* After a successful publish: the index link (names/), then state=published,
 * then the data file, then the entry go (in that order, so a crash between
 * leaves a republishable or finished entry, never lost data, and a process
 * that finds the entry gone never finds the name still indexed: rmdir of
 * its directory would say ENOTEMPTY). */
void publish_finish(int ddir, int jdir, int ndir, struct journal_entry *e);

#endif
