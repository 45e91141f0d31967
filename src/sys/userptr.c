/* See userptr.h. process_vm_readv on our own process copies memory and
 * reports EFAULT for pages that are not mapped readable, instead of
 * raising SIGSEGV. */
#include "sys/userptr.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE 4096

int sluice_user_str_ok(const char *p)
{
    char tmp[PAGE];
    int saved = errno, ok = 1;
    pid_t self = getpid();
    size_t seen = 0;

    if (sluice_ptr_null_page(p))
        return 0;
    while (seen <= PATH_MAX) {
        size_t n = PAGE - ((uintptr_t)p % PAGE);
        struct iovec local = {tmp, n}, remote = {(void *)p, n};
        ssize_t got = process_vm_readv(self, &local, 1, &remote, 1, 0);
        if (got < 0) {
            ok = errno != EFAULT;   /* no way to ask (seccomp, old kernel): trust it */
            break;
        }
        if (memchr(tmp, '\0', (size_t)got))
            break;
        if ((size_t)got < n) {   /* the string runs into an unreadable page */
            ok = 0;
            break;
        }
        p += n;
        seen += n;
    }
    errno = saved;
    return ok;
}
