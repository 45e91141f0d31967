/* CRC-32 (zlib polynomial 0xEDB88320, reflected). See crc32.h. */
#include "common/crc32.h"

#include <stdatomic.h>

static uint32_t crc_table[256];
static atomic_int crc_table_ready;

void sluice_crc32_init(void)
{
    if (atomic_load_explicit(&crc_table_ready, memory_order_acquire))
        return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c; /* two racing initialisers store identical values */
    }
    atomic_store_explicit(&crc_table_ready, 1, memory_order_release);
}

uint32_t sluice_crc32(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;

    sluice_crc32_init();
    crc = ~crc;
    while (len--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
