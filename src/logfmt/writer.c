/* The log writer; see writer.h and sluice/sluice_logfmt.h. */
#include "logfmt/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/clock.h"
#include "common/crc32.h"
#include "common/diag.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/mounts.h"
#include "core/policy.h"
#include "core/record.h"
#include "core/trace.h"
#include "sys/real.h"
#include "sluice/sluice_logfmt.h"

struct sluice_proc_info sluice_proc;

/* One writer at a time (exit racing SIGTERM): the buffer is static. */
static atomic_flag writing = ATOMIC_FLAG_INIT;
static unsigned char wbuf[64 * 1024];

struct out {
    int fd;
    size_t used;      /* bytes in wbuf */
    uint64_t off;     /* file offset of wbuf[0] */
    uint32_t crc;     /* CRC of the current region up to wbuf[crc_from] */
    size_t crc_from;  /* bytes of wbuf before it are in crc (or before the region) */
    int err;          /* first error (-errno) */
    int counting;     /* a dry run: only `counted` grows */
    uint64_t counted; /* bytes a dry run (or a compressed region) was given */
    z_stream *z;      /* set while a region is written compressed */
};

/* Compressed regions: zlib gets its memory from a static arena sized for
 * deflateInit2(level 6, window 15, memLevel 8) (268,096 bytes with zlib 1.2.13), never from
 * malloc, which a signal handler must not call; when the arena does not
 * suffice, the region is written plain. zin stages the region's bytes so
 * that deflate sees large pieces, not field by field. */
static _Alignas(16) unsigned char zmem[320 * 1024];

/* zlib's level: 6, its default. Level 1 writes a log of many records in
 * about half the time but 16 % larger (docs/logformat.md): size first. */
#ifndef SLUICE_LOG_ZLEVEL
#define SLUICE_LOG_ZLEVEL Z_DEFAULT_COMPRESSION
#endif
static size_t zmem_used;
static unsigned char zin[64 * 1024];
static size_t zin_used;
static z_stream zs;

static voidpf zmem_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    size_t n = (size_t)items * size;
    n = (n + 15) & ~(size_t)15;
    if (n > sizeof zmem - zmem_used)
        return Z_NULL;
    void *p = zmem + zmem_used;
    zmem_used += n;
    return p;
}

static void zmem_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    (void)p; /* the arena is emptied before each stream */
}

/* The region's CRC takes in what was buffered since it last did: whole
 * buffers at a time, not field by field (a log holds millions of fields). */
static void out_crc_catch_up(struct out *o)
{
    o->crc = sluice_crc32(o->crc, wbuf + o->crc_from, o->used - o->crc_from);
    o->crc_from = o->used;
}

static void out_flush(struct out *o)
{
    out_crc_catch_up(o);
    o->crc_from = 0;
    if (o->used && !o->err)
        o->err = sluice_write_all(o->fd, wbuf, o->used);
    o->off += o->used;
    o->used = 0;
}

static void z_pump(struct out *o, int flush);

static void out_bytes(struct out *o, const void *p, size_t n)
{
    const unsigned char *b = p;
    if (o->counting) {
        o->counted += n;
        return;
    }
    if (o->z) {
        o->counted += n;
        while (n) {
            size_t k = sizeof zin - zin_used;
            if (k > n)
                k = n;
            memcpy(zin + zin_used, b, k);
            zin_used += k;
            b += k;
            n -= k;
            if (zin_used == sizeof zin)
                z_pump(o, Z_NO_FLUSH);
        }
        return;
    }
    while (n) {
        size_t k = sizeof wbuf - o->used;
        if (k > n)
            k = n;
        memcpy(wbuf + o->used, b, k);
        o->used += k;
        b += k;
        n -= k;
        if (o->used == sizeof wbuf)
            out_flush(o);
    }
}

/* Deflate what zin holds into wbuf (flushed to the file as it fills);
 * Z_FINISH ends the stream. */
static void z_pump(struct out *o, int flush)
{
    z_stream *z = o->z;
    z->next_in = zin;
    z->avail_in = (uInt)zin_used;
    for (;;) {
        z->next_out = wbuf + o->used;
        z->avail_out = (uInt)(sizeof wbuf - o->used);
        int rc = deflate(z, flush);
        o->used = sizeof wbuf - z->avail_out;
        if (o->used == sizeof wbuf)
            out_flush(o);
        if (rc == Z_STREAM_END || (flush == Z_NO_FLUSH && rc == Z_OK && z->avail_in == 0))
            break;
        if (rc != Z_OK) { /* wbuf always has room: no other outcome is expected */
            if (!o->err)
                o->err = -EIO;
            break;
        }
    }
    zin_used = 0;
}

static void out_u16(struct out *o, uint16_t v)
{
    unsigned char b[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    out_bytes(o, b, 2);
}

static void out_u32(struct out *o, uint32_t v)
{
    unsigned char b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    out_bytes(o, b, 4);
}

static void out_u64(struct out *o, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    out_bytes(o, b, 8);
}

static void out_str16(struct out *o, const char *s)
{
    size_t n = strlen(s);
    if (n > 65535)
        n = 65535;
    out_u16(o, (uint16_t)n);
    out_bytes(o, s, n);
}

static void out_kv(struct out *o, const char *key, const char *value)
{
    out_str16(o, key);
    uint32_t n = (uint32_t)strlen(value);
    out_u32(o, n);
    out_bytes(o, value, n);
}

/* The key "mounts": a line "TYPE\tPOINT\n" per mount a recorded file is
 * under (core/mounts.h), in mount-table order. */
static void out_mounts(struct out *o)
{
    static const char key[] = "mounts";
    uint32_t n = 0;
    int count = sluice_mounts_count();

    for (int i = 0; i < count; i++)
        if (sluice_mount_used(i))
            n += (uint32_t)(strlen(sluice_mount_type(i)) + strlen(sluice_mount_point(i)) + 2);
    out_str16(o, key);
    out_u32(o, n);
    for (int i = 0; i < count; i++) {
        if (!sluice_mount_used(i))
            continue;
        out_bytes(o, sluice_mount_type(i), (uint32_t)strlen(sluice_mount_type(i)));
        out_bytes(o, "\t", 1);
        out_bytes(o, sluice_mount_point(i), (uint32_t)strlen(sluice_mount_point(i)));
        out_bytes(o, "\n", 1);
    }
}

struct region {
    uint32_t type, version;
    uint64_t offset, length;
    uint32_t crc;
};

static void region_begin(struct out *o, struct region *r, uint32_t type, uint32_t version)
{
    r->type = type;
    r->version = version;
    r->offset = o->off + o->used;
    o->crc = 0;
    o->crc_from = o->used;
}

static void region_end(struct out *o, struct region *r)
{
    out_crc_catch_up(o);
    r->length = o->off + o->used - r->offset;
    r->crc = o->crc;
}

/* Whether a record counted anything (its alignments are set at creation). */
static int record_active(const struct sluice_record *r)
{
    for (int side = 0; side < SLUICE_NUM_SIDES; side++)
        for (int i = 0; i < r->ni; i++)
            if (r->ic[side * r->ni + i] > 0 &&
                !(r->module == SLUICE_MOD_POSIX && (i == POSIX_MEM_ALIGNMENT || i == POSIX_FILE_ALIGNMENT)))
                return 1;
    return 0;
}

static void put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* MODULE records go out column by column (layout 1, sluice_logfmt.h): a
 * group of records is staged here as values, V per record, then written
 * byte plane by byte plane. Groups, not the whole module, because the
 * writer may not allocate; 256 records make runs long enough for deflate
 * (a whole-module transposition would gain another 10 %). */
#define GROUP_MAX 256
static uint64_t gvals[64 * 1024];

/* Seconds (clock ticks times seconds per tick) as integer nanoseconds,
 * rounded; out-of-range values (never a real time) are clamped. */
static int64_t ticks_to_ns(double ticks, double ns_per_tick)
{
    double ns = ticks * ns_per_tick;
    if (!(ns == ns))
        return 0;
    if (ns >= 9.2e18)
        return INT64_MAX;
    if (ns <= -9.2e18)
        return INT64_MIN;
    return (int64_t)(ns + (ns >= 0 ? 0.5 : -0.5));
}

/* One record's V values into v: the name index, flags, app ints, fs ints
 * minus app, app times in ns, fs minus app in ns. The counters are copied
 * under the record's lock when it can be taken at once (from a signal
 * handler the holder may be the interrupted thread). */
static void stage_record(uint64_t *v, struct sluice_record *r, uint32_t name_index, double ns_per_tick)
{
    int locked = sluice_record_trylock(r);
    const int64_t *app = sluice_record_ints(r, 0), *fs = sluice_record_ints(r, 1);
    const double *fapp = sluice_record_floats(r, 0), *ffs = sluice_record_floats(r, 1);
    size_t k = 0;

    v[k++] = name_index;
    v[k++] = r->flags;
    for (int i = 0; i < r->ni; i++)
        v[k++] = (uint64_t)app[i];
    for (int i = 0; i < r->ni; i++)
        v[k++] = (uint64_t)fs[i] - (uint64_t)app[i];
    for (int i = 0; i < r->nf; i++)
        v[k++] = (uint64_t)ticks_to_ns(fapp[i], ns_per_tick);
    for (int i = 0; i < r->nf; i++)
        v[k++] = (uint64_t)ticks_to_ns(ffs[i], ns_per_tick) - (uint64_t)ticks_to_ns(fapp[i], ns_per_tick);
    if (locked)
        sluice_record_unlock(r);
}

/* A staged group of g records of V values: the bitmap of the byte planes
 * that are not all zero, then those planes. Most planes of a group are
 * zero (counters never touched, the fs side equal to the app side, the
 * high bytes of small values): they cost a bit each, and neither deflate
 * nor the reader's inflate ever sees them. */
static unsigned char gmap[(8 * sizeof gvals / sizeof gvals[0] + 7) / 8];

static void emit_group(struct out *o, size_t g, size_t nv)
{
    unsigned char plane[GROUP_MAX];
    size_t nbits = 8 * nv;

    memset(gmap, 0, (nbits + 7) / 8);
    for (size_t r = 0; r < g; r++)
        for (size_t k = 0; k < nv; k++) {
            uint64_t v = gvals[r * nv + k];
            for (int b = 0; v; b++, v >>= 8)
                if (v & 0xff)
                    gmap[(b * nv + k) / 8] |= (unsigned char)(1u << ((b * nv + k) % 8));
        }
    out_bytes(o, gmap, (nbits + 7) / 8);
    for (size_t j = 0; j < nbits; j++) {
        if (!(gmap[j / 8] >> (j % 8) & 1))
            continue;
        size_t b = j / nv, k = j % nv;
        for (size_t r = 0; r < g; r++)
            plane[r] = (unsigned char)(gvals[r * nv + k] >> (8 * b));
        out_bytes(o, plane, g);
    }
}

static void sanitize(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++) {
        char c = src[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
        dst[i] = ok ? c : '_';
    }
    dst[i] = '\0';
}

/* mkdir -p with the real mkdir; 0 or -errno. */
static int make_dirs(const char *dir)
{
    char p[PATH_MAX];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof p)
        return -ENAMETOOLONG;
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] == '/' || p[i] == '\0') {
            char c = p[i];
            p[i] = '\0';
            if (SLUICE_REAL(mkdir)(p, 0755) < 0 && errno != EEXIST)
                return -errno;
            p[i] = c;
        }
    }
    return 0;
}

/* The name of a signal the crash handler catches (sigabbrev_np is not
 * async-signal-safe by contract, and glibc 2.32 at least). */
static const char *fatal_signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return "signal";
    }
}

enum content { C_PROCESS, C_SCHEMA, C_NAMES, C_MODULE, C_TRACE };

/* What the regions are written from. */
struct source {
    unsigned end_reason;
    struct sluice_record *head;
    uint32_t gen;       /* the records to write carry this log_gen */
    double spt;         /* seconds per clock tick */
    unsigned module;    /* C_MODULE: which */
    uint32_t nrec[SLUICE_MOD_END]; /* records to write per module */
    uint64_t ntrace, trace_dropped;  /* trace segments to write (marked 2), and not */
};

/* Values per record in a MODULE region of layout 1, and records per group. */
static size_t module_values(const struct sluice_module_info *mi)
{
    return 2 + 2 * (size_t)mi->ni + 2 * (size_t)mi->nf;
}

static size_t module_group(const struct sluice_module_info *mi)
{
    size_t g = sizeof gvals / sizeof gvals[0] / module_values(mi);
    return g > GROUP_MAX ? GROUP_MAX : g;
}

/* The trace's segments marked for this log (done == 2), column by column. */
static void emit_trace(struct out *o, const struct source *src)
{
    const int64_t kept = sluice_trace_kept();
    const double ns_per_tick = src->spt * 1e9;

    out_u64(o, src->ntrace);
    out_u64(o, src->trace_dropped);
    for (int col = 0; col < 7; col++)
        for (int64_t i = 0; i < kept; i++) {
            const struct sluice_trace_seg *g = &sluice_trace_segs[i];
            /* exactly the segments mark_records counted */
            if (atomic_load_explicit(&g->done, memory_order_acquire) != 2 || !g->rec || g->rec->log_gen != src->gen)
                continue;
            switch (col) {
            case 0: out_u32(o, g->rec->log_index); break;
            case 1: { unsigned char m = (unsigned char)g->rec->module; out_bytes(o, &m, 1); break; }
            case 2: out_bytes(o, &g->op, 1); break;
            case 3: out_u64(o, (uint64_t)g->offset); break;
            case 4: out_u64(o, (uint64_t)g->length); break;
            case 5: out_u64(o, (uint64_t)ticks_to_ns(sluice_ticks_since_start(g->t0), ns_per_tick)); break;
            default: out_u64(o, (uint64_t)ticks_to_ns(sluice_ticks_since_start(g->t1), ns_per_tick)); break;
            }
        }
}

/* The bytes of one region (without its compression). */
static void emit(struct out *o, enum content what, const struct source *src)
{
    char num[32];

    switch (what) {
    case C_PROCESS: {
        out_u64(o, (uint64_t)sluice_proc.pid);
        out_u64(o, (uint64_t)sluice_proc.ppid);
        out_u64(o, (uint64_t)sluice_proc.rank);
        out_u64(o, (uint64_t)sluice_proc.nprocs);
        out_u64(o, sluice_proc.start_unix_ns);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        out_u64(o, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
        out_u64(o, sluice_proc.start_mono_ns);
        out_u32(o, src->end_reason);
        const char *signame = src->end_reason == SLUICE_END_FATAL ? fatal_signal_name(sluice_proc.fatal_signal) : NULL;
        long runtime_left_out = sluice_policy_runtime_left_out();
        /* (the first-write sizes of auto and --direct-from, for the report
         * to say what decided) */
        int autos = (sluice_policy_modes_used() & (1u << SLUICE_MODE_AUTO | 1u << SLUICE_MODE_STAGE)) != 0;
        out_u32(o, 10 + (signame != NULL) + (runtime_left_out > 0) + 2 * autos);
        out_kv(o, "job_id", sluice_proc.job_id);
        out_kv(o, "host", sluice_proc.host);
        out_kv(o, "exe", sluice_proc.exe);
        out_kv(o, "cmdline", sluice_proc.cmdline);
        out_kv(o, "mode", sluice_cfg.mode);
        out_kv(o, "paths", sluice_cfg.paths);
        out_kv(o, "policy", sluice_cfg.policy);
        snprintf(num, sizeof num, "%u", (unsigned)getuid());
        out_kv(o, "uid", num);
        snprintf(num, sizeof num, "%d.%d", SLUICE_LOG_VERSION_MAJOR, SLUICE_LOG_VERSION_MINOR);
        out_kv(o, "version", num);
        if (signame)
            out_kv(o, "signal", signame);
        if (runtime_left_out > 0) {
            snprintf(num, sizeof num, "%ld", runtime_left_out);
            out_kv(o, "runtime_left_out", num);
        }
        if (autos) {
            snprintf(num, sizeof num, "%lld", (long long)sluice_cfg.auto_large);
            out_kv(o, "auto_large", num);
            out_kv(o, "direct_from", sluice_cfg.direct_from);
        }
        out_mounts(o);
        break;
    }
    case C_SCHEMA: {
        /* only the modules that have records: most logs need one or two */
        uint32_t nmod = 0;
        for (unsigned m = 0; m < SLUICE_MOD_END; m++)
            nmod += sluice_module(m) != NULL && src->nrec[m] > 0;
        out_u32(o, nmod);
        for (unsigned m = 0; m < SLUICE_MOD_END; m++) {
            const struct sluice_module_info *mi = sluice_module(m);
            if (!mi || src->nrec[m] == 0)
                continue;
            out_u16(o, mi->id);
            out_u16(o, mi->version);
            out_str16(o, mi->name);
            out_u16(o, mi->ni);
            out_u16(o, mi->nf);
            for (int i = 0; i < mi->ni; i++)
                out_str16(o, mi->inames[i]);
            for (int i = 0; i < mi->nf; i++)
                out_str16(o, mi->fnames[i]);
        }
        break;
    }
    case C_NAMES: {
        uint32_t nnames = 0;
        for (struct sluice_record *rec = src->head; rec; rec = rec->next)
            nnames += rec->log_gen == src->gen;
        out_u32(o, nnames);
        for (struct sluice_record *rec = src->head; rec; rec = rec->next) {
            if (rec->log_gen != src->gen)
                continue;
            uint32_t n = (uint32_t)strlen(rec->path);
            out_u32(o, n); /* version 2: no id, records refer to their index */
            out_bytes(o, rec->path, n);
        }
        break;
    }
    case C_TRACE:
        emit_trace(o, src);
        break;
    case C_MODULE: {
        const struct sluice_module_info *mi = sluice_module(src->module);
        size_t nv = module_values(mi), group = module_group(mi), g = 0;
        uint32_t index = 0; /* the record's entry in NAMES, written in the same order */
        out_u16(o, (uint16_t)src->module);
        out_u16(o, SLUICE_LOG_LAYOUT_COLUMNS);
        out_u32(o, src->nrec[src->module]);
        out_u32(o, (uint32_t)group);
        for (struct sluice_record *rec = src->head; rec; rec = rec->next) {
            if (rec->log_gen != src->gen)
                continue;
            if (rec->module == src->module) {
                stage_record(gvals + g * nv, rec, index, src->spt * 1e9);
                if (++g == group) {
                    emit_group(o, g, nv);
                    g = 0;
                }
            }
            index++;
        }
        if (g)
            emit_group(o, g, nv);
        break;
    }
    }
}

/* At most the bytes emit() gives for `what` (exactly, but for MODULE
 * regions, whose zero planes are left out): counted from the records for
 * the large regions, by a dry run of emit() for the small ones. Decides
 * whether a region can be compressed (readers take under 4 GiB). */
static uint64_t region_bound(enum content what, const struct source *src)
{
    uint64_t n;

    switch (what) {
    case C_NAMES:
        n = 4;
        for (struct sluice_record *rec = src->head; rec; rec = rec->next)
            if (rec->log_gen == src->gen)
                n += 4 + strlen(rec->path);
        return n;
    case C_TRACE:
        return 16 + SLUICE_LOG_TRACE_SEG_SIZE * src->ntrace;
    case C_MODULE: {
        const struct sluice_module_info *mi = sluice_module(src->module);
        uint64_t nrec = src->nrec[src->module], group = module_group(mi), nv = module_values(mi);
        return 12 + (nrec + group - 1) / group * ((8 * nv + 7) / 8) + 8 * nrec * nv;
    }
    default: {
        struct out dry = {.counting = 1};
        emit(&dry, what, src);
        return dry.counted;
    }
    }
}

/* Replace n bytes at file offset `off`, which were written already: in
 * the file, or still in wbuf, or partly each. */
static void out_patch(struct out *o, uint64_t off, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t at = off + i;
        if (at >= o->off) {
            wbuf[at - o->off] = p[i];
        } else if (!o->err && SLUICE_REAL(pwrite)(o->fd, p + i, 1, (off_t)at) != 1) {
            o->err = errno ? -errno : -EIO;
        }
    }
}

/* The smallest window (9 to 15 bits) that holds a region of at most
 * `bound` bytes, so that deflate matches as far back as with the largest,
 * and its hash of (window bits - 7) bits: zlib clears the hash table and
 * window it is given, and at 15 and 8 bits (256 KiB) that was most of a
 * short process's log writing, and 64 page faults. Any inflate reads the
 * stream, whatever window its header names. */
static int z_window_bits(uint64_t bound)
{
    int wbits = 9;
    while (wbits < 15 && ((uint64_t)1 << wbits) < bound)
        wbits++;
    return wbits;
}

/* One region, deflated when `compress` and zlib gets its memory, else
 * plain. A compressed region's inflated length goes before its stream but
 * is known only after it (a MODULE region's size depends on its values,
 * which other threads may still change): it is patched in, and the
 * region's CRC combined from the head's and the stream's. */
static void put_region(struct out *o, struct region *r, uint32_t type, uint32_t version, int compress,
                       enum content what, const struct source *src)
{
    if (compress) {
        zmem_used = 0;
        memset(&zs, 0, sizeof zs);
        zs.zalloc = zmem_alloc;
        zs.zfree = zmem_free;
        /* readers take a stream and its inflated size under 4 GiB */
        uint64_t bound = region_bound(what, src);
        int wbits = z_window_bits(bound);
        compress = bound < UINT32_MAX - 1 &&
                   deflateInit2(&zs, SLUICE_LOG_ZLEVEL, Z_DEFLATED, wbits, wbits - 7, Z_DEFAULT_STRATEGY) == Z_OK;
    }
    if (!compress) {
        region_begin(o, r, type, version);
        emit(o, what, src);
        region_end(o, r);
        return;
    }
    unsigned char head[SLUICE_LOG_DEFLATE_HEAD] = {0};
    put_le(head, type, 4);
    region_begin(o, r, SLUICE_LOG_R_DEFLATE, version);
    out_bytes(o, head, sizeof head);
    out_crc_catch_up(o);
    o->crc = 0; /* from here, the stream's CRC alone */
    o->z = &zs;
    o->counted = 0;
    zin_used = 0;
    emit(o, what, src);
    z_pump(o, Z_FINISH);
    deflateEnd(&zs);
    o->z = NULL;
    region_end(o, r);
    put_le(head + 8, o->counted, 8);
    out_patch(o, r->offset, head, sizeof head);
    r->crc = (uint32_t)crc32_combine(sluice_crc32(0, head, sizeof head), r->crc,
                                     (z_off_t)(r->length - sizeof head));
}

/* Fix the records to write: every active one. Records can become active,
 * or be created, while we write (other threads; a SIGTERM): the set is
 * fixed once, here, by marking it, and only marked records are written in
 * NAMES and MODULE regions, so the two always agree (a path shared by two
 * modules is listed once per module's record). Returns how many regions
 * the log will have: PROCESS, SCHEMA, NAMES and a MODULE per module with
 * records. */
static int mark_records(struct source *src)
{
    static uint32_t write_gen;
    int nreg = 3;

    src->head = sluice_records_first();
    src->gen = ++write_gen;
    uint32_t index = 0;
    for (struct sluice_record *rec = src->head; rec; rec = rec->next)
        if (rec->module < SLUICE_MOD_END && sluice_module(rec->module) && record_active(rec)) {
            rec->log_gen = src->gen;
            rec->log_index = index++;   /* NAMES lists the marked records in this order */
            src->nrec[rec->module]++;
        }
    for (unsigned m = 0; m < SLUICE_MOD_END; m++)
        nreg += src->nrec[m] > 0;
    /* The trace: the segments complete now whose file is in the log are
     * marked 2, the set the TRACE region holds (a call still being traced
     * by another thread is left out, and counted as dropped). A segment an
     * earlier log of this process held (an exec that failed: the process
     * goes on and writes again) is held again, as its counters are. */
    int64_t kept = sluice_trace_kept();
    src->trace_dropped = (uint64_t)sluice_trace_dropped();
    for (int64_t i = 0; i < kept; i++) {
        struct sluice_trace_seg *g = &sluice_trace_segs[i];
        unsigned char one = 1;
        int taken = atomic_load_explicit(&g->done, memory_order_acquire) == 2 ||
                    atomic_compare_exchange_strong_explicit(&g->done, &one, 2, memory_order_acq_rel,
                                                            memory_order_acquire);
        if (taken && g->rec && g->rec->log_gen == src->gen)
            src->ntrace++;
        else
            src->trace_dropped++;
    }
    nreg += src->ntrace > 0 || src->trace_dropped > 0;
    return nreg;
}

static void write_regions(struct out *o, struct region *reg, int *nreg, struct source *src)
{
    int z = sluice_cfg.log_compress;

    /* PROCESS stays plain: who ran is readable with `strings`. */
    put_region(o, &reg[(*nreg)++], SLUICE_LOG_R_PROCESS, 1, 0, C_PROCESS, src);
    put_region(o, &reg[(*nreg)++], SLUICE_LOG_R_SCHEMA, 1, z, C_SCHEMA, src);
    put_region(o, &reg[(*nreg)++], SLUICE_LOG_R_NAMES, SLUICE_LOG_NAMES_INDEXED, z, C_NAMES, src);
    for (unsigned m = 0; m < SLUICE_MOD_END; m++) {
        if (src->nrec[m] == 0)
            continue;
        src->module = m;
        put_region(o, &reg[(*nreg)++], SLUICE_LOG_R_MODULE, sluice_module(m)->version, z, C_MODULE, src);
    }
    if (src->ntrace > 0 || src->trace_dropped > 0)
        put_region(o, &reg[(*nreg)++], SLUICE_LOG_R_TRACE, 1, z, C_TRACE, src);
}

int sluice_log_write(const char *dir, unsigned end_reason, unsigned flags,
                     char *final_path, unsigned long final_path_len)
{
    char name[PATH_MAX], tmp[PATH_MAX], job[128], host[128], exe[64];
    struct region reg[4 + SLUICE_MOD_END];
    int nreg = 0;
    struct out o = {0};
    int rc;

    if (atomic_flag_test_and_set(&writing))
        return -EALREADY;
    if (final_path && final_path_len)
        final_path[0] = '\0';
    /* A process that recorded nothing (a shell, a launcher, a tool outside
     * --path) leaves no log: on a parallel file system every log is a file
     * create, and a job of many helper processes would bury its own. */
    int any = end_reason == SLUICE_END_FATAL;   /* a crash is always told */
    for (struct sluice_record *rec = sluice_records_first(); rec && !any; rec = rec->next)
        any = record_active(rec);
    if (!any) {
        atomic_flag_clear(&writing);
        return 0;
    }
    const char *base = strrchr(sluice_proc.exe, '/');
    sanitize(job, sizeof job, sluice_proc.job_id);
    sanitize(host, sizeof host, sluice_proc.host);
    sanitize(exe, sizeof exe, base ? base + 1 : sluice_proc.exe);
    rc = snprintf(name, sizeof name, "%s/%s_%s_%lld_%s_%llx.sluice", dir, job, host,
                  (long long)sluice_proc.pid, exe, (unsigned long long)sluice_proc.start_unix_ns);
    if (rc < 0 || (size_t)rc >= sizeof name ||
        snprintf(tmp, sizeof tmp, "%s.tmp", name) >= (int)sizeof tmp) {
        rc = -ENAMETOOLONG;
        goto fail;
    }
    /* The directory is made only when missing: sluice run makes it before
     * the job, and a mkdir of each of its parents per process would cost a
     * round trip each on a parallel file system. */
    o.fd = SLUICE_REAL(openat)(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (o.fd < 0 && errno == ENOENT) {
        if ((rc = make_dirs(dir)) < 0)
            goto fail;
        o.fd = SLUICE_REAL(openat)(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    }
    if (o.fd < 0) {
        rc = -errno;
        goto fail;
    }

    /* Header and region table are written last, at offset 0. */
    struct source src = {.end_reason = end_reason, .spt = sluice_clock_seconds_per_tick()};
    const uint32_t table_off = SLUICE_LOG_HEADER_SIZE;
    const uint32_t nregions = (uint32_t)mark_records(&src);
    o.off = table_off + (uint64_t)nregions * SLUICE_LOG_REGION_ENTRY_SIZE;
    if (SLUICE_REAL(lseek)(o.fd, (off_t)o.off, SEEK_SET) < 0) {
        rc = -errno;
        goto fail_close;
    }
    write_regions(&o, reg, &nreg, &src);
    out_flush(&o);
    if (o.err) {
        rc = o.err;
        goto fail_close;
    }

    unsigned char head[SLUICE_LOG_HEADER_SIZE + SLUICE_LOG_MAX_REGIONS * SLUICE_LOG_REGION_ENTRY_SIZE];
    size_t hlen = table_off + (size_t)nreg * SLUICE_LOG_REGION_ENTRY_SIZE;
    memset(head, 0, hlen);
    memcpy(head, SLUICE_LOG_MAGIC, 8);
    put_le(head + 8, SLUICE_LOG_VERSION_MAJOR, 2);
    put_le(head + 10, SLUICE_LOG_VERSION_MINOR, 2);
    put_le(head + 12, SLUICE_LOG_HEADER_SIZE, 4);
    put_le(head + 16, (uint64_t)nreg, 4);
    put_le(head + 20, flags | (sluice_records_partial() ? SLUICE_LOG_F_PARTIAL : 0), 4);
    put_le(head + 24, o.off, 8);
    put_le(head + 32, table_off, 4);
    for (int i = 0; i < nreg; i++) {
        unsigned char *e = head + table_off + (size_t)i * SLUICE_LOG_REGION_ENTRY_SIZE;
        put_le(e, reg[i].type, 4);
        put_le(e + 4, reg[i].version, 4);
        put_le(e + 8, reg[i].offset, 8);
        put_le(e + 16, reg[i].length, 8);
        put_le(e + 24, reg[i].crc, 4);
    }
    uint32_t hcrc = sluice_crc32(0, head, 60);
    hcrc = sluice_crc32(hcrc, head + table_off, hlen - table_off);
    put_le(head + 60, hcrc, 4);
    if (SLUICE_REAL(pwrite)(o.fd, head, hlen, 0) != (ssize_t)hlen) {
        rc = errno ? -errno : -EIO;
        goto fail_close;
    }
    if (SLUICE_REAL(close)(o.fd) < 0) {
        rc = -errno;
        o.fd = -1;
        goto fail_unlink;
    }
    if (SLUICE_REAL(rename)(tmp, name) < 0) {
        rc = -errno;
        goto fail_unlink;
    }
    if (final_path && final_path_len) {
        strncpy(final_path, name, final_path_len - 1);
        final_path[final_path_len - 1] = '\0';
    }
    atomic_flag_clear(&writing);
    return 0;

fail_close:
    SLUICE_REAL(close)(o.fd);
fail_unlink:
    SLUICE_REAL(unlink)(tmp);
fail:
    if (!sluice_cfg.quiet)
        sluice_diag("could not write the log into %s (errno %d): this process's profile is lost", dir, -rc);
    atomic_flag_clear(&writing);
    return rc;
}
