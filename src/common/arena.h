/*
 * Memory that lives until the process ends, taken from the kernel with mmap
 * in 1 MiB chunks: no malloc (whose locks a forked child or a signal handler
 * may find held), never freed, zero-filled. Thread-safe.
 */
#ifndef SLUICE_COMMON_ARENA_H
#define SLUICE_COMMON_ARENA_H

#include <stddef.h>

/* size bytes aligned to 16, or NULL when the kernel refuses memory. */
void *sluice_arena_alloc(size_t size);

/* In a forked child: the lock may have been held by a parent thread. */
void sluice_arena_after_fork_child(void);

#endif
