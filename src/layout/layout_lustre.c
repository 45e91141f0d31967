/*
 * Lustre: a new file opened with O_LOV_DELAY_CREATE has no OST objects
 * until its layout is set, which the lustre.lov attribute does (a
 * lov_user_md, layout_format.c). A directory with a default layout of its
 * own answers lustre.lov. Untested here (no Lustre): the attribute's bytes
 * are unit-tested against the documented struct.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/xattr.h>

#include "layout/layout.h"
#include "sys/real.h"

/* lustre_user.h: O_LOV_DELAY_CREATE is O_NOCTTY | FASYNC since 2.4 */
#define SLUICE_O_LOV_DELAY_CREATE (O_NOCTTY | FASYNC)

static int lustre_dir_layout(const char *dir, int is_root, struct sluice_layout *effective)
{
    unsigned char v[SLUICE_LOV_V1_SIZE + 64];

    (void)is_root;
    *effective = (struct sluice_layout){0};   /* the file system's default: not known here */
    if (SLUICE_REAL(getxattr)(dir, "lustre.lov", v, sizeof v) >= 0)
        return 1;
    return errno == ENODATA || errno == ERANGE ? (errno == ERANGE) : -errno;
}

static int lustre_set(int fd, const struct sluice_layout *l)
{
    unsigned char v[SLUICE_LOV_V1_SIZE];
    int n = sluice_layout_lustre_value(l, v, sizeof v);

    if (n < 0)
        return -EINVAL;
    return SLUICE_REAL(fsetxattr)(fd, "lustre.lov", v, (size_t)n, 0) == 0 ? 0 : -errno;
}

/* A composite layout of many components and stripes can exceed a page;
 * what is read is the first component's, which comes first. */
static int lustre_read(int fd, struct sluice_layout_seen *out)
{
    unsigned char v[4096];
    ssize_t n = SLUICE_REAL(fgetxattr)(fd, "lustre.lov", v, sizeof v);

    if (n < 0)
        return -errno;
    return sluice_layout_lustre_parse(v, (size_t)n, out) == 0 ? 0 : -EINVAL;
}

const struct sluice_layout_ops sluice_layout_lustre_ops = {
    .size = sizeof(struct sluice_layout_ops),
    .name = "lustre",
    .create_flags = SLUICE_O_LOV_DELAY_CREATE,
    .dir_layout = lustre_dir_layout,
    .set = lustre_set,
    .same = NULL,
    .read = lustre_read,
};
