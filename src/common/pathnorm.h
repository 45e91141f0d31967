/*
 * Turning what a program passed to open() into the absolute path a record is
 * keyed by: relative paths are joined to the working directory (or to the
 * directory behind an openat() dirfd), then "." and ".." and repeated
 * slashes are removed lexically. Symlinks are not resolved: the user sees
 * the names the program used, as Darshan shows them.
 */
#ifndef SLUICE_COMMON_PATHNORM_H
#define SLUICE_COMMON_PATHNORM_H

#include <stddef.h>

/* Normalise an absolute path in place. Returns its new length. */
size_t sluice_path_normalize(char *path);

/* Absolute, normalised form of (dirfd, path) into out[outlen]. dirfd may be
 * AT_FDCWD. Returns 0, or -errno (-ENAMETOOLONG, or the error of getcwd /
 * readlink). Allocates nothing. */
int sluice_path_absolute(int dirfd, const char *path, char *out, size_t outlen);

/* True when path equals prefix or lies below it ("/a/b" is under "/a", "/ab" is not). */
int sluice_path_under(const char *path, const char *prefix);

#endif
