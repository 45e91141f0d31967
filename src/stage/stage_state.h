/*
 * The stage tier inside one process (docs/stage.md): the table of the
 * files it staged, the one lock over them, the tier's directories, and
 * what the tier's files call across files. src/tiers/stage.c is the tier's
 * table of operations and its descriptor calls; the rest, one job a file:
 *
 *   table.c         the staged-file table: look-up, insert, unlink, entry
 *                   rewrites, publish done, discard
 *   owner.c         this process's owner lock, and whether the job's
 *                   drainer runs
 *   precopy.c       early copies of large files still being written
 *   drainers.c      the drainer threads: publish what is due
 *   open.c          which opens are staged; a new staged file
 *   moves.c         a file on the tier moves to the shared file system
 *                   under its open descriptions
 *   foreign.c       files other processes on the node staged
 *   namespace.c     directories known, files just published, stat and
 *                   listing of staged names on the node
 *   process.c       hand-over to the job's drainer; fork and exit
 *   own_paths.c     path calls on this process's staged files
 *   handed_paths.c  path calls on files left to the job
 *   paths.c         the tier's path slots, which choose among those
 *
 * Beside them, and knowing nothing of this table: the on-disk protocol
 * (journal.c, names.c, publish.c, writers.c, handoff.c, tierdir.c) and the
 * job's drainer (jobdrain.c).
 *
 * Locking: stage_st.lock guards the table, every struct staged in it and
 * namespace.c's memory; functions named *_locked are called with it held.
 * Some let go of it while they copy or wait (drains, early copies, the
 * wait for a publish on stage_st.done): a caller walking the table
 * starts again after them. pre_fd, precopying and wrote are also read
 * without it (atomically) on the write path.
 */
#ifndef SLUICE_STAGE_STAGE_STATE_H
#define SLUICE_STAGE_STAGE_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "core/file.h"
#include "stage/handoff.h"
#include "stage/journal.h"
#include "stage/names.h"

#define STAGE_BUCKETS 1024

/* One staged file, owned by this process while it is in the table. */
struct staged {
    struct journal_entry e;
    int opens;                    /* descriptions open on it */
    int draining;                 /* a drainer is publishing it */
    int failed;                   /* the last publish failed (reported once) */
    int existed;                  /* the path existed on the shared file system when staged */
    int handed_over;              /* left at exit to another process that has it open (it publishes) */
    int forked;                   /* staged when the process forked: a child may write it where we do
                                     not see, so no early copy */
    int wrote;                    /* a write reached its data file (auto decides at the first) */
    int kept;                     /* handed over at the end, but the job's drainer had ended: ours */
    int own_publish;              /* job mode: closed with an early copy under way, so this process
                                     completes the publish itself; its entry says open meanwhile, so
                                     that the job's drainer leaves it */
    int64_t closed_ns;            /* last close */
    /* Early copy of a large file still being written (SLUICE_STAGE_PRECOPY):
     * the temporary file, how much of the data it holds, and the lowest
     * offset the program wrote since the copy began (recopied from there). */
    int pre_fd;
    int64_t pre_done, dirty_low;
    int precopying;
    char pre_tmp[4200];
    struct sluice_record *rec;
    struct staged *next;
};

/* Other processes writing a staged file hold a shared flock on
 * locks/ID.users while they have it open (a file of its own: never a lock
 * on the data file, which the program may lock itself). Its owner
 * publishes only while it can hold that lock exclusively. */
struct stage_desc {
    struct staged *s;             /* NULL: straight through to the shared file system */
    int foreign;                  /* a file another process staged: its data file, shared */
    mode_t foreign_mode;          /* that file's mode, as the index says */
    int users_fd;                 /* a writer's shared lock on locks/ID.users (-1: none) */
    char foreign_id[96];
    int foreign_wrote;            /* this description wrote (or decided at its first write) */
};

struct stage_state {
    int usable;
    int ddir, jdir, ldir, ndir;
    int ownerfd;             /* locks/HOST-PID, flock'ed while this process may own entries; -1: not yet */
    char tier[4096];
    char host[64];
    unsigned long seq;
    pthread_mutex_t lock;
    pthread_cond_t work;          /* something to drain, or exit */
    pthread_cond_t done;          /* a publish ended */
    struct staged *buckets[STAGE_BUCKETS];
    int count;                    /* staged files in the table */
    int drainers;                 /* threads running */
    int ending;                   /* process exit: no delay, everything goes */
    int job;                      /* the job's drainer runs (SLUICE_STAGE_JOB): closed files are left to it */
    struct tier_dirs dirs;        /* (the same descriptors, for the handoff module) */
};

extern struct stage_state stage_st;

extern const struct sluice_tier_ops sluice_tier_stage;

static inline struct stage_desc *stage_desc_of(struct sluice_file *f, int level)
{
    return f->tier_state[level];
}

/* ---- table.c: the staged-file table (stage_st.lock held where named so) */
struct staged *stage_table_lookup_locked(const char *path);
void stage_table_insert_locked(struct staged *s);
void stage_table_unlink_locked(struct staged *s);
int stage_data_stat(const struct staged *s, struct stat *sb);
void stage_entry_write_locked(struct staged *s);
void stage_published_locked(struct staged *s);
void stage_forget_locked(struct staged *s);
int stage_published_elsewhere(const struct staged *s);
void stage_forget_published_elsewhere_locked(struct staged *s);
void stage_discard_locked(struct staged *s);

/* ---- owner.c */
int stage_owner_lock_locked(void);
void stage_owner_lock_drop_locked(void);
int stage_job_drainer_running(const char *name);
int stage_job_running(void);

/* ---- precopy.c */
void stage_precopy_drop_locked(struct staged *s);
int64_t stage_written_at(struct sluice_file *f, off_t off, ssize_t rc);
void stage_precopy_note_write(struct staged *s, int64_t off);
struct staged *stage_next_precopy_locked(void);
void stage_precopy_step_locked(struct staged *s);

/* ---- drainers.c */
struct staged *stage_next_due_locked(int64_t now, int64_t *wait_ns);
void stage_drain_one_locked(struct staged *s);
void stage_drainers_start_locked(void);

/* ---- open.c: the open of an absolute path (f->rec->path, or where links lead) */
int stage_open_abs(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode,
                   const char *abs);

/* ---- moves.c */
struct stage_desc *stage_desc_of_file(struct sluice_file *g);
int stage_move_to_shared(struct sluice_file *f, struct stage_desc *d, int counter);
int stage_desc_move_to_shared(struct sluice_file *f, struct stage_desc *d);
int stage_foreign_move_at_first_write(struct sluice_file *f, struct stage_desc *d);

/* ---- foreign.c */
int stage_foreign_lookup(const char *abs, struct names_entry *e);
void stage_wait_published(const char *abs);
void stage_foreign_takeover(const char *id, const char *abs, struct sluice_record *rec);

/* ---- namespace.c (stage_dir_exists and stage_dir_created: stage.h) */
int stage_dir_known_locked(const char *dir);
void stage_dir_remember_locked(const char *dir, int made_here);
int stage_recently_published_locked(const char *path);
void stage_recent_forget_locked(const char *path);
void stage_dir_note_published_locked(const char *path);
void stage_known_dirs_clear(void);
void stage_forget_known_dirs(void);
int stage_dir_holds_staged(const char *dir);
int stage_staged_stat_abs(const char *abs, struct stat *sb);
int stage_staged_through_links(const char *abs, int follow_last, char *out, size_t len);
void stage_tier_path_list(const struct sluice_path *dir, void (*emit)(void *ctx, const char *name, ino_t ino),
                          void *ctx);
int stage_path_hides(const char *name);

/* ---- process.c */
void stage_hand_over_locked(struct staged *s);
int stage_quiesce(unsigned why);
void stage_after_fork_child(void);

/* ---- own_paths.c (stage_path_stat, _unlink, _rename, _truncate: stage.h) */
int stage_path_set_mode(const char *abs, mode_t mode);
void stage_drop_replaced(const char *abs);
void stage_dir_renamed(const char *from, const char *to);
int stage_publish_now(const char *abs);
int stage_set_times_open(const char *abs, const struct timespec times[2], int *rc);

/* ---- handed_paths.c */
int stage_handed_unlink(const char *abs, int *existed);
int stage_unlink_replaced(const char *abs, int existed);
int stage_handed_rename(const char *from, const char *to, int *rc);
int stage_handed_chmod(const char *abs, mode_t mode);
int stage_handed_truncate(const char *abs, off_t len, int *rc);
int stage_handed_publish_now(const char *abs, struct sluice_record *rec);

/* ---- paths.c: the tier's path slots (sluice_tier.h) */
int stage_tier_path_stat(const struct sluice_stack *s, int level, const struct sluice_path *p, struct stat *sb,
                         int flags);
int stage_tier_path_statx(const struct sluice_stack *s, int level, const struct sluice_path *p, int flags,
                          unsigned mask, struct statx *stx);
int stage_tier_path_access(const struct sluice_stack *s, int level, const struct sluice_path *p, int mode, int flags);
int stage_tier_path_mkdir(const struct sluice_stack *s, int level, const struct sluice_path *p, mode_t mode);
int stage_tier_path_unlink(const struct sluice_stack *s, int level, const struct sluice_path *p, int flags);
int stage_tier_path_rename(const struct sluice_stack *s, int level, const struct sluice_path *from,
                           const struct sluice_path *to, unsigned flags);
int stage_tier_path_truncate(const struct sluice_stack *s, int level, const struct sluice_path *p, off_t len);
int stage_tier_path_chmod(const struct sluice_stack *s, int level, const struct sluice_path *p, mode_t mode,
                          int flags);
int stage_tier_path_link(const struct sluice_stack *s, int level, const struct sluice_path *from,
                         const struct sluice_path *to, int flags);
int stage_tier_path_chown(const struct sluice_stack *s, int level, const struct sluice_path *p, uid_t uid, gid_t gid,
                          int flags);
int stage_tier_path_utimens(const struct sluice_stack *s, int level, const struct sluice_path *p,
                            const struct timespec times[2], int flags);
ssize_t stage_tier_path_xattr(const struct sluice_stack *s, int level, const struct sluice_path *p,
                              const struct sluice_xattr *x);

#endif
