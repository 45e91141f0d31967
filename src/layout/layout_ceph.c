/*
 * CephFS (the kernel client and ceph-fuse): a new file's layout is its
 * ceph.file.layout virtual attribute, settable while the file has no data
 * (ENOTEMPTY after); a directory's own layout, inherited by files created
 * in it, answers ceph.dir.layout (ENODATA when it has none).
 */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "layout/layout.h"
#include "sys/real.h"

/* Every CephFS root answers ceph.dir.layout with the file system's
 * default; only a different one there was set by someone. */
#define CEPH_DEFAULT_DIR_LAYOUT "stripe_unit=4194304 stripe_count=1 object_size=4194304 "

static int ceph_dir_layout(const char *dir, int is_root, struct sluice_layout *effective)
{
    char v[512];
    ssize_t n = SLUICE_REAL(getxattr)(dir, "ceph.dir.layout.json", v, sizeof v - 1);
    int rc;

    *effective = (struct sluice_layout){0};
    if (n >= 0) {
        /* Ceph 16: the layout a file gets here, and where it comes from */
        v[n] = '\0';
        if ((rc = sluice_layout_ceph_json(v, effective)) >= 0)
            return rc;
        *effective = (struct sluice_layout){0};
    }
    /* older: a directory answers ceph.dir.layout only if set on it (the
     * root always: with the default unless someone changed it) */
    n = SLUICE_REAL(getxattr)(dir, "ceph.dir.layout", v, sizeof v - 1);
    if (n < 0)
        return errno == ENODATA ? 0 : -errno;
    v[n] = '\0';
    if (is_root && strncmp(v, CEPH_DEFAULT_DIR_LAYOUT, strlen(CEPH_DEFAULT_DIR_LAYOUT)) == 0)
        return 0;
    return 1;
}

static int ceph_set(int fd, const struct sluice_layout *l)
{
    char v[160];
    int n = sluice_layout_ceph_value(l, v, sizeof v);

    if (n < 0)
        return -EINVAL;
    return SLUICE_REAL(fsetxattr)(fd, "ceph.file.layout", v, (size_t)n, 0) == 0 ? 0 : -errno;
}

static int ceph_read(int fd, struct sluice_layout_seen *out)
{
    char v[512];
    ssize_t n = SLUICE_REAL(fgetxattr)(fd, "ceph.file.layout", v, sizeof v - 1);

    if (n < 0)
        return -errno;
    v[n] = '\0';
    return sluice_layout_ceph_parse(v, out) == 0 ? 0 : -EINVAL;
}

const struct sluice_layout_ops sluice_layout_ceph_ops = {
    .size = sizeof(struct sluice_layout_ops),
    .name = "ceph",
    .create_flags = 0,
    .dir_layout = ceph_dir_layout,
    .set = ceph_set,
    .same = sluice_layout_ceph_same,
    .read = ceph_read,
};
