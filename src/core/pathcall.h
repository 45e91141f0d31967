/*
 * One shape for every call that names a path (stat, unlink, rename, chmod,
 * link, utimensat, xattrs, ...): resolve the path and its mode, send the
 * call down the mode's tier stack (sluice_tier_path_*), count it.
 *
 * Two ways through, chosen per process:
 *  - no tier above the bottom one answers path calls (profile mode): the
 *    kernel is asked first and the path is read only afterwards, so a bad
 *    pointer gets the kernel's EFAULT and the common case costs nothing;
 *  - otherwise the path is resolved first (a pointer that cannot be read is
 *    left to the kernel, unrecorded) and the tiers see it.
 */
#ifndef SLUICE_CORE_PATHCALL_H
#define SLUICE_CORE_PATHCALL_H

#include <limits.h>
#include <stdint.h>

#include "core/record.h"
#include "core/stack.h"
#include "sluice/sluice_tier.h"

struct sluice_pathcall {
    struct sluice_path p;              /* handed to the tiers */
    const struct sluice_stack *stack;  /* the mode's tiers */
    struct sluice_record *rec;         /* the path's record (app side), or NULL */
    int counter;                       /* what a success counts */
    int resolved;                      /* the path was read before the call */
    uint64_t t0;
    char abs[PATH_MAX];
};

/* Before the call: fills c for (dirfd, path). */
/* The record of a path (not yet checked readable: the caller did), its
 * absolute form in abs (PATH_MAX bytes); NULL when it is not recorded. */
struct sluice_record *sluice_path_record(int dirfd, const char *path, char *abs);

void sluice_pathcall_begin(struct sluice_pathcall *c, int dirfd, const char *path, int counter);

/* A rename that succeeded, on the record of the name the file took (if
 * that path is recorded and readable): POSIX_RENAME_TARGETS on `sides`. */
void sluice_count_rename_target(int dirfd, const char *to, unsigned sides);

/* A second path of the same call (rename's and link's target): resolved
 * when the first was; never counted. */
void sluice_pathcall_second(const struct sluice_pathcall *c, struct sluice_path *p, char *abs, int dirfd,
                            const char *path);

/* After the call: counts rc (0 or -errno, or a size) and returns it. */
long sluice_pathcall_end(struct sluice_pathcall *c, long rc);

#endif
