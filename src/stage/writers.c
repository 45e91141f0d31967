/* Writers of a staged file; see writers.h and docs/stage.md. */
#include "stage/writers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include "sys/privfd.h"
#include "sys/real.h"

static void users_name(const char *id, char *out, size_t len)
{
    snprintf(out, len, "%s.users", id);
}

/* locks/ID.users, opened (made if missing: a writer that looks the file up
 * while it is being published then waits on its lock, and finds it
 * published after): the descriptor, or -errno. */
static int users_open(int ldir, const char *id)
{
    char name[128];

    users_name(id, name, sizeof name);
    int fd = sluice_privfd_keep(SLUICE_REAL(openat)(ldir, name, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    return fd < 0 ? -errno : fd;
}

int writers_join(int ldir, const char *id)
{
    int fd = users_open(ldir, id);

    if (fd >= 0 && SLUICE_REAL(flock)(fd, LOCK_SH) != 0) {
        int err = -errno;
        sluice_privfd_close(fd);
        return err;
    }
    return fd;
}

int writers_hold(int ldir, const char *id)
{
    int fd = users_open(ldir, id);

    if (fd < 0)
        return -1;
    if (SLUICE_REAL(flock)(fd, LOCK_EX | LOCK_NB) != 0) {
        sluice_privfd_close(fd);
        return -EBUSY;
    }
    return fd;
}

void writers_release(int ldir, int fd, const char *id, int published)
{
    char name[128];

    if (fd < 0)
        return;
    if (published) {
        users_name(id, name, sizeof name);
        (void)SLUICE_REAL(unlinkat)(ldir, name, 0);
    }
    sluice_privfd_close(fd);
}

int writers_open_anywhere(int ddir, const char *id)
{
    int fd = SLUICE_REAL(openat)(ddir, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    int rc;

    if (fd < 0)
        return -errno;
    if (SLUICE_REAL(fcntl)(fd, F_SETLEASE, F_RDLCK) == 0) {
        (void)SLUICE_REAL(fcntl)(fd, F_SETLEASE, F_UNLCK);
        rc = 0;
    } else {
        rc = errno == EAGAIN ? 1 : -errno;
    }
    SLUICE_REAL(close)(fd);
    return rc;
}

void writers_forget(int ldir, const char *id)
{
    char name[128];

    users_name(id, name, sizeof name);
    (void)SLUICE_REAL(unlinkat)(ldir, name, 0);
}
