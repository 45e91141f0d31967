/*
 * The on-disk log: one file per process, little-endian, fixed-width fields,
 * versioned, a CRC-32 (zlib) per region. docs/logformat.md describes the
 * same layout for readers in other languages.
 *
 *   header      64 bytes, see below
 *   region table  region_count entries of 32 bytes
 *   regions     each at its own offset; unknown region types are skipped
 *
 * Readers accept any minor version of their major version; a region type or
 * module they do not know is skipped, and counter names travel in the
 * SCHEMA region, so a reader maps counters by name, not by position.
 */
#ifndef SLUICE_LOGFMT_H
#define SLUICE_LOGFMT_H

#include <stdint.h>

#define SLUICE_LOG_MAGIC "SLUICELG"      /* 8 bytes, no NUL */
/* 2.0 may store regions compressed (SLUICE_LOG_R_DEFLATE): a 1.x reader
 * would skip them and show a process without files, so it must refuse
 * instead. 3.0 stores MODULE records column by column (layout 1) and names
 * without record ids (NAMES version 2), which a 2.x reader would misread.
 * Readers of 3.x read 1.x and 2.x logs too. */
#define SLUICE_LOG_VERSION_MAJOR 3
#define SLUICE_LOG_VERSION_MINOR 1       /* 3.1: the TRACE region */
#define SLUICE_LOG_OLDEST_MAJOR 1        /* the oldest major version readers accept */
#define SLUICE_LOG_HEADER_SIZE 64
#define SLUICE_LOG_REGION_ENTRY_SIZE 32
#define SLUICE_LOG_MAX_REGIONS 64

/* Header (offset: field)
 *   0: magic[8]
 *   8: u16 version_major, 10: u16 version_minor
 *  12: u32 header_size (64)
 *  16: u32 region_count
 *  20: u32 flags (SLUICE_LOG_F_*)
 *  24: u64 file_size (bytes, the whole log)
 *  32: u32 region_table_offset
 *  36..59: zero
 *  60: u32 crc32 of bytes 0..59 followed by the whole region table
 */
enum sluice_log_flags {
    SLUICE_LOG_F_PARTIAL = 1u << 0,  /* some files folded into "<other files>" */
    SLUICE_LOG_F_SIGNAL = 1u << 1,   /* written from a signal handler (SIGTERM) */
};

/* Region table entry: u32 type, u32 version, u64 offset, u64 length,
 * u32 crc32 of the region's bytes, u32 zero. */
enum sluice_log_region_type {
    SLUICE_LOG_R_PROCESS = 1,  /* who ran: see below */
    SLUICE_LOG_R_SCHEMA = 2,   /* modules and their counter names */
    SLUICE_LOG_R_NAMES = 3,    /* record id -> path */
    SLUICE_LOG_R_MODULE = 4,   /* one module's records (one region per module) */
    SLUICE_LOG_R_DEFLATE = 5,  /* another region, compressed: see below */
    SLUICE_LOG_R_TRACE = 6,    /* the per-call trace (3.1): see below */
};

/* PROCESS region:
 *   u64 pid, u64 ppid, i64 rank (-1: not MPI), i64 nprocs (-1),
 *   u64 start_unix_ns, u64 end_unix_ns, u64 start_mono_ns, u32 end_reason, u32 nstrings
 *   then nstrings × { u16 key_len, key, u32 value_len, value }
 * keys: job_id, host, exe, cmdline, mode, paths, version, policy (the
 * SLUICE_POLICY rules in effect), uid (decimal), and, after a fatal signal,
 * signal (its name: "SIGSEGV", ...); runtime_left_out (decimal, when not 0):
 * calls on the interpreter's own files left out of the records
 */
enum sluice_log_end_reason {
    SLUICE_END_EXIT = 1,     /* normal exit (destructor) */
    SLUICE_END_SIGNAL = 2,   /* SIGTERM */
    SLUICE_END_EXIT_NOW = 3, /* _exit / _Exit */
    SLUICE_END_EXEC = 4,     /* exec replaced the process image */
    SLUICE_END_FATAL = 5,    /* a fatal signal (SIGSEGV, SIGABRT, ...): key "signal" names it */
};

/* DEFLATE region (2.0): u32 type of the region it holds (never DEFLATE),
 * u32 zero, u64 length of that region once inflated, then a zlib stream
 * (RFC 1950) of exactly those bytes to the end of the region. The table
 * entry's version is the held region's; its CRC is over the stored bytes.
 * A reader refuses a length above SLUICE_LOG_INFLATE_MAX_RATIO times the
 * stream's size, which deflate cannot produce. */
#define SLUICE_LOG_DEFLATE_HEAD 16
#define SLUICE_LOG_INFLATE_MAX_RATIO 1032

/* SCHEMA region: u32 nmodules, then per module:
 *   u16 id, u16 version, u16 name_len, name, u16 ni, u16 nf,
 *   ni × { u16 len, name }, nf × { u16 len, name }
 * NAMES region, version 1: u32 count, then count × { u64 record_id, u32 len, path }
 * NAMES region, version 2 (3.0): u32 count, then count × { u32 len, path };
 *   the entries of all version-2 NAMES regions are numbered from 0 in
 *   table order, and a record's id is sluice_log_record_id(module, path)
 * MODULE region: u16 module_id, u16 layout, u32 nrecords, then
 *   layout 0 (rows; the only one before 3.0), per record:
 *     u64 record_id, u32 flags, u32 zero,
 *     i64 app[ni], i64 fs[ni], f64 app[nf], f64 fs[nf]      (ni, nf from SCHEMA)
 *   layout 1 (columns, 3.0): u32 group, then the records in groups of
 *     `group` (the last one holds the rest), each record being
 *     V = 2 + 2 ni + 2 nf u64 values: its NAMES index, its flags, the app
 *     integer counters, the fs ones minus the app ones (mod 2^64), the app
 *     float counters (all times) as i64 nanoseconds, the fs ones minus the
 *     app ones in nanoseconds; a group of g records stores its g·V values
 *     as byte planes (plane j = b·V + k holds byte b, least significant
 *     first, of value k of records 0..g-1): a bitmap of 8·V bits (V bytes,
 *     bit j in byte j/8, least significant bit first) says which planes
 *     are stored, then those planes, g bytes each, in increasing j; a
 *     plane not stored is zero. Equal sides, zero counters and the high
 *     bytes of small values are most planes: they cost a bit each.
 */
/* Readers refuse a log whose layout-1 records would take more than
 * BASE + RATIO × the file's size bytes of counters in memory: the writer's
 * logs need about 120 times their size (records of 1.7 KB in memory, 14
 * bytes on disk), a damaged one could announce millions of records of
 * zero planes. */
#define SLUICE_LOG_SPARSE_BASE (64ull << 20)
#define SLUICE_LOG_SPARSE_RATIO 4096u
/* TRACE region (3.1; a 3.0 reader skips it): u64 nsegments, u64 dropped
 * (calls traced beyond SLUICE_TRACE, or whose file has no record here),
 * then the segments column by column: nsegments × u32 NAMES index (version
 * 2 entries), × u8 module id (POSIX or MPIIO), × u8 op (0 read, 1 write),
 * × i64 offset (-1: not known), × i64 length, × i64 start and × i64 end
 * (nanoseconds since the process started), in the order the calls began. */
#define SLUICE_LOG_TRACE_SEG_SIZE 38
#define SLUICE_LOG_LAYOUT_ROWS 0
#define SLUICE_LOG_LAYOUT_COLUMNS 1
#define SLUICE_LOG_NAMES_INDEXED 2       /* NAMES region version without ids */

/* A record's id in 3.x logs, which do not store it: FNV-1a (64-bit) of the
 * module id and the path's bytes, as the runtime computes it. */
static inline uint64_t sluice_log_record_id(unsigned module, const void *path, unsigned long len)
{
    uint64_t h = 1469598103934665603ull ^ module;
    for (unsigned long i = 0; i < len; i++)
        h = (h ^ ((const unsigned char *)path)[i]) * 1099511628211ull;
    return h;
}

#endif
