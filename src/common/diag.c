/* Diagnostics and full-write loop; see diag.h. */
#include "common/diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/real.h"

int sluice_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = SLUICE_REAL(write)(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The program's standard error as it was when sluice loaded: messages go
 * there only while descriptor 2 is still that file. A program that closed
 * it (prog 2>&-) or put one of its own files on number 2 never receives
 * sluice's words in its data. */
static struct {
    int known;        /* descriptor 2 was open at load */
    int quiet;        /* SLUICE_QUIET: nothing at all */
    dev_t dev;
    ino_t ino;
} err_target;

static int env_true(const char *v)
{
    return v && (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true"));
}

void sluice_diag_init(void)
{
    struct stat st;

    err_target.quiet = env_true(getenv("SLUICE_QUIET"));
    err_target.known = SLUICE_REAL(fstat)(2, &st) == 0;
    if (err_target.known) {
        err_target.dev = st.st_dev;
        err_target.ino = st.st_ino;
    }
}

static int stderr_still_ours(void)
{
    struct stat st;

    return !err_target.quiet && err_target.known && SLUICE_REAL(fstat)(2, &st) == 0 &&
           st.st_dev == err_target.dev && st.st_ino == err_target.ino;
}

void sluice_diag(const char *fmt, ...)
{
    char line[512];
    int saved = errno;
    va_list ap;
    int n;

    if (!stderr_still_ours())
        return;
    n = snprintf(line, sizeof line, "sluice: ");
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    (void)sluice_write_all(2, line, (size_t)n);
    errno = saved;
}
