/* Write-behind unit; see unit.h. */
#include "buffer/unit.h"

#include <string.h>
#include <sys/xattr.h>

/* lov_user_md v1/v3 (lustre_user.h): magic, pattern, 16-byte object id,
 * then the stripe size. */
#define LOV_USER_MAGIC_V1 0x0BD10BD0u
#define LOV_USER_MAGIC_V3 0x0BD30BD0u
#define LOV_STRIPE_SIZE_OFFSET 24

int64_t lustre_stripe_size(const void *lov, size_t len)
{
    uint32_t magic, size;

    if (len < LOV_STRIPE_SIZE_OFFSET + sizeof size)
        return 0;
    memcpy(&magic, lov, sizeof magic);
    if (magic != LOV_USER_MAGIC_V1 && magic != LOV_USER_MAGIC_V3)
        return 0;
    memcpy(&size, (const unsigned char *)lov + LOV_STRIPE_SIZE_OFFSET, sizeof size);
    return size;
}

size_t buffer_unit(int fd, const struct stat *st, int64_t configured)
{
    unsigned char lov[256];
    int64_t align = 0;
    ssize_t n = fgetxattr(fd, "lustre.lov", lov, sizeof lov);

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
