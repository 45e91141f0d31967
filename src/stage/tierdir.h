/*
 * The node-local tier directory: private to the user, created and checked
 * without following symbolic links, so another user cannot make us write
 * into a directory of theirs (docs/stage.md, "The tier").
 */
#ifndef SLUICE_STAGE_TIERDIR_H
#define SLUICE_STAGE_TIERDIR_H

#include <stddef.h>

/* Open (creating if missing) the private directory `path` and its data/,
 * journal/, locks/ and names/ subdirectories (locks/ID: the flock that says
 * which process owns entry ID; a file of its own, so that it never meets
 * the program's own locks on the data file; names/: the node-wide index,
 * stage/names.h). Returns 0 and the five directory descriptors, or -1
 * with a one-line reason in why. */
int tierdir_open(const char *path, int *root, int *data, int *journal, int *locks, int *names, char *why,
                 size_t whylen);

/* The default tier path for this user: /dev/shm/sluice-stage-UID. */
void tierdir_default(char *out, size_t len);

#endif
