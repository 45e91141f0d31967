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

/* REMOVED: unlinked (or renamed over) on the node before it was published;
 * its data is gone and the entry stays only for the job's drainer to count
 * ("never published") and remove. */
enum journal_state { JOURNAL_OPEN, JOURNAL_CLOSED, JOURNAL_PUBLISHED, JOURNAL_REMOVED };

struct journal_entry {
    char id[96];
    char path[4096];
    mode_t mode;
    int inplace;            /* publish into the existing file (it was truncated, not replaced) */
    int existed;            /* a file stood at path on the shared file system when this was staged
                               (`publish=replace`, or inplace): removing or renaming the staged file
                               removes that one too */
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

/* How long a publisher that found an entry locked by another waits
 * before it looks again. */
#define JOURNAL_LOCKED_RETRY_NS (20LL * 1000000)

/* The entry's lock (docs/stage.md, "Changing a staged file by name"): an
 * exclusive flock on journal/ID, checked to be on the file that holds that
 * name now (a rewrite renames a new file over it). Returns the descriptor
 * (close it to unlock), -ENOENT when the entry is gone, -EWOULDBLOCK when
 * !wait and another holds it, or -errno. */
int journal_lock(int jdir, const char *id, int wait);

/* journal_write under the lock: the new file is locked before it takes the
 * name, and *lockfd becomes its descriptor. */
int journal_write_locked(int jdir, const struct journal_entry *e, int *lockfd);

/* Parse an entry's bytes (untrusted: a shared directory). 0, or -1 for
 * anything that is not a whole, well-formed entry with a matching CRC. */
int journal_parse(const char *buf, size_t n, struct journal_entry *e);

/* Read and parse journal/ID. 0, -ENOENT when there is none, -EBADMSG when
 * it does not parse, or -errno. */
int journal_read(int jdir, const char *id, struct journal_entry *e);

#endif
