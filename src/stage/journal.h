/*
 * Journal entries of staged files (docs/stage.md, "Journal entries"): one
 * small text file per staged file, always whole (written under a
 * temporary name, synced, renamed), ending in a CRC so that a torn or
 * foreign file is recognised. The Python tools read and write the same
 * format (python/sluice/stage/journal.py).
 */
#ifndef SLUICE_STAGE_JOURNAL_H
#define SLUICE_STAGE_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum journal_state { JOURNAL_OPEN, JOURNAL_CLOSED, JOURNAL_PUBLISHED };

struct journal_entry {
    char id[96];
    char path[4096];
    mode_t mode;
    int inplace;            /* publish into the existing file (it was truncated, not replaced) */
    enum journal_state state;
    pid_t pid;
    int64_t created_ns;
    int64_t updated_ns;
    char error[256];
    int keep_times;         /* not in the journal text: the program set the file's times, so its
                               publish carries the data file's (recover always carries them) */
};

/* The entry's text into buf; returns its length, or -1 if it does not fit. */
ssize_t journal_format(const struct journal_entry *e, char *buf, size_t len);

/* Write e as journal/ID atomically (jdir: the journal directory). 0 or -errno. */
int journal_write(int jdir, const struct journal_entry *e);

int64_t journal_now_ns(void);

#endif
