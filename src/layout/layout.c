/*
 * Layouts at create: the decisions and the hooks the open paths call (see
 * layout.h). Each decision is counted in the file's POSIX record:
 * POSIX_LAYOUT_SETS (and the stripes and stripe bytes set, POSIX_LAYOUT_SHARED
 * for shared files), POSIX_LAYOUT_EXISTING, POSIX_LAYOUT_DIR_KEPT,
 * POSIX_LAYOUT_FAILS. Nothing here changes what the program sees: errno is
 * saved and restored, a failure only counts.
 */
#include "layout/layout.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/diag.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/mounts.h"
#include "core/policy.h"
#include "core/record.h"
#include "sys/real.h"

#include <sluice/sluice_counters.h>

static struct sluice_layout_spec spec;
static pthread_once_t spec_once = PTHREAD_ONCE_INIT;

/* The communicator of the MPI_File_open running on this thread. */
static __thread int shared_nprocs;
static __thread int64_t shared_unit;

static void spec_load(void)
{
    if (sluice_layout_parse(sluice_cfg.layout, &spec) != 0) {
        sluice_diag("SLUICE_LAYOUT=%s is not auto, off or stripe_count=N,stripe_size=S[,object_size=O]: "
                    "no layouts are set", sluice_cfg.layout);
        spec.want = SLUICE_LAYOUT_OFF;
    }
}

/* The table for the file system of mount m (core/mounts.h), or NULL. */
static const struct sluice_layout_ops *ops_of_mount(int m)
{
    const char *type = m >= 0 ? sluice_mount_type(m) : NULL;

    if (!type)
        return NULL;
    if (strcmp(type, "ceph") == 0 || strcmp(type, "fuse.ceph-fuse") == 0 || strcmp(type, "fuse.ceph") == 0)
        return &sluice_layout_ceph_ops;
    if (strcmp(type, "lustre") == 0)
        return &sluice_layout_lustre_ops;
    return NULL;
}

/* The table for the file system `abs` lies on, or NULL; *root: the mount
 * point, for the directory test. */
static const struct sluice_layout_ops *ops_for(const char *abs, const char **root)
{
    int m = sluice_mount_of(abs);
    const struct sluice_layout_ops *ops = ops_of_mount(m);

    if (ops)
        *root = sluice_mount_point(m);
    return ops;
}

static int wanted(int mode)
{
    pthread_once(&spec_once, spec_load);
    return spec.want == SLUICE_LAYOUT_AUTO || spec.want == SLUICE_LAYOUT_FIXED ||
           (spec.want == SLUICE_LAYOUT_DEFAULT && mode == SLUICE_MODE_AUTO);
}

void sluice_layout_observe(struct sluice_record *rec, int fd)
{
    if (!rec || atomic_load_explicit(&rec->layout_seen, memory_order_relaxed) ||
        atomic_exchange(&rec->layout_seen, 1))
        return;
    const struct sluice_layout_ops *ops = ops_of_mount(rec->mount);
    if (!ops || !ops->read)
        return;
    int saved = errno;
    struct sluice_layout_seen l;
    if (ops->read(fd, &l) == 0) {
        int64_t v[4] = {l.stripe_size, l.stripe_count, l.object_size, l.components};
        sluice_record_set_layout(rec, v);
    }
    errno = saved;
}

int sluice_layout_active(void)
{
    pthread_once(&spec_once, spec_load);
    if (spec.want == SLUICE_LAYOUT_OFF)
        return 0;
    return spec.want != SLUICE_LAYOUT_DEFAULT || (sluice_policy_modes_used() & (1u << SLUICE_MODE_AUTO)) != 0;
}

/* Add v to counter c on both sides of r (the layout is the file system's
 * and the program's alike). */
static void add(struct sluice_record *r, int c, int64_t v)
{
    sluice_record_lock(r);
    for (int side = 0; side < SLUICE_NUM_SIDES; side++)
        r->ic[side * r->ni + c] += v;
    sluice_record_unlock(r);
}

/* Whether the file just created at fd can be opened again with flags. */
static int may_reopen(int fd, int flags)
{
    struct stat st;
    mode_t need = (flags & O_ACCMODE) == O_RDONLY ? S_IRUSR : (flags & O_ACCMODE) == O_WRONLY ? S_IWUSR
                                                                                              : S_IRUSR | S_IWUSR;

    if (geteuid() == 0)
        return 1;
    return SLUICE_REAL(fstat)(fd, &st) == 0 && (st.st_mode & need) == need;
}

static void count(struct sluice_record *rec, int counter, uint64_t t0)
{
    sluice_count_meta(rec, SLUICE_SIDES_BOTH, counter, t0, sluice_now());
}

/* Create dirfd/path for final path `abs` with its layout; see layout.h.
 * The decisions in order: the file exists; its directory has a layout of
 * its own; the layout of its class is the one it gets anyway; else it is
 * created here, empty, and its layout set. */
static int create(int dirfd, const char *path, const char *abs, int flags, mode_t mode, int smode,
                  struct sluice_record *rec, int *created)
{
    const struct sluice_layout_ops *ops;
    const char *root, *slash;
    char dir[PATH_MAX];
    struct sluice_layout l, have;
    struct stat st;
    uint64_t t0;
    int fd, rc;

    if (!rec || !(flags & O_CREAT) || (flags & (O_DIRECTORY | O_PATH)) || (flags & __O_TMPFILE) == __O_TMPFILE ||
        !wanted(smode) || (ops = ops_for(abs, &root)) == NULL || (slash = strrchr(abs, '/')) == NULL ||
        (size_t)(slash - abs) >= sizeof dir)
        return flags;
    t0 = sluice_now();
    rc = SLUICE_REAL(fstatat)(dirfd, path, &st, 0);
    if (rc == 0 || errno != ENOENT) {
        /* it exists: its layout is not ours (with O_EXCL the open fails) */
        if (rc == 0 && !(flags & O_EXCL))
            count(rec, POSIX_LAYOUT_EXISTING, t0);
        return flags;
    }
    memcpy(dir, abs, (size_t)(slash - abs));
    dir[slash - abs] = '\0';
    if (slash == abs)
        strcpy(dir, "/");
    rc = ops->dir_layout(dir, strcmp(dir, root) == 0, &have);
    if (rc == 1) {
        count(rec, POSIX_LAYOUT_DIR_KEPT, t0);
        return flags;
    }
    l = spec.want == SLUICE_LAYOUT_FIXED ? spec.fixed : sluice_layout_for_class(shared_nprocs, shared_unit);
    if (rc == 0 && ops->same && ops->same(&l, &have)) {
        count(rec, POSIX_LAYOUT_DEFAULT, t0);
        return flags;
    }
    fd = rc < 0 ? -1 : SLUICE_REAL(openat)(dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY |
                                                             ops->create_flags, mode);
    if (fd < 0) {
        /* made in between, or the open below fails alike */
        count(rec, POSIX_LAYOUT_FAILS, t0);
        return flags;
    }
    /* the open that creates a file may write it whatever its mode; a
     * second one may not: a mode that lets the owner not do what the
     * program's open asks gets no layout */
    if (!may_reopen(fd, flags)) {
        SLUICE_REAL(close)(fd);
        (void)SLUICE_REAL(unlinkat)(dirfd, path, 0);
        count(rec, POSIX_LAYOUT_FAILS, t0);
        return flags;
    }
    *created = 1;
    rc = ops->set(fd, &l);
    SLUICE_REAL(close)(fd);
    if (rc != 0) {
        count(rec, POSIX_LAYOUT_FAILS, t0);
        return flags & ~O_EXCL;
    }
    count(rec, POSIX_LAYOUT_SETS, t0);
    add(rec, POSIX_LAYOUT_STRIPES, l.stripe_count > 0 ? l.stripe_count : 0);
    add(rec, POSIX_LAYOUT_STRIPE_BYTES, l.stripe_size);
    if (shared_nprocs > 1 && spec.want != SLUICE_LAYOUT_FIXED)
        add(rec, POSIX_LAYOUT_SHARED, 1);
    return flags & ~O_EXCL;
}

int sluice_layout_create(int dirfd, const char *path, const char *abs, int flags, mode_t mode, int smode,
                         struct sluice_record *rec, int *created)
{
    int saved = errno;

    *created = 0;
    flags = create(dirfd, path, abs, flags, mode, smode, rec, created);
    errno = saved;
    return flags;
}

void sluice_layout_undo(int dirfd, const char *path, int created)
{
    int saved = errno;

    if (created)
        (void)SLUICE_REAL(unlinkat)(dirfd, path, 0);
    errno = saved;
}

int sluice_layout_publish_create(const char *path, const char *final_path, int flags, mode_t mode,
                                 struct sluice_record *rec, int *created)
{
    struct stat st;
    int saved = errno;

    *created = 0;
    if (!rec)
        return flags;
    if (strcmp(path, final_path) != 0 && SLUICE_REAL(fstatat)(AT_FDCWD, final_path, &st, 0) == 0) {
        /* it will replace a file that stands there */
        uint64_t t = sluice_now();
        sluice_count_meta(rec, SLUICE_SIDES_BOTH, POSIX_LAYOUT_EXISTING, t, t);
        return flags;
    }
    flags = create(AT_FDCWD, path, final_path, flags, mode, sluice_policy_mode(final_path), rec, created);
    errno = saved;
    return flags;
}

void sluice_layout_shared_begin(int nprocs, int64_t unit)
{
    shared_nprocs = nprocs;
    shared_unit = unit;
}

void sluice_layout_shared_end(void)
{
    shared_nprocs = 0;
    shared_unit = 0;
}
