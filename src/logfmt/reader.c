/*
 * The log reader; see sluice/sluice_logreader.h and docs/logformat.md.
 *
 * Every field is read through a cursor that knows how many bytes remain, so
 * a count or a length is compared with what is left before anything is
 * allocated or copied for it; sizes are computed in uint64_t from values of
 * at most 32 bits, or checked by division, so nothing wraps. The accept and
 * reject rules are those of python/sluice/logfmt.py.
 */
#include "sluice/sluice_logreader.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "common/crc32.h"
#include "sluice/sluice_logfmt.h"

/* ---- memory: one arena for everything a log holds ---- */

struct block {
    struct block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

struct sluice_log {
    struct block *arena;
    struct sluice_log_process proc;
    struct sluice_log_kv *info;
    size_t ninfo;
    struct sluice_log_module *modules;
    size_t nmodules;
    struct sluice_log_record *records;
    size_t nrecords;
    struct sluice_log_segment *segs;
    size_t nsegs;
    uint64_t trace_dropped;
    int has_trace;
};

#define BLOCK_SIZE ((size_t)64 * 1024)

/* n bytes, 16-aligned, zeroed; NULL when out of memory. */
static void *arena_alloc(struct sluice_log *log, size_t n)
{
    struct block *b = log->arena;

    if (n > SIZE_MAX / 2)
        return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > BLOCK_SIZE ? n : BLOCK_SIZE;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        /* A block bigger than the usual size goes behind the current one,
         * so the room left in the current block is not lost. */
        if (cap > BLOCK_SIZE && log->arena) {
            b->next = log->arena->next;
            log->arena->next = b;
        } else {
            b->next = log->arena;
            log->arena = b;
        }
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

/* An array of n elements of `size` bytes, or NULL (also on overflow). */
static void *arena_array(struct sluice_log *log, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / 2 / size)
        return NULL;
    return arena_alloc(log, n * size);
}

void sluice_logreader_close(struct sluice_log *log)
{
    if (!log)
        return;
    struct block *b = log->arena;
    while (b) {
        struct block *next = b->next;
        free(b);
        b = next;
    }
    free(log->info);
    free(log->modules);
    free(log->records);
    free(log->segs);
    free(log);
}

/* ---- messages ---- */

struct ctx {
    const char *name;
    char *err;
    size_t errlen;
    struct sluice_log *log;
};

/* "NAME: problem" into err, on one line whatever NAME holds. Returns -1. */
static int fail(struct ctx *c, const char *fmt, ...)
{
    if (!c->err || c->errlen == 0)
        return -1;
    int n = snprintf(c->err, c->errlen, "%s: ", c->name ? c->name : "(log)");
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    for (char *p = c->err; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return -1;
}

static int oom(struct ctx *c)
{
    return fail(c, "out of memory");
}

/* ---- little-endian fields and the bounded cursor ---- */

static uint16_t le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

struct cur {
    const unsigned char *p;
    size_t left;
};

/* The next n bytes, or NULL when fewer remain. */
static const unsigned char *take(struct cur *c, size_t n)
{
    if (n > c->left)
        return NULL;
    const unsigned char *p = c->p;
    c->p += n;
    c->left -= n;
    return p;
}

static int get16(struct cur *c, uint16_t *v)
{
    const unsigned char *p = take(c, 2);
    if (!p)
        return -1;
    *v = le16(p);
    return 0;
}

static int get32(struct cur *c, uint32_t *v)
{
    const unsigned char *p = take(c, 4);
    if (!p)
        return -1;
    *v = le32(p);
    return 0;
}

static int get64(struct cur *c, uint64_t *v)
{
    const unsigned char *p = take(c, 8);
    if (!p)
        return -1;
    *v = le64(p);
    return 0;
}

/* Copy n bytes of the cursor into a NUL-terminated string.
 * 0, -1 (truncated) or -2 (out of memory). */
static int get_bytes(struct ctx *c, struct cur *cur, size_t n, struct sluice_log_string *s)
{
    const unsigned char *p = take(cur, n);
    if (!p)
        return -1;
    char *d = arena_alloc(c->log, n + 1); /* n < region length <= file size: no wrap */
    if (!d)
        return -2;
    memcpy(d, p, n);
    d[n] = '\0';
    s->ptr = d;
    s->len = n;
    return 0;
}

static int get_str16(struct ctx *c, struct cur *cur, struct sluice_log_string *s)
{
    uint16_t n;
    if (get16(cur, &n) < 0)
        return -1;
    return get_bytes(c, cur, n, s);
}

static int get_str32(struct ctx *c, struct cur *cur, struct sluice_log_string *s)
{
    uint32_t n;
    if (get32(cur, &n) < 0)
        return -1;
    return get_bytes(c, cur, n, s);
}

/* Report a cursor failure: rc -1 truncated, -2 out of memory. */
static int cur_fail(struct ctx *c, int rc, const char *what)
{
    if (rc == -2)
        return oom(c);
    return fail(c, "%s region is truncated", what);
}

/* ---- regions ---- */

struct region {
    uint32_t type, version;
    const unsigned char *body;
    size_t len;
};

static int parse_process(struct ctx *c, struct cur *cur)
{
    struct sluice_log_process *pr = &c->log->proc;
    uint64_t v[7] = {0};
    uint32_t nstr;
    int rc;

    for (int i = 0; i < 7; i++)
        if (get64(cur, &v[i]) < 0)
            return cur_fail(c, -1, "process");
    if (get32(cur, &pr->end_reason) < 0 || get32(cur, &nstr) < 0)
        return cur_fail(c, -1, "process");
    pr->pid = v[0];
    pr->ppid = v[1];
    memcpy(&pr->rank, &v[2], sizeof pr->rank);
    memcpy(&pr->nprocs, &v[3], sizeof pr->nprocs);
    pr->start_ns = v[4];
    pr->end_ns = v[5];
    pr->start_mono_ns = v[6];

    /* Each string takes at least 6 bytes (its two lengths). */
    if (nstr > cur->left / 6)
        return cur_fail(c, -1, "process");
    if (nstr) {
        c->log->info = calloc(nstr, sizeof *c->log->info);
        if (!c->log->info)
            return oom(c);
    }
    for (uint32_t i = 0; i < nstr; i++) {
        struct sluice_log_kv *kv = &c->log->info[i];
        if ((rc = get_str16(c, cur, &kv->key)) < 0 || (rc = get_str32(c, cur, &kv->value)) < 0)
            return cur_fail(c, rc, "process");
        c->log->ninfo++;
    }
    return 0;
}

/* Slot of each module id in log->modules, plus one; 0: not described. */
struct modmap {
    uint32_t slot[65536];
};

static int parse_schema(struct ctx *c, struct cur *cur, struct modmap *map, size_t *cap)
{
    struct sluice_log *log = c->log;
    uint32_t count;
    int rc;

    if (get32(cur, &count) < 0)
        return cur_fail(c, -1, "schema");
    /* id, version, name length, ni, nf: at least 10 bytes per module. */
    if (count > cur->left / 10)
        return cur_fail(c, -1, "schema");
    if (log->nmodules + count > *cap) {
        size_t ncap = log->nmodules + count; /* bounded by the file size / 10 */
        if (ncap > SIZE_MAX / sizeof *log->modules)
            return oom(c);
        struct sluice_log_module *m = realloc(log->modules, ncap * sizeof *m);
        if (!m)
            return oom(c);
        log->modules = m;
        *cap = ncap;
    }
    for (uint32_t k = 0; k < count; k++) {
        struct sluice_log_module m = {0};
        if (get16(cur, &m.id) < 0 || get16(cur, &m.version) < 0)
            return cur_fail(c, -1, "schema");
        if ((rc = get_str16(c, cur, &m.name)) < 0)
            return cur_fail(c, rc, "schema");
        if (get16(cur, &m.ni) < 0 || get16(cur, &m.nf) < 0)
            return cur_fail(c, -1, "schema");
        /* Every name takes at least its 2-byte length. */
        if ((size_t)m.ni + m.nf > cur->left / 2)
            return cur_fail(c, -1, "schema");
        struct sluice_log_string *names = arena_array(log, (size_t)m.ni + m.nf, sizeof *names);
        if (!names)
            return oom(c);
        for (size_t i = 0; i < (size_t)m.ni + m.nf; i++)
            if ((rc = get_str16(c, cur, &names[i])) < 0)
                return cur_fail(c, rc, "schema");
        m.int_names = names;
        m.float_names = names + m.ni;
        if (map->slot[m.id]) {
            log->modules[map->slot[m.id] - 1] = m; /* described again: last wins */
        } else {
            log->modules[log->nmodules++] = m;
            map->slot[m.id] = (uint32_t)log->nmodules;
        }
    }
    return 0;
}

struct name {
    uint64_t id;
    size_t seq;
    struct sluice_log_string path;
};

static int name_cmp(const void *a, const void *b)
{
    const struct name *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The path of record `id`: the last NAMES entry for it, or NULL. */
static const struct sluice_log_string *name_find(const struct name *v, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n; /* first entry with an id > `id` */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].id <= id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && v[lo - 1].id == id ? &v[lo - 1].path : NULL;
}

/* What NAMES regions say: entries with ids (version 1, logs before 3.0),
 * sorted by id once all are read, and entries numbered in table order
 * (version 2), which MODULE regions of layout 1 refer to by index. */
struct names {
    struct name *byid;
    size_t nbyid, byid_cap;
    struct sluice_log_string *indexed;
    size_t nindexed, indexed_cap;
};

/* Room for `count` more elements of `size` bytes in *v (capacity *cap). */
static int names_reserve(struct ctx *c, void **v, size_t *cap, size_t n, uint32_t count, size_t size)
{
    if (n + count <= *cap)
        return 0;
    size_t ncap = n + count;
    if (ncap > SIZE_MAX / size)
        return oom(c);
    void *nv = realloc(*v, ncap * size);
    if (!nv)
        return oom(c);
    *v = nv;
    *cap = ncap;
    return 0;
}

static int parse_names(struct ctx *c, struct cur *cur, uint32_t version, struct names *t)
{
    uint32_t count;
    int rc;

    if (get32(cur, &count) < 0)
        return cur_fail(c, -1, "names");
    if (version == SLUICE_LOG_NAMES_INDEXED) {
        /* length: at least 4 bytes per name. */
        if (count > cur->left / 4)
            return cur_fail(c, -1, "names");
        if (names_reserve(c, (void **)&t->indexed, &t->indexed_cap, t->nindexed, count, sizeof *t->indexed) < 0)
            return -1;
        for (uint32_t k = 0; k < count; k++) {
            if ((rc = get_str32(c, cur, &t->indexed[t->nindexed])) < 0)
                return cur_fail(c, rc, "names");
            t->nindexed++;
        }
        return 0;
    }
    /* id and length: at least 12 bytes per name. */
    if (count > cur->left / 12)
        return cur_fail(c, -1, "names");
    if (names_reserve(c, (void **)&t->byid, &t->byid_cap, t->nbyid, count, sizeof *t->byid) < 0)
        return -1;
    for (uint32_t k = 0; k < count; k++) {
        struct name *e = &t->byid[t->nbyid];
        if (get64(cur, &e->id) < 0)
            return cur_fail(c, -1, "names");
        if ((rc = get_str32(c, cur, &e->path)) < 0)
            return cur_fail(c, rc, "names");
        e->seq = t->nbyid++;
    }
    return 0;
}

/* First pass over a MODULE region: its module (NULL: skipped), record
 * count, layout and (layout 1) records per group, checked against the
 * region's size. */
struct module_head {
    const struct sluice_log_module *mod;
    uint32_t nrec, group;
    uint16_t layout;
};

static int module_head(struct ctx *c, const struct region *r, const struct modmap *map, struct module_head *h,
                       struct cur *cur)
{
    uint16_t mid;

    cur->p = r->body;
    cur->left = r->len;
    if (get16(cur, &mid) < 0 || get16(cur, &h->layout) < 0 || get32(cur, &h->nrec) < 0)
        return cur_fail(c, -1, "module");
    h->mod = map->slot[mid] ? &c->log->modules[map->slot[mid] - 1] : NULL;
    if (!h->mod)
        return 0; /* a module the SCHEMA does not describe: skipped */
    uint64_t rec_size;
    if (c->log->proc.version_major < 3 || h->layout == SLUICE_LOG_LAYOUT_ROWS) {
        rec_size = 16 + 16 * (uint64_t)h->mod->ni + 16 * (uint64_t)h->mod->nf;
    } else if (h->layout == SLUICE_LOG_LAYOUT_COLUMNS) {
        if (get32(cur, &h->group) < 0)
            return cur_fail(c, -1, "module");
        if (h->group == 0 && h->nrec > 0)
            return fail(c, "%s region is corrupt (records in groups of 0)", h->mod->name.ptr);
        /* Each group takes at least its bitmap (V bytes), and a record at
         * least a byte (a group of g > 1 records stores the low byte of
         * their distinct NAMES indexes); the planes are checked as they
         * are read. */
        uint64_t nv = 2 + 2 * (uint64_t)h->mod->ni + 2 * (uint64_t)h->mod->nf;
        uint64_t ngroups = h->group ? ((uint64_t)h->nrec + h->group - 1) / h->group : 0;
        if (h->nrec > cur->left || ngroups > cur->left / nv)
            return fail(c, "%s region is truncated (%lu records announced)", h->mod->name.ptr,
                        (unsigned long)h->nrec);
        return 0;
    } else {
        return fail(c, "%s region has an unknown layout (%u)", h->mod->name.ptr, (unsigned)h->layout);
    }
    if (h->nrec > cur->left / rec_size)
        return fail(c, "%s region is truncated (%lu records announced)", h->mod->name.ptr, (unsigned long)h->nrec);
    return 0;
}

/* Values of a layout-1 region, back into records: group by group, each
 * group's stored byte planes or'ed into its values (sluice_logfmt.h). */
static int parse_columns(struct ctx *c, const struct module_head *h, struct cur *cur, int64_t *iv, double *fv,
                         const struct names *t)
{
    struct sluice_log *log = c->log;
    const struct sluice_log_module *mod = h->mod;
    size_t ni = mod->ni, nf = mod->nf, nv = 2 + 2 * ni + 2 * nf;
    size_t gmax = h->nrec < h->group ? h->nrec : h->group;
    uint64_t *vals = gmax <= SIZE_MAX / sizeof *vals / nv ? malloc(gmax * nv * sizeof *vals) : NULL;
    int rc = -1;

    if (!vals)
        return oom(c);
    for (size_t first = 0; first < h->nrec; first += h->group) {
        size_t g = h->nrec - first < h->group ? h->nrec - first : h->group;
        const unsigned char *map = take(cur, nv); /* 8 nv bits */
        if (!map) {
            fail(c, "%s region is truncated (%lu records announced)", mod->name.ptr, (unsigned long)h->nrec);
            goto out;
        }
        memset(vals, 0, g * nv * sizeof *vals);
        for (size_t j = 0; j < 8 * nv; j++) {
            if (!(map[j / 8] >> (j % 8) & 1))
                continue;
            const unsigned char *plane = take(cur, g);
            if (!plane) {
                fail(c, "%s region is truncated (%lu records announced)", mod->name.ptr, (unsigned long)h->nrec);
                goto out;
            }
            size_t b = j / nv, k = j % nv;
            for (size_t r = 0; r < g; r++)
                vals[r * nv + k] |= (uint64_t)plane[r] << (8 * b);
        }
        for (size_t r = 0; r < g; r++) {
            struct sluice_log_record *rec = &log->records[log->nrecords];
            size_t k = first + r;
            const uint64_t *v = vals + r * nv;
            rec->module = mod;
            rec->id = v[0]; /* its NAMES index until every plane is read */
            rec->flags = (uint32_t)v[1];
            int64_t *ri = iv + k * 2 * ni;
            double *rf = fv + k * 2 * nf;
            for (size_t i = 0; i < ni; i++) {
                uint64_t app = v[2 + i], fs = app + v[2 + ni + i];
                memcpy(&ri[i], &app, sizeof app);
                memcpy(&ri[ni + i], &fs, sizeof fs);
            }
            for (size_t i = 0; i < nf; i++) {
                uint64_t app = v[2 + 2 * ni + i], fs = app + v[2 + 2 * ni + nf + i];
                int64_t a, f;
                memcpy(&a, &app, sizeof a);
                memcpy(&f, &fs, sizeof f);
                rf[i] = (double)a / 1e9;
                rf[nf + i] = (double)f / 1e9;
            }
            rec->app_int = ri;
            rec->fs_int = ri + ni;
            rec->app_float = rf;
            rec->fs_float = rf + nf;
            log->nrecords++;
        }
    }
    /* Names after the planes, so that a damaged region gives the message
     * the Python reader gives. */
    for (size_t k = 0; k < h->nrec; k++) {
        struct sluice_log_record *rec = &log->records[log->nrecords - h->nrec + k];
        if (rec->id >= t->nindexed) {
            fail(c, "%s record %zu has no name", mod->name.ptr, k);
            goto out;
        }
        rec->path = t->indexed[rec->id];
        rec->id = sluice_log_record_id(mod->id, rec->path.ptr, rec->path.len);
    }
    rc = 0;
out:
    free(vals);
    return rc;
}

static int parse_module(struct ctx *c, const struct region *r, const struct modmap *map, const struct names *t)
{
    struct sluice_log *log = c->log;
    struct module_head h = {0};
    struct cur cur;

    if (module_head(c, r, map, &h, &cur) < 0)
        return -1;
    const struct sluice_log_module *mod = h.mod;
    if (!mod || h.nrec == 0)
        return 0;
    uint32_t nrec = h.nrec;
    size_t ni = mod->ni, nf = mod->nf;
    /* The values take as many bytes as the region holds for them
     * (module_head checked nrec * record size against it). */
    int64_t *iv = arena_alloc(log, (size_t)nrec * 2 * ni * sizeof(int64_t));
    double *fv = arena_alloc(log, (size_t)nrec * 2 * nf * sizeof(double));
    if (!iv || !fv)
        return oom(c);
    if (h.layout == SLUICE_LOG_LAYOUT_COLUMNS && log->proc.version_major >= 3)
        return parse_columns(c, &h, &cur, iv, fv, t);
    for (uint32_t k = 0; k < nrec; k++) {
        struct sluice_log_record *rec = &log->records[log->nrecords];
        uint64_t flags_zero;
        const unsigned char *p;

        if (get64(&cur, &rec->id) < 0 || get64(&cur, &flags_zero) < 0)
            return cur_fail(c, -1, "module"); /* not reached: size checked */
        rec->flags = (uint32_t)flags_zero;
        rec->module = mod;
        int64_t *ri = iv + (size_t)k * 2 * ni;
        double *rf = fv + (size_t)k * 2 * nf;
        if (!(p = take(&cur, 16 * ni)))
            return cur_fail(c, -1, "module");
        for (size_t i = 0; i < 2 * ni; i++) {
            uint64_t u = le64(p + 8 * i);
            memcpy(&ri[i], &u, sizeof u);
        }
        if (!(p = take(&cur, 16 * nf)))
            return cur_fail(c, -1, "module");
        for (size_t i = 0; i < 2 * nf; i++) {
            uint64_t u = le64(p + 8 * i);
            memcpy(&rf[i], &u, sizeof u);
        }
        rec->app_int = ri;
        rec->fs_int = ri + ni;
        rec->app_float = rf;
        rec->fs_float = rf + nf;
        const struct sluice_log_string *path = name_find(t->byid, t->nbyid, rec->id);
        if (!path)
            return fail(c, "%s record 0x%llx has no name", mod->name.ptr, (unsigned long long)rec->id);
        rec->path = *path;
        log->nrecords++;
    }
    return 0;
}

/* A TRACE region: its segments after those of earlier ones. */
static int parse_trace(struct ctx *c, const struct region *r, const struct names *t)
{
    struct sluice_log *log = c->log;
    struct cur cur = {r->body, r->len};
    uint64_t n, dropped;

    if (get64(&cur, &n) < 0 || get64(&cur, &dropped) < 0)
        return cur_fail(c, -1, "trace");
    if (n > cur.left / SLUICE_LOG_TRACE_SEG_SIZE)
        return fail(c, "trace region is truncated (%llu segments announced)", (unsigned long long)n);
    log->has_trace = 1;
    log->trace_dropped += dropped;
    if (n == 0)
        return 0;
    if (log->nsegs + n > SIZE_MAX / sizeof *log->segs)
        return oom(c);
    struct sluice_log_segment *segs = realloc(log->segs, (log->nsegs + n) * sizeof *segs);
    if (!segs)
        return oom(c);
    log->segs = segs;
    segs += log->nsegs;
    const unsigned char *p = cur.p;
    const unsigned char *idx = p, *mod = p + 4 * n, *op = mod + n, *col = op + n;
    for (uint64_t k = 0; k < n; k++) {
        uint32_t i = le32(idx + 4 * k);
        if (i >= t->nindexed)
            return fail(c, "trace segment %llu names an entry NAMES does not have", (unsigned long long)k);
        segs[k].path = t->indexed[i];
        segs[k].module = mod[k];
        segs[k].op = op[k];
        uint64_t v[4];
        for (int j = 0; j < 4; j++)
            v[j] = le64(col + 8 * ((uint64_t)j * n + k));
        memcpy(&segs[k].offset, &v[0], 8);
        memcpy(&segs[k].length, &v[1], 8);
        memcpy(&segs[k].start_ns, &v[2], 8);
        memcpy(&segs[k].end_ns, &v[3], 8);
    }
    log->nsegs += n;
    return 0;
}

/* A DEFLATE region becomes the region it holds, inflated into *buf (the
 * caller frees it). The stream must end exactly at the end of the region
 * and give exactly the announced length. */
static int inflate_region(struct ctx *c, struct region *r, uint32_t i, unsigned char **buf)
{
    if (r->len < SLUICE_LOG_DEFLATE_HEAD)
        return fail(c, "compressed region %lu is truncated", (unsigned long)i);
    uint32_t type = le32(r->body);
    uint64_t raw = le64(r->body + 8);
    size_t zlen = r->len - SLUICE_LOG_DEFLATE_HEAD;
    /* raw + 1 bytes of room: a stream that would give more is seen to */
    if (type == SLUICE_LOG_R_DEFLATE || raw / SLUICE_LOG_INFLATE_MAX_RATIO > zlen ||
        zlen > UINT_MAX || raw >= UINT_MAX || raw >= SIZE_MAX)
        return fail(c, "corrupt region %lu (type %d, bad compressed data)", (unsigned long)i, SLUICE_LOG_R_DEFLATE);
    if (!(*buf = malloc((size_t)raw + 1)))
        return oom(c);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK)
        return oom(c);
    z.next_in = (Bytef *)(r->body + SLUICE_LOG_DEFLATE_HEAD);
    z.avail_in = (uInt)zlen;
    z.next_out = *buf;
    z.avail_out = (uInt)raw + 1;
    int zrc = inflate(&z, Z_FINISH);
    int ok = zrc == Z_STREAM_END && z.avail_in == 0 && z.total_out == raw;
    inflateEnd(&z);
    if (!ok)
        return fail(c, "corrupt region %lu (type %d, bad compressed data)", (unsigned long)i, SLUICE_LOG_R_DEFLATE);
    r->type = type;
    r->body = *buf;
    r->len = (size_t)raw;
    return 0;
}

/* ---- the whole log ---- */

static int parse_regions(struct ctx *c, const unsigned char *d, size_t len, unsigned char **inflated);

static int parse(struct ctx *c, const unsigned char *d, size_t len)
{
    unsigned char *inflated[SLUICE_LOG_MAX_REGIONS] = {0};
    int rc = parse_regions(c, d, len, inflated);
    for (size_t i = 0; i < SLUICE_LOG_MAX_REGIONS; i++)
        free(inflated[i]);
    return rc;
}

static int parse_regions(struct ctx *c, const unsigned char *d, size_t len, unsigned char **inflated)
{
    struct sluice_log *log = c->log;
    struct region reg[SLUICE_LOG_MAX_REGIONS];
    struct cur cur;

    if (len < SLUICE_LOG_HEADER_SIZE)
        return fail(c, "not a sluice log: %zu bytes is shorter than the header", len);
    if (memcmp(d, SLUICE_LOG_MAGIC, 8) != 0)
        return fail(c, "not a sluice log (bad magic)");
    uint16_t major = le16(d + 8), minor = le16(d + 10);
    uint32_t hsize = le32(d + 12), nreg = le32(d + 16), flags = le32(d + 20);
    uint64_t fsize = le64(d + 24);
    uint32_t table_off = le32(d + 32), hcrc = le32(d + 60);
    if (major < SLUICE_LOG_OLDEST_MAJOR || major > SLUICE_LOG_VERSION_MAJOR)
        return fail(c, "log format version %u.%u is not supported (this reader reads %d.x to %d.x)", major, minor,
                    SLUICE_LOG_OLDEST_MAJOR, SLUICE_LOG_VERSION_MAJOR);
    if (hsize < SLUICE_LOG_HEADER_SIZE || nreg > SLUICE_LOG_MAX_REGIONS || table_off < SLUICE_LOG_HEADER_SIZE)
        return fail(c, "corrupt header");
    uint64_t table_end = (uint64_t)table_off + (uint64_t)nreg * SLUICE_LOG_REGION_ENTRY_SIZE;
    if (table_end > len)
        return fail(c, "truncated: the region table is cut off");
    uint32_t crc = sluice_crc32(0, d, 60);
    crc = sluice_crc32(crc, d + table_off, (size_t)(table_end - table_off));
    if (crc != hcrc)
        return fail(c, "corrupt header (checksum mismatch)");
    if (fsize != len) {
        if (fsize > len)
            return fail(c, "truncated: %zu bytes on disk, the header says %llu", len, (unsigned long long)fsize);
        return fail(c, "%zu bytes on disk, the header says %llu", len, (unsigned long long)fsize);
    }
    log->proc.version_major = major;
    log->proc.version_minor = minor;
    log->proc.flags = flags;

    for (uint32_t i = 0; i < nreg; i++) {
        const unsigned char *e = d + table_off + (size_t)i * SLUICE_LOG_REGION_ENTRY_SIZE;
        uint64_t off = le64(e + 8), rlen = le64(e + 16);
        if (off < table_end || off > len || rlen > len - off)
            return fail(c, "region %lu lies outside the file", (unsigned long)i);
        reg[i].type = le32(e);
        reg[i].version = le32(e + 4);
        reg[i].body = d + off;
        reg[i].len = (size_t)rlen;
        if (sluice_crc32(0, reg[i].body, reg[i].len) != le32(e + 24))
            return fail(c, "corrupt region %lu (type %lu, checksum mismatch)", (unsigned long)i,
                        (unsigned long)reg[i].type);
        if (reg[i].type == SLUICE_LOG_R_DEFLATE && inflate_region(c, &reg[i], i, &inflated[i]) < 0)
            return -1;
    }

    /* PROCESS: the first one. */
    uint32_t i;
    for (i = 0; i < nreg && reg[i].type != SLUICE_LOG_R_PROCESS; i++)
        ;
    if (i == nreg)
        return fail(c, "no process region");
    cur.p = reg[i].body;
    cur.left = reg[i].len;
    if (parse_process(c, &cur) < 0)
        return -1;

    /* SCHEMA: every one, in table order. */
    struct modmap *map = calloc(1, sizeof *map);
    size_t mcap = 0;
    struct names names = {0};
    int rc = -1;
    if (!map) {
        oom(c);
        goto out;
    }
    for (i = 0; i < nreg; i++) {
        if (reg[i].type != SLUICE_LOG_R_SCHEMA)
            continue;
        cur.p = reg[i].body;
        cur.left = reg[i].len;
        if (parse_schema(c, &cur, map, &mcap) < 0)
            goto out;
    }

    /* NAMES: every one; a record id named twice takes its last name. */
    for (i = 0; i < nreg; i++) {
        if (reg[i].type != SLUICE_LOG_R_NAMES)
            continue;
        cur.p = reg[i].body;
        cur.left = reg[i].len;
        if (parse_names(c, &cur, reg[i].version, &names) < 0)
            goto out;
    }
    if (names.nbyid > 1)
        qsort(names.byid, names.nbyid, sizeof *names.byid, name_cmp);

    /* MODULE: count the records (each size checked), then read them. */
    size_t total = 0;
    uint64_t sparse = 0; /* bytes the counters of layout-1 records take once read */
    for (i = 0; i < nreg; i++) {
        struct module_head h = {0};
        if (reg[i].type != SLUICE_LOG_R_MODULE)
            continue;
        if (module_head(c, &reg[i], map, &h, &cur) < 0)
            goto out;
        if (h.mod)
            total += h.nrec; /* at most the inflated size in all */
        if (h.mod && h.layout == SLUICE_LOG_LAYOUT_COLUMNS && major >= 3)
            sparse += (uint64_t)h.nrec * 16 * ((uint64_t)h.mod->ni + h.mod->nf);
    }
    /* Zero planes take no room in the file: a damaged or hostile log could
     * announce records that need far more memory than it has bytes. */
    if (sparse > SLUICE_LOG_SPARSE_BASE + (uint64_t)SLUICE_LOG_SPARSE_RATIO * len) {
        fail(c, "its records would take %llu bytes of memory, more than a log of %zu bytes can hold",
             (unsigned long long)sparse, len);
        goto out;
    }
    if (total) {
        if (total > SIZE_MAX / sizeof *log->records || !(log->records = calloc(total, sizeof *log->records))) {
            oom(c);
            goto out;
        }
    }
    for (i = 0; i < nreg; i++) {
        if (reg[i].type == SLUICE_LOG_R_MODULE && parse_module(c, &reg[i], map, &names) < 0)
            goto out;
    }
    for (i = 0; i < nreg; i++) {
        if (reg[i].type == SLUICE_LOG_R_TRACE && parse_trace(c, &reg[i], &names) < 0)
            goto out;
    }
    rc = 0;
out:
    free(map);
    free(names.byid);
    free(names.indexed);
    return rc;
}

int sluice_logreader_parse(const void *buf, size_t len, const char *name,
                           struct sluice_log **out, char *err, size_t errlen)
{
    struct ctx c = {name, err, errlen, NULL};

    if (err && errlen)
        err[0] = '\0';
    if (out)
        *out = NULL;
    if (!buf && len)
        return fail(&c, "no data");
    c.log = calloc(1, sizeof *c.log);
    if (!c.log)
        return oom(&c);
    if (parse(&c, buf ? buf : "", len) < 0) {
        sluice_logreader_close(c.log);
        return -1;
    }
    if (out)
        *out = c.log;
    else
        sluice_logreader_close(c.log);
    return 0;
}

int sluice_logreader_open(const char *path, struct sluice_log **out, char *err, size_t errlen)
{
    struct ctx c = {path, err, errlen, NULL};
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;

    if (out)
        *out = NULL;
    if (!path)
        return fail(&c, "cannot read: no file name");
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(&c, "cannot read: %s", strerror(errno ? errno : EIO));
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : (size_t)64 * 1024;
            unsigned char *nb = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                return fail(&c, "cannot read: out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        errno = 0;
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0 || len < cap) {
            if (ferror(f)) {
                int e = errno ? errno : EIO;
                free(buf);
                fclose(f);
                return fail(&c, "cannot read: %s", strerror(e));
            }
            if (feof(f))
                break;
        }
    }
    fclose(f);
    int rc = sluice_logreader_parse(buf, len, path, out, err, errlen);
    free(buf);
    return rc;
}

/* ---- accessors ---- */

const struct sluice_log_process *sluice_log_process(const struct sluice_log *log)
{
    return &log->proc;
}

const char *sluice_log_end_reason_name(uint32_t end_reason)
{
    switch (end_reason) {
    case SLUICE_END_EXIT:
        return "exit";
    case SLUICE_END_SIGNAL:
        return "SIGTERM";
    case SLUICE_END_EXIT_NOW:
        return "_exit";
    case SLUICE_END_EXEC:
        return "exec";
    case SLUICE_END_FATAL:
        return "signal";
    default:
        return NULL;
    }
}

size_t sluice_log_ninfo(const struct sluice_log *log)
{
    return log->ninfo;
}

const struct sluice_log_kv *sluice_log_info_at(const struct sluice_log *log, size_t i)
{
    return i < log->ninfo ? &log->info[i] : NULL;
}

const struct sluice_log_string *sluice_log_info_get(const struct sluice_log *log, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = log->ninfo; i-- > 0;) {
        const struct sluice_log_kv *kv = &log->info[i];
        if (kv->key.len == n && memcmp(kv->key.ptr, key, n) == 0)
            return &kv->value;
    }
    return NULL;
}

size_t sluice_log_nmodules(const struct sluice_log *log)
{
    return log->nmodules;
}

const struct sluice_log_module *sluice_log_module_at(const struct sluice_log *log, size_t i)
{
    return i < log->nmodules ? &log->modules[i] : NULL;
}

const struct sluice_log_module *sluice_log_module_by_name(const struct sluice_log *log, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < log->nmodules; i++)
        if (log->modules[i].name.len == n && memcmp(log->modules[i].name.ptr, name, n) == 0)
            return &log->modules[i];
    return NULL;
}

int sluice_log_counter_index(const struct sluice_log_module *mod, const char *name, int *is_float)
{
    size_t n = strlen(name);
    /* Floats after ints, last first: the same name resolves as a dict built
     * from the integer names and then updated with the float names. */
    for (size_t i = mod->nf; i-- > 0;) {
        if (mod->float_names[i].len == n && memcmp(mod->float_names[i].ptr, name, n) == 0) {
            if (is_float)
                *is_float = 1;
            return (int)i;
        }
    }
    for (size_t i = mod->ni; i-- > 0;) {
        if (mod->int_names[i].len == n && memcmp(mod->int_names[i].ptr, name, n) == 0) {
            if (is_float)
                *is_float = 0;
            return (int)i;
        }
    }
    return -1;
}

size_t sluice_log_nsegments(const struct sluice_log *log)
{
    return log->nsegs;
}

const struct sluice_log_segment *sluice_log_segment_at(const struct sluice_log *log, size_t i)
{
    return i < log->nsegs ? &log->segs[i] : NULL;
}

uint64_t sluice_log_trace_dropped(const struct sluice_log *log)
{
    return log->trace_dropped;
}

int sluice_log_has_trace(const struct sluice_log *log)
{
    return log->has_trace;
}

size_t sluice_log_nrecords(const struct sluice_log *log)
{
    return log->nrecords;
}

const struct sluice_log_record *sluice_log_record_at(const struct sluice_log *log, size_t i)
{
    return i < log->nrecords ? &log->records[i] : NULL;
}
