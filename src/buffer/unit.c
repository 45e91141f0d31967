/* Write-behind unit; see unit.h. */
#include "buffer/unit.h"

#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "core/counters.h"
#include "sys/real.h"

/* Devices whose files have no Lustre layout attribute: asked once each,
 * not at every open (each ask is a call the file system serves). */
#define NO_LAYOUT_DEVS 16
static dev_t no_layout_dev[NO_LAYOUT_DEVS];
static unsigned no_layout_next;

static int dev_has_no_layout(dev_t dev)
{
    for (unsigned i = 0; i < NO_LAYOUT_DEVS; i++)
        if (__atomic_load_n(&no_layout_dev[i], __ATOMIC_RELAXED) == dev && dev != 0)
            return 1;
    return 0;
}

size_t buffer_unit(int fd, const struct stat *st, int64_t configured, struct sluice_record *rec)
{
    unsigned char lov[256];
    int64_t align = 0;
    ssize_t n = -1;

    if (!dev_has_no_layout(st->st_dev)) {
        uint64_t t0 = sluice_now();
        n = SLUICE_REAL(fgetxattr)(fd, "lustre.lov", lov, sizeof lov);
        if (rec)   /* asked of the file system, whatever the answer */
            sluice_count_meta(rec, SLUICE_SIDES_FS, POSIX_XATTR_READS, t0, sluice_now());
        if (n < 0 && (errno == ENODATA || errno == ENOTSUP)) {
            unsigned i = __atomic_fetch_add(&no_layout_next, 1, __ATOMIC_RELAXED) % NO_LAYOUT_DEVS;
            __atomic_store_n(&no_layout_dev[i], st->st_dev, __ATOMIC_RELAXED);
        }
    }
    if (n > 0)
        align = lustre_stripe_size(lov, (size_t)n);
    if (align <= 0)
        align = st->st_blksize > 0 ? st->st_blksize : 4096;
    if (configured <= 0)
        return 0;
    /* Smaller than one block: the user asked for it (tests use 1 byte). */
    if (configured < align)
        return (size_t)configured;
    return (size_t)((configured + align - 1) / align * align);
}
