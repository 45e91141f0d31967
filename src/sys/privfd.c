/* Private descriptors; see privfd.h. One bit per descriptor number, in a
 * lazily backed mapping: untouched pages cost nothing. */
#include "sys/privfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>

#include "sys/real.h"

#define PRIVFD_MAX (1 << 20)

static _Atomic(uint64_t *) bits;
static int high_mark = -1;

int sluice_privfd_high(void)
{
    return __atomic_load_n(&high_mark, __ATOMIC_RELAXED);
}

static uint64_t *privfd_bits(void)
{
    uint64_t *b = bits;
    if (!b) {
        void *m = SLUICE_REAL(mmap)(NULL, PRIVFD_MAX / 8, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        uint64_t *expected = NULL;
        if (!__atomic_compare_exchange_n(&bits, &expected, (uint64_t *)m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            munmap(m, PRIVFD_MAX / 8);
        b = bits;
    }
    return b;
}

static void privfd_mark(int fd, int on)
{
    uint64_t *b = on ? privfd_bits() : bits;
    if (fd < 0 || fd >= PRIVFD_MAX || !b)
        return;
    uint64_t bit = (uint64_t)1 << (fd % 64);
    for (int h = sluice_privfd_high(); on && fd > h &&
         !__atomic_compare_exchange_n(&high_mark, &h, fd, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED);)
        ;
    if (on)
        __atomic_fetch_or(&b[fd / 64], bit, __ATOMIC_RELAXED);
    else
        __atomic_fetch_and(&b[fd / 64], ~bit, __ATOMIC_RELAXED);
}

int sluice_privfd_is(int fd)
{
    uint64_t *b = bits;
    if (fd < 0 || fd >= PRIVFD_MAX || !b)
        return 0;
    return (__atomic_load_n(&b[fd / 64], __ATOMIC_RELAXED) >> (fd % 64)) & 1;
}

int sluice_privfd_keep(int fd)
{
    if (fd < 0)
        return fd;
    int saved = errno;
    int high = fd >= SLUICE_PRIVATE_FD_MIN ? -1 : SLUICE_REAL(fcntl)(fd, F_DUPFD_CLOEXEC, SLUICE_PRIVATE_FD_MIN);
    if (high >= 0) {
        SLUICE_REAL(close)(fd);
        fd = high;
    }
    privfd_mark(fd, 1);
    errno = saved;
    return fd;
}

void sluice_privfd_note(int fd)
{
    privfd_mark(fd, 1);
}

int sluice_privfd_dup(int fd)
{
    int high = SLUICE_REAL(fcntl)(fd, F_DUPFD_CLOEXEC, SLUICE_PRIVATE_FD_MIN);
    if (high < 0)
        return -errno;
    privfd_mark(high, 1);
    return high;
}

int sluice_privfd_close(int fd)
{
    if (fd < 0)
        return -EBADF;
    privfd_mark(fd, 0);
    return SLUICE_REAL(close)(fd) < 0 ? -errno : 0;
}
