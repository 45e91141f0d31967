/*
 * Staged files left to the job (docs/stage.md, "The job drains"). Under
 * `sluice run`, a process hands each staged file over when it holds no
 * descriptor of it any more (its close, its exit, an exec): the entry says
 * `closed`, the process forgets it, and the job's drainer publishes it.
 * Until then any process of the node may change it by name, as on one
 * local file system: each change takes the entry's lock (journal_lock), so
 * it never meets a publish half done, and the file the workflow removes or
 * renames over before it is published never reaches the shared file system.
 */
#ifndef SLUICE_STAGE_HANDOFF_H
#define SLUICE_STAGE_HANDOFF_H

#include <sys/types.h>

#include "stage/journal.h"

struct tier_dirs {
    int ddir, jdir, ldir, ndir;
};

/* Whether entry id's owner (locks/HOST-PID) has ended, or runs under a
 * job's drainer (its lock file says "job NAME"): then a `closed` entry is no
 * longer in any process's table and may be changed by name by any process.
 * handoff_owner_job also gives NAME (empty when the owner has ended and
 * ran under none): the drainer that publishes it while it runs. */
int handoff_owner_released(int ldir, const char *id);
int handoff_owner_job(int ldir, const char *id, char *job, size_t len);

/* The entry of abs, locked, when it is a closed entry left to the job (or
 * let go of by this process, which callers have not found in its table): 1,
 * *e and *lockfd (close it to unlock); 0 when abs is not staged (or was
 * published meanwhile); -EAGAIN while a process still holds it. */
int handoff_get(const struct tier_dirs *t, const char *abs, struct journal_entry *e, int *lockfd);

/* A locked entry's file is gone from the node before it was published
 * (unlinked, or another file renamed over it): its data and index link go;
 * with job, the entry stays as `removed` for the drainer to count. */
void handoff_discard(const struct tier_dirs *t, struct journal_entry *e, int *lockfd, int job);

/* A locked entry takes the name to (another's entry there was discarded
 * by the caller). 0, or -EEXIST when another process staged that name
 * meanwhile. */
int handoff_move(const struct tier_dirs *t, struct journal_entry *e, int *lockfd, const char *to);

/* The entries under a directory (and under dir2, an exchange's other
 * one, unless NULL), locked, before it is renamed on the shared file
 * system (so that no publish into it runs meanwhile). */
struct handoff_dir {
    int n, cap;
    struct handoff_locked {
        char id[96];
        int fd;
    } *held;
};
void handoff_dir_lock(const struct tier_dirs *t, const char *dir, const char *dir2, struct handoff_dir *d);
/* After the rename: each held entry still under `from` moves below `to`
 * (exchanged: and each under `to` below `from`; hold both trees). */
void handoff_dir_moved(const struct tier_dirs *t, struct handoff_dir *d, const char *from, const char *to,
                       int exchanged);
void handoff_dir_release(struct handoff_dir *d);

#endif
