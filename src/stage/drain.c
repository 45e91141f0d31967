/*
 * `sluice drain` and `sluice recover` (docs/stage.md, "Commands"): the
 * publishing steps for entries named on standard input, one per line, by
 * the library's own code (publish.c), so that the job's drainer, a
 * process's own drainers, drain, recover and the epilog publish alike.
 * The Python command lists the tier, reports and cleans up; this does, for
 * each entry, under its locks: skip it (its process runs, another holds
 * it, it is gone), finish it (published already), or publish it (a file
 * its process never closed as NAME.sluice-incomplete), and prints one
 * line of JSON per entry:
 *
 *   {"id": ID, "result": R, "path_hex": HEX, "bytes": N, "detail": TEXT}
 *
 * R is published, incomplete, finished, running, in use, gone, failed or
 * corrupt; path_hex the path published (or the entry's), as hex bytes.
 * Every file is synced and keeps its data file's times.
 *
 *   sluice-stage-drain --tier DIR --publish [--jobs N] [--force]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "interpose/interpose.h"
#include "stage/drain.h"
#include "stage/handoff.h"   /* (struct tier_dirs) */
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/publish.h"
#include "stage/tierdir.h"
#include "stage/writers.h"
#include "sys/guard.h"
#include "sys/real.h"

#define INCOMPLETE_SUFFIX ".sluice-incomplete"
/* A pid seen started this much later than the entry was made is another
 * process (btime has a resolution of 1 s; the wall clock may be stepped). */
#define PID_REUSE_SLACK_NS 5000000000LL
#define NOT_AN_ENTRY "not a whole entry (damaged, another format, or no regular file)"

static struct tier_dirs td;
static int force;
static char host[256];
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* The owner lock's name (HOST-PID) of entry id HOST-PID-SEQ. */
static int owner_of(const char *id, char *out, size_t len)
{
    const char *dash = strrchr(id, '-');
    if (!dash || dash == id || (size_t)(dash - id) >= len)
        return -1;
    memcpy(out, id, (size_t)(dash - id));
    out[dash - id] = '\0';
    return 0;
}

/* Wall-clock start of pid (from /proc), or -1. */
static int64_t process_start_ns(pid_t pid)
{
    char path[64], buf[4096];
    static int64_t boot_s = -1;
    long tck = sysconf(_SC_CLK_TCK);

    if (boot_s < 0) {
        FILE *f = fopen("/proc/stat", "re");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "btime ", 6) == 0)
                boot_s = strtoll(line + 6, NULL, 10);
        if (f)
            fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = SLUICE_REAL(open)(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    ssize_t n = SLUICE_REAL(read)(fd, buf, sizeof buf - 1);
    SLUICE_REAL(close)(fd);
    if (n <= 0 || boot_s < 0 || tck <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return -1;
    char state = p[2];
    if (state == 'Z' || state == 'X')
        return -2;   /* killed, not yet reaped: its descriptors and locks are gone */
    /* field 22 (starttime) is the 20th after the state (field 3) */
    p += 2;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    if (!p)
        return -1;
    long long ticks = strtoll(p, NULL, 10);
    return boot_s * 1000000000LL + ticks * (1000000000LL / tck);
}

/* Whether entry e's process still runs on this host. */
static int process_runs(const struct journal_entry *e)
{
    char owner[160];
    if (owner_of(e->id, owner, sizeof owner) != 0)
        return 0;
    char *dash = strrchr(owner, '-');
    if (!dash || (size_t)(dash - owner) != strlen(host) || strncmp(owner, host, strlen(host)) != 0)
        return 0;   /* another host's: not this node's to decide (status says "elsewhere") */
    if (kill(e->pid, 0) != 0 && errno == ESRCH)
        return 0;
    int64_t started = process_start_ns(e->pid);
    if (started == -2)
        return 0;
    return !(started >= 0 && started > e->created_ns + PID_REUSE_SLACK_NS);
}

static int pending(const struct journal_entry *e)
{
    return e->state == JOURNAL_OPEN || e->state == JOURNAL_CLOSED;
}

/* `ENAME: strerror`, the form the journal's error key holds. */
static void error_text(int err, char *out, size_t len)
{
    const char *name = strerrorname_np(err);
    if (name)
        snprintf(out, len, "%s: %s", name, strerror(err));
    else
        snprintf(out, len, "E%d: %s", err, strerror(err));
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void say(const char *id, const char *result, const char *path, long long bytes, const char *detail)
{
    pthread_mutex_lock(&out_lock);
    fputs("{\"id\": ", stdout);
    json_str(stdout, id);
    fprintf(stdout, ", \"result\": \"%s\", \"path_hex\": \"", result);
    for (const unsigned char *p = (const unsigned char *)(path ? path : ""); *p; p++)
        fprintf(stdout, "%02x", *p);
    fprintf(stdout, "\", \"bytes\": %lld, \"detail\": ", bytes);
    json_str(stdout, detail ? detail : "");
    fputs("}\n", stdout);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
}

/* A published (or removed) entry's leftovers: the index link, the data
 * file, the entry (that order: see publish_finish). */
static void finish_removal(const struct journal_entry *e)
{
    names_remove(td.ndir, e->path, e->id);
    writers_forget(td.ldir, e->id);
    (void)SLUICE_REAL(unlinkat)(td.ddir, e->id, 0);
    (void)SLUICE_REAL(unlinkat)(td.jdir, e->id, 0);
}

/* The publishing steps for entry id, its owner's lock held (or none). */
static void publish_locked(const char *id)
{
    struct journal_entry e;
    char detail[600];
    int lockfd = journal_lock(td.jdir, id, 0);

    if (lockfd == -ENOENT) {
        say(id, "gone", NULL, 0, "");
        return;
    }
    if (lockfd == -EWOULDBLOCK) {
        say(id, "in use", NULL, 0, "");
        return;
    }
    if (lockfd < 0) {
        say(id, "corrupt", NULL, 0, lockfd == -EBADMSG || lockfd == -ELOOP ? NOT_AN_ENTRY : strerror(-lockfd));
        return;
    }
    int rc = journal_read(td.jdir, id, &e);
    if (rc != 0) {
        SLUICE_REAL(close)(lockfd);
        if (rc == -ENOENT)
            say(id, "gone", NULL, 0, "");
        else
            say(id, "corrupt", NULL, 0, rc == -EBADMSG ? NOT_AN_ENTRY : strerror(-rc));
        return;
    }
    if (e.state == JOURNAL_PUBLISHED || e.state == JOURNAL_REMOVED) {
        finish_removal(&e);
        SLUICE_REAL(close)(lockfd);
        say(id, "finished", e.path, 0, "");
        return;
    }
    if (!force && process_runs(&e)) {
        SLUICE_REAL(close)(lockfd);
        say(id, "running", e.path, 0, "");
        return;
    }
    /* another process under sluice writes it (locks/ID.users), or any
     * descriptor anywhere has it open for writing: its close publishes it */
    int users = writers_hold(td.ldir, id);
    if (users == -EBUSY || writers_open_anywhere(td.ddir, id) == 1) {
        writers_release(td.ldir, users, id, 0);
        SLUICE_REAL(close)(lockfd);
        say(id, "in use", e.path, 0, "");
        return;
    }
    struct stat sb;
    if (SLUICE_REAL(fstatat)(td.ddir, id, &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(sb.st_mode)) {
        writers_release(td.ldir, users, id, 0);
        SLUICE_REAL(close)(lockfd);
        say(id, "corrupt", e.path, 0, "its data is not a regular file");
        return;
    }
    /* A file its process never closed (killed while writing it) may be cut
     * short: it never takes its final name, where an older complete
     * version may stand; it is kept beside it under a name that says so. */
    struct journal_entry target = e;
    int incomplete = e.state == JOURNAL_OPEN;
    if (incomplete) {
        if (strlen(e.path) + sizeof INCOMPLETE_SUFFIX > sizeof target.path) {
            writers_release(td.ldir, users, id, 0);
            SLUICE_REAL(close)(lockfd);
            error_text(ENAMETOOLONG, detail, sizeof detail);
            say(id, "failed", e.path, 0, detail);
            return;
        }
        strcat(target.path, INCOMPLETE_SUFFIX);
        target.inplace = 0;
    }
    target.keep_times = 1;
    publish_drop_stale_temp(&e);
    char why[512];
    rc = publish_entry(td.ddir, &target, (size_t)sluice_cfg.buffer_size, NULL, why, sizeof why);
    if (rc != 0) {
        writers_release(td.ldir, users, id, 0);
        error_text(-rc, e.error, sizeof e.error);
        e.updated_ns = journal_now_ns();
        (void)journal_write_locked(td.jdir, &e, &lockfd);   /* (the tier refusing too: the failure is still told) */
        SLUICE_REAL(close)(lockfd);
        say(id, "failed", e.path, 0, e.error);
        return;
    }
    publish_finish(td.ddir, td.jdir, td.ndir, &e);
    writers_release(td.ldir, users, id, 1);
    SLUICE_REAL(close)(lockfd);
    say(id, incomplete ? "incomplete" : "published", target.path, (long long)sb.st_size, "");
}

/* Entry ids, grouped by owner: one owner's entries go one after another
 * (its lock is an flock, which two of our threads, on two descriptors,
 * would contend for, each taking the other for a live owner). */
struct group {
    char owner[160];
    char **ids;
    int n, cap;
};
static struct {
    struct group *g;
    int n, cap, next;
    pthread_mutex_t lock;
} groups = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int add_id(const char *id)
{
    char owner[160];
    if (strlen(id) >= sizeof owner)
        return 0;   /* (no id of ours is this long: journal_entry.id holds 96) */
    if (owner_of(id, owner, sizeof owner) != 0)
        memcpy(owner, id, strlen(id) + 1);
    struct group *g = NULL;
    for (int i = 0; i < groups.n && !g; i++)
        if (strcmp(groups.g[i].owner, owner) == 0)
            g = &groups.g[i];
    if (!g) {
        if (groups.n == groups.cap) {
            int cap = groups.cap ? 2 * groups.cap : 16;
            void *p = realloc(groups.g, (size_t)cap * sizeof *groups.g);
            if (!p)
                return -1;
            groups.g = p;
            groups.cap = cap;
        }
        g = &groups.g[groups.n++];
        memset(g, 0, sizeof *g);
        snprintf(g->owner, sizeof g->owner, "%s", owner);
    }
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        void *p = realloc(g->ids, (size_t)cap * sizeof *g->ids);
        if (!p)
            return -1;
        g->ids = p;
        g->cap = cap;
    }
    if (!(g->ids[g->n] = strdup(id)))
        return -1;
    g->n++;
    return 0;
}

static void drain_group(struct group *g)
{
    /* (journal_lock locks any name of a directory: held, and checked to
     * be on the file that holds the name) */
    int ownerfd = journal_lock(td.ldir, g->owner, 0);
    int rc = ownerfd == -ENOENT ? 0 : ownerfd;   /* (no lock file: its owner never made one, or is gone) */

    for (int i = 0; i < g->n; i++) {
        if (rc == -EWOULDBLOCK) {
            /* its process lives (or another drain holds it): a first look
             * without the lock tells a running process from a holder */
            struct journal_entry e;
            int r = journal_read(td.jdir, g->ids[i], &e);
            if (r == -EBADMSG)
                say(g->ids[i], "corrupt", NULL, 0, NOT_AN_ENTRY);
            else if (r != 0)
                say(g->ids[i], "gone", NULL, 0, "");
            else
                say(g->ids[i], !force && pending(&e) && process_runs(&e) ? "running" : "in use", e.path, 0, "");
        } else if (rc < 0) {
            say(g->ids[i], "corrupt", NULL, 0, "its owner's lock is not a regular file");
        } else {
            publish_locked(g->ids[i]);
        }
    }
    if (ownerfd >= 0)
        SLUICE_REAL(close)(ownerfd);
}

static void *drain_worker(void *arg)
{
    (void)arg;
    sluice__guard = 1;
    for (;;) {
        pthread_mutex_lock(&groups.lock);
        int k = groups.next < groups.n ? groups.next++ : -1;
        pthread_mutex_unlock(&groups.lock);
        if (k < 0)
            return NULL;
        drain_group(&groups.g[k]);
    }
}

int stage_drain_named(const char *tier, int jobs, int force_running)
{
    char why[512], line[512];
    int root;

    force = force_running;
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    if (tierdir_open(tier, &root, &td.ddir, &td.jdir, &td.ldir, &td.ndir, why, sizeof why) != 0) {
        fprintf(stderr, "sluice: error: %s\n", why);
        return 1;
    }
    signal(SIGIO, SIG_IGN);   /* (writers_open_anywhere's lease, broken by a writer opening meanwhile) */
    signal(SIGPIPE, SIG_IGN);
    /* every file durable and with the times its program gave it */
    sluice_cfg.stage_fsync = 1;
    sluice_cfg.stage_keep_times = 1;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] && line[0] != '.' && !strchr(line, '/') && add_id(line) != 0) {
            fprintf(stderr, "sluice: error: out of memory\n");
            return 1;
        }
    }
    if (jobs < 1)
        jobs = 1;
    if (jobs > 64)
        jobs = 64;
    pthread_t t[64];
    int started = 0;
    for (int i = 1; i < jobs && i < groups.n; i++)
        if (pthread_create(&t[started], NULL, drain_worker, NULL) == 0)
            started++;
    drain_worker(NULL);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    return 0;
}
