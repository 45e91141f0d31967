/*
 * The stage tier (`--mode stage`): files the program creates or truncates
 * are written to a private node-local directory and published to the
 * shared file system by background drainers, atomically, once closed and
 * left alone for the stage delay (docs/stage.md).
 *
 * A staged file's descriptor is the data file's own descriptor: reads,
 * writes, seeks and sizes run at the tier's speed with the kernel's own
 * semantics. What reaches the shared file system (the existence checks,
 * the publish) is counted on the fs side of the file's record.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "common/pathnorm.h"
#include "core/config.h"
#include "core/counters.h"
#include "common/statconv.h"
#include "core/file.h"
#include "core/policy.h"
#include "core/stack.h"
#include "sys/guard.h"
#include "sys/privfd.h"
#include "sys/umask.h"
#include "sys/real.h"
#include "stage/handoff.h"
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/publish.h"
#include "stage/stage.h"
#include "stage/tierdir.h"
#include "stage/writers.h"

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

struct stage_desc {
    struct staged *s;             /* NULL: straight through to the shared file system */
    int foreign;                  /* a file another process staged: its data file, shared */
    mode_t foreign_mode;          /* that file's mode, as the index says */
    int users_fd;                 /* a writer's shared lock on locks/ID.users (-1: none) */
    char foreign_id[96];
};

static struct {
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
} st = {.ownerfd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
        .done = PTHREAD_COND_INITIALIZER};

/* Directories known to exist on the shared file system: a new file in one
 * costs no stat of its directory (most recent first, a small ring). */
#define KNOWN_DIRS 64
static struct {
    char path[512];
    int made_here;   /* this process created it: nothing in it existed before */
} known_dirs[KNOWN_DIRS];
static unsigned known_next;

/* 0: unknown; 1: known to exist; 2: created by this process. */
static int dir_known_locked(const char *dir)
{
    for (int i = 0; i < KNOWN_DIRS; i++)
        if (known_dirs[i].path[0] && strcmp(known_dirs[i].path, dir) == 0)
            return 1 + known_dirs[i].made_here;
    return 0;
}

static void dir_remember_locked(const char *dir, int made_here)
{
    if (strlen(dir) < sizeof known_dirs[0].path) {
        unsigned i = known_next++ % KNOWN_DIRS;
        snprintf(known_dirs[i].path, sizeof known_dirs[i].path, "%s", dir);
        known_dirs[i].made_here = made_here;
    }
}

/* A file of ours now exists on the shared file system in its directory:
 * that directory no longer holds only what is staged, so a new file there
 * is checked again (a re-created name must replace, unlink and rename the
 * published one). */
/* Files this process published lately (a small ring): an open of one that
 * neither truncates nor stages it (O_APPEND, update) goes straight to the
 * shared file system without asking first whether it exists (the
 * ensemble's reopen of its own output). */
#define RECENT_PUBLISHED 64
static char recent_published[RECENT_PUBLISHED][512];
static unsigned recent_next;

static int recently_published_locked(const char *path)
{
    for (int i = 0; i < RECENT_PUBLISHED; i++)
        if (recent_published[i][0] && strcmp(recent_published[i], path) == 0)
            return 1;
    return 0;
}

static void recent_forget_locked(const char *path)
{
    for (int i = 0; i < RECENT_PUBLISHED; i++)
        if (strcmp(recent_published[i], path) == 0)
            recent_published[i][0] = '\0';
}

static void dir_note_published_locked(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;

    for (int i = 0; i < KNOWN_DIRS; i++)
        if (known_dirs[i].made_here && strlen(known_dirs[i].path) == n && strncmp(known_dirs[i].path, path, n) == 0)
            known_dirs[i].made_here = 0;
    if (strlen(path) < sizeof recent_published[0] && !recently_published_locked(path))
        snprintf(recent_published[recent_next++ % RECENT_PUBLISHED], sizeof recent_published[0], "%s", path);
}

void stage_dir_created(const char *abs)
{
    if (!st.usable)
        return;
    pthread_mutex_lock(&st.lock);
    dir_remember_locked(abs, 1);
    pthread_mutex_unlock(&st.lock);
}

static unsigned bucket_of(const char *path)
{
    uint32_t h = 2166136261u;
    for (; *path; path++)
        h = (h ^ (unsigned char)*path) * 16777619u;
    return h % STAGE_BUCKETS;
}

static struct staged *lookup_locked(const char *path)
{
    struct staged *s = st.buckets[bucket_of(path)];
    while (s && strcmp(s->e.path, path) != 0)
        s = s->next;
    return s;
}

static void unlink_locked(struct staged *s)
{
    struct staged **pp = &st.buckets[bucket_of(s->e.path)];
    while (*pp != s)
        pp = &(*pp)->next;
    *pp = s->next;
    st.count--;
}

/* The staged data file's stat (data/ID, by name: the program may hold the
 * only descriptor). */
static int staged_data_stat(const struct staged *s, struct stat *sb)
{
    return SLUICE_REAL(fstatat)(st.ddir, s->e.id, sb, AT_SYMLINK_NOFOLLOW);
}

static void insert_locked(struct staged *s)
{
    unsigned b = bucket_of(s->e.path);
    s->next = st.buckets[b];
    st.buckets[b] = s;
    st.count++;
}

/* Drop an early copy (the file was renamed, unlinked or moved). */
static void precopy_drop_locked(struct staged *s)
{
    if (s->pre_fd >= 0) {
        sluice_privfd_close(s->pre_fd);
        SLUICE_REAL(unlink)(s->pre_tmp);
        __atomic_store_n(&s->pre_fd, -1, __ATOMIC_RELAXED);
    }
}

/* Where a write of rc bytes just landed (off: as the program gave it). */
static int64_t written_at(struct sluice_file *f, off_t off, ssize_t rc)
{
    struct stat sb;
    int64_t at;

    if (f->flags & O_APPEND)   /* appended, whatever off said */
        at = SLUICE_REAL(fstat)(f->fd, &sb) == 0 ? (int64_t)sb.st_size - rc : 0;
    else if (off >= 0)
        at = off;
    else
        at = (int64_t)SLUICE_REAL(lseek)(f->fd, 0, SEEK_CUR) - rc;
    return at > 0 ? at : 0;
}

/* The program wrote (or truncated) at off: an early copy holds stale bytes
 * from there on. */
static void precopy_note_write(struct staged *s, int64_t off)
{
    if (__atomic_load_n(&s->pre_fd, __ATOMIC_RELAXED) < 0 && !__atomic_load_n(&s->precopying, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&st.lock);
    if (off < s->dirty_low)
        s->dirty_low = off;
    pthread_mutex_unlock(&st.lock);
}

/* locks/HOST-PID: one flock per process says its entries are its own (the
 * tools leave them alone while it lives; a killed process's lock goes with
 * it). One descriptor per process, taken at its first staged file. */
static void owner_name(char *out, size_t len)
{
    snprintf(out, len, "%s-%ld", st.host, (long)getpid());
}

static int owner_lock_locked(void)
{
    char name[128];
    int fd;

    if (st.ownerfd >= 0)
        return 0;
    owner_name(name, sizeof name);
    fd = sluice_privfd_keep(SLUICE_REAL(openat)(st.ldir, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd < 0)
        return -errno;
    if (SLUICE_REAL(flock)(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = -errno;
        sluice_privfd_close(fd);
        return err;
    }
    /* Under the job's drainer, what this process closed is the job's even
     * while it lives: the lock file says so (handoff_owner_released). */
    char mark[128];
    int n = snprintf(mark, sizeof mark, "job %s\n", sluice_cfg.stage_job);
    if (SLUICE_REAL(ftruncate)(fd, 0) != 0 ||
        (st.job && (n >= (int)sizeof mark || SLUICE_REAL(pwrite)(fd, mark, (size_t)n, 0) != n))) {
        int err = errno ? -errno : -EIO;
        sluice_privfd_close(fd);
        return err;
    }
    st.ownerfd = fd;
    return 0;
}

/* Nothing of ours is left on the tier: the lock file goes too. */
static void owner_lock_drop_locked(void)
{
    char name[128];

    if (st.ownerfd < 0 || st.count != 0)
        return;
    owner_name(name, sizeof name);
    /* (under the job's drainer the file stays: it says whose the files
     * this process handed over are; the drainer removes it at its end) */
    if (!st.job)
        (void)SLUICE_REAL(unlinkat)(st.ldir, name, 0);
    sluice_privfd_close(st.ownerfd);
    st.ownerfd = -1;
}

/* Whether the job's drainer still runs. It ends when the job's program
 * ended; a process of the job that outlives it (in the background) then
 * publishes its own files as without it, and its lock file says so, so
 * that no drainer takes what is still in its table. */
static int job_drainer_running(const char *name);

static int job_running(void)
{
    if (!st.job)
        return 0;
    if (job_drainer_running(sluice_cfg.stage_job))
        return 1;
    st.job = 0;
    if (st.ownerfd >= 0)
        (void)SLUICE_REAL(ftruncate)(st.ownerfd, 0);
    return 0;
}

/* s is on the shared file system: its entry and data go, then its index
 * link (so that another process always finds the file in one place). */
static void published_locked(struct staged *s)
{
    publish_finish(st.ddir, st.jdir, &s->e);
    names_remove(st.ndir, s->e.path, s->e.id);
}

static void forget_locked(struct staged *s)
{
    precopy_drop_locked(s);
    unlink_locked(s);
    free(s);
    pthread_cond_broadcast(&st.done);
}

/* Rewrite s's journal entry (st.lock held). An entry this process
 * publishes itself under the job's drainer says open on the tier. */
static void entry_write_locked(struct staged *s)
{
    struct journal_entry e = s->e;

    if (s->own_publish && e.state == JOURNAL_CLOSED)
        e.state = JOURNAL_OPEN;
    (void)journal_write(st.jdir, &e);
}

/* s is gone without being published (unlinked, or replaced by a rename):
 * its data, entry and index link go, and this process forgets it. */
static void discard_locked(struct staged *s)
{
    if (st.job) {
        /* (the job's drainer counts it as never published, and removes the entry) */
        s->e.state = JOURNAL_REMOVED;
        s->e.updated_ns = journal_now_ns();
        entry_write_locked(s);
    }
    SLUICE_REAL(unlinkat)(st.ddir, s->e.id, 0);
    if (!st.job)
        SLUICE_REAL(unlinkat)(st.jdir, s->e.id, 0);
    names_remove(st.ndir, s->e.path, s->e.id);
    writers_forget(st.ldir, s->e.id);
    forget_locked(s);
}

/* The modes whose stacks hold this tier (core/modes.def): stage, and auto,
 * which stages the files it creates. */
static int mode_stages(const char *mode)
{
    return strcmp(mode, "stage") == 0 || strcmp(mode, "auto") == 0;
}

/* The job's drainer (`sluice run` started it for this tier) holds
 * locks/NAME while it runs. */
static int job_drainer_running(const char *name)
{
    int fd, running;

    if (!name[0] || name[0] == '.' || strchr(name, '/'))
        return 0;
    fd = SLUICE_REAL(openat)(st.ldir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0)
        return 0;
    running = SLUICE_REAL(flock)(fd, LOCK_SH | LOCK_NB) != 0;
    SLUICE_REAL(close)(fd);
    return running;
}

static int stage_init(void)
{
    char why[512];
    int root;

    /* Every process loads the stage stack; only one that may stage touches
     * the tier. */
    if (!mode_stages(sluice_cfg.mode) && !strstr(sluice_cfg.policy, "=stage") && !strstr(sluice_cfg.policy, "=auto"))
        return 0;
    if (sluice_cfg.tier[0])
        snprintf(st.tier, sizeof st.tier, "%s", sluice_cfg.tier);
    else
        tierdir_default(st.tier, sizeof st.tier);
    if (tierdir_open(st.tier, &root, &st.ddir, &st.jdir, &st.ldir, &st.ndir, why, sizeof why) != 0) {
        sluice_diag("stage mode: %s; files are written straight to the shared file system", why);
        return 0;   /* the tier stays in the stack and passes everything through */
    }
    SLUICE_REAL(close)(root);
    st.ddir = sluice_privfd_keep(st.ddir);
    st.jdir = sluice_privfd_keep(st.jdir);
    st.ldir = sluice_privfd_keep(st.ldir);
    st.ndir = sluice_privfd_keep(st.ndir);
    st.ownerfd = -1;
    if (gethostname(st.host, sizeof st.host - 1) != 0)
        strcpy(st.host, "host");
    for (char *p = st.host; *p; p++)
        if (*p == '/' || *p == '.')
            *p = '_';
    /* IDs stay unique across an exec that keeps the process id: the counter
     * starts from the clock. */
    st.seq = (unsigned long)(journal_now_ns() / 1000 % 1000000000000LL);
    st.dirs = (struct tier_dirs){st.ddir, st.jdir, st.ldir, st.ndir};
    st.job = job_drainer_running(sluice_cfg.stage_job);
    st.usable = 1;
    return 0;
}

static inline struct stage_desc *desc_of(struct sluice_file *f, int level)
{
    return f->tier_state[level];
}

/* One of the tier's own look-ups on the shared file system (does the file
 * or its directory exist, may we write it): an operation the file system
 * served, answered yes or no. A no is the tier's answer, not an error of
 * the program's, and is never counted as one. */
static void count_fs(struct sluice_file *f, int counter, uint64_t t0)
{
    sluice_count_meta(f->rec, SLUICE_SIDES_FS, counter, t0, sluice_now());
}

/* An open the node-local tier serves (POSIX_STAGED_OPENS): what auto mode
 * chose for this file, and what stage mode did with it. */
static void count_tier_open(struct sluice_file *f)
{
    uint64_t t = sluice_now();
    sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_STAGED_OPENS, t, t);
}

/* Other processes writing a staged file hold a shared flock on
 * locks/ID.users while they have it open (a file of its own: never a lock
 * on the data file, which the program may lock itself). Its owner
 * publishes only while it can hold that lock exclusively. */
/* ------------------------------------------------------------ drainers */

/* A file still open with at least SLUICE_STAGE_PRECOPY bytes not yet
 * copied early, or NULL. */
static struct staged *next_precopy_locked(void)
{
    struct stat sb;

    if (sluice_cfg.stage_precopy <= 0 || st.ending)
        return NULL;
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = st.buckets[b]; s; s = s->next)
            /* (not into a file published in place: its name would hold
             * new bytes before the program closed it) */
            if (s->e.state == JOURNAL_OPEN && !s->draining && !s->precopying && !s->e.inplace && !s->forked &&
                staged_data_stat(s, &sb) == 0 && sb.st_size - s->pre_done >= sluice_cfg.stage_precopy)
                return s;
    return NULL;
}

/* Copy what a large open file holds so far to its temporary file. */
static void precopy_step_locked(struct staged *s)
{
    char why[512];
    struct stat sb;
    int src;

    /* (precopying and pre_fd are read without the lock by precopy_note_write) */
    __atomic_store_n(&s->precopying, 1, __ATOMIC_RELAXED);
    if (s->pre_fd < 0) {
        s->dirty_low = INT64_MAX;
        s->pre_done = 0;
        __atomic_store_n(&s->pre_fd, publish_begin(&s->e, s->rec, s->pre_tmp, sizeof s->pre_tmp, why, sizeof why),
                         __ATOMIC_RELAXED);
        if (s->pre_fd < 0) {
            __atomic_store_n(&s->pre_fd, -1, __ATOMIC_RELAXED);
            __atomic_store_n(&s->precopying, 0, __ATOMIC_RELAXED);
            s->pre_done = INT64_MAX / 2;   /* no early copy for this file */
            return;
        }
    }
    int64_t from = s->pre_done;
    struct journal_entry e = s->e;
    int dst = s->pre_fd, sparse;   /* (the size is set when the publish completes) */
    pthread_mutex_unlock(&st.lock);
    src = sluice_privfd_keep(SLUICE_REAL(openat)(st.ddir, e.id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0));
    int ok = src >= 0 && SLUICE_REAL(fstat)(src, &sb) == 0 &&
             publish_copy_from(src, dst, from, sb.st_size, (size_t)sluice_cfg.buffer_size, s->rec, &sparse) == 0;
    if (src >= 0)
        sluice_privfd_close(src);
    pthread_mutex_lock(&st.lock);
    if (ok)
        s->pre_done = sb.st_size;
    else
        precopy_drop_locked(s);   /* the publish at close does it all */
    __atomic_store_n(&s->precopying, 0, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&st.done);
}

/* The next file due for publishing, or NULL; *wait_ns: until the next one. */
static struct staged *next_due_locked(int64_t now, int64_t *wait_ns)
{
    int64_t delay = st.ending ? 0 : sluice_cfg.stage_delay_ms * 1000000;

    *wait_ns = 100000000;
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = st.buckets[b]; s; s = s->next) {
            /* a failed file waits for `sluice drain` (or a reopen) */
            if (s->e.state != JOURNAL_CLOSED || s->opens || s->draining || s->failed || s->precopying ||
                s->handed_over)
                continue;
            int64_t due = s->closed_ns + delay;
            if (due <= now)
                return s;
            if (due - now < *wait_ns)
                *wait_ns = due - now;
        }
    return NULL;
}

static void hand_over_locked(struct staged *s);

/* Publish one due file (st.lock held; dropped while its bytes are copied).
 * The drainers call it, and so does a thread waiting for them at exit. */
static void drain_one_locked(struct staged *s)
{
    char why[512];

    struct journal_entry e = s->e;
    int users = writers_hold(st.ldir, e.id);
    if (users == -EBUSY) {
        /* another process writes it: later, or (at exit) it publishes it */
        if (st.ending)
            s->handed_over = 1;
        else
            s->closed_ns = journal_now_ns();
        return;
    }
    s->draining = 1;
    /* An early copy is completed from where it may be stale. */
    int pre_fd = s->pre_fd;
    int64_t from = s->pre_done < s->dirty_low ? s->pre_done : s->dirty_low;
    char tmp[sizeof s->pre_tmp];
    snprintf(tmp, sizeof tmp, "%s", s->pre_tmp);
    __atomic_store_n(&s->pre_fd, -1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&st.lock);
    int rc = pre_fd >= 0 ? publish_complete(st.ddir, &e, pre_fd, tmp, from, (size_t)sluice_cfg.buffer_size, s->rec,
                                            why, sizeof why)
                         : publish_entry(st.ddir, &e, (size_t)sluice_cfg.buffer_size, s->rec, why, sizeof why);
    pthread_mutex_lock(&st.lock);
    s->draining = 0;
    if (s->opens || s->e.state != JOURNAL_CLOSED || strcmp(s->e.path, e.path) != 0) {
        /* reopened, renamed or unlinked meanwhile: it goes again later */
        writers_release(st.ldir, users, e.id, 0);
        pthread_cond_broadcast(&st.done);
        return;
    }
    /* (the file leaves the tier before a writer waiting to join goes on:
     * it then finds the published file) */
    if (rc == 0)
        published_locked(s);
    writers_release(st.ldir, users, e.id, rc == 0);
    if (rc == 0) {
        dir_note_published_locked(s->e.path);
        forget_locked(s);
    } else {
        if (!s->failed)
            sluice_diag("stage mode: cannot publish %s (%s); it stays on the tier %s until `sluice drain`",
                        s->e.path, why, st.tier);
        s->failed = 1;
        snprintf(s->e.error, sizeof s->e.error, "%.255s", why);
        s->e.updated_ns = journal_now_ns();
        if (s->own_publish && job_running()) {
            s->own_publish = 0;
            hand_over_locked(s);   /* the job's drainer tries again, and `sluice run` names it */
            return;
        }
        entry_write_locked(s);
        pthread_cond_broadcast(&st.done);
    }
}

static void *drainer_main(void *arg)
{
    sigset_t all;

    (void)arg;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    sluice__guard = 1;
    /* Copying in the background never takes a core the program wants (a
     * checkpoint written to the tier is CPU work, and an early copy beside
     * it made the program wait longer than without staging): the drainers
     * run only on idle CPU time, SCHED_IDLE. */
    struct sched_param idle = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    pthread_mutex_lock(&st.lock);
    for (;;) {
        int64_t wait_ns;
        struct staged *s = next_due_locked(journal_now_ns(), &wait_ns);
        if (!s && (s = next_precopy_locked()) != NULL) {
            precopy_step_locked(s);
            continue;
        }
        if (!s) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += wait_ns / 1000000000;
            ts.tv_nsec += wait_ns % 1000000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&st.work, &st.lock, &ts);
            continue;
        }
        drain_one_locked(s);
    }
    return NULL;
}

static void drainers_start_locked(void)
{
    int want = sluice_cfg.stage_drainers > 0 ? (int)sluice_cfg.stage_drainers : 1;

    while (st.drainers < want) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &a, drainer_main, NULL);
        pthread_attr_destroy(&a);
        if (rc != 0)
            break;
        st.drainers++;
    }
}

/* ------------------------------------------------------------ open */

/* Flags for the data file: the program's access mode and position rules. */
static int data_flags(int flags)
{
    return (flags & (O_ACCMODE | O_APPEND | O_TRUNC | O_CLOEXEC)) | O_NOFOLLOW;
}

/* Room on the tier for a new file. */
static int tier_has_room(void)
{
    struct statvfs sv;
    if (fstatvfs(st.ddir, &sv) != 0)
        return 0;
    return (int64_t)sv.f_bavail * (int64_t)sv.f_frsize >= sluice_cfg.stage_reserve;
}

/* abs is staged by another process on the node (its index link, and its
 * data still on the tier): 1 and *e. Never for this process's own files. */
static int foreign_lookup(const char *abs, struct names_entry *e)
{
    struct stat sb;
    int own;

    if (!st.usable || !names_lookup(st.ndir, abs, e))
        return 0;
    pthread_mutex_lock(&st.lock);
    own = lookup_locked(abs) != NULL;
    pthread_mutex_unlock(&st.lock);
    return !own && SLUICE_REAL(fstatat)(st.ddir, e->id, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Whether the process that owns entry id still runs (it holds its lock,
 * locks/HOST-PID, while it does). */
static int owner_alive(const char *id)
{
    char owner[96];
    const char *dash = strrchr(id, '-');
    int fd, alive = 1;

    if (!dash || (size_t)(dash - id) >= sizeof owner)
        return 1;
    snprintf(owner, sizeof owner, "%.*s", (int)(dash - id), id);
    fd = SLUICE_REAL(openat)(st.ldir, owner, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0)
        return 0;
    if (SLUICE_REAL(flock)(fd, LOCK_SH | LOCK_NB) == 0)
        alive = 0;   /* nobody holds it: its process ended */
    SLUICE_REAL(close)(fd);
    return alive;
}

/* Another process's staged file is about to be changed here (written,
 * truncated, renamed, removed): wait until that process has let go of it:
 * handed it to the job (it closed it, under the job's drainer: the change
 * is then made on the tier, handoff.h), or published it (the call goes to
 * the shared file system). Without a job's drainer it publishes it once
 * closed and left alone for the stage delay; if that process has ended
 * with the file still open, `sluice recover` is its publisher, and after a
 * minute without progress the call goes on anyway; both are said on stderr. */
#define WAIT_PUBLISHED_NS (60LL * 1000000000)

static void wait_published(const char *abs)
{
    struct names_entry e;
    int64_t start = journal_now_ns();

    while (foreign_lookup(abs, &e)) {
        struct journal_entry je;
        int lockfd;
        if (handoff_get(&st.dirs, abs, &je, &lockfd) == 1) {
            SLUICE_REAL(close)(lockfd);
            return;   /* the job's now: changed on the tier */
        }
        if (!owner_alive(e.id)) {
            sluice_diag("stage mode: %s was staged by a process that has ended; `sluice recover %s` publishes it",
                        abs, st.tier);
            return;
        }
        if (journal_now_ns() - start > WAIT_PUBLISHED_NS) {
            sluice_diag("stage mode: %s is still staged by another process after a minute; going on without it",
                        abs);
            return;
        }
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* A new staged file for abs; returns the data file's descriptor or -errno. */
static int stage_new_locked(struct sluice_file *f, struct stage_desc *d, const char *abs, int flags,
                            mode_t mode, int existed, int keep_inode)
{
    struct staged *s = calloc(1, sizeof *s);
    int fd, err = 0;

    if (!s)
        return -ENOMEM;
    snprintf(s->e.id, sizeof s->e.id, "%s-%ld-%lu", st.host, (long)getpid(), ++st.seq);
    snprintf(s->e.path, sizeof s->e.path, "%s", abs);
    s->e.mode = (existed ? mode : mode & ~sluice_umask_get()) & 07777;
    s->e.state = JOURNAL_OPEN;
    s->e.pid = getpid();
    s->e.created_ns = s->e.updated_ns = journal_now_ns();
    s->existed = existed;
    s->e.existed = existed;
    s->e.inplace = existed && keep_inode;   /* published into the same file (see stage_open) */
    s->rec = f->rec;
    s->pre_fd = -1;
    fd = SLUICE_REAL(openat)(st.ddir, s->e.id, data_flags(flags) | O_CREAT | O_EXCL, 0600);
    for (int tries = 0; fd < 0 && errno == EEXIST && tries < 8; tries++) {
        snprintf(s->e.id, sizeof s->e.id, "%s-%ld-%lu", st.host, (long)getpid(), ++st.seq);
        fd = SLUICE_REAL(openat)(st.ddir, s->e.id, data_flags(flags) | O_CREAT | O_EXCL, 0600);
    }
    if (fd < 0) {
        err = -errno;
        free(s);
        return err;
    }
    if (owner_lock_locked() != 0 || (err = journal_write(st.jdir, &s->e)) != 0 ||
        (err = names_add(st.ndir, abs, s->e.id, s->e.mode)) != 0) {
        /* -EEXIST: another process on the node staged the name meanwhile */
        err = err == -EEXIST ? -EEXIST : -EIO;
        SLUICE_REAL(close)(fd);
        SLUICE_REAL(unlinkat)(st.jdir, s->e.id, 0);
        SLUICE_REAL(unlinkat)(st.ddir, s->e.id, 0);
        free(s);
        return err;
    }
    s->opens = 1;
    insert_locked(s);
    d->s = s;
    if (sluice_cfg.stage_precopy > 0)
        drainers_start_locked();   /* early copies run while the program writes */
    return fd;
}

static int stage_open_abs(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode,
                          const char *abs);
static int staged_through_links(const char *abs, int follow_last, char *out, size_t len);

/* A path that reaches a staged file through symbolic links on the shared
 * file system (where the link dangles until it is published) opens the
 * staged file, as plain would open the file the link names. Not for a
 * create: that stats the name first and stages what does not exist. */
static int stage_open(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode)
{
    char real[PATH_MAX];
    int fd = stage_open_abs(f, level, dirfd, path, flags, mode, f->rec->path);

    if (fd == -ENOENT && !(flags & (O_CREAT | O_NOFOLLOW)) && f->rec->path[0] == '/' &&
        staged_through_links(f->rec->path, 1, real, sizeof real))
        fd = stage_open_abs(f, level, AT_FDCWD, real, flags, mode, real);
    return fd;
}

static int stage_open_abs(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode,
                          const char *abs)
{
    struct stage_desc *d = desc_of(f, level);
    struct staged *s;
    struct stat sb;
    int fd, existed = 0, keep_inode = 0, retried = 0;
    uint64_t t0;

    d->s = NULL;
    d->foreign = 0;
    d->users_fd = -1;
    if (!st.usable || abs[0] != '/')
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
again:
    existed = keep_inode = 0;
    pthread_mutex_lock(&st.lock);
    /* A file being published is not changed under the drainer's mapping:
     * wait for that publish (it goes again after this open's close). */
    while ((s = lookup_locked(abs)) != NULL && s->draining)
        pthread_cond_wait(&st.done, &st.lock);
    if (s) {
        /* Staged here already: the data file, and no shared-FS operation. */
        if ((flags & O_CREAT) && (flags & O_EXCL)) {
            pthread_mutex_unlock(&st.lock);
            return -EEXIST;
        }
        fd = SLUICE_REAL(openat)(st.ddir, s->e.id, data_flags(flags), 0);
        if (fd < 0) {
            fd = -errno;
        } else {
            s->opens++;
            s->failed = 0;
            count_tier_open(f);
            if (s->e.state != JOURNAL_OPEN) {
                s->e.state = JOURNAL_OPEN;
                s->e.updated_ns = journal_now_ns();
                entry_write_locked(s);
            }
            d->s = s;
        }
        pthread_mutex_unlock(&st.lock);
        return fd;
    }
    pthread_mutex_unlock(&st.lock);

    /* Staged by another process on the node (or handed to the job): an
     * exclusive create fails; any other open shares its data file, as it
     * would share the file, holding locks/ID.users (shared) while open, so
     * that it is published only after the last such descriptor closed: a
     * reader's descriptor must not go on reading a data file that the
     * publish removed while the file changes on the shared file system. */
    struct names_entry ne;
    if (foreign_lookup(abs, &ne)) {
        if ((flags & O_CREAT) && (flags & O_EXCL))
            return -EEXIST;
        if (!(flags & (O_DIRECTORY | O_PATH))) {
            struct names_entry again;
            int ufd = writers_join(st.ldir, ne.id);
            if (ufd >= 0 && foreign_lookup(abs, &again) && strcmp(again.id, ne.id) == 0) {
                fd = SLUICE_REAL(openat)(st.ddir, ne.id, (flags & ~(O_CREAT | O_EXCL)) | O_NOFOLLOW, 0);
                if (fd >= 0) {
                    d->foreign = 1;
                    d->foreign_mode = again.mode;
                    d->users_fd = ufd;
                    snprintf(d->foreign_id, sizeof d->foreign_id, "%s", ne.id);
                    count_tier_open(f);
                    return fd;
                }
            }
            if (ufd >= 0)
                sluice_privfd_close(ufd);
            /* published meanwhile: on as for any other file */
        }
    }

    /* Not staged: only a new or truncated file for writing is; reading or
     * updating an existing file goes straight through. */
    if ((flags & O_ACCMODE) == O_RDONLY || !(flags & (O_CREAT | O_TRUNC)) || (flags & (O_DIRECTORY | O_PATH)))
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    char dir[4096];
    const char *slash = strrchr(abs, '/');
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - abs), abs);
    pthread_mutex_lock(&st.lock);
    int dir_state = !dir[0] ? 1 : dir_known_locked(dir);
    pthread_mutex_unlock(&st.lock);
    if (!(flags & O_TRUNC)) {
        pthread_mutex_lock(&st.lock);
        int known = recently_published_locked(abs);
        pthread_mutex_unlock(&st.lock);
        if (known)
            return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);   /* it exists: not staged */
    }
    t0 = sluice_now();
    if (dir_state == 2 && (flags & O_CREAT)) {
        /* a directory this process made holds only what it put there: a
         * file not staged here does not exist (no stat needed) */
    } else if (SLUICE_REAL(stat)(abs, &sb) == 0) {
        count_fs(f, POSIX_STATS, t0);
        if (!S_ISREG(sb.st_mode) || !(flags & O_TRUNC) || (flags & O_EXCL))
            return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);   /* update, or the kernel's error */
        t0 = sluice_now();
        if (SLUICE_REAL(faccessat)(AT_FDCWD, abs, W_OK, AT_EACCESS) != 0) {   /* may we overwrite it? */
            count_fs(f, POSIX_STATS, t0);
            return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
        }
        count_fs(f, POSIX_STATS, t0);
        if (atomic_load(&f->rec->open_files) > 0)
            /* this process has the file open already: its descriptors
             * must see the truncation and write the same file */
            return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
        existed = 1;
        mode = sb.st_mode;
        /* An overwrite is published by replacing the file whole (a reader
         * never sees it half written), except where the inode is what the
         * user relies on: another name links it, or it belongs to another
         * user or group than a new file of ours would. Then it is written
         * in place, as the program's O_TRUNC open would. */
        keep_inode = sb.st_nlink > 1 || sb.st_uid != geteuid() || sb.st_gid != getegid();
    } else if (errno != ENOENT || !(flags & O_CREAT)) {
        count_fs(f, POSIX_STATS, t0);
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    } else {
        count_fs(f, POSIX_STATS, t0);
        /* The directory must exist on the shared file system and take a new
         * file from us (permissions, a read-only file system), as for
         * open(): otherwise the kernel's own open answers. */
        if (!dir_state) {
            t0 = sluice_now();
            if (SLUICE_REAL(stat)(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
                count_fs(f, POSIX_STATS, t0);
                return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
            }
            count_fs(f, POSIX_STATS, t0);
            t0 = sluice_now();
            if (SLUICE_REAL(faccessat)(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0) {
                count_fs(f, POSIX_STATS, t0);
                return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
            }
            count_fs(f, POSIX_STATS, t0);
            pthread_mutex_lock(&st.lock);
            dir_remember_locked(dir, 0);
            pthread_mutex_unlock(&st.lock);
        }
    }
    if (!tier_has_room()) {
        uint64_t t = sluice_now();
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, POSIX_FALLBACKS, t, t);
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    }
    pthread_mutex_lock(&st.lock);
    fd = stage_new_locked(f, d, abs, flags, mode, existed, keep_inode);
    pthread_mutex_unlock(&st.lock);
    if (fd == -EEXIST && (flags & O_CREAT) && (flags & O_EXCL))
        return -EEXIST;   /* another process staged the name first */
    if (fd == -EEXIST && !retried) {
        wait_published(abs);
        retried = 1;
        goto again;
    }
    if (fd < 0)
        return sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
    count_tier_open(f);
    return fd;
}

/* ------------------------------------------------------------ data */

extern const struct sluice_tier_ops sluice_tier_stage;

/* Where a description's stage tier keeps its state, or NULL (not staged). */
static struct stage_desc *stage_desc_of_file(struct sluice_file *g)
{
    for (int i = 0; i < g->depth; i++)
        if (g->tier[i] == &sluice_tier_stage)
            return g->tier_state[i];
    return NULL;
}

struct move {
    struct staged *s;
    int counter;
    int rc;   /* the first failure */
};

/* Description g, on a data file the tier just published as path, names the
 * published file instead: the same number, position, flags and
 * close-on-exec flag (and the program's other numbers for it). 0 or -errno. */
static int reopen_published(struct sluice_file *g, const char *path)
{
    off_t pos = SLUICE_REAL(lseek)(g->fd, 0, SEEK_CUR);
    int fdflags = SLUICE_REAL(fcntl)(g->fd, F_GETFD);
    uint64_t t0 = sluice_now();
    int nfd = SLUICE_REAL(open)(path, (g->flags & (O_ACCMODE | O_APPEND)) | O_CLOEXEC, 0);

    if (nfd < 0 || SLUICE_REAL(dup3)(nfd, g->fd, fdflags > 0 && (fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
        int err = -errno;
        if (nfd >= 0)
            SLUICE_REAL(close)(nfd);
        return err;
    }
    SLUICE_REAL(close)(nfd);
    /* the file system saw the open, and the seek to where the program was */
    sluice_count_open(g->rec, SLUICE_SIDES_FS, t0, sluice_now());
    if (pos >= 0) {
        t0 = sluice_now();
        if (SLUICE_REAL(lseek)(g->fd, pos, SEEK_SET) >= 0)
            sluice_count_meta(g->rec, SLUICE_SIDES_FS, POSIX_SEEKS, t0, sluice_now());
    }
    /* (a number the program dup'ed would still name the tier's file: the
     * kernel, stdio or an exec'd image would write the data file the
     * publish removes) */
    sluice_file_descriptors_follow(g);
    return 0;
}

/* After the publish: a description of m->s names the published file now
 * (same number, position, flags and close-on-exec flag; the program's
 * other numbers for it too) and goes straight through. Under st.lock. */
static void move_description(struct sluice_file *g, void *arg)
{
    struct move *m = arg;
    struct stage_desc *gd = stage_desc_of_file(g);

    if (!gd || gd->s != m->s)
        return;
    int rc = reopen_published(g, m->s->e.path);
    if (rc) {
        if (!m->rc)
            m->rc = rc;
        return;
    }
    gd->s = NULL;
    m->s->opens--;
    uint64_t t = sluice_now();
    sluice_count_meta(g->rec, SLUICE_SIDES_BOTH, m->counter, t, t);
}

/* The tier is full under a staged file (or mmap, fchown, an exec, auto's
 * large first write): publish what it holds, point every description of it
 * at the shared file and go on straight through. All of them: a second
 * publish would replace the file under the first. 0 or -errno. */
static int stage_move_to_shared(struct sluice_file *f, struct stage_desc *d, int counter)
{
    struct staged *s = d->s;
    struct move m = {s, counter, 0};
    char why[512];
    int rc;

    pthread_mutex_lock(&st.lock);
    while (s->draining || s->precopying)
        pthread_cond_wait(&st.done, &st.lock);
    if (counter == POSIX_AUTO_DIRECT && s->opens != 1) {
        /* another thread opened the file meanwhile: auto's move is only for
         * a file one description has open */
        pthread_mutex_unlock(&st.lock);
        return -EBUSY;
    }
    /* Another process writing the file through the tier would go on
     * writing a data file that the publish removes: no move then (the
     * caller's error stands), as no drainer publishes it then. Held, the
     * lock keeps new writers waiting until the file is on the shared file
     * system, where they then find it. */
    int users = writers_hold(st.ldir, s->e.id);
    if (users == -EBUSY) {
        pthread_mutex_unlock(&st.lock);
        return -EBUSY;
    }
    precopy_drop_locked(s);
    rc = publish_entry(st.ddir, &s->e, (size_t)sluice_cfg.buffer_size, s->rec, why, sizeof why);
    if (rc == 0) {
        dir_note_published_locked(s->e.path);
        move_description(f, &m);   /* (first: the caller's, whatever the table holds) */
        sluice_files_each(move_description, &m);
        if (s->opens == 0)
            published_locked(s);
    }
    writers_release(st.ldir, users, s->e.id, rc == 0);
    if (rc == 0) {
        if (s->opens == 0)
            forget_locked(s);
        rc = d->s ? (m.rc ? m.rc : -EIO) : 0;
    }
    pthread_mutex_unlock(&st.lock);
    return rc;
}

static ssize_t sys(ssize_t rc)
{
    return rc < 0 ? -errno : rc;
}

/* A transfer at the current position that the stage tier made itself on a
 * staged file: when a tier below keeps the position (auto: buffer under
 * stage), it moves with the kernel's, which the counters and a later move
 * to the shared file system read. Returns rc. */
static ssize_t staged_moved(struct sluice_file *f, off_t off, ssize_t rc)
{
    if (rc > 0 && off < 0 && f->owns_pos) {
        if (f->flags & O_APPEND) {
            off_t now = SLUICE_REAL(lseek)(f->fd, 0, SEEK_CUR);
            if (now >= 0)
                atomic_store(&f->pos, (int64_t)now);
        } else {
            atomic_fetch_add(&f->pos, (int64_t)rc);
        }
    }
    return rc;
}

/* The descriptor is a data file on the tier: this process's staged file,
 * or one another process staged (or handed to the job) that it opened by
 * name. Its transfers are the tier's, not the shared file system's. */
static int on_tier(const struct stage_desc *d)
{
    return d->s || d->foreign;
}

static ssize_t stage_read(struct sluice_file *f, int level, void *buf, size_t n, off_t off)
{
    if (!on_tier(desc_of(f, level)))
        return sluice_tier_read(f, level + 1, buf, n, off);
    return staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(read)(f->fd, buf, n) : SLUICE_REAL(pread)(f->fd, buf, n, off)));
}

/* --mode auto (and stage with SLUICE_STAGE_LARGE) at a staged file's first
 * write: a write the shared file system takes at full speed
 * (SLUICE_AUTO_LARGE and up) gains nothing from the tier at the job's end,
 * which would write the bytes twice and hold them in node memory until
 * then. The file, empty still, goes to the shared file system now and
 * straight through from then on. Only a file this description alone has
 * open: no other description, no forked child, no other process writing it
 * through the tier (stage_move_to_shared checks that). 1 when it went. */
static int auto_goes_direct(struct sluice_file *f, struct stage_desc *d, size_t n)
{
    struct staged *s = d->s;
    int64_t large = f->mode == SLUICE_MODE_AUTO ? sluice_cfg.auto_large : sluice_cfg.stage_large;

    if (large <= 0 || __atomic_load_n(&s->wrote, __ATOMIC_RELAXED))
        return 0;
    pthread_mutex_lock(&st.lock);
    int first = !s->wrote;
    __atomic_store_n(&s->wrote, 1, __ATOMIC_RELAXED);
    /* (a file created without write permission for its owner could not be
     * opened again for writing on the shared file system: it stays) */
    int sole = first && s->opens == 1 && !s->forked && (s->e.mode & S_IWUSR);
    pthread_mutex_unlock(&st.lock);
    if (!sole || n < (size_t)large)
        return 0;
    struct stat sb;
    if (SLUICE_REAL(fstat)(f->fd, &sb) != 0 || sb.st_size != 0)
        return 0;   /* sized by a truncate first: its holes stay on the tier, not copied as zeros */
    return stage_move_to_shared(f, d, POSIX_AUTO_DIRECT) == 0;   /* (not while another process writes it) */
}

static ssize_t stage_write(struct sluice_file *f, int level, const void *buf, size_t n, off_t off)
{
    struct stage_desc *d = desc_of(f, level);
    ssize_t rc;

    if (!d->s && d->foreign)
        return staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(write)(f->fd, buf, n) : SLUICE_REAL(pwrite)(f->fd, buf, n, off)));
    if (!d->s || auto_goes_direct(f, d, n))
        return sluice_tier_write(f, level + 1, buf, n, off);
    rc = staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(write)(f->fd, buf, n) : SLUICE_REAL(pwrite)(f->fd, buf, n, off)));
    if (rc > 0)
        precopy_note_write(d->s, written_at(f, off, rc));
    if (rc > 0 && (size_t)rc < n) {
        /* short: the tier filled up in the middle; the rest meets ENOSPC */
        size_t done = (size_t)rc;
        ssize_t more = staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(write)(f->fd, (const char *)buf + done, n - done)
                                   : SLUICE_REAL(pwrite)(f->fd, (const char *)buf + done, n - done, off + (off_t)done)));
        if (more > 0)
            return (ssize_t)done + more;
        if ((more == -ENOSPC || more == -EDQUOT) && stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0) {
            more = sluice_tier_write(f, level + 1, (const char *)buf + done, n - done,
                                     off < 0 ? off : off + (off_t)done);
            return more > 0 ? (ssize_t)done + more : (ssize_t)done;
        }
        return rc;
    }
    if ((rc == -ENOSPC || rc == -EDQUOT) && stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0)
        return sluice_tier_write(f, level + 1, buf, n, off);
    return rc;
}

static ssize_t stage_readv(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    if (!on_tier(desc_of(f, level)))
        return sluice_tier_readv(f, level + 1, iov, cnt, off, flags);
    if (flags)
        return staged_moved(f, off, sys(SLUICE_REAL(preadv2)(f->fd, iov, cnt, off, flags)));
    return staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(readv)(f->fd, iov, cnt) : SLUICE_REAL(preadv)(f->fd, iov, cnt, off)));
}

static ssize_t stage_writev(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    struct stage_desc *d = desc_of(f, level);
    ssize_t rc;

    if (!d->s && d->foreign) {
        if (flags)
            return staged_moved(f, off, sys(SLUICE_REAL(pwritev2)(f->fd, iov, cnt, off, flags)));
        return staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(writev)(f->fd, iov, cnt) : SLUICE_REAL(pwritev)(f->fd, iov, cnt, off)));
    }
    if (!d->s)
        return sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
    size_t total = 0;
    for (int i = 0; i < cnt; i++)
        total += iov[i].iov_len;
    if (auto_goes_direct(f, d, total))
        return sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
    if (flags)
        rc = staged_moved(f, off, sys(SLUICE_REAL(pwritev2)(f->fd, iov, cnt, off, flags)));
    else
        rc = staged_moved(f, off, sys(off < 0 ? SLUICE_REAL(writev)(f->fd, iov, cnt) : SLUICE_REAL(pwritev)(f->fd, iov, cnt, off)));
    if (rc > 0)
        precopy_note_write(d->s, written_at(f, off, rc));
    if ((rc == -ENOSPC || rc == -EDQUOT) && stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0)
        return sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
    if (rc > 0 && (size_t)rc < total && !flags) {
        /* cut short (the tier filled up): the rest piece by piece, as
         * write() finishes it (on the shared file system if need be) */
        size_t done = (size_t)rc, skip = done;
        for (int i = 0; i < cnt; i++) {
            if (skip >= iov[i].iov_len) {
                skip -= iov[i].iov_len;
                continue;
            }
            size_t len = iov[i].iov_len - skip;
            ssize_t w = stage_write(f, level, (const char *)iov[i].iov_base + skip, len,
                                    off < 0 ? off : off + (off_t)done);
            skip = 0;
            if (w <= 0)
                break;
            done += (size_t)w;
            if ((size_t)w < len)
                break;
        }
        return (ssize_t)done;
    }
    return rc;
}

static off_t stage_lseek(struct sluice_file *f, int level, off_t off, int whence)
{
    if (!on_tier(desc_of(f, level)))
        return sluice_tier_lseek(f, level + 1, off, whence);
    off_t rc = SLUICE_REAL(lseek)(f->fd, off, whence);
    if (rc >= 0 && f->owns_pos)
        atomic_store(&f->pos, (int64_t)rc);
    return rc < 0 ? -errno : rc;
}

static int stage_fsync(struct sluice_file *f, int level, int datasync)
{
    /* A staged file is durable as the tier is; it reaches the shared file
     * system when closed (docs/stage.md). */
    if (!on_tier(desc_of(f, level)))
        return sluice_tier_fsync(f, level + 1, datasync);
    return (datasync ? SLUICE_REAL(fdatasync)(f->fd) : SLUICE_REAL(fsync)(f->fd)) < 0 ? -errno : 0;
}

static int stage_ftruncate(struct sluice_file *f, int level, off_t len)
{
    struct staged *s = desc_of(f, level)->s;

    if (!on_tier(desc_of(f, level)))
        return sluice_tier_ftruncate(f, level + 1, len);
    if (SLUICE_REAL(ftruncate)(f->fd, len) < 0)
        return -errno;
    if (s)
        precopy_note_write(s, len);
    return 0;
}

/* A description of another process's staged file, or one handed to the
 * job, that must reach the shared file system (a fallocate mode the tier
 * does not have, fchown, extended attributes): the file is published now
 * (not while yet another process writes it through the tier: -EBUSY), and
 * this process's descriptions of it move to the published file, keeping
 * their numbers, positions and flags. 0 or -errno. */
struct foreign_move {
    char id[96];
    const char *path;
    int rc;
};

static void move_foreign_description(struct sluice_file *g, void *arg)
{
    struct foreign_move *m = arg;
    struct stage_desc *gd = stage_desc_of_file(g);

    if (!gd || !gd->foreign || strcmp(gd->foreign_id, m->id) != 0)
        return;
    int rc = reopen_published(g, m->path);
    if (rc) {
        if (!m->rc)
            m->rc = rc;
        return;
    }
    gd->foreign = 0;
    if (gd->users_fd >= 0) {
        sluice_privfd_close(gd->users_fd);
        gd->users_fd = -1;
    }
}

static int foreign_move_to_shared(struct sluice_file *f, struct stage_desc *d)
{
    struct foreign_move m = {.path = f->rec->path};
    struct journal_entry e;
    char why[512];
    int lockfd, users, rc;

    snprintf(m.id, sizeof m.id, "%s", d->foreign_id);
    if (d->users_fd >= 0) {   /* (our own writer's lock, held shared: released for the publish) */
        sluice_privfd_close(d->users_fd);
        d->users_fd = -1;
    }
    if (handoff_get(&st.dirs, f->rec->path, &e, &lockfd) != 1)
        return -EBUSY;   /* its process still has it open */
    snprintf(m.id, sizeof m.id, "%s", e.id);
    if ((users = writers_hold(st.ldir, e.id)) == -EBUSY) {
        SLUICE_REAL(close)(lockfd);
        return -EBUSY;
    }
    struct sluice_record *rec = f->rec;
    sluice_record_split_sides(rec);
    rc = publish_entry(st.ddir, &e, (size_t)sluice_cfg.buffer_size, rec, why, sizeof why);
    if (rc == 0) {
        publish_finish(st.ddir, st.jdir, &e);
        names_remove(st.ndir, e.path, e.id);
        pthread_mutex_lock(&st.lock);
        move_foreign_description(f, &m);   /* (first: the caller's) */
        sluice_files_each(move_foreign_description, &m);
        pthread_mutex_unlock(&st.lock);
        rc = d->foreign ? (m.rc ? m.rc : -EIO) : 0;
    }
    writers_release(st.ldir, users, e.id, rc == 0);
    SLUICE_REAL(close)(lockfd);
    return rc;
}

/* A description on the tier moves to the shared file system: this
 * process's staged file, or another's it opened by name. */
static int desc_move_to_shared(struct sluice_file *f, struct stage_desc *d)
{
    if (d->s)
        return stage_move_to_shared(f, d, POSIX_FALLBACKS);
    if (d->foreign)
        return foreign_move_to_shared(f, d);
    return 0;
}

/* fallocate of a staged file is the tier's; a mode the tier's file system
 * does not have (tmpfs: zero, collapse and insert range) moves the file to
 * the shared file system first (as mmap does), which then answers as
 * plain: with the change, or its own refusal. */
static int stage_fallocate(struct sluice_file *f, int level, int mode, off_t off, off_t len)
{
    struct stage_desc *d = desc_of(f, level);
    int rc;

    if (!on_tier(d))
        return sluice_tier_fallocate(f, level + 1, mode, off, len);
    if (mode == SLUICE_POSIX_FALLOCATE)
        rc = -SLUICE_REAL(posix_fallocate)(f->fd, off, len);
    else
        rc = SLUICE_REAL(fallocate)(f->fd, mode, off, len) == 0 ? 0 : -errno;
    if (rc == -EOPNOTSUPP && desc_move_to_shared(f, d) == 0)
        return sluice_tier_fallocate(f, level + 1, mode, off, len);
    if (rc == 0 && d->s)
        precopy_note_write(d->s, off);
    return rc;
}

static int stage_fstat(struct sluice_file *f, int level, struct stat *sb)
{
    struct staged *s = desc_of(f, level)->s;

    if (!s && desc_of(f, level)->foreign) {
        if (SLUICE_REAL(fstat)(f->fd, sb) < 0)
            return -errno;
        sb->st_mode = (sb->st_mode & ~07777) | desc_of(f, level)->foreign_mode;
        return 0;
    }
    if (!s)
        return sluice_tier_fstat(f, level + 1, sb);
    if (SLUICE_REAL(fstat)(f->fd, sb) < 0)
        return -errno;
    sb->st_mode = (sb->st_mode & ~07777) | s->e.mode;
    return 0;
}

/* The last writer of another process's staged file closed it, and that
 * process has ended (it left the file to us at its exit): publish it as
 * `sluice drain` would (under the entry's journal lock), from what the
 * index says of it. Failing, it stays on the tier for `sluice drain`. */
static void foreign_takeover(const char *id, const char *abs, struct sluice_record *rec)
{
    struct names_entry ne;
    struct journal_entry je;
    char why[512];
    int users, jfd;

    if (job_running() || !handoff_owner_released(st.ldir, id) || !names_lookup(st.ndir, abs, &ne) ||
        strcmp(ne.id, id) != 0)
        return;   /* (the job's drainer publishes it, or its owner does) */
    if ((users = writers_hold(st.ldir, id)) == -EBUSY)
        return;   /* another writer still has it: its close does this */
    jfd = SLUICE_REAL(openat)(st.jdir, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (jfd < 0 || SLUICE_REAL(flock)(jfd, LOCK_EX | LOCK_NB) != 0) {
        if (jfd >= 0)
            SLUICE_REAL(close)(jfd);
        writers_release(st.ldir, users, id, 0);
        return;   /* gone, or `sluice drain` is at it */
    }
    memset(&je, 0, sizeof je);
    snprintf(je.id, sizeof je.id, "%s", id);
    snprintf(je.path, sizeof je.path, "%s", abs);
    je.mode = ne.mode;
    je.state = JOURNAL_CLOSED;
    je.pid = getpid();
    je.created_ns = je.updated_ns = journal_now_ns();
    if (publish_entry(st.ddir, &je, (size_t)sluice_cfg.buffer_size, rec, why, sizeof why) == 0) {
        publish_finish(st.ddir, st.jdir, &je);
        names_remove(st.ndir, abs, id);
        writers_release(st.ldir, users, id, 1);
    } else {
        sluice_diag("stage mode: cannot publish %s (%s); it stays on the tier %s until `sluice drain`", abs, why,
                    st.tier);
        writers_release(st.ldir, users, id, 0);
    }
    SLUICE_REAL(close)(jfd);
}

/* Job mode: a staged file none of this process's descriptors holds is
 * left to the job's drainer: its entry says closed (with the path and mode
 * the journal has now: another process may have renamed its directory or
 * changed its mode), and this process forgets it; the index still names it,
 * so this process and every other find it on the tier until it is
 * published. Descriptors of other processes (a child's, an exec'd
 * program's) keep it from being published: the drainer sees them. */
static struct stage_desc *stage_desc_of_file(struct sluice_file *g);

static void hand_over_locked(struct staged *s)
{
    struct journal_entry disk;
    int lockfd;

    while (s->draining || s->precopying)
        pthread_cond_wait(&st.done, &st.lock);
    precopy_drop_locked(s);
    lockfd = journal_lock(st.jdir, s->e.id, 1);
    if (lockfd >= 0 && journal_read(st.jdir, s->e.id, &disk) == 0) {
        if (disk.state == JOURNAL_REMOVED || disk.state == JOURNAL_PUBLISHED) {
            SLUICE_REAL(close)(lockfd);
            lockfd = -1;   /* removed by another process meanwhile: nothing to hand over */
        } else {
            snprintf(s->e.path, sizeof s->e.path, "%s", disk.path);
            s->e.mode = disk.mode;
        }
    }
    if (lockfd >= 0) {
        s->e.state = JOURNAL_CLOSED;
        s->closed_ns = s->e.updated_ns = journal_now_ns();
        int written = journal_write_locked(st.jdir, &s->e, &lockfd) == 0;
        SLUICE_REAL(close)(lockfd);
        if (!written)
            s->own_publish = 1;   /* (the tier is full: the entry still says open; we publish it) */
        if (!written || !job_running()) {
            /* (asked after the entry says closed: a drainer that ended
             * before saw it in its last look; one that ends now leaves it
             * to us, and so does the lock file) */
            drainers_start_locked();
            pthread_cond_signal(&st.work);
            return;
        }
    }
    /* The drainer may publish it any moment: its directory no longer holds
     * only what this process stages, and a name staged there again must be
     * checked (and replace, or take with it, the published file) */
    dir_note_published_locked(s->e.path);
    unlink_locked(s);
    free(s);
    pthread_cond_broadcast(&st.done);
}

/* Job mode, at exit or exec: every staged file goes to the job, open ones
 * too (what the process holds open at its end is complete); descriptors
 * that outlive this (an exec'd image's, a destructor's) write its data
 * file as before, and the drainer waits for them. */
static void detach_description(struct sluice_file *g, void *arg)
{
    struct stage_desc *gd = stage_desc_of_file(g);

    (void)arg;
    if (gd && gd->s) {
        gd->s->opens--;
        gd->s = NULL;
    }
}

static void hand_over_all_locked(void)
{
    sluice_files_each(detach_description, NULL);
rescan:
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = st.buckets[b]; s; s = s->next)
            if (!s->kept && !s->own_publish) {
                s->kept = 1;   /* (still here after: the drainer ended, we publish it) */
                hand_over_locked(s);
                goto rescan;   /* (the table may have changed while it waited) */
            }
}

static int stage_close(struct sluice_file *f, int level)
{
    struct stage_desc *d = desc_of(f, level);
    struct staged *s = d->s;
    int rc;

    if (!s) {
        rc = sluice_tier_close(f, level + 1);
        if (d->users_fd >= 0) {
            sluice_privfd_close(d->users_fd);
            d->users_fd = -1;
            foreign_takeover(d->foreign_id, f->rec->path, f->rec);
        }
        d->foreign = 0;
        return rc;
    }
    rc = sluice_privfd_close(f->fd);
    pthread_mutex_lock(&st.lock);
    if (--s->opens == 0 && st.job && s->pre_fd < 0 && !s->precopying) {
        hand_over_locked(s);   /* (it asks whether the drainer still runs) */
    } else if (s->opens == 0) {
        /* (an early copy is ours to complete: handed over, it would be copied again) */
        s->own_publish = st.job;
        s->e.state = JOURNAL_CLOSED;
        s->closed_ns = s->e.updated_ns = journal_now_ns();
        entry_write_locked(s);
        drainers_start_locked();
        pthread_cond_signal(&st.work);
    }
    pthread_mutex_unlock(&st.lock);
    d->s = NULL;
    return rc;
}

static int stage_control(struct sluice_file *f, int level, int op, void *arg)
{
    /* A staged file's descriptor is the kernel's own: locks and stdio work
     * on it as they are; but its bytes may now change without a write we
     * see, so an early copy is no longer trusted. */
    struct stage_desc *d = desc_of(f, level);
    struct staged *s = d->s;
    if (op == SLUICE_CTL_NODE_LOCAL && (s || d->foreign))
        return 1;   /* f->fd is a data file on the tier */
    if (!s)
        return sluice_tier_control(f, level + 1, op, arg);
    if (op == SLUICE_CTL_EXEC) {
        /* The next image writes through the descriptor without us, after
         * the end's quiesce would have published the file as complete (a
         * shell's `cmd > file`): the file goes to the shared file system
         * now, and the descriptor with it. A file a forked parent staged is
         * the parent's to publish (its data file stays while it has it open). */
        if (s->e.pid != getpid() || st.job)
            return 0;   /* (job mode: handed over at the end, the drainer waits for the new image) */
        return stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0 ? 1 : 0;
    }
    if (op == SLUICE_CTL_FALLBACK && (*(const unsigned *)arg & SLUICE_FALLBACK_MMAP)) {
        /* A mapping outlives the descriptor and its bytes change without a
         * write we see: the file moves to the shared file system before it
         * is mapped, and the mapping is of the real file. */
        return stage_move_to_shared(f, d, POSIX_FALLBACKS) == 0 ? 0 : sluice_tier_control(f, level + 1, op, arg);
    }
    precopy_note_write(s, 0);
    pthread_mutex_lock(&st.lock);
    s->pre_done = INT64_MAX / 2;   /* and none is started */
    s->dirty_low = 0;
    pthread_mutex_unlock(&st.lock);
    return 0;
}

/* ------------------------------------------------------------ whole process */

static int64_t pending_bytes_locked(int *files)
{
    int64_t bytes = 0;
    struct stat sb;

    *files = 0;
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = st.buckets[b]; s; s = s->next)
            if (!s->failed) {
                (*files)++;
                if (staged_data_stat(s, &sb) == 0)
                    bytes += sb.st_size;
            }
    return bytes;
}

/* Before a fork: every closed staged file reaches the shared file system,
 * so that the child, which does not know our staged files, opens the real
 * file (a parent lays a file out, its child writes it: fio's pattern).
 * Files still open stay staged: the child writes them through the
 * descriptors it inherits. */
static void publish_closed_locked(void)
{
    char why[512];

rescan:
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = st.buckets[b]; s; s = s->next) {
            if (s->opens || s->e.state != JOURNAL_CLOSED || s->failed)
                continue;
            if (s->draining || s->precopying) {
                pthread_cond_wait(&st.done, &st.lock);
                goto rescan;   /* the table may have changed */
            }
            int users = writers_hold(st.ldir, s->e.id);
            if (users == -EBUSY)
                continue;   /* another process writes it: it stays staged */
            precopy_drop_locked(s);
            if (publish_entry(st.ddir, &s->e, (size_t)sluice_cfg.buffer_size, s->rec, why, sizeof why) == 0) {
                published_locked(s);
                writers_release(st.ldir, users, s->e.id, 1);
                dir_note_published_locked(s->e.path);
                forget_locked(s);   /* s is freed: scan again */
                goto rescan;
            }
            writers_release(st.ldir, users, s->e.id, 0);
            s->failed = 1;   /* the drainers report it; the child sees the old file, or none */
        }
}

/* A file still to publish (or being published) by this process. */
static int any_unpublished_locked(void)
{
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = st.buckets[b]; s; s = s->next)
            if (s->draining || (!s->failed && !s->handed_over))
                return 1;
    return 0;
}

static int stage_quiesce(unsigned why)
{
    int64_t start = journal_now_ns();
    int told = 0, files;

    /* Staged bytes are safe on the tier: a fork child shares them, and a
     * signal handler may not wait; the journal lets `sluice recover` finish. */
    if (st.usable && (why & SLUICE_QUIESCE_FORK)) {
        /* a child may write through inherited descriptors where we do not see */
        pthread_mutex_lock(&st.lock);
        for (int b = 0; b < STAGE_BUCKETS; b++)
            for (struct staged *s = st.buckets[b]; s; s = s->next) {
                s->forked = 1;   /* (files staged after the fork are the parent's alone) */
                s->dirty_low = 0;
            }
        if (!st.job)   /* (job mode: closed files are the job's already, seen through the index) */
            publish_closed_locked();
        pthread_mutex_unlock(&st.lock);
    }
    if (!st.usable || (why & (SLUICE_QUIESCE_FORK | SLUICE_QUIESCE_SIGNAL)))
        return 0;
    pthread_mutex_lock(&st.lock);
    if (job_running()) {
        /* no wait: the job's drainer publishes */
        hand_over_all_locked();
        if (st.count == 0) {
            owner_lock_drop_locked();
            pthread_mutex_unlock(&st.lock);
            return 0;
        }
        /* (the drainer ended meanwhile: what it did not take is published as without it) */
    }
    if (st.count == 0 || sluice_cfg.stage_detach) {
        owner_lock_drop_locked();   /* (kept while detached entries remain) */
        pthread_mutex_unlock(&st.lock);
        return 0;
    }
    /* The program is ending: what it still holds open is complete. */
    st.ending = 1;
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = st.buckets[b]; s; s = s->next)
            if (s->e.state == JOURNAL_OPEN) {
                s->opens = 0;
                s->e.state = JOURNAL_CLOSED;
                s->closed_ns = journal_now_ns();
                entry_write_locked(s);
            }
    drainers_start_locked();
    pthread_cond_broadcast(&st.work);
    for (;;) {
        if (!any_unpublished_locked())
            break;
        if (!told && journal_now_ns() - start > 1000000000LL) {
            /* (a stat per staged file: asked once, not at every publish) */
            int64_t bytes = pending_bytes_locked(&files);
            sluice_diag("stage mode: waiting for %d file%s (%.1f MiB) to reach the shared file system", files,
                        files == 1 ? "" : "s", bytes / 1048576.0);
            told = 1;
        }
        /* The program waits now: this thread publishes too, at the program's
         * own priority (the drainers' idle priority gets no CPU time on a
         * node whose cores are all busy). */
        int64_t unused;
        struct staged *due = next_due_locked(journal_now_ns(), &unused);
        if (due) {
            drain_one_locked(due);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&st.done, &st.lock, &ts);
    }
    owner_lock_drop_locked();
    pthread_mutex_unlock(&st.lock);
    return 0;
}

static void stage_after_fork_child(void)
{
    /* The parent's staged files stay the parent's: forget them here, and
     * its ownership lock with them (closing our copy leaves the parent's
     * lock in place; the child takes its own at its first staged file).
     * (Every tier hears of every fork, set up or not: a tier that never
     * initialised holds no descriptor.) */
    if (st.usable && st.ownerfd >= 0) {
        sluice_privfd_close(st.ownerfd);
        st.ownerfd = -1;
    }
    pthread_mutex_init(&st.lock, NULL);
    pthread_cond_init(&st.work, NULL);
    pthread_cond_init(&st.done, NULL);
    memset(st.buckets, 0, sizeof st.buckets);
    memset(known_dirs, 0, sizeof known_dirs);
    st.count = 0;
    st.drainers = 0;
}

/* ------------------------------------------------------------ path operations */

int stage_active(void)
{
    return st.usable && __atomic_load_n(&st.count, __ATOMIC_RELAXED) > 0;
}

int stage_path_stat(const char *abs, struct stat *sb)
{
    int handled = 0;

    pthread_mutex_lock(&st.lock);
    struct staged *s = lookup_locked(abs);
    if (s && staged_data_stat(s, sb) == 0) {
        sb->st_mode = (sb->st_mode & ~07777) | s->e.mode;
        handled = 1;
    }
    pthread_mutex_unlock(&st.lock);
    return handled;
}

int stage_path_truncate(const char *abs, off_t len, int *rc)
{
    struct staged *s;
    int fd;

    pthread_mutex_lock(&st.lock);
    while ((s = lookup_locked(abs)) != NULL && s->draining)
        pthread_cond_wait(&st.done, &st.lock);
    if (!s) {
        pthread_mutex_unlock(&st.lock);
        return 0;
    }
    fd = SLUICE_REAL(openat)(st.ddir, s->e.id, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    *rc = fd < 0 || SLUICE_REAL(ftruncate)(fd, len) != 0 ? -errno : 0;
    if (fd >= 0)
        SLUICE_REAL(close)(fd);
    pthread_mutex_unlock(&st.lock);
    return 1;
}

int stage_dir_exists(const char *abs)
{
    if (!st.usable)
        return 0;
    pthread_mutex_lock(&st.lock);
    int known = dir_known_locked(abs);
    pthread_mutex_unlock(&st.lock);
    return known;
}

int stage_path_unlink(const char *abs, int *rc)
{
    struct staged *s;

    pthread_mutex_lock(&st.lock);
    while ((s = lookup_locked(abs)) != NULL && (s->draining || s->precopying))
        pthread_cond_wait(&st.done, &st.lock);
    if (!s) {
        pthread_mutex_unlock(&st.lock);
        return 0;   /* not ours (or just published: the shared file system's unlink) */
    }
    int existed = s->existed;
    /* Open descriptors keep the (now nameless) data file, as unlink does. */
    discard_locked(s);
    pthread_mutex_unlock(&st.lock);
    *rc = existed ? (SLUICE_REAL(unlink)(abs) == 0 || errno == ENOENT ? 0 : -errno) : 0;
    return 1;
}

int stage_path_rename(const char *from, const char *to, int *rc)
{
    struct staged *s, *t;

    pthread_mutex_lock(&st.lock);
    for (;;) {
        s = lookup_locked(from);
        t = lookup_locked(to);
        if (!(s && (s->draining || s->precopying)) && !(t && (t->draining || t->precopying)))
            break;
        pthread_cond_wait(&st.done, &st.lock);
    }
    if (!s || strlen(to) >= sizeof s->e.path) {
        pthread_mutex_unlock(&st.lock);
        return 0;
    }
    if (t && t != s) {
        discard_locked(t);
    }
    int existed = s->existed;
    unlink_locked(s);
    names_remove(st.ndir, from, s->e.id);
    snprintf(s->e.path, sizeof s->e.path, "%s", to);
    (void)names_add(st.ndir, to, s->e.id, s->e.mode);   /* (another's entry there was waited for) */
    /* what reaches the shared file system for it is counted on its new name */
    struct sluice_record *rec = sluice_record_get(SLUICE_MOD_POSIX, to);
    if (rec)
        s->rec = rec;
    s->e.updated_ns = journal_now_ns();
    /* a rename puts this file in the name's place; a file may stand there
     * on the shared file system (published a moment ago): if this one goes
     * from the node before it is published over it, that one goes too */
    s->existed = s->e.existed = 1;
    s->e.inplace = 0;
    insert_locked(s);
    entry_write_locked(s);
    pthread_cond_signal(&st.work);
    pthread_mutex_unlock(&st.lock);
    *rc = existed ? (SLUICE_REAL(unlink)(from) == 0 || errno == ENOENT ? 0 : -errno) : 0;
    return 1;
}

/* Sets the mode publish will give abs (staged here). 1 when staged. */
static int stage_path_set_mode(const char *abs, mode_t mode)
{
    pthread_mutex_lock(&st.lock);
    struct staged *s = lookup_locked(abs);
    if (s) {
        s->e.mode = mode & 07777;
        s->e.updated_ns = journal_now_ns();
        entry_write_locked(s);
        (void)names_update(st.ndir, abs, s->e.id, s->e.mode);
    }
    pthread_mutex_unlock(&st.lock);
    return s != NULL;
}

/* ---- tier slots: paths this process staged are answered from the tier ---- */

typedef const struct sluice_stack cstack;
typedef const struct sluice_path cpath;

static int stage_publish_now(const char *abs);

/* The path's absolute name when this process may have staged it. */
static const char *staged_name(cpath *p)
{
    return p->abs && stage_active() ? p->abs : NULL;
}

/* The path's absolute name when any process on the node may have. */
static const char *managed_name(cpath *p)
{
    return p->abs && st.usable ? p->abs : NULL;
}

/* stat of a path staged here or by another process on the node. */
static int staged_stat_abs(const char *abs, struct stat *sb)
{
    struct names_entry e;

    if (stage_active() && stage_path_stat(abs, sb))
        return 1;
    if (!foreign_lookup(abs, &e) || SLUICE_REAL(fstatat)(st.ddir, e.id, sb, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    sb->st_mode = (sb->st_mode & ~07777) | e.mode;
    return 1;
}

static int any_staged_stat(cpath *p, struct stat *sb)
{
    const char *any = managed_name(p);

    return any && staged_stat_abs(any, sb);
}

/* abs names a staged file through symbolic links on the shared file
 * system (a link to a file not yet published dangles there): the path they
 * lead to, in out. Asked only once the file system said ENOENT, so a path
 * without links costs nothing more; each link is a readlink. follow_last:
 * the last component too (stat, open; not lstat). 1 when out is staged. */
static int staged_through_links(const char *abs, int follow_last, char *out, size_t len)
{
    char cur[PATH_MAX], rest[PATH_MAX], link[PATH_MAX], next[2 * PATH_MAX];
    struct stat sb;
    int links = 0;

    if (!st.usable || abs[0] != '/' || strlen(abs) >= sizeof rest)
        return 0;
    cur[0] = '\0';
    snprintf(rest, sizeof rest, "%s", abs + 1);
    while (rest[0]) {
        char *slash = strchr(rest, '/');
        size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
        const char *after = slash ? slash + 1 : "";
        if ((size_t)snprintf(next, sizeof next, "%s/%.*s", cur, (int)n, rest) >= sizeof cur)
            return 0;
        ssize_t r = (slash || follow_last) ? readlink(next, link, sizeof link - 1) : -1;
        if (r < 0) {
            memcpy(cur, next, strlen(next) + 1);   /* (shorter than cur: checked above) */
            memmove(rest, after, strlen(after) + 1);
            continue;
        }
        if (++links > 40)
            return 0;
        link[r] = '\0';
        if ((size_t)snprintf(next, sizeof next, "%s/%s%s%s", link[0] == '/' ? "" : cur, link, *after ? "/" : "",
                             after) >= sizeof rest)
            return 0;
        sluice_path_normalize(next);
        memcpy(rest, next + 1, strlen(next + 1) + 1);   /* (shorter than rest: checked above) */
        cur[0] = '\0';
    }
    if (!links || (size_t)snprintf(out, len, "%s", cur[0] ? cur : "/") >= len)
        return 0;
    return staged_stat_abs(out, &sb);
}

/* A call that changes a path another process staged waits until that
 * process has let go of it (wait_published). */
static void settle_foreign(cpath *p)
{
    const char *any = managed_name(p);
    struct names_entry e;

    if (any && foreign_lookup(any, &e))
        wait_published(any);
}

/* A staged file left to the job (handoff.h) is removed from the node:
 * never published. 1 when abs was one (*existed: a file stood at abs on
 * the shared file system when it was staged; it goes too). */
static int handed_unlink(const char *abs, int *existed)
{
    struct journal_entry e;
    int lockfd;

    if (!abs || !st.usable || handoff_get(&st.dirs, abs, &e, &lockfd) != 1)
        return 0;
    *existed = e.existed;
    handoff_discard(&st.dirs, &e, &lockfd, st.job);
    SLUICE_REAL(close)(lockfd);
    return 1;
}

/* The shared file system's unlink of a name whose staged file was just
 * removed from the node, when one stood there before it was staged. */
static int unlink_replaced(const char *abs, int existed)
{
    return existed ? (SLUICE_REAL(unlink)(abs) == 0 || errno == ENOENT ? 0 : -errno) : 0;
}

static void stage_drop_replaced(const char *abs);

/* A staged file left to the job takes the name to (what was staged there
 * is gone, as a renamed-over file is). 1 when from was one (*rc). */
static int handed_rename(const char *from, const char *to, int *rc)
{
    struct journal_entry e;
    int lockfd, existed;

    if (!from || !to || !st.usable || handoff_get(&st.dirs, from, &e, &lockfd) != 1)
        return 0;
    existed = e.existed;
    int dropped;
    stage_drop_replaced(to);   /* (a file of this process's own staged there) */
    (void)handed_unlink(to, &dropped);
    *rc = handoff_move(&st.dirs, &e, &lockfd, to);
    SLUICE_REAL(close)(lockfd);
    if (*rc == 0)
        *rc = unlink_replaced(from, existed);
    return 1;
}

/* chmod of a staged file left to the job: the mode it is published with. */
static int handed_chmod(const char *abs, mode_t mode)
{
    struct journal_entry e;
    int lockfd;

    if (!abs || !st.usable || handoff_get(&st.dirs, abs, &e, &lockfd) != 1)
        return 0;
    e.mode = mode & 07777;
    e.updated_ns = journal_now_ns();
    (void)journal_write_locked(st.jdir, &e, &lockfd);
    (void)names_update(st.ndir, abs, e.id, e.mode);
    SLUICE_REAL(close)(lockfd);
    return 1;
}

static int handed_truncate(const char *abs, off_t len, int *rc)
{
    struct journal_entry e;
    int lockfd, fd;

    if (!abs || !st.usable || handoff_get(&st.dirs, abs, &e, &lockfd) != 1)
        return 0;
    fd = SLUICE_REAL(openat)(st.ddir, e.id, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    *rc = fd < 0 || SLUICE_REAL(ftruncate)(fd, len) != 0 ? -errno : 0;
    if (fd >= 0)
        SLUICE_REAL(close)(fd);
    SLUICE_REAL(close)(lockfd);
    return 1;
}

/* Calls stage mode does not keep (link, chown, times, xattrs, renameat2's
 * exchange) on a staged file left to the job: it is published now, then the
 * call goes to the shared file system. 0 or -errno. */
static int handed_publish_now(const char *abs, struct sluice_record *rec)
{
    struct journal_entry e;
    char why[512];
    int lockfd, users, rc;

    if (!abs || !st.usable || handoff_get(&st.dirs, abs, &e, &lockfd) != 1)
        return 0;
    if (!rec && (rec = sluice_record_get(SLUICE_MOD_POSIX, abs)) != NULL)
        sluice_record_split_sides(rec);   /* (what the publish costs is the fs side's) */
    /* another process writing it through the tier closes it first (a minute at most) */
    for (int tries = 0; (users = writers_hold(st.ldir, e.id)) == -EBUSY && tries < 6000; tries++) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (users == -EBUSY) {
        SLUICE_REAL(close)(lockfd);
        return -EBUSY;
    }
    rc = publish_entry(st.ddir, &e, (size_t)sluice_cfg.buffer_size, rec, why, sizeof why);
    if (rc == 0) {
        publish_finish(st.ddir, st.jdir, &e);
        names_remove(st.ndir, abs, e.id);
    }
    writers_release(st.ldir, users, e.id, rc == 0);
    SLUICE_REAL(close)(lockfd);
    return rc;
}

static int stage_tier_path_stat(cstack *s, int level, cpath *p, struct stat *sb, int flags)
{
    char real[PATH_MAX];

    if (any_staged_stat(p, sb))
        return 0;
    int rc = sluice_tier_path_stat(s, level + 1, p, sb, flags);
    if (rc == -ENOENT && p->abs &&
        staged_through_links(p->abs, !(flags & AT_SYMLINK_NOFOLLOW), real, sizeof real) && staged_stat_abs(real, sb))
        return 0;
    return rc;
}

static int stage_tier_path_statx(cstack *s, int level, cpath *p, int flags, unsigned mask, struct statx *stx)
{
    char real[PATH_MAX];
    struct stat sb;
    if (any_staged_stat(p, &sb)) {
        sluice_stat_to_statx(&sb, stx);
        return 0;
    }
    int rc = sluice_tier_path_statx(s, level + 1, p, flags, mask, stx);
    if (rc == -ENOENT && p->abs &&
        staged_through_links(p->abs, !(flags & AT_SYMLINK_NOFOLLOW), real, sizeof real) && staged_stat_abs(real, &sb)) {
        sluice_stat_to_statx(&sb, stx);
        return 0;
    }
    return rc;
}

static int stage_tier_path_access(cstack *s, int level, cpath *p, int mode, int flags)
{
    char real[PATH_MAX];
    struct stat sb;
    if (any_staged_stat(p, &sb))
        return 0;
    int rc = sluice_tier_path_access(s, level + 1, p, mode, flags);
    if (rc == -ENOENT && p->abs && staged_through_links(p->abs, !(flags & AT_SYMLINK_NOFOLLOW), real, sizeof real))
        return 0;
    return rc;
}

/* mkdir of a directory stage mode knows exists: EEXIST, as the file system
 * would answer, without asking it again; a directory made is remembered. */
static int stage_tier_path_mkdir(cstack *s, int level, cpath *p, mode_t mode)
{
    if (p->abs && stage_dir_exists(p->abs))
        return -EEXIST;
    int rc = sluice_tier_path_mkdir(s, level + 1, p, mode);
    if (rc == 0 && p->abs)
        stage_dir_created(p->abs);
    return rc;
}

/* Files staged directly under dir, by this process or another on the node
 * (counted up to 1: whether there are any). */
static void count_one(void *arg, const char *name, const char *id)
{
    (void)name;
    (void)id;
    *(int *)arg = 1;
}

static int dir_holds_staged(const char *dir)
{
    size_t n = strlen(dir);
    int any = 0;

    pthread_mutex_lock(&st.lock);
    for (int b = 0; b < STAGE_BUCKETS && !any; b++)
        for (struct staged *s = st.buckets[b]; s && !any; s = s->next)
            any = strncmp(s->e.path, dir, n) == 0 && s->e.path[n] == '/' && !strchr(s->e.path + n + 1, '/');
    pthread_mutex_unlock(&st.lock);
    if (!any)
        names_list(st.ndir, dir, count_one, &any);
    return any;
}

/* The shared file system's directories changed (one removed or renamed):
 * what was remembered about them may be wrong now. */
static void forget_known_dirs(void)
{
    pthread_mutex_lock(&st.lock);
    memset(known_dirs, 0, sizeof known_dirs);
    memset(recent_published, 0, sizeof recent_published);
    pthread_mutex_unlock(&st.lock);
}

static int stage_tier_path_unlink(cstack *s, int level, cpath *p, int flags)
{
    const char *abs = staged_name(p), *any = managed_name(p);
    int rc;
    if (abs && !(flags & AT_REMOVEDIR) && stage_path_unlink(abs, &rc))
        return rc;
    if (!(flags & AT_REMOVEDIR)) {
        settle_foreign(p);
        int existed;
        if (handed_unlink(any, &existed))
            return unlink_replaced(any, existed);
        if (any) {
            pthread_mutex_lock(&st.lock);
            recent_forget_locked(any);   /* a new file of that name is staged again */
            pthread_mutex_unlock(&st.lock);
        }
        return sluice_tier_path_unlink(s, level + 1, p, flags);
    }
    /* rmdir: a directory holding staged files is not empty, as it would not be */
    if (any && dir_holds_staged(any))
        return -ENOTEMPTY;
    rc = sluice_tier_path_unlink(s, level + 1, p, flags);
    if (rc == 0 && any)
        forget_known_dirs();
    return rc;
}

/* Another file took the name abs on the shared file system (a rename over
 * it): what this process staged under that name is gone, as the replaced
 * file is (descriptors open on it keep the nameless data file). */
static void stage_drop_replaced(const char *abs)
{
    struct staged *s;

    pthread_mutex_lock(&st.lock);
    while ((s = lookup_locked(abs)) != NULL && (s->draining || s->precopying))
        pthread_cond_wait(&st.done, &st.lock);
    if (s) {
        discard_locked(s);
    }
    pthread_mutex_unlock(&st.lock);
}

/* A directory was renamed from `from` to `to` on the shared file system:
 * the files this process staged under it move with it (their entries,
 * journal and index), as files in a renamed directory do. */
static void stage_dir_renamed(const char *from, const char *to)
{
    size_t n = strlen(from);
    char path[sizeof ((struct journal_entry *)0)->path];

    forget_known_dirs();
    pthread_mutex_lock(&st.lock);
rescan:
    for (int b = 0; b < STAGE_BUCKETS; b++)
        for (struct staged *s = st.buckets[b]; s; s = s->next) {
            if (strncmp(s->e.path, from, n) != 0 || s->e.path[n] != '/')
                continue;
            if (s->draining || s->precopying) {
                pthread_cond_wait(&st.done, &st.lock);
                goto rescan;
            }
            if ((size_t)snprintf(path, sizeof path, "%s%s", to, s->e.path + n) >= sizeof path)
                continue;
            unlink_locked(s);
            names_remove(st.ndir, s->e.path, s->e.id);
            precopy_drop_locked(s);
            snprintf(s->e.path, sizeof s->e.path, "%s", path);
            s->failed = 0;   /* (a publish under the old name may have just failed) */
            s->e.updated_ns = journal_now_ns();
            entry_write_locked(s);
            (void)names_add(st.ndir, s->e.path, s->e.id, s->e.mode);
            insert_locked(s);
            goto rescan;   /* (it may sit in a bucket not yet scanned) */
        }
    pthread_mutex_unlock(&st.lock);
}

/* A rename that is not of a staged file (a shared file, a directory, or
 * the exchange of two directories) on the shared file system; the staged
 * files of any process under a renamed directory follow it, locked while
 * it moves so that no publish into the old directory runs meanwhile. */
static int rename_shared(cstack *s, int level, cpath *from, cpath *to, unsigned flags)
{
    struct handoff_dir held = {0};
    int exchanged = (flags & RENAME_EXCHANGE) != 0, dropped, rc;

    handoff_dir_lock(&st.dirs, from->abs, exchanged ? to->abs : NULL, &held);
    rc = sluice_tier_path_rename(s, level + 1, from, to, flags);
    if (rc == 0) {
        if (!exchanged) {
            /* a file of the shared file system over a staged name replaces the staged file */
            stage_drop_replaced(to->abs);
            (void)handed_unlink(to->abs, &dropped);
            stage_dir_renamed(from->abs, to->abs);
        } else {
            forget_known_dirs();
        }
        handoff_dir_moved(&st.dirs, &held, from->abs, to->abs, exchanged);
    }
    handoff_dir_release(&held);
    return rc;
}

static int stage_tier_path_rename(cstack *s, int level, cpath *from, cpath *to, unsigned flags)
{
    const char *abs = staged_name(from), *fany = managed_name(from), *tany = managed_name(to);
    struct stat sb;
    int rc, dropped;

    settle_foreign(from);
    settle_foreign(to);
    if (!fany || !tany)
        return sluice_tier_path_rename(s, level + 1, from, to, flags);
    if (strcmp(fany, tany) == 0 && any_staged_stat(from, &sb))
        return (flags & RENAME_NOREPLACE) ? -EEXIST : 0;   /* (onto itself: nothing changes) */
    if ((flags & ~(unsigned)RENAME_NOREPLACE) == 0) {
        int staged_from = any_staged_stat(from, &sb);
        if (flags & RENAME_NOREPLACE) {
            /* a name staged, or standing on the shared file system, is taken */
            if (any_staged_stat(to, &sb))
                return -EEXIST;
            if (staged_from && sluice_tier_path_stat(s, level + 1, to, &sb, AT_SYMLINK_NOFOLLOW) == 0)
                return -EEXIST;
        }
        if (staged_from) {
            /* a staged file moves on the tier, over whatever was staged there */
            if (abs) {
                pthread_mutex_lock(&st.lock);
                int own = lookup_locked(abs) != NULL;
                pthread_mutex_unlock(&st.lock);
                if (own) {
                    (void)handed_unlink(tany, &dropped);
                    if (stage_path_rename(abs, tany, &rc))
                        return rc;
                }
            }
            if (handed_rename(fany, tany, &rc))
                return rc;
        }
        return rename_shared(s, level, from, to, flags);
    }
    if ((flags & RENAME_EXCHANGE) && !any_staged_stat(from, &sb) && !any_staged_stat(to, &sb))
        return rename_shared(s, level, from, to, flags);
    /* an exchange (or whiteout) with a staged file: both are published first */
    if ((rc = stage_publish_now(abs)) != 0 || (rc = stage_publish_now(staged_name(to))) != 0 ||
        (rc = handed_publish_now(fany, NULL)) != 0 || (rc = handed_publish_now(tany, NULL)) != 0)
        return rc;
    return sluice_tier_path_rename(s, level + 1, from, to, flags);
}

static int stage_tier_path_truncate(cstack *s, int level, cpath *p, off_t len)
{
    const char *abs = staged_name(p);
    int rc;
    if (abs && stage_path_truncate(abs, len, &rc))
        return rc;
    settle_foreign(p);
    if (handed_truncate(managed_name(p), len, &rc))
        return rc;
    return sluice_tier_path_truncate(s, level + 1, p, len);
}

static int stage_tier_path_chmod(cstack *s, int level, cpath *p, mode_t mode, int flags)
{
    const char *abs = staged_name(p);
    if (abs && stage_path_set_mode(abs, mode))
        return 0;
    settle_foreign(p);
    if (handed_chmod(managed_name(p), mode))
        return 0;
    return sluice_tier_path_chmod(s, level + 1, p, mode, flags);
}

/* Calls stage mode does not keep for a staged file (link, chown, times,
 * xattrs, renameat2's flags): a closed staged file is published now, then
 * the call reaches the shared file system as it would have. 0 (published,
 * or not staged here) or -errno (publishing failed: the call gets it). */
static int stage_publish_now(const char *abs)
{
    char why[512];
    struct staged *s;
    int rc = 0;

    if (!abs)
        return 0;
    pthread_mutex_lock(&st.lock);
    while ((s = lookup_locked(abs)) != NULL && (s->draining || s->precopying))
        pthread_cond_wait(&st.done, &st.lock);
    if (s && s->opens == 0) {
        int users;
        /* another process writing it closes it first (a minute at most) */
        for (int tries = 0; (users = writers_hold(st.ldir, s->e.id)) == -EBUSY && tries < 6000; tries++) {
            struct timespec ts = {0, 10 * 1000000};
            pthread_mutex_unlock(&st.lock);
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&st.lock);
            if ((s = lookup_locked(abs)) == NULL || s->opens || s->draining)
                break;
        }
        if (users == -EBUSY || !s || s->opens || s->draining) {
            writers_release(st.ldir, users, abs, 0);
            pthread_mutex_unlock(&st.lock);
            return s && users == -EBUSY ? -EBUSY : 0;
        }
        precopy_drop_locked(s);
        rc = publish_entry(st.ddir, &s->e, (size_t)sluice_cfg.buffer_size, s->rec, why, sizeof why);
        if (rc == 0)
            published_locked(s);
        writers_release(st.ldir, users, s->e.id, rc == 0);
        if (rc == 0) {
            dir_note_published_locked(s->e.path);
            forget_locked(s);
        }
    }
    pthread_mutex_unlock(&st.lock);
    return rc;
}

int stage_publish_for_shared_open(const char *abs)
{
    enum sluice_mode m = sluice_policy_mode(abs);

    if (m != SLUICE_MODE_STAGE && m != SLUICE_MODE_AUTO)
        return 0;
    if (!st.usable)
        return 1;
    struct sluice_record *rec = sluice_record_get(SLUICE_MOD_POSIX, abs);
    if (rec)
        sluice_record_split_sides(rec);
    (void)stage_publish_now(stage_active() ? abs : NULL);
    /* (a file another process has open: it is the job's once closed) */
    struct names_entry ne;
    if (foreign_lookup(abs, &ne))
        wait_published(abs);
    (void)handed_publish_now(abs, rec);
    return 1;
}

static int stage_tier_path_link(cstack *s, int level, cpath *from, cpath *to, int flags)
{
    settle_foreign(from);
    settle_foreign(to);
    int rc = stage_publish_now(staged_name(from));
    if (!rc)
        rc = handed_publish_now(managed_name(from), NULL);
    return rc ? rc : sluice_tier_path_link(s, level + 1, from, to, flags);
}

static int stage_tier_path_chown(cstack *s, int level, cpath *p, uid_t uid, gid_t gid, int flags)
{
    settle_foreign(p);
    int rc = stage_publish_now(staged_name(p));
    if (!rc)
        rc = handed_publish_now(managed_name(p), NULL);
    return rc ? rc : sluice_tier_path_chown(s, level + 1, p, uid, gid, flags);
}

/* Times set on a staged file that is open: they are the data file's, and
 * its publish carries them. 1 when abs is such a file (*rc: the result). */
static int stage_set_times_open(const char *abs, const struct timespec times[2], int *rc)
{
    struct staged *s;
    int hit;

    if (!abs)
        return 0;
    pthread_mutex_lock(&st.lock);
    hit = (s = lookup_locked(abs)) != NULL && s->opens > 0;
    if (hit) {
        *rc = SLUICE_REAL(utimensat)(st.ddir, s->e.id, times, 0) == 0 ? 0 : -errno;
        if (*rc == 0)
            s->e.keep_times = 1;
    }
    pthread_mutex_unlock(&st.lock);
    return hit;
}

static int stage_tier_path_utimens(cstack *s, int level, cpath *p, const struct timespec times[2], int flags)
{
    int rc = 0;

    if (stage_set_times_open(staged_name(p), times, &rc))
        return rc;
    settle_foreign(p);
    rc = stage_publish_now(staged_name(p));
    if (!rc)
        rc = handed_publish_now(managed_name(p), NULL);
    return rc ? rc : sluice_tier_path_utimens(s, level + 1, p, times, flags);
}

/* futimens of an open staged file: the data file's times, carried at publish. */
static int stage_futimens(struct sluice_file *f, int level, const struct timespec times[2])
{
    struct staged *s = desc_of(f, level)->s;
    int rc = sluice_tier_futimens(f, level + 1, times);

    if (rc == 0 && s) {
        pthread_mutex_lock(&st.lock);
        s->e.keep_times = 1;
        pthread_mutex_unlock(&st.lock);
    }
    return rc;
}

static ssize_t stage_tier_path_xattr(cstack *s, int level, cpath *p, const struct sluice_xattr *x)
{
    struct stat sb;

    if (x->op == SLUICE_XATTR_GET || x->op == SLUICE_XATTR_LIST) {
        /* A staged file has no extended attributes (setting one publishes
         * it first): the answers of a file without any. */
        if (any_staged_stat(p, &sb))
            return x->op == SLUICE_XATTR_GET ? -ENODATA : 0;
        return sluice_tier_path_xattr(s, level + 1, p, x);
    }
    settle_foreign(p);
    int rc = stage_publish_now(staged_name(p));
    if (!rc)
        rc = handed_publish_now(managed_name(p), NULL);
    return rc ? rc : sluice_tier_path_xattr(s, level + 1, p, x);
}

/* Names staged directly under dir, by any process on the node (the
 * index), not yet published. */
struct list_ctx {
    void (*emit)(void *ctx, const char *name, ino_t ino);
    void *ctx;
};

static void list_one(void *arg, const char *name, const char *id)
{
    struct list_ctx *l = arg;
    struct stat sb;

    if (SLUICE_REAL(fstatat)(st.ddir, id, &sb, AT_SYMLINK_NOFOLLOW) == 0)
        l->emit(l->ctx, name, sb.st_ino);
}

static void stage_tier_path_list(cpath *dir, void (*emit)(void *ctx, const char *name, ino_t ino), void *ctx)
{
    struct list_ctx l = {emit, ctx};

    if (!dir->abs || !st.usable)
        return;
    names_list(st.ndir, dir->abs, list_one, &l);
}

/* Owner and extended attributes (ACLs: cp -p, tar) of an open staged file
 * are the shared file system's to keep: the file moves there first (as
 * when the tier is full), then the call goes down. (While another process
 * writes the file through the tier it cannot move: the call fails with
 * EBUSY, where moving would lose that process's writes.) Times need no move: the
 * data file's times are published when the program set them. */
static int stage_fchown(struct sluice_file *f, int level, uid_t uid, gid_t gid)
{
    struct stage_desc *d = desc_of(f, level);
    int rc = desc_move_to_shared(f, d);
    return rc ? rc : sluice_tier_fchown(f, level + 1, uid, gid);
}

static ssize_t stage_fxattr(struct sluice_file *f, int level, const struct sluice_xattr *x)
{
    struct stage_desc *d = desc_of(f, level);
    int moves = x->op == SLUICE_XATTR_SET || x->op == SLUICE_XATTR_REMOVE;
    int rc = moves ? desc_move_to_shared(f, d) : 0;
    return rc ? rc : sluice_tier_fxattr(f, level + 1, x);
}

/* A publish in flight shows as DIR/.NAME.sluice-ID (publish.c's temporary
 * name): not the program's file, and gone in a moment. */
static int stage_path_hides(const char *name)
{
    return name[0] == '.' && strstr(name, ".sluice-") != NULL;
}

/* fchmod of a staged file: the mode it will be published with. */
static int stage_fchmod(struct sluice_file *f, int level, mode_t mode)
{
    struct staged *s = desc_of(f, level)->s;
    if (!s)
        return sluice_tier_fchmod(f, level + 1, mode);
    pthread_mutex_lock(&st.lock);
    s->e.mode = mode & 07777;
    s->e.updated_ns = journal_now_ns();
    entry_write_locked(s);
    (void)names_update(st.ndir, s->e.path, s->e.id, s->e.mode);
    pthread_mutex_unlock(&st.lock);
    return 0;
}

const struct sluice_tier_ops sluice_tier_stage = {
    .size = sizeof(struct sluice_tier_ops),
    .abi = SLUICE_TIER_ABI,
    .name = "stage",
    .caps = SLUICE_TIER_BUFFERS_WRITES | SLUICE_TIER_OPENS_STREAMS | SLUICE_TIER_NODE_PRIVATE,
    .file_state = sizeof(struct stage_desc),
    .init = stage_init,
    .open = stage_open,
    .read = stage_read,
    .write = stage_write,
    .readv = stage_readv,
    .writev = stage_writev,
    .lseek = stage_lseek,
    .fsync = stage_fsync,
    .ftruncate = stage_ftruncate,
    .fstat = stage_fstat,
    .close = stage_close,
    .control = stage_control,
    .fchmod = stage_fchmod,
    .fchown = stage_fchown,
    .futimens = stage_futimens,
    .fxattr = stage_fxattr,
    .fallocate = stage_fallocate,
    .path_stat = stage_tier_path_stat,
    .path_statx = stage_tier_path_statx,
    .path_access = stage_tier_path_access,
    .path_mkdir = stage_tier_path_mkdir,
    .path_unlink = stage_tier_path_unlink,
    .path_rename = stage_tier_path_rename,
    .path_truncate = stage_tier_path_truncate,
    .path_chmod = stage_tier_path_chmod,
    .path_link = stage_tier_path_link,
    .path_chown = stage_tier_path_chown,
    .path_utimens = stage_tier_path_utimens,
    .path_xattr = stage_tier_path_xattr,
    .path_list = stage_tier_path_list,
    .path_hides = stage_path_hides,
    .quiesce = stage_quiesce,
    .after_fork_child = stage_after_fork_child,
};
