/*
 * CRC-32 (IEEE 802.3, reflected, the one zlib and Python's zlib.crc32 use),
 * so that the C writer, the C reader and the Python reader agree without any
 * shared code. Table-driven; the table is built on first use and the
 * function is async-signal-safe once sluice_crc32_init() has run.
 */
#ifndef SLUICE_COMMON_CRC32_H
#define SLUICE_COMMON_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Build the table. Idempotent; call once before use from a single thread
 * (the preload constructor does); sluice_crc32 calls it too when needed. */
void sluice_crc32_init(void);

/* Continue a CRC: start with crc = 0. */
uint32_t sluice_crc32(uint32_t crc, const void *buf, size_t len);

#endif
