/*
 * The mount table, for the file system of each recorded file: read from
 * /proc/self/mountinfo once, on the first record created, into fixed
 * static storage (nothing is allocated, so the log writer can list the
 * mounts from a signal handler). A file's mount is the longest mount point
 * its path lies under; its block size (statfs f_bsize, asked once per mount,
 * 1 MiB on Lustre, as Darshan takes it) is the file's POSIX_FILE_ALIGNMENT.
 * Mounts made after the table was read are not seen: their files count
 * under the mount below them.
 */
#ifndef SLUICE_CORE_MOUNTS_H
#define SLUICE_CORE_MOUNTS_H

#include <stdint.h>

/* The index of the mount holding `path` (absolute, normalised), marked as
 * used; -1 when the table could not be read or no mount point matches. */
int sluice_mount_of(const char *path);

/* The block size of mount i (statfs f_bsize; 1 MiB on Lustre; 4096 when
 * statfs fails), asked on first use. */
int64_t sluice_mount_block_size(int i);

/* The table, for the log: mounts i < sluice_mounts_count(), whether a
 * record's path was found under each, its point and type. Signal-safe. */
int sluice_mounts_count(void);
int sluice_mount_used(int i);
const char *sluice_mount_point(int i);
const char *sluice_mount_type(int i);

/* 1 when mount i is a file system of this node alone (ext4, xfs, tmpfs,
 * ...); 0 for a shared one, an unknown type, or i < 0. */
int sluice_mount_is_local(int i);

#endif
