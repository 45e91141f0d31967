/*
 * Whose staged files these are: this process's owner lock
 * (locks/HOST-PID), and whether the job's drainer that takes them over
 * (handoff.h) still runs (locks/NAME).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/config.h"
#include "stage/stage_state.h"
#include "sys/privfd.h"
#include "sys/real.h"

/* locks/HOST-PID: one flock per process says its entries are its own (the
 * tools leave them alone while it lives; a killed process's lock goes with
 * it). One descriptor per process, taken at its first staged file. */
static void owner_name(char *out, size_t len)
{
    snprintf(out, len, "%s-%ld", stage_st.host, (long)getpid());
}

int stage_owner_lock_locked(void)
{
    char name[128];
    int fd;

    if (stage_st.ownerfd >= 0)
        return 0;
    owner_name(name, sizeof name);
    fd = sluice_privfd_keep(SLUICE_REAL(openat)(stage_st.ldir, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
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
        (stage_st.job && (n >= (int)sizeof mark || SLUICE_REAL(pwrite)(fd, mark, (size_t)n, 0) != n))) {
        int err = errno ? -errno : -EIO;
        sluice_privfd_close(fd);
        return err;
    }
    stage_st.ownerfd = fd;
    return 0;
}

/* Nothing of ours is left on the tier: the lock file goes too. */
void stage_owner_lock_drop_locked(void)
{
    char name[128];

    if (stage_st.ownerfd < 0 || stage_st.count != 0)
        return;
    owner_name(name, sizeof name);
    /* (under the job's drainer the file stays: it says whose the files
     * this process handed over are; the drainer removes it at its end) */
    if (!stage_st.job)
        (void)SLUICE_REAL(unlinkat)(stage_st.ldir, name, 0);
    sluice_privfd_close(stage_st.ownerfd);
    stage_st.ownerfd = -1;
}

/* The job's drainer (`sluice run` started it for this tier) holds
 * locks/NAME while it runs. */
int stage_job_drainer_running(const char *name)
{
    int fd, running;

    if (!name[0] || name[0] == '.' || strchr(name, '/'))
        return 0;
    fd = SLUICE_REAL(openat)(stage_st.ldir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0)
        return 0;
    running = SLUICE_REAL(flock)(fd, LOCK_SH | LOCK_NB) != 0;
    SLUICE_REAL(close)(fd);
    return running;
}

/* Whether the job's drainer still runs. It ends when the job's program
 * ended; a process of the job that outlives it (in the background) then
 * publishes its own files as without it, and its lock file says so, so
 * that no drainer takes what is still in its table. */
int stage_job_running(void)
{
    if (!stage_st.job)
        return 0;
    if (stage_job_drainer_running(sluice_cfg.stage_job))
        return 1;
    stage_st.job = 0;
    if (stage_st.ownerfd >= 0)
        (void)SLUICE_REAL(ftruncate)(stage_st.ownerfd, 0);
    return 0;
}
