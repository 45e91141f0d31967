/* The private tier directory; see tierdir.h. */
#include "stage/tierdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/real.h"

void tierdir_default(char *out, size_t len)
{
    snprintf(out, len, "/dev/shm/sluice-stage-%u", (unsigned)getuid());
}

/* A directory we may keep data in: a real directory (the descriptor was
 * opened with O_NOFOLLOW), ours, closed to group and others. */
static int private_dir_ok(int fd, const char *path, char *why, size_t whylen)
{
    struct stat st;

    if (SLUICE_REAL(fstat)(fd, &st) != 0) {
        snprintf(why, whylen, "cannot stat %s: %s", path, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "%s is not a directory", path);
        return 0;
    }
    if (st.st_uid != getuid()) {
        snprintf(why, whylen, "%s belongs to uid %u, not to you (uid %u)", path, (unsigned)st.st_uid,
                 (unsigned)getuid());
        return 0;
    }
    if (st.st_mode & 077) {
        snprintf(why, whylen, "%s is open to other users (mode %03o); it must be 0700", path,
                 (unsigned)(st.st_mode & 0777));
        return 0;
    }
    return 1;
}

static int open_private(int at, const char *name, const char *shown, char *why, size_t whylen)
{
    int fd;

    if (SLUICE_REAL(mkdirat)(at, name, 0700) != 0 && errno != EEXIST) {
        snprintf(why, whylen, "cannot create %s: %s", shown, strerror(errno));
        return -1;
    }
    fd = SLUICE_REAL(openat)(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, whylen, errno == ELOOP || errno == ENOTDIR ? "%s is a symbolic link or not a directory"
                                                                 : "cannot open %s", shown);
        return -1;
    }
    if (!private_dir_ok(fd, shown, why, whylen)) {
        SLUICE_REAL(close)(fd);
        return -1;
    }
    return fd;
}

int tierdir_open(const char *path, int *root, int *data, int *journal, int *locks, int *names, char *why,
                 size_t whylen)
{
    char sub[4200];

    *root = open_private(AT_FDCWD, path, path, why, whylen);
    if (*root < 0)
        return -1;
    snprintf(sub, sizeof sub, "%s/data", path);
    *data = open_private(*root, "data", sub, why, whylen);
    snprintf(sub, sizeof sub, "%s/journal", path);
    *journal = *data < 0 ? -1 : open_private(*root, "journal", sub, why, whylen);
    snprintf(sub, sizeof sub, "%s/locks", path);
    *locks = *journal < 0 ? -1 : open_private(*root, "locks", sub, why, whylen);
    snprintf(sub, sizeof sub, "%s/names", path);
    *names = *locks < 0 ? -1 : open_private(*root, "names", sub, why, whylen);
    if (*data < 0 || *journal < 0 || *locks < 0 || *names < 0) {
        if (*locks >= 0)
            SLUICE_REAL(close)(*locks);
        if (*journal >= 0)
            SLUICE_REAL(close)(*journal);
        if (*data >= 0)
            SLUICE_REAL(close)(*data);
        SLUICE_REAL(close)(*root);
        return -1;
    }
    return 0;
}
