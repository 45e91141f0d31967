/* CRC-32 (zlib polynomial 0xEDB88320, reflected). See crc32.h.
 *
 * Slicing by 8: eight tables, where table k advances the CRC of one byte
 * followed by k zero bytes, let the loop fold 8 input bytes per step with
 * 8 independent lookups instead of 8 dependent ones (about 5x the bytewise
 * loop: the logs of a job with many files are checksummed at its exit). */
#include "common/crc32.h"

#include <stdatomic.h>

static uint32_t crc_table[8][256];
static atomic_int crc_table_ready;

void sluice_crc32_init(void)
{
    if (atomic_load_explicit(&crc_table_ready, memory_order_acquire))
        return;
    /* two racing initialisers store identical values */
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t i = 0; i < 256; i++)
            crc_table[k][i] = crc_table[0][crc_table[k - 1][i] & 0xff] ^ (crc_table[k - 1][i] >> 8);
    atomic_store_explicit(&crc_table_ready, 1, memory_order_release);
}

/* The 8 bytes at p as a little-endian number, whatever the host's order. */
static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

uint32_t sluice_crc32(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;

    sluice_crc32_init();
    crc = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v = load_le64(p) ^ crc;
        crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^ crc_table[5][(v >> 16) & 0xff] ^
              crc_table[4][(v >> 24) & 0xff] ^ crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
              crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
    }
    while (len--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
