/*
 * What the rest of the library asks of buffer mode outside the tier
 * interface: path calls (stat, truncate) that must see or change a file
 * this process is buffering.
 */
#ifndef SLUICE_BUFFER_BUFFER_H
#define SLUICE_BUFFER_BUFFER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Every buffered byte of every file on the file system, in order. */
int sluice_tier_quiesce_buffers(void);

/* *size is what the file system reported for (dev, ino): make it the
 * logical size when this process holds bytes beyond it. */
void buffer_stat_fixup(dev_t dev, ino_t ino, int64_t *size);

/* truncate(path) changed (dev, ino) to len (after a quiesce). */
void buffer_path_truncated(dev_t dev, ino_t ino, int64_t len);

/* Write every byte held for (dev, ino); 1 if there were any. */
int buffer_sync_inode(dev_t dev, ino_t ino);

/* 1 when any file is buffered (path calls may need the ones above). */
int buffer_active(void);

#endif
