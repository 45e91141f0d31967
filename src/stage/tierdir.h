/*
 * The node-local tier directory: private to the user, created and checked
 * without following symbolic links, so another user cannot make us write
 * into a directory of theirs (docs/stage.md, "The tier").
 */
#ifndef SLUICE_STAGE_TIERDIR_H
#define SLUICE_STAGE_TIERDIR_H

#include <stddef.h>

/* Open (creating if missing) the private directory `path` and its data/ and
 * journal/ subdirectories. Returns 0 and the three directory descriptors,
 * or -1 with a one-line reason in why. */
int tierdir_open(const char *path, int *root, int *data, int *journal, char *why, size_t whylen);

/* The default tier path for this user: /dev/shm/sluice-stage-UID. */
void tierdir_default(char *out, size_t len);

#endif
