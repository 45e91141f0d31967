/*
 * Files other processes on the node staged (the index, names.h): finding
 * one, waiting until its process has let go of it before a change by
 * name, and publishing one whose process left it to the last writer that
 * had it open.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/diag.h"
#include "core/config.h"
#include "stage/handoff.h"
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/publish.h"
#include "stage/stage_state.h"
#include "stage/writers.h"
#include "sys/real.h"

/* abs is staged by another process on the node (its index link, and its
 * data still on the tier): 1 and *e. Never for this process's own files. */
int stage_foreign_lookup(const char *abs, struct names_entry *e)
{
    struct stat sb;
    int own;

    if (!stage_st.usable || !names_lookup(stage_st.ndir, abs, e))
        return 0;
    pthread_mutex_lock(&stage_st.lock);
    own = stage_table_lookup_locked(abs) != NULL;
    pthread_mutex_unlock(&stage_st.lock);
    return !own && SLUICE_REAL(fstatat)(stage_st.ddir, e->id, &sb, AT_SYMLINK_NOFOLLOW) == 0;
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
    fd = SLUICE_REAL(openat)(stage_st.ldir, owner, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
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

void stage_wait_published(const char *abs)
{
    struct names_entry e;
    int64_t start = journal_now_ns();

    while (stage_foreign_lookup(abs, &e)) {
        struct journal_entry je;
        int lockfd;
        if (handoff_get(&stage_st.dirs, abs, &je, &lockfd) == 1) {
            SLUICE_REAL(close)(lockfd);
            return;   /* the job's now: changed on the tier */
        }
        if (!owner_alive(e.id)) {
            sluice_diag("stage mode: %s was staged by a process that has ended; `sluice recover %s` publishes it",
                        abs, stage_st.tier);
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

/* The last writer of another process's staged file closed it, and that
 * process has ended (it left the file to us at its exit): publish it as
 * `sluice drain` would (under the entry's journal lock), from what the
 * index says of it. Failing, it stays on the tier for `sluice drain`. */
void stage_foreign_takeover(const char *id, const char *abs, struct sluice_record *rec)
{
    struct names_entry ne;
    struct journal_entry je;
    char why[512];
    int users, jfd;

    if (stage_job_running() || !handoff_owner_released(stage_st.ldir, id) || !names_lookup(stage_st.ndir, abs, &ne) ||
        strcmp(ne.id, id) != 0)
        return;   /* (the job's drainer publishes it, or its owner does) */
    if ((users = writers_hold(stage_st.ldir, id)) == -EBUSY)
        return;   /* another writer still has it: its close does this */
    jfd = SLUICE_REAL(openat)(stage_st.jdir, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (jfd < 0 || SLUICE_REAL(flock)(jfd, LOCK_EX | LOCK_NB) != 0) {
        if (jfd >= 0)
            SLUICE_REAL(close)(jfd);
        writers_release(stage_st.ldir, users, id, 0);
        return;   /* gone, or `sluice drain` is at it */
    }
    memset(&je, 0, sizeof je);
    snprintf(je.id, sizeof je.id, "%s", id);
    snprintf(je.path, sizeof je.path, "%s", abs);
    je.mode = ne.mode;
    je.state = JOURNAL_CLOSED;
    je.pid = getpid();
    je.created_ns = je.updated_ns = journal_now_ns();
    if (publish_entry(stage_st.ddir, &je, (size_t)sluice_cfg.buffer_size, rec, why, sizeof why) == 0) {
        publish_finish(stage_st.ddir, stage_st.jdir, stage_st.ndir, &je);
        writers_release(stage_st.ldir, users, id, 1);
    } else {
        sluice_diag("stage mode: cannot publish %s (%s); it stays on the tier %s until `sluice drain`", abs, why,
                    stage_st.tier);
        writers_release(stage_st.ldir, users, id, 0);
    }
    SLUICE_REAL(close)(jfd);
}
