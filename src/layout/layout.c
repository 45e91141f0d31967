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

/* The table for the file system `abs` lies on, or NULL; *root: the mount
 * point, for the directory test. */
static const struct sluice_layout_ops *ops_for(const char *abs, const char **root)
{
    int m = sluice_mount_of(abs);
    const char *type = m >= 0 ? sluice_mount_type(m) : NULL;

    if (!type)
        return NULL;
    *root = sluice_mount_point(m);
    if (strcmp(type, "ceph") == 0 || strcmp(type, "fuse.ceph-fuse") == 0 || strcmp(type, "fuse.ceph") == 0)
        return &sluice_layout_ceph_ops;
    if (strcmp(type, "lustre") == 0)
        return &sluice_layout_lustre_ops;
    return NULL;
}

static int wanted(int mode)
{
    pthread_once(&spec_once, spec_load);
    return spec.want == SLUICE_LAYOUT_AUTO || spec.want == SLUICE_LAYOUT_FIXED ||
           (spec.want == SLUICE_LAYOUT_DEFAULT && mode == SLUICE_MODE_AUTO);
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

int sluice_layout_before(int dirfd, const char *path, const char *abs, int flags, int mode, int *fresh)
{
    const struct sluice_layout_ops *ops;
    const char *root;
    struct stat st;
    int saved = errno;

    *fresh = 0;
    if (!(flags & O_CREAT) || (flags & (O_DIRECTORY | O_PATH)) || (flags & __O_TMPFILE) == __O_TMPFILE ||
        !wanted(mode) || (ops = ops_for(abs, &root)) == NULL)
        return 0;
    /* a file that exists keeps its layout (the open below may still
     * create it if it goes in between: then it keeps the default) */
    *fresh = SLUICE_REAL(fstatat)(dirfd, path, &st, 0) == 0 ? 2 : errno == ENOENT ? 1 : 0;
    errno = saved;
    return *fresh == 1 ? ops->create_flags : 0;
}

/* The decision for the new file at fd, counted in rec. */
static void decide(int fd, const char *abs, struct sluice_record *rec)
{
    const struct sluice_layout_ops *ops;
    const char *root, *slash;
    char dir[PATH_MAX];
    struct sluice_layout l;
    uint64_t t0 = sluice_now();
    int rc;

    if ((ops = ops_for(abs, &root)) == NULL || (slash = strrchr(abs, '/')) == NULL)
        return;
    if (slash == abs) {
        strcpy(dir, "/");
    } else if ((size_t)(slash - abs) < sizeof dir) {
        memcpy(dir, abs, (size_t)(slash - abs));
        dir[slash - abs] = '\0';
    } else {
        return;
    }
    rc = ops->dir_explicit(dir, strcmp(dir, root) == 0);
    if (rc == 1) {
        sluice_count_meta(rec, SLUICE_SIDES_BOTH, POSIX_LAYOUT_DIR_KEPT, t0, sluice_now());
        return;
    }
    if (spec.want == SLUICE_LAYOUT_FIXED)
        l = spec.fixed;
    else
        l = sluice_layout_for_class(shared_nprocs, shared_unit);
    if (rc == 0)
        rc = ops->set(fd, &l);
    if (rc != 0) {
        sluice_count_meta(rec, SLUICE_SIDES_BOTH, POSIX_LAYOUT_FAILS, t0, sluice_now());
        return;
    }
    sluice_count_meta(rec, SLUICE_SIDES_BOTH, POSIX_LAYOUT_SETS, t0, sluice_now());
    add(rec, POSIX_LAYOUT_STRIPES, l.stripe_count > 0 ? l.stripe_count : 0);
    add(rec, POSIX_LAYOUT_STRIPE_BYTES, l.stripe_size);
    if (shared_nprocs > 1 && spec.want != SLUICE_LAYOUT_FIXED)
        add(rec, POSIX_LAYOUT_SHARED, 1);
}

void sluice_layout_created(int fd, const char *abs, int flags, int extra_flags, struct sluice_record *rec,
                           int fresh)
{
    int saved = errno;

    if (fresh == 2) {
        uint64_t t = sluice_now();
        sluice_count_meta(rec, SLUICE_SIDES_BOTH, POSIX_LAYOUT_EXISTING, t, t);
    } else if (fresh == 1) {
        decide(fd, abs, rec);
        /* the delay-create flags the program did not ask for go again */
        if ((extra_flags & FASYNC) && !(flags & FASYNC)) {
            int fl = SLUICE_REAL(fcntl)(fd, F_GETFL);
            if (fl >= 0)
                (void)SLUICE_REAL(fcntl)(fd, F_SETFL, fl & ~FASYNC);
        }
    }
    errno = saved;
}

void sluice_layout_published(int fd, const char *final_path, int is_temp, struct sluice_record *rec)
{
    struct stat st;
    int saved = errno;

    if (!rec || !wanted(sluice_policy_mode(final_path)))
        return;
    /* a temporary file that will replace one standing there: that one's
     * layout is not ours to choose */
    if (is_temp && SLUICE_REAL(fstatat)(AT_FDCWD, final_path, &st, 0) == 0)
        sluice_layout_created(fd, final_path, 0, 0, rec, 2);
    else
        sluice_layout_created(fd, final_path, 0, 0, rec, 1);
    errno = saved;
}

int sluice_layout_publish_flags(const char *final_path)
{
    const struct sluice_layout_ops *ops;
    const char *root;

    if (!wanted(sluice_policy_mode(final_path)) || (ops = ops_for(final_path, &root)) == NULL)
        return 0;
    return ops->create_flags;
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
