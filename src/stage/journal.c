/* Journal entries; see journal.h and docs/stage.md. */
#include "stage/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32.h"
#include "sys/real.h"

static const char *const state_names[] = {"open", "closed", "published"};

int64_t journal_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A path on one line: '%' and newline percent-encoded. */
static size_t encode_path(const char *in, char *out, size_t len)
{
    size_t o = 0;

    for (; *in && o + 4 < len; in++) {
        if (*in == '%' || *in == '\n') {
            o += (size_t)snprintf(out + o, len - o, "%%%02X", (unsigned char)*in);
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
    return o;
}

ssize_t journal_format(const struct journal_entry *e, char *buf, size_t len)
{
    char path[3 * 4096 + 1], error[sizeof e->error];
    size_t n;
    int k;

    encode_path(e->path, path, sizeof path);
    /* one line, whatever strerror said */
    snprintf(error, sizeof error, "%s", e->error);
    for (char *p = error; *p; p++)
        if (*p == '\n')
            *p = ' ';
    k = snprintf(buf, len,
                 "sluice-stage 2\nid=%s\npath=%s\nmode=%04o\npublish=%s\nstate=%s\npid=%ld\ncreated_ns=%lld\n"
                 "updated_ns=%lld\nerror=%s\n",
                 e->id, path, (unsigned)(e->mode & 07777), e->inplace ? "inplace" : "create",
                 state_names[e->state], (long)e->pid,
                 (long long)e->created_ns, (long long)e->updated_ns, error);
    if (k < 0 || (size_t)k >= len)
        return -1;
    n = (size_t)k;
    k = snprintf(buf + n, len - n, "crc=%08x\n", sluice_crc32(0, buf, n));
    if (k < 0 || (size_t)k >= len - n)
        return -1;
    return (ssize_t)(n + (size_t)k);
}

int journal_write(int jdir, const struct journal_entry *e)
{
    char buf[16384], tmp[128];
    ssize_t n = journal_format(e, buf, sizeof buf);
    int fd, err = 0;

    if (n < 0)
        return -ENAMETOOLONG;
    snprintf(tmp, sizeof tmp, ".%s.tmp", e->id);
    fd = SLUICE_REAL(openat)(jdir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    if (SLUICE_REAL(write)(fd, buf, (size_t)n) != n || SLUICE_REAL(fsync)(fd) != 0)
        err = errno ? -errno : -EIO;
    SLUICE_REAL(close)(fd);
    if (!err && SLUICE_REAL(renameat)(jdir, tmp, jdir, e->id) != 0)
        err = -errno;
    if (err)
        SLUICE_REAL(unlinkat)(jdir, tmp, 0);
    return err;
}
