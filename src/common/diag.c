/* Diagnostics and full-write loop; see diag.h. */
#include "common/diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "interpose/real.h"

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

void sluice_diag(const char *fmt, ...)
{
    char line[512];
    int saved = errno;
    va_list ap;
    int n;

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
