/* The Lustre layout attribute's stripe size; see unit.h. Pure parsing,
 * kept apart so that it is tested alone. */
#include "buffer/unit.h"

#include <string.h>

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

