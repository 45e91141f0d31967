/*
 * The job's drainer (docs/stage.md, "The job drains"): one process per job
 * and tier, started by `sluice run` (tools/sluice-stage-drain.c runs it
 * with libsluice.so preloaded), publishes the files every process of the
 * job left to it (handoff.h), so that no process waits at fork, exec or
 * exit. A file is published once it has been closed and left alone for the
 * stage delay, and no descriptor anywhere has it open for writing (a child
 * that inherited it, an exec'd program not under sluice: writers.h).
 *
 * It watches the journal with inotify, runs at idle priority while the job
 * runs, and, once its standard input ends (the job's program ended),
 * publishes everything left at once at normal priority and prints one line
 * of JSON on standard output: what it published, what the job removed on
 * the node before it was published, what failed, and how long that took.
 * What it writes to the shared file system is counted in its own log, on
 * each file's fs side, as the processes' own publishing was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/counters.h"
#include "core/record.h"
#include "interpose/interpose.h"
#include "stage/drain.h"
#include "stage/handoff.h"
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/publish.h"
#include "stage/tierdir.h"
#include "stage/writers.h"
#include "sys/guard.h"
#include "sys/real.h"

#define MS 1000000LL
#define BUSY_RETRY_NS (50 * MS)       /* a writer still has it open: look again */
#define FAILED_RETRY_NS (5000 * MS)   /* the file system refused it: not at every wake */

struct candidate {
    char id[96];
    int64_t due_ns;         /* look at it then */
    int64_t failed_at;      /* updated_ns of the entry whose publish failed (0: none) */
    int busy;               /* a writer held it at the last look */
    int owned;              /* open, by a process that still runs */
    int forget;             /* done with: leaves the table after this round */
    char path[256];         /* (for the waiting line) */
};

static struct {
    struct tier_dirs t;
    struct candidate *c;
    int n, cap;
    int ending;
    long long published, bytes, removed, failed;
} jd;

static struct candidate *find(const char *id)
{
    for (int i = 0; i < jd.n; i++)
        if (strcmp(jd.c[i].id, id) == 0)
            return &jd.c[i];
    return NULL;
}

/* Entry id changed (or is new): look at it now. */
static void note(const char *id)
{
    struct candidate *c = find(id);

    if (id[0] == '.' || strlen(id) >= sizeof c->id)
        return;
    if (!c) {
        if (jd.n == jd.cap) {
            int cap = jd.cap ? 2 * jd.cap : 64;
            void *p = realloc(jd.c, (size_t)cap * sizeof *jd.c);
            if (!p)
                return;
            jd.c = p;
            jd.cap = cap;
        }
        c = &jd.c[jd.n++];
        memset(c, 0, sizeof *c);
        snprintf(c->id, sizeof c->id, "%s", id);
    }
    c->due_ns = 0;
}

static void forget(struct candidate *c)
{
    *c = jd.c[--jd.n];
}

static const char *my_name;

/* Whether a closed entry is this drainer's to publish: handed over by a
 * process of this job, or left by a process that ended under no drainer
 * (or under one that has ended too). Another job's drainer publishes its
 * job's files, with its own stage delay. */
static int ours(const char *id)
{
    char job[128];

    if (!handoff_owner_job(jd.t.ldir, id, job, sizeof job))
        return 0;   /* in a running process's own table */
    if (!job[0] || strcmp(job, my_name) == 0)
        return 1;
    int fd = SLUICE_REAL(openat)(jd.t.ldir, job, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0)
        return 1;
    int other_runs = SLUICE_REAL(flock)(fd, LOCK_SH | LOCK_NB) != 0;
    SLUICE_REAL(close)(fd);
    return !other_runs;
}

/* At the end: the lock files of this job's processes that have ended. */
static void remove_job_owner_files(void)
{
    DIR *d = SLUICE_REAL(fdopendir)(SLUICE_REAL(openat)(jd.t.ldir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    struct dirent *de;
    char want[160], mark[160];
    int n = snprintf(want, sizeof want, "job %s\n", my_name);

    if (!d)
        return;
    while ((de = SLUICE_REAL(readdir)(d)) != NULL) {
        if (de->d_name[0] == '.' || strchr(de->d_name, '.'))
            continue;
        int fd = SLUICE_REAL(openat)(jd.t.ldir, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
        if (fd < 0)
            continue;
        if (SLUICE_REAL(pread)(fd, mark, sizeof mark, 0) == n && memcmp(mark, want, (size_t)n) == 0 &&
            SLUICE_REAL(flock)(fd, LOCK_EX | LOCK_NB) == 0)
            (void)SLUICE_REAL(unlinkat)(jd.t.ldir, de->d_name, 0);
        SLUICE_REAL(close)(fd);
    }
    SLUICE_REAL(closedir)(d);
}

static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_published(long long size)
{
    pthread_mutex_lock(&counts_lock);
    jd.published++;
    jd.bytes += size;
    pthread_mutex_unlock(&counts_lock);
}

static void count_removed(void)
{
    pthread_mutex_lock(&counts_lock);
    jd.removed++;
    pthread_mutex_unlock(&counts_lock);
}

static void count_failed(void)
{
    pthread_mutex_lock(&counts_lock);
    jd.failed++;
    pthread_mutex_unlock(&counts_lock);
}

/* Look at one entry: publish it if it is due, finish or count it. Returns
 * 1 when it is to be forgotten. Runs in several threads at once, each on
 * its own candidate. */
static int look_at(struct candidate *c, int64_t now)
{
    struct journal_entry e;
    char why[512];
    int lockfd = journal_lock(jd.t.jdir, c->id, 0);

    if (lockfd == -EWOULDBLOCK) {
        c->due_ns = now + JOURNAL_LOCKED_RETRY_NS;   /* a change by name, or `sluice drain`, is at it */
        return 0;
    }
    if (lockfd < 0 || journal_read(jd.t.jdir, c->id, &e) != 0) {
        if (lockfd >= 0)
            SLUICE_REAL(close)(lockfd);
        return 1;   /* gone; or damaged: `sluice recover` names it */
    }
    snprintf(c->path, sizeof c->path, "%.255s", e.path);
    c->owned = 0;
    int done = 1;
    switch (e.state) {
    case JOURNAL_REMOVED:
        count_removed();
        __attribute__((fallthrough));   /* its leftovers go */
    case JOURNAL_PUBLISHED:
        (void)SLUICE_REAL(unlinkat)(jd.t.ddir, e.id, 0);
        names_remove(jd.t.ndir, e.path, e.id);
        writers_forget(jd.t.ldir, e.id);
        (void)SLUICE_REAL(unlinkat)(jd.t.jdir, e.id, 0);
        break;
    case JOURNAL_OPEN:
        /* its process has it open (it hands it over when it lets go);
         * a process that ended with it open was killed: `sluice recover` */
        if (handoff_owner_released(jd.t.ldir, e.id) || jd.ending)
            break;   /* (at the end: its process hands it over, or publishes it, when it lets go) */
        c->owned = 1;
        c->due_ns = now + 500 * MS;
        done = 0;
        break;
    case JOURNAL_CLOSED: {
        if (!ours(e.id))
            break;   /* its process, or its job's drainer, publishes it */
        int64_t due = e.updated_ns + (jd.ending ? 0 : sluice_cfg.stage_delay_ms * MS);
        done = 0;
        if (due > now) {
            c->due_ns = due;
            break;
        }
        if (c->failed_at && c->failed_at == e.updated_ns) {
            if (jd.ending) {
                done = 1;   /* it waits for `sluice drain`; `sluice run` names it */
                break;
            }
            c->due_ns = now + FAILED_RETRY_NS;
        }
        int users = writers_hold(jd.t.ldir, e.id);
        if (users == -EBUSY && jd.ending) {
            done = 1;   /* a process under sluice writes it: its close publishes it (stage_foreign_takeover) */
            break;
        }
        int elsewhere = users == -EBUSY ? 1 : writers_open_anywhere(jd.t.ddir, e.id);
        if (elsewhere == 1) {
            writers_release(jd.t.ldir, users, e.id, 0);
            c->busy = 1;
            c->due_ns = now + BUSY_RETRY_NS;
            break;
        }
        c->busy = 0;
        struct stat sb;
        long long size = 0;
        if (SLUICE_REAL(fstatat)(jd.t.ddir, e.id, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
            size = sb.st_size;
            /* The program set the file's times (utimes, futimens, cp -p)
             * after its last write: a write moves the modification and the
             * change time together, a set moves only the change time to
             * now. Then the published file gets the data file's times. */
            e.keep_times = sb.st_mtim.tv_sec != sb.st_ctim.tv_sec || sb.st_mtim.tv_nsec != sb.st_ctim.tv_nsec;
        }
        struct sluice_record *rec = sluice_record_get(SLUICE_MOD_POSIX, e.path);
        if (rec)
            sluice_record_split_sides(rec);   /* (fs side only: the program's side is the processes') */
        int rc = publish_entry(jd.t.ddir, &e, (size_t)sluice_cfg.buffer_size, rec, why, sizeof why);
        if (rc == 0) {
            /* (gone from the tier before a writer waiting to join may go on:
             * it then finds the published file) */
            publish_finish(jd.t.ddir, jd.t.jdir, jd.t.ndir, &e);
            writers_release(jd.t.ldir, users, e.id, 1);
            count_published(size);
            done = 1;
            break;
        }
        writers_release(jd.t.ldir, users, e.id, 0);
        if (!c->failed_at) {
            count_failed();
            fprintf(stderr, "sluice: stage mode: cannot publish %s (%s); it stays on the tier until `sluice drain`\n",
                    e.path, why);
        }
        snprintf(e.error, sizeof e.error, "%.255s", why);
        (void)journal_write_locked(jd.t.jdir, &e, &lockfd);
        c->failed_at = e.updated_ns;
        c->due_ns = now + FAILED_RETRY_NS;
        break;
    }
    }
    SLUICE_REAL(close)(lockfd);
    return done;
}

/* The due candidates of this round, looked at by `workers` threads at
 * once (several files in flight: the shared file system's latency and
 * bandwidth are used as several clients would use them). */
static struct {
    int workers;
    int64_t now;
    int *due, ndue;
    int next;                 /* the next index of due to take */
    pthread_mutex_t lock;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *pool_worker(void *arg)
{
    (void)arg;
    sluice__guard = 1;
    for (;;) {
        pthread_mutex_lock(&pool.lock);
        int k = pool.next < pool.ndue ? pool.due[pool.next++] : -1;
        pthread_mutex_unlock(&pool.lock);
        if (k < 0)
            return NULL;
        jd.c[k].forget = look_at(&jd.c[k], pool.now);
    }
}

static void look_at_due(int64_t now)
{
    int *due = malloc((size_t)(jd.n ? jd.n : 1) * sizeof *due), n = 0;
    pthread_t t[16];
    int started = 0;

    if (!due)
        return;
    for (int i = 0; i < jd.n; i++) {
        jd.c[i].forget = 0;
        if (jd.c[i].due_ns <= now)
            due[n++] = i;
    }
    pool.now = now;
    pool.due = due;
    pool.ndue = n;
    pool.next = 0;
    int want = n < pool.workers ? n : pool.workers;
    for (int i = 1; i < want && i < 16; i++)
        if (pthread_create(&t[started], NULL, pool_worker, NULL) == 0)
            started++;
    pool_worker(NULL);   /* (this thread is one of them) */
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(due);
}

static void scan_journal(void)
{
    DIR *d = SLUICE_REAL(fdopendir)(SLUICE_REAL(openat)(jd.t.jdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    struct dirent *de;

    if (!d)
        return;
    while ((de = SLUICE_REAL(readdir)(d)) != NULL)
        if (de->d_name[0] != '.')
            note(de->d_name);
    SLUICE_REAL(closedir)(d);
}

static void read_events(int in)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;

    while ((n = read(in, buf, sizeof buf)) > 0)
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (ev->len && ev->name[0] != '.')
                note(ev->name);
            if (ev->mask & IN_Q_OVERFLOW)
                scan_journal();
            p += sizeof *ev + ev->len;
        }
}

/* Whether the job still has files to wait for at its end. */
static int anything_left(void)
{
    return jd.n > 0;
}

SLUICE_EXPORT int sluice_stage_job_drain(int argc, char **argv);

SLUICE_EXPORT int sluice_stage_job_drain(int argc, char **argv)
{
    const char *tier = NULL, *name = NULL;
    char why[512], jpath[4200];
    int root, lockfd, in;

    int publish = 0, jobs = 4, force = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--publish") == 0)
            publish = 1;   /* `sluice drain` / `recover`: the entries named on stdin (drain.c) */
        else if (strcmp(argv[i], "--force") == 0)
            force = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--tier") == 0)
            tier = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--name") == 0)
            name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--jobs") == 0)
            jobs = atoi(argv[++i]);
    }
    if (publish && tier) {
        sluice__guard = 1;   /* (our own calls are nobody's program's) */
        int rc = stage_drain_named(tier, jobs, force);
        sluice__guard = 0;
        return rc;
    }
    if (!tier || !name || !name[0] || name[0] == '.' || strchr(name, '/')) {
        fprintf(stderr, "usage: sluice-stage-drain --tier DIR --name NAME | --tier DIR --publish [--jobs N] [--force]\n");
        return 2;
    }
    sluice__guard = 1;   /* (our own calls are not the job's) */
    my_name = name;
    pool.workers = sluice_cfg.stage_drainers > 0 ? (int)sluice_cfg.stage_drainers : 1;
    if (tierdir_open(tier, &root, &jd.t.ddir, &jd.t.jdir, &jd.t.ldir, &jd.t.ndir, why, sizeof why) != 0)
        return 1;   /* (the job's processes say why, and write straight through) */
    lockfd = SLUICE_REAL(openat)(jd.t.ldir, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lockfd < 0 || SLUICE_REAL(flock)(lockfd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "sluice: stage mode: another drainer holds %s/locks/%s\n", tier, name);
        return 1;
    }
    /* A writer opening a file while we test it breaks our lease with SIGIO
     * (writers_open_anywhere): not a reason to end. */
    signal(SIGIO, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    snprintf(jpath, sizeof jpath, "%s/journal", tier);
    in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (in < 0 || inotify_add_watch(in, jpath, IN_MOVED_TO | IN_CLOSE_WRITE | IN_DONT_FOLLOW | IN_ONLYDIR) < 0) {
        fprintf(stderr, "sluice: stage mode: cannot watch %s: %s\n", jpath, strerror(errno));
        return 1;
    }
    /* Publishing while the job runs takes only CPU time nobody else wants. */
    struct sched_param idle = {0};
    (void)sched_setscheduler(0, SCHED_IDLE, &idle);
    printf("ready\n");
    fflush(stdout);
    scan_journal();

    int64_t ended = 0, told = 0;
    for (;;) {
        /* (the journal's clock, CLOCK_REALTIME: the stage delay counts from its updated_ns) */
        int64_t now = journal_now_ns(), next = now + 1000 * MS;
        look_at_due(now);
        for (int i = 0; i < jd.n;) {
            struct candidate *c = &jd.c[i];
            if (c->forget) {
                forget(c);
                continue;   /* (the last one took its place) */
            }
            if (c->due_ns < next)
                next = c->due_ns;
            i++;
        }
        if (jd.ending && !anything_left()) {
            if (lockfd < 0) {
                remove_job_owner_files();
                break;
            }
            /* The drainer's name goes first: a process that hands a file
             * over from now on publishes it itself; one that handed it over
             * before is in this last look. */
            (void)SLUICE_REAL(unlinkat)(jd.t.ldir, name, 0);
            SLUICE_REAL(close)(lockfd);
            lockfd = -1;
            read_events(in);
            scan_journal();
            continue;
        }
        if (jd.ending && now - ended > (told + 10) * 1000 * MS) {
            told += 10;
            int busy = 0;
            const char *path = "";
            for (int i = 0; i < jd.n; i++)
                if (jd.c[i].busy || jd.c[i].owned) {
                    busy++;
                    path = jd.c[i].path;
                }
            fprintf(stderr, "sluice: waiting for %d file%s still open in a process of the job (%s%s)\n", busy,
                    busy == 1 ? "" : "s", path, busy > 1 ? ", ..." : "");
        }
        struct pollfd p[2] = {{in, POLLIN, 0}, {0, POLLIN, 0}};
        int64_t wait_ms = (next - now) / MS;
        if (wait_ms < 1)
            wait_ms = 1;
        if (wait_ms > 1000)
            wait_ms = 1000;
        int np = jd.ending ? 1 : 2;
        if (poll(p, (nfds_t)np, (int)wait_ms) < 0 && errno != EINTR)
            break;
        if (p[0].revents & POLLIN)
            read_events(in);
        if (np == 2 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            char b[64];
            if (read(0, b, sizeof b) <= 0) {
                /* the job's program ended: everything goes now, at full speed */
                struct sched_param normal = {0};
                (void)sched_setscheduler(0, SCHED_OTHER, &normal);
                jd.ending = 1;
                ended = journal_now_ns();
                scan_journal();
            }
        }
    }
    printf("{\"published\": %lld, \"bytes\": %lld, \"removed\": %lld, \"failed\": %lld, \"wait_s\": %.3f}\n",
           jd.published, jd.bytes, jd.removed, jd.failed, ended ? (journal_now_ns() - ended) / 1e9 : 0.0);
    fflush(stdout);
    if (lockfd >= 0) {
        (void)SLUICE_REAL(unlinkat)(jd.t.ldir, name, 0);
        SLUICE_REAL(close)(lockfd);
    }
    sluice__guard = 0;
    return 0;
}
