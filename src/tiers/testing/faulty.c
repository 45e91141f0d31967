/*
 * Test-only tier: makes the N-th call of an operation fail with a chosen
 * errno before it reaches the tiers below, so tests can check that errors
 * reach the application (and its log) exactly as the kernel would report
 * them. Configured by SLUICE_FAULT="OP:N:ERRNO[,OP:N:ERRNO...]" with OP one
 * of open, read, write, fsync, ftruncate, close, and ERRNO a name (ENOSPC,
 * EIO, EACCES, EINTR, EDQUOT, EROFS) or a number. Counts are per process.
 * Refused unless SLUICE_ALLOW_TEST_TIERS=1.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "core/config.h"
#include "core/file.h"
#include "sluice/sluice_tier.h"

enum fault_op { FAULT_OPEN, FAULT_READ, FAULT_WRITE, FAULT_FSYNC, FAULT_FTRUNCATE, FAULT_CLOSE, FAULT_NOPS };

static const char *const fault_op_names[FAULT_NOPS] = {"open", "read", "write", "fsync", "ftruncate", "close"};

static struct {
    long nth;          /* 1-based call number that fails; 0: never */
    int err;           /* errno it fails with */
    atomic_long calls; /* calls seen so far */
} faults[FAULT_NOPS];

static int errno_from_name(const char *s)
{
    static const struct { const char *name; int value; } names[] = {
        {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EACCES", EACCES}, {"EINTR", EINTR},
        {"EDQUOT", EDQUOT}, {"EROFS", EROFS}, {"EPERM", EPERM}, {"ENOENT", ENOENT},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(s, names[i].name) == 0)
            return names[i].value;
    char *end;
    long v = strtol(s, &end, 10);
    return (*s && !*end && v > 0 && v < 4096) ? (int)v : 0;
}

static int faulty_init(void)
{
    char spec[256];
    char *save = NULL;

    if (strlen(sluice_cfg.fault) >= sizeof spec)
        return -EINVAL;
    strcpy(spec, sluice_cfg.fault);
    for (char *item = strtok_r(spec, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *op = item, *n = strchr(item, ':'), *e;
        if (!n || !(e = strchr(n + 1, ':'))) {
            sluice_diag("SLUICE_FAULT item '%s' is not OP:N:ERRNO", item);
            return -EINVAL;
        }
        *n++ = '\0';
        *e++ = '\0';
        int which = -1;
        for (int i = 0; i < FAULT_NOPS; i++)
            if (strcmp(op, fault_op_names[i]) == 0)
                which = i;
        long nth = strtol(n, NULL, 10);
        int err = errno_from_name(e);
        if (which < 0 || nth <= 0 || err == 0) {
            sluice_diag("SLUICE_FAULT item '%s:%s:%s' names an unknown operation, count or errno", op, n, e);
            return -EINVAL;
        }
        faults[which].nth = nth;
        faults[which].err = err;
    }
    return 0;
}

/* -errno when this call is the one chosen to fail, else 0. */
static int fault_hit(enum fault_op op)
{
    if (!faults[op].nth)
        return 0;
    return atomic_fetch_add(&faults[op].calls, 1) + 1 == faults[op].nth ? -faults[op].err : 0;
}

static int faulty_open(struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode)
{
    int rc = fault_hit(FAULT_OPEN);
    return rc ? rc : sluice_tier_open(f, level + 1, dirfd, path, flags, mode);
}

static ssize_t faulty_read(struct sluice_file *f, int level, void *buf, size_t n, off_t off)
{
    int rc = fault_hit(FAULT_READ);
    return rc ? rc : sluice_tier_read(f, level + 1, buf, n, off);
}

static ssize_t faulty_write(struct sluice_file *f, int level, const void *buf, size_t n, off_t off)
{
    int rc = fault_hit(FAULT_WRITE);
    return rc ? rc : sluice_tier_write(f, level + 1, buf, n, off);
}

static ssize_t faulty_readv(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    int rc = fault_hit(FAULT_READ);
    return rc ? rc : sluice_tier_readv(f, level + 1, iov, cnt, off, flags);
}

static ssize_t faulty_writev(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags)
{
    int rc = fault_hit(FAULT_WRITE);
    return rc ? rc : sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
}

static int faulty_fsync(struct sluice_file *f, int level, int datasync)
{
    int rc = fault_hit(FAULT_FSYNC);
    return rc ? rc : sluice_tier_fsync(f, level + 1, datasync);
}

static int faulty_ftruncate(struct sluice_file *f, int level, off_t len)
{
    int rc = fault_hit(FAULT_FTRUNCATE);
    return rc ? rc : sluice_tier_ftruncate(f, level + 1, len);
}

static int faulty_close(struct sluice_file *f, int level)
{
    /* close releases the descriptor even when it fails, as the kernel does. */
    int rc = fault_hit(FAULT_CLOSE);
    int below = sluice_tier_close(f, level + 1);
    return rc ? rc : below;
}

const struct sluice_tier_ops sluice_tier_faulty = {
    .size = sizeof(struct sluice_tier_ops),
    .abi = SLUICE_TIER_ABI,
    .name = "faulty",
    .caps = SLUICE_TIER_TEST_ONLY,
    .init = faulty_init,
    .open = faulty_open,
    .read = faulty_read,
    .write = faulty_write,
    .readv = faulty_readv,
    .writev = faulty_writev,
    .fsync = faulty_fsync,
    .ftruncate = faulty_ftruncate,
    .close = faulty_close,
};
