/*
 * Writing windows to the file system: synchronously (flush_window), or in
 * the background by one flusher thread per process, so the application
 * computes while its previous writes travel. Jobs run in submission order,
 * so two windows covering the same bytes reach the file in the order the
 * application wrote them. The thread starts at the first job; it blocks all
 * signals, so a signal handler in the application never runs on it.
 */
#ifndef SLUICE_BUFFER_FLUSHER_H
#define SLUICE_BUFFER_FLUSHER_H

#include <stdint.h>

#include "buffer/inode.h"
#include "buffer/window.h"

struct sluice_file;

/* Write every dirty extent of w through the tier below `level` of f
 * (append: at the file's end, in one piece). Returns the first error
 * (-errno) or 0; *end is the end of the highest byte written. raw: straight
 * to the kernel on f->fd, uncounted (signal context: no lock may be taken). */
int flush_window(struct sluice_file *f, int level, const struct buffer_window *w, int append, int64_t *end,
                 int raw);

/* Hand ino's window to the flusher (ino->lock held). The window's
 * description reference moves with it. If the job cannot be queued the
 * window is written here and now. */
void flusher_submit(struct buffer_inode *ino);

/* Jobs queued or running in this process. */
int flusher_jobs_pending(void);

/* Wait, without locks, until no job is pending or `timeout_ms` passed
 * (exit and signal paths). Returns the jobs still pending. */
int flusher_drain(int timeout_ms);

/* In a forked child: the thread did not come along. */
void flusher_after_fork_child(void);

/* A job finished (or was written synchronously): account it on ino
 * (ino->lock held). */
void flusher_account(struct buffer_inode *ino, int err, int64_t end);

#endif
