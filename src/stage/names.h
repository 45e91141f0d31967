/*
 * The node-wide index of staged files (docs/stage.md, "One namespace on the
 * node"): tier/names/KEY, one symbolic link per staged, not yet published
 * path, made by the process that staged it. KEY is the 64-bit FNV-1a hash
 * of the path in hex; the link's target is "ID MODE PATH" (the entry's id,
 * its octal mode, the full path), so a reader needs no journal parser and
 * checks the path against hash collisions.
 *
 * Every process under sluice on the node that uses the same tier looks a
 * managed path up here before the shared file system: it sees, stats, lists
 * and reads files other processes staged, and creating a name with O_EXCL
 * is exclusive across them (symlinkat is atomic). Index links are made
 * after the staged data exists and removed after the file is published, so
 * a path is always in one of the two places.
 */
#ifndef SLUICE_STAGE_NAMES_H
#define SLUICE_STAGE_NAMES_H

#include <stddef.h>
#include <sys/types.h>

struct names_entry {
    char id[96];
    mode_t mode;
};

/* Index abs (absolute, normalised) as staged entry id with mode. 0,
 * -EEXIST when the path is indexed already (by anyone), or -errno. */
int names_add(int ndir, const char *abs, const char *id, mode_t mode);

/* Replace abs's link by one for (id, mode): a mode change. 0 or -errno. */
int names_update(int ndir, const char *abs, const char *id, mode_t mode);

/* Remove abs's link if it is entry id's (never another process's). */
void names_remove(int ndir, const char *abs, const char *id);

/* 1 and *e when abs is indexed, else 0. */
int names_lookup(int ndir, const char *abs, struct names_entry *e);

/* emit(ctx, name, id) for each indexed path directly under directory dir. */
void names_list(int ndir, const char *dir, void (*emit)(void *ctx, const char *name, const char *id), void *ctx);

/* emit(ctx, below, id) for each indexed path at any depth under directory
 * dir (below: the path's part after "dir/"). */
void names_under(int ndir, const char *dir, void (*emit)(void *ctx, const char *below, const char *id), void *ctx);

/* Parse a link target "ID MODE PATH" (untrusted bytes of n, no NUL
 * needed): 0 and e, *path (into the target) and *plen, or -1. */
int names_parse(const char *target, size_t n, struct names_entry *e, const char **path, size_t *plen);

#endif
