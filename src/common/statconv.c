/* See statconv.h. */
#include "common/statconv.h"

#include <string.h>
#include <sys/sysmacros.h>

static struct statx_timestamp statx_time(struct timespec ts)
{
    return (struct statx_timestamp){.tv_sec = ts.tv_sec, .tv_nsec = (__u32)ts.tv_nsec};
}

void sluice_stat_to_statx(const struct stat *st, struct statx *stx)
{
    memset(stx, 0, sizeof *stx);
    stx->stx_mask = STATX_BASIC_STATS;
    stx->stx_blksize = (__u32)st->st_blksize;
    stx->stx_nlink = (__u32)st->st_nlink;
    stx->stx_uid = st->st_uid;
    stx->stx_gid = st->st_gid;
    stx->stx_mode = (__u16)st->st_mode;
    stx->stx_ino = st->st_ino;
    stx->stx_size = (__u64)st->st_size;
    stx->stx_blocks = (__u64)st->st_blocks;
    stx->stx_atime = statx_time(st->st_atim);
    stx->stx_mtime = statx_time(st->st_mtim);
    stx->stx_ctime = statx_time(st->st_ctim);
    stx->stx_dev_major = major(st->st_dev);
    stx->stx_dev_minor = minor(st->st_dev);
}
