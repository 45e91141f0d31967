/* The mount table; see mounts.h. */
#include "core/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/pathnorm.h"

#define MAX_MOUNTS 512
#define POOL_SIZE (64 * 1024)
#define INFO_MAX (256 * 1024)   /* the part of mountinfo read; a longer table loses its last lines */
#define LUSTRE_MAGIC 0x0BD00BD0

struct mount {
    const char *point, *type;
    size_t len;                 /* of point */
    int64_t block_size;         /* 0: not asked yet */
    atomic_int used;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int loaded;       /* 1: the table below is complete */
static int nmounts;
static struct mount mounts[MAX_MOUNTS];
static char pool[POOL_SIZE];
static size_t pool_used;
static char info[INFO_MAX];

/* Copy a mountinfo field into the pool, undoing its octal escapes (\040). */
static const char *pool_field(const char *s, size_t n)
{
    char *out = pool + pool_used, *o = out;

    if (pool_used + n + 1 > POOL_SIZE)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
            s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            *o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            *o++ = s[i];
        }
    }
    *o++ = '\0';
    pool_used += (size_t)(o - out);
    return out;
}

/* One line: ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER */
static void parse_line(const char *line, const char *end)
{
    const char *f[6], *fe[6];
    const char *p = line;
    int k = 0;

    while (k < 6 && p < end) {
        while (p < end && *p == ' ')
            p++;
        f[k] = p;
        while (p < end && *p != ' ')
            p++;
        fe[k++] = p;
    }
    if (k < 6 || nmounts >= MAX_MOUNTS)
        return;
    /* skip the optional fields up to the lone "-" */
    for (;;) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            return;
        const char *s = p;
        while (p < end && *p != ' ')
            p++;
        if (p - s == 1 && *s == '-')
            break;
    }
    while (p < end && *p == ' ')
        p++;
    const char *t = p;
    while (p < end && *p != ' ')
        p++;
    struct mount *m = &mounts[nmounts];
    m->point = pool_field(f[4], (size_t)(fe[4] - f[4]));
    m->type = pool_field(t, (size_t)(p - t));
    if (!m->point || !m->type || m->point[0] != '/')
        return;
    m->len = strlen(m->point);
    nmounts++;
}

static void load(void)
{
    size_t got = 0;
    /* system calls, not the library's own wrappers */
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        for (;;) {
            ssize_t n = syscall(SYS_read, fd, info + got, sizeof info - got);
            if (n > 0 && (got += (size_t)n) < sizeof info)
                continue;
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        syscall(SYS_close, fd);
    }
    const char *p = info, *end = info + got;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;      /* a line cut off by the end of the buffer */
        parse_line(p, nl);
        p = nl + 1;
    }
}

int sluice_mount_of(const char *path)
{
    int best = -1;

    if (!atomic_load_explicit(&loaded, memory_order_acquire)) {
        pthread_mutex_lock(&lock);
        if (!atomic_load_explicit(&loaded, memory_order_relaxed)) {
            load();
            atomic_store_explicit(&loaded, 1, memory_order_release);
        }
        pthread_mutex_unlock(&lock);
    }
    /* the longest mount point the path is under; of equal ones the later
     * (mounted over the earlier) */
    for (int i = 0; i < nmounts; i++) {
        const struct mount *m = &mounts[i];
        /* sluice_path_under with the point's length known (a mount point
         * has no trailing '/' but the root's); the second byte sorts most out */
        if ((best < 0 || m->len >= mounts[best].len) &&
            (m->len == 1 ? path[0] == '/'
                         : path[1] == m->point[1] && strncmp(path, m->point, m->len) == 0 &&
                               (path[m->len] == '\0' || path[m->len] == '/')))
            best = i;
    }
    if (best >= 0)
        atomic_store_explicit(&mounts[best].used, 1, memory_order_relaxed);
    return best;
}

int64_t sluice_mount_block_size(int i)
{
    struct mount *m;
    struct statfs st;
    int64_t bs;

    if (i < 0 || i >= nmounts)
        return 0;
    m = &mounts[i];
    bs = __atomic_load_n(&m->block_size, __ATOMIC_RELAXED);
    if (bs)
        return bs;
    if (statfs(m->point, &st) != 0)
        bs = 4096;
    else if ((unsigned long)st.f_type == LUSTRE_MAGIC)
        bs = 1024 * 1024;
    else
        bs = st.f_bsize > 0 ? (int64_t)st.f_bsize : 4096;
    __atomic_store_n(&m->block_size, bs, __ATOMIC_RELAXED);
    return bs;
}

int sluice_mounts_count(void)
{
    return atomic_load_explicit(&loaded, memory_order_acquire) ? nmounts : 0;
}

int sluice_mount_used(int i)
{
    return atomic_load_explicit(&mounts[i].used, memory_order_relaxed);
}

const char *sluice_mount_point(int i)
{
    return mounts[i].point;
}

const char *sluice_mount_type(int i)
{
    return mounts[i].type;
}

/* Disk and memory file systems of this node. Anything else (NFS, Lustre,
 * GPFS, BeeGFS, CephFS, FUSE clients such as MooseFS's, and types not
 * known here) is taken as shared. */
int sluice_mount_is_local(int i)
{
    static const char *const local[] = {
        "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "nilfs2", "bcachefs", "zfs",
        "tmpfs", "ramfs", "hugetlbfs", "devtmpfs", "overlay", "vfat", "msdos", "exfat", "ntfs", "ntfs3",
        "hfsplus", "udf", "iso9660", "squashfs",
    };

    if (i < 0 || i >= nmounts)
        return 0;
    for (size_t k = 0; k < sizeof local / sizeof *local; k++)
        if (strcmp(mounts[i].type, local[k]) == 0)
            return 1;
    return 0;
}
