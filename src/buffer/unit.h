/*
 * The write-behind unit of a file: the configured size, rounded up to a
 * multiple of the file system's preferred write size (the Lustre stripe
 * size when the file has a Lustre layout, else st_blksize) when it is at
 * least that large, so that every flush of a full window is one aligned,
 * whole-stripe write.
 */
#ifndef SLUICE_BUFFER_UNIT_H
#define SLUICE_BUFFER_UNIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Stripe size from the bytes of a "lustre.lov" extended attribute (a
 * lov_user_md v1 or v3); 0 when they are not one. */
int64_t lustre_stripe_size(const void *lov, size_t len);

/* The unit for the open file fd (st: its fstat). */
struct sluice_record;
/* The unit for file fd (st: its fstat). The layout attribute is asked of the
 * file system once per device that has none, counted on rec's fs side. */
size_t buffer_unit(int fd, const struct stat *st, int64_t configured, struct sluice_record *rec);

#endif
