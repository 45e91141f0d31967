/*
 * Path calls on a staged file left to the job (handoff.h): removed,
 * renamed, its mode set or truncated on the node under the entry's lock;
 * published first for the calls the tier does not keep.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/record.h"
#include "stage/handoff.h"
#include "stage/journal.h"
#include "stage/names.h"
#include "stage/publish.h"
#include "stage/stage_state.h"
#include "stage/writers.h"
#include "sys/real.h"

/* A staged file left to the job (handoff.h) is removed from the node:
 * never published. 1 when abs was one (*existed: a file stood at abs on
 * the shared file system when it was staged; it goes too). */
int stage_handed_unlink(const char *abs, int *existed)
{
    struct journal_entry e;
    int lockfd;

    if (!abs || !stage_st.usable || handoff_get(&stage_st.dirs, abs, &e, &lockfd) != 1)
        return 0;
    *existed = e.existed;
    handoff_discard(&stage_st.dirs, &e, &lockfd, stage_st.job);
    SLUICE_REAL(close)(lockfd);
    return 1;
}

/* The shared file system's unlink of a name whose staged file was just
 * removed from the node, when one stood there before it was staged. */
int stage_unlink_replaced(const char *abs, int existed)
{
    return existed ? (SLUICE_REAL(unlink)(abs) == 0 || errno == ENOENT ? 0 : -errno) : 0;
}

/* A staged file left to the job takes the name to (what was staged there
 * is gone, as a renamed-over file is). 1 when from was one (*rc). */
int stage_handed_rename(const char *from, const char *to, int *rc)
{
    struct journal_entry e;
    int lockfd, existed;

    if (!from || !to || !stage_st.usable || handoff_get(&stage_st.dirs, from, &e, &lockfd) != 1)
        return 0;
    existed = e.existed;
    int dropped;
    stage_drop_replaced(to);   /* (a file of this process's own staged there) */
    (void)stage_handed_unlink(to, &dropped);
    *rc = handoff_move(&stage_st.dirs, &e, &lockfd, to);
    SLUICE_REAL(close)(lockfd);
    if (*rc == 0)
        *rc = stage_unlink_replaced(from, existed);
    return 1;
}

/* chmod of a staged file left to the job: the mode it is published with. */
int stage_handed_chmod(const char *abs, mode_t mode)
{
    struct journal_entry e;
    int lockfd;

    if (!abs || !stage_st.usable || handoff_get(&stage_st.dirs, abs, &e, &lockfd) != 1)
        return 0;
    e.mode = mode & 07777;
    e.updated_ns = journal_now_ns();
    (void)journal_write_locked(stage_st.jdir, &e, &lockfd);
    (void)names_update(stage_st.ndir, abs, e.id, e.mode);
    SLUICE_REAL(close)(lockfd);
    return 1;
}

int stage_handed_truncate(const char *abs, off_t len, int *rc)
{
    struct journal_entry e;
    int lockfd, fd;

    if (!abs || !stage_st.usable || handoff_get(&stage_st.dirs, abs, &e, &lockfd) != 1)
        return 0;
    fd = SLUICE_REAL(openat)(stage_st.ddir, e.id, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    *rc = fd < 0 || SLUICE_REAL(ftruncate)(fd, len) != 0 ? -errno : 0;
    if (fd >= 0)
        SLUICE_REAL(close)(fd);
    SLUICE_REAL(close)(lockfd);
    return 1;
}

/* Calls stage mode does not keep (link, chown, times, xattrs, renameat2's
 * exchange) on a staged file left to the job: it is published now, then the
 * call goes to the shared file system. 0 or -errno. */
int stage_handed_publish_now(const char *abs, struct sluice_record *rec)
{
    struct journal_entry e;
    char why[512];
    int lockfd, users, rc;

    if (!abs || !stage_st.usable || handoff_get(&stage_st.dirs, abs, &e, &lockfd) != 1)
        return 0;
    if (!rec && (rec = sluice_record_get(SLUICE_MOD_POSIX, abs)) != NULL)
        sluice_record_split_sides(rec);   /* (what the publish costs is the fs side's) */
    /* another process writing it through the tier closes it first (a minute at most) */
    for (int tries = 0; (users = writers_hold(stage_st.ldir, e.id)) == -EBUSY && tries < 6000; tries++) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (users == -EBUSY) {
        SLUICE_REAL(close)(lockfd);
        return -EBUSY;
    }
    rc = publish_entry(stage_st.ddir, &e, (size_t)sluice_cfg.buffer_size, rec, why, sizeof why);
    if (rc == 0) {
        publish_finish(stage_st.ddir, stage_st.jdir, stage_st.ndir, &e);
    }
    writers_release(stage_st.ldir, users, e.id, rc == 0);
    SLUICE_REAL(close)(lockfd);
    return rc;
}
