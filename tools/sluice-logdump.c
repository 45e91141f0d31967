/*
 * sluice-logdump: print sluice logs, as text or as JSON.
 *
 *   sluice-logdump [--json] LOG...
 *
 * Text (the default): '#' lines with the header and the process, then one
 * line per non-zero counter of every record:
 *     MODULE <TAB> side <TAB> path <TAB> COUNTER <TAB> value
 * side is "app" (what the application asked) or "fs" (what reached the file
 * system). Tabs, newlines, backslashes and other control characters in
 * strings are shown as \t, \n, \\, \xNN.
 *
 * --json: one JSON object per log, on one line, with every counter:
 *     {"path", "version", "flags", "pid", "ppid", "rank", "nprocs",
 *      "start_ns", "end_ns", "end_reason", "info": {...},
 *      "records": [{"module", "id", "path", "flags", "app": {...}, "fs": {...}}]}
 * Integers are JSON integers; floats always carry a '.' or an exponent and
 * have the fewest digits that read back as the same double (at most 17);
 * NaN and infinities, which a valid log does not hold, are written NaN,
 * Infinity and -Infinity as Python's json module does. Control characters,
 * U+0085, U+2028 and U+2029 are escaped, so that each log is one line for
 * any reader of JSON lines.
 *
 * Strings in a log are bytes. Both forms decode them as UTF-8 the way
 * Python's bytes.decode("utf-8", "replace") does: each maximal invalid
 * subsequence becomes U+FFFD, so the output is always valid UTF-8 and equal
 * to what python/sluice/logfmt.py reads. Keys that repeat (within "info",
 * or a counter name listed twice) behave like a Python dict: the first
 * position, the last value.
 *
 * Exit status: 0 when every log was read, 1 when any could not be (one line
 * on stderr each, and the next log is still read), 2 on a usage error.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice_logfmt.h"
#include "sluice/sluice_logreader.h"

/* The printers, also driven by the fuzzer. 0, or -1 when out of memory. */
int sluice_logdump_json(FILE *out, const char *name, const struct sluice_log *log);
int sluice_logdump_text(FILE *out, const char *name, const struct sluice_log *log);

/* ---- a growable byte buffer ---- */

struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
};

static void sb_putn(struct sbuf *b, const void *s, size_t n)
{
    if (b->oom || n == 0)
        return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = 1;
                return;
            }
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void sb_putc(struct sbuf *b, char c)
{
    sb_putn(b, &c, 1);
}

/* The bytes from `off` on (an empty buffer may have no storage at all). */
static const char *sb_at(const struct sbuf *b, size_t off)
{
    return b->p ? b->p + off : "";
}

static void sb_puts(struct sbuf *b, const char *s)
{
    sb_putn(b, s, strlen(s));
}

/* ---- UTF-8 with replacement, as Python decodes ---- */

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* Append s[0..n) with every maximal invalid subsequence replaced by U+FFFD
 * (Unicode's "substitution of maximal subparts", which Python follows). */
static void sb_utf8(struct sbuf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < n) {
        unsigned c = s[i];
        size_t need;
        unsigned lo = 0x80, hi = 0xBF; /* range of the first continuation byte */

        if (c < 0x80) {
            size_t j = i + 1;
            while (j < n && s[j] < 0x80)
                j++;
            sb_putn(b, s + i, j - i);
            i = j;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0; /* no overlong forms */
            else if (c == 0xED)
                hi = 0x9F; /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F; /* nothing above U+10FFFF */
        } else {
            sb_putn(b, REPLACEMENT, 3); /* a continuation byte, C0, C1, F5..FF */
            i++;
            continue;
        }
        size_t k = 0; /* valid continuation bytes seen */
        while (k < need && i + 1 + k < n) {
            unsigned d = s[i + 1 + k];
            if (k == 0 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF))
                break;
            k++;
        }
        if (k == need)
            sb_putn(b, s + i, need + 1);
        else
            sb_putn(b, REPLACEMENT, 3);
        i += 1 + k;
    }
}

/* ---- escaping ---- */

static const char HEX[] = "0123456789abcdef";

/* A JSON string literal of the decoded bytes. */
static void sb_json_str(struct sbuf *b, const char *s, size_t n)
{
    struct sbuf u = {0};

    sb_utf8(&u, s, n);
    if (u.oom) {
        b->oom = 1;
        return;
    }
    sb_putc(b, '"');
    size_t run = 0; /* start of the pending run that needs no escape */
    for (size_t i = 0; i < u.len; i++) {
        unsigned char c = (unsigned char)u.p[i];
        const char *esc = NULL;
        char ubuf[7];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20) {
            memcpy(ubuf, "\\u00", 4);
            ubuf[4] = HEX[c >> 4];
            ubuf[5] = HEX[c & 15];
            ubuf[6] = '\0';
            esc = ubuf;
        }
        /* U+0085, U+2028, U+2029 end lines for some readers (Python's
         * str.splitlines, JavaScript): escaped, so one log stays one line. */
        size_t width = 1;
        if (c == 0xC2 && i + 1 < u.len && (unsigned char)u.p[i + 1] == 0x85) {
            esc = "\\u0085";
            width = 2;
        } else if (c == 0xE2 && i + 2 < u.len && (unsigned char)u.p[i + 1] == 0x80 &&
                   ((unsigned char)u.p[i + 2] == 0xA8 || (unsigned char)u.p[i + 2] == 0xA9)) {
            esc = (unsigned char)u.p[i + 2] == 0xA8 ? "\\u2028" : "\\u2029";
            width = 3;
        }
        if (esc) {
            sb_putn(b, u.p + run, i - run);
            sb_puts(b, esc);
            i += width - 1;
            run = i + 1;
        }
    }
    if (u.len > run)
        sb_putn(b, u.p + run, u.len - run);
    sb_putc(b, '"');
    free(u.p);
}

/* The decoded bytes for a tab-separated line: \t \n \r \\ \xNN escaped. */
static void sb_text_str(struct sbuf *b, const char *s, size_t n)
{
    struct sbuf u = {0};

    sb_utf8(&u, s, n);
    if (u.oom) {
        b->oom = 1;
        return;
    }
    for (size_t i = 0; i < u.len; i++) {
        unsigned char c = (unsigned char)u.p[i];
        if (c == '\\') {
            sb_puts(b, "\\\\");
        } else if (c == '\t') {
            sb_puts(b, "\\t");
        } else if (c == '\n') {
            sb_puts(b, "\\n");
        } else if (c == '\r') {
            sb_puts(b, "\\r");
        } else if (c < 0x20 || c == 0x7f) {
            char x[4] = {'\\', 'x', HEX[c >> 4], HEX[c & 15]};
            sb_putn(b, x, 4);
        } else {
            sb_putc(b, (char)c);
        }
    }
    free(u.p);
}

static void sb_str(struct sbuf *b, int json, const char *s, size_t n)
{
    if (json)
        sb_json_str(b, s, n);
    else
        sb_text_str(b, s, n);
}

/* ---- numbers ---- */

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf_num(struct sbuf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb_putn(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* The shortest of %.15g, %.16g, %.17g that reads back as d. In JSON, a
 * float always shows a '.' or an exponent, so that it stays a float. */
static void sb_double(struct sbuf *b, int json, double d)
{
    char tmp[40];

    if (isnan(d)) {
        sb_puts(b, json ? "NaN" : "nan");
        return;
    }
    if (isinf(d)) {
        sb_puts(b, d > 0 ? (json ? "Infinity" : "inf") : (json ? "-Infinity" : "-inf"));
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (prec == 17 || strtod(tmp, NULL) == d)
            break;
    }
    sb_puts(b, tmp);
    if (json && !strpbrk(tmp, ".e"))
        sb_puts(b, ".0");
}

/* ---- keys with Python dict semantics ---- */

struct str {
    const char *p;
    size_t len;
};

static uint64_t hash_str(const struct str *s)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < s->len; i++)
        h = (h ^ (unsigned char)s->p[i]) * 1099511628211u;
    return h;
}

/* Of n keys: the index of each distinct key's first occurrence, in order
 * (first[0..*nout)), with the index of its last occurrence (last[]). */
static int dict_order(const struct str *keys, size_t n, size_t *first, size_t *last, size_t *nout)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    size_t *slot = malloc(cap * sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < cap; i++)
        slot[i] = SIZE_MAX;
    *nout = 0;
    for (size_t i = 0; i < n; i++) {
        size_t h = (size_t)hash_str(&keys[i]) & (cap - 1);
        for (;;) {
            size_t j = slot[h];
            if (j == SIZE_MAX) {
                slot[h] = *nout;
                first[*nout] = i;
                last[*nout] = i;
                (*nout)++;
                break;
            }
            const struct str *k = &keys[first[j]];
            if (k->len == keys[i].len && memcmp(k->p, keys[i].p, k->len) == 0) {
                last[j] = i;
                break;
            }
            h = (h + 1) & (cap - 1);
        }
    }
    free(slot);
    return 0;
}

/* Decode each string, then order them as dict keys. keys[] receives the
 * decoded strings (in dec). */
static int decode_keys(const struct sluice_log_string *const *src, size_t n, struct sbuf *dec,
                       struct str *keys, size_t *first, size_t *last, size_t *nout)
{
    size_t *off = malloc((n ? n : 1) * sizeof *off);
    if (!off)
        return -1;
    for (size_t i = 0; i < n; i++) {
        off[i] = dec->len;
        sb_utf8(dec, src[i]->ptr, src[i]->len);
    }
    if (dec->oom) {
        free(off);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i].p = sb_at(dec, off[i]);
        keys[i].len = (i + 1 < n ? off[i + 1] : dec->len) - off[i];
    }
    free(off);
    return dict_order(keys, n, first, last, nout);
}

/* A module's counters in output order: rendered key and source index
 * (below ni: an integer counter; from ni: float counter i - ni). */
struct plan {
    const struct sluice_log_module *mod;
    size_t n;
    size_t *src;
    struct sbuf keys;     /* rendered keys, back to back */
    size_t *key_off;      /* n + 1 offsets into keys */
    struct sbuf name;     /* rendered module name */
};

static void plan_free(struct plan *p)
{
    free(p->src);
    free(p->keys.p);
    free(p->key_off);
    free(p->name.p);
    memset(p, 0, sizeof *p);
}

static int plan_make(struct plan *p, const struct sluice_log_module *mod, int json)
{
    size_t total = (size_t)mod->ni + mod->nf;
    const struct sluice_log_string **names = malloc((total ? total : 1) * sizeof *names);
    struct str *keys = malloc((total ? total : 1) * sizeof *keys);
    size_t *first = malloc((total ? total : 1) * sizeof *first);
    struct sbuf dec = {0};
    int rc = -1;

    memset(p, 0, sizeof *p);
    p->mod = mod;
    p->src = malloc((total ? total : 1) * sizeof *p->src);
    p->key_off = malloc((total + 1) * sizeof *p->key_off);
    if (!names || !keys || !first || !p->src || !p->key_off)
        goto out;
    for (size_t i = 0; i < total; i++)
        names[i] = i < mod->ni ? &mod->int_names[i] : &mod->float_names[i - mod->ni];
    if (decode_keys(names, total, &dec, keys, first, p->src, &p->n) < 0)
        goto out;
    for (size_t k = 0; k < p->n; k++) {
        const struct str *key = &keys[first[k]];
        p->key_off[k] = p->keys.len;
        if (json) {
            sb_json_str(&p->keys, key->p, key->len); /* already valid UTF-8: unchanged */
            sb_puts(&p->keys, ": ");
        } else {
            sb_text_str(&p->keys, key->p, key->len);
        }
    }
    p->key_off[p->n] = p->keys.len;
    sb_str(&p->name, json, mod->name.ptr, mod->name.len);
    rc = p->keys.oom || p->name.oom ? -1 : 0;
out:
    free(names);
    free(keys);
    free(first);
    free(dec.p);
    if (rc < 0)
        plan_free(p);
    return rc;
}

/* The plan of every module, made on first use. */
struct plans {
    const struct sluice_log *log;
    int json;
    size_t n;
    struct plan *v;
    size_t last; /* the last one used: records of a module come together */
};

static struct plan *plan_for(struct plans *ps, const struct sluice_log_module *mod)
{
    if (ps->last < ps->n && ps->v[ps->last].mod == mod)
        return &ps->v[ps->last];
    for (size_t i = 0; i < ps->n; i++) {
        if (sluice_log_module_at(ps->log, i) != mod)
            continue;
        if (!ps->v[i].mod && plan_make(&ps->v[i], mod, ps->json) < 0)
            return NULL;
        ps->last = i;
        return &ps->v[i];
    }
    return NULL;
}

static int plans_init(struct plans *ps, const struct sluice_log *log, int json)
{
    ps->log = log;
    ps->json = json;
    ps->n = sluice_log_nmodules(log);
    ps->last = SIZE_MAX;
    ps->v = calloc(ps->n ? ps->n : 1, sizeof *ps->v);
    return ps->v ? 0 : -1;
}

static void plans_free(struct plans *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        plan_free(&ps->v[i]);
    free(ps->v);
}

/* ---- the info strings: dict order ---- */

struct info {
    size_t n;
    size_t *first, *last;
    struct str *keys;
    struct sbuf dec;
};

static int info_make(struct info *in, const struct sluice_log *log)
{
    size_t n = sluice_log_ninfo(log);
    const struct sluice_log_string **src = malloc((n ? n : 1) * sizeof *src);
    int rc = -1;

    memset(in, 0, sizeof *in);
    in->first = malloc((n ? n : 1) * sizeof *in->first);
    in->last = malloc((n ? n : 1) * sizeof *in->last);
    in->keys = malloc((n ? n : 1) * sizeof *in->keys);
    if (src && in->first && in->last && in->keys) {
        for (size_t i = 0; i < n; i++)
            src[i] = &sluice_log_info_at(log, i)->key;
        rc = decode_keys(src, n, &in->dec, in->keys, in->first, in->last, &in->n);
    }
    free(src);
    return rc;
}

static void info_free(struct info *in)
{
    free(in->first);
    free(in->last);
    free(in->keys);
    free(in->dec.p);
}

/* ---- JSON ---- */

static int flush_sb(FILE *out, struct sbuf *b)
{
    if (b->oom)
        return -1;
    if (b->len)
        fwrite(b->p, 1, b->len, out);
    b->len = 0;
    return 0;
}

static void json_counters(struct sbuf *b, const struct plan *p, const int64_t *iv, const double *fv)
{
    size_t ni = p->mod->ni;
    sb_putc(b, '{');
    for (size_t k = 0; k < p->n; k++) {
        if (k)
            sb_puts(b, ", ");
        sb_putn(b, sb_at(&p->keys, p->key_off[k]), p->key_off[k + 1] - p->key_off[k]);
        if (p->src[k] < ni)
            sb_printf_num(b, "%" PRId64, iv[p->src[k]]);
        else
            sb_double(b, 1, fv[p->src[k] - ni]);
    }
    sb_putc(b, '}');
}

int sluice_logdump_json(FILE *out, const char *name, const struct sluice_log *log)
{
    const struct sluice_log_process *pr = sluice_log_process(log);
    struct sbuf b = {0};
    struct info in;
    struct plans ps;
    int rc = -1;

    if (plans_init(&ps, log, 1) < 0)
        return -1;
    if (info_make(&in, log) < 0)
        goto out;

    sb_puts(&b, "{\"path\": ");
    sb_json_str(&b, name, strlen(name));
    sb_printf_num(&b, ", \"version\": \"%u.%u\"", pr->version_major, pr->version_minor);
    sb_printf_num(&b, ", \"flags\": %" PRIu32, pr->flags);
    sb_printf_num(&b, ", \"pid\": %" PRIu64, pr->pid);
    sb_printf_num(&b, ", \"ppid\": %" PRIu64, pr->ppid);
    sb_printf_num(&b, ", \"rank\": %" PRId64, pr->rank);
    sb_printf_num(&b, ", \"nprocs\": %" PRId64, pr->nprocs);
    sb_printf_num(&b, ", \"start_ns\": %" PRIu64, pr->start_ns);
    sb_printf_num(&b, ", \"end_ns\": %" PRIu64, pr->end_ns);
    const char *reason = sluice_log_end_reason_name(pr->end_reason);
    if (reason)
        sb_printf_num(&b, ", \"end_reason\": \"%s\"", reason);
    else
        sb_printf_num(&b, ", \"end_reason\": \"unknown(%" PRIu32 ")\"", pr->end_reason);
    sb_puts(&b, ", \"info\": {");
    for (size_t k = 0; k < in.n; k++) {
        const struct str *key = &in.keys[in.first[k]];
        const struct sluice_log_string *v = &sluice_log_info_at(log, in.last[k])->value;
        if (k)
            sb_puts(&b, ", ");
        sb_json_str(&b, key->p, key->len);
        sb_puts(&b, ": ");
        sb_json_str(&b, v->ptr, v->len);
    }
    sb_puts(&b, "}, \"records\": [");
    size_t nrec = sluice_log_nrecords(log);
    for (size_t i = 0; i < nrec; i++) {
        const struct sluice_log_record *r = sluice_log_record_at(log, i);
        const struct plan *p = plan_for(&ps, r->module);
        if (!p)
            goto out;
        if (i)
            sb_puts(&b, ", ");
        sb_puts(&b, "{\"module\": ");
        sb_putn(&b, p->name.p, p->name.len);
        sb_printf_num(&b, ", \"id\": %" PRIu64 ", \"path\": ", r->id);
        sb_json_str(&b, r->path.ptr, r->path.len);
        sb_printf_num(&b, ", \"flags\": %" PRIu32 ", \"app\": ", r->flags);
        json_counters(&b, p, r->app_int, r->app_float);
        sb_puts(&b, ", \"fs\": ");
        json_counters(&b, p, r->fs_int, r->fs_float);
        sb_putc(&b, '}');
        if (b.len >= 64 * 1024 && flush_sb(out, &b) < 0)
            goto out;
    }
    sb_putc(&b, ']');
    if (sluice_log_has_trace(log)) {
        /* "trace": {"dropped": N, "segments": [[path, module, op, offset, length, start_ns, end_ns], ...]} */
        sb_printf_num(&b, ", \"trace\": {\"dropped\": %" PRIu64 ", \"segments\": [", sluice_log_trace_dropped(log));
        for (size_t i = 0; i < sluice_log_nsegments(log); i++) {
            const struct sluice_log_segment *g = sluice_log_segment_at(log, i);
            sb_puts(&b, i ? ", [" : "[");
            sb_json_str(&b, g->path.ptr, g->path.len);
            sb_printf_num(&b, ", %u", (unsigned)g->module);
            sb_printf_num(&b, ", %u", (unsigned)g->op);
            sb_printf_num(&b, ", %" PRId64, g->offset);
            sb_printf_num(&b, ", %" PRId64, g->length);
            sb_printf_num(&b, ", %" PRId64, g->start_ns);
            sb_printf_num(&b, ", %" PRId64 "]", g->end_ns);
            if (b.len >= 64 * 1024 && flush_sb(out, &b) < 0)
                goto out;
        }
        sb_puts(&b, "]}");
    }
    sb_puts(&b, "}\n");
    rc = flush_sb(out, &b);
out:
    free(b.p);
    info_free(&in);
    plans_free(&ps);
    return rc;
}

/* ---- text ---- */

static void text_counters(struct sbuf *b, const struct plan *p, const char *side, const struct sbuf *path,
                          const int64_t *iv, const double *fv)
{
    size_t ni = p->mod->ni;
    for (size_t k = 0; k < p->n; k++) {
        size_t s = p->src[k];
        if (s < ni ? iv[s] == 0 : fv[s - ni] == 0.0)
            continue;
        sb_putn(b, p->name.p, p->name.len);
        sb_putc(b, '\t');
        sb_puts(b, side);
        sb_putc(b, '\t');
        sb_putn(b, path->p, path->len);
        sb_putc(b, '\t');
        sb_putn(b, sb_at(&p->keys, p->key_off[k]), p->key_off[k + 1] - p->key_off[k]);
        sb_putc(b, '\t');
        if (s < ni)
            sb_printf_num(b, "%" PRId64, iv[s]);
        else
            sb_double(b, 0, fv[s - ni]);
        sb_putc(b, '\n');
    }
}

int sluice_logdump_text(FILE *out, const char *name, const struct sluice_log *log)
{
    const struct sluice_log_process *pr = sluice_log_process(log);
    struct sbuf b = {0}, path = {0};
    struct plans ps;
    int rc = -1;

    if (plans_init(&ps, log, 0) < 0)
        return -1;
    sb_puts(&b, "# sluice log: ");
    sb_text_str(&b, name, strlen(name));
    sb_printf_num(&b, "\n# format version: %u.%u\n", pr->version_major, pr->version_minor);
    sb_printf_num(&b, "# flags: %" PRIu32, pr->flags);
    if (pr->flags & SLUICE_LOG_F_PARTIAL)
        sb_puts(&b, " partial");
    if (pr->flags & SLUICE_LOG_F_SIGNAL)
        sb_puts(&b, " signal");
    sb_printf_num(&b, "\n# pid: %" PRIu64 "\n", pr->pid);
    sb_printf_num(&b, "# ppid: %" PRIu64 "\n", pr->ppid);
    sb_printf_num(&b, "# rank: %" PRId64 "\n", pr->rank);
    sb_printf_num(&b, "# nprocs: %" PRId64 "\n", pr->nprocs);
    sb_printf_num(&b, "# start_ns: %" PRIu64 "\n", pr->start_ns);
    sb_printf_num(&b, "# end_ns: %" PRIu64 "\n", pr->end_ns);
    sb_puts(&b, "# runtime: ");
    sb_double(&b, 0, pr->end_ns > pr->start_ns ? (double)(pr->end_ns - pr->start_ns) / 1e9 : 0.0);
    sb_puts(&b, " s\n");
    const char *reason = sluice_log_end_reason_name(pr->end_reason);
    if (reason)
        sb_printf_num(&b, "# end_reason: %s\n", reason);
    else
        sb_printf_num(&b, "# end_reason: unknown(%" PRIu32 ")\n", pr->end_reason);
    for (size_t i = 0; i < sluice_log_ninfo(log); i++) {
        const struct sluice_log_kv *kv = sluice_log_info_at(log, i);
        sb_puts(&b, "# ");
        sb_text_str(&b, kv->key.ptr, kv->key.len);
        sb_puts(&b, ": ");
        sb_text_str(&b, kv->value.ptr, kv->value.len);
        sb_putc(&b, '\n');
    }
    for (size_t i = 0; i < sluice_log_nmodules(log); i++) {
        const struct sluice_log_module *m = sluice_log_module_at(log, i);
        sb_puts(&b, "# module ");
        sb_text_str(&b, m->name.ptr, m->name.len);
        sb_printf_num(&b, ": id %u, version %u, %u integer and %u float counters per side\n", m->id,
                      m->version, m->ni, m->nf);
    }
    size_t nrec = sluice_log_nrecords(log);
    sb_printf_num(&b, "# records: %zu\n#\n# <module>\t<side>\t<path>\t<counter>\t<value>\n", nrec);
    for (size_t i = 0; i < nrec; i++) {
        const struct sluice_log_record *r = sluice_log_record_at(log, i);
        const struct plan *p = plan_for(&ps, r->module);
        if (!p)
            goto out;
        path.len = 0;
        sb_text_str(&path, r->path.ptr, r->path.len);
        if (path.oom)
            goto out;
        text_counters(&b, p, "app", &path, r->app_int, r->app_float);
        text_counters(&b, p, "fs", &path, r->fs_int, r->fs_float);
        if (b.len >= 64 * 1024 && flush_sb(out, &b) < 0)
            goto out;
    }
    if (sluice_log_has_trace(log)) {
        sb_printf_num(&b, "#\n# trace: %zu segments", sluice_log_nsegments(log));
        sb_printf_num(&b, ", %" PRIu64 " calls not kept\n", sluice_log_trace_dropped(log));
        sb_puts(&b, "# TRACE\t<module id>\t<read|write>\t<path>\t<offset>\t<length>\t<start_ns>\t<end_ns>\n");
        for (size_t i = 0; i < sluice_log_nsegments(log); i++) {
            const struct sluice_log_segment *g = sluice_log_segment_at(log, i);
            sb_printf_num(&b, "TRACE\t%u\t", (unsigned)g->module);
            sb_puts(&b, g->op ? "write\t" : "read\t");
            sb_text_str(&b, g->path.ptr, g->path.len);
            sb_printf_num(&b, "\t%" PRId64, g->offset);
            sb_printf_num(&b, "\t%" PRId64, g->length);
            sb_printf_num(&b, "\t%" PRId64, g->start_ns);
            sb_printf_num(&b, "\t%" PRId64 "\n", g->end_ns);
            if (b.len >= 64 * 1024 && flush_sb(out, &b) < 0)
                goto out;
        }
    }
    rc = flush_sb(out, &b);
out:
    free(b.p);
    free(path.p);
    plans_free(&ps);
    return rc;
}

/* ---- main ---- */

#ifndef SLUICE_LOGDUMP_NO_MAIN

static void usage(FILE *f)
{
    fputs("usage: sluice-logdump [--json] LOG...\n"
          "Print sluice logs: as text (one line per non-zero counter), or with --json\n"
          "as one JSON object per log and line. Exit status: 0 when every log was read,\n"
          "1 when one could not be, 2 on a usage error.\n",
          f);
}

int main(int argc, char **argv)
{
    int json = 0, first = 1, status = 0, i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "sluice-logdump: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        fputs("sluice-logdump: no log given\n", stderr);
        usage(stderr);
        return 2;
    }
    for (; i < argc; i++) {
        struct sluice_log *log;
        char err[1024];
        if (sluice_logreader_open(argv[i], &log, err, sizeof err) < 0) {
            fflush(stdout); /* keep stdout and stderr in order on a terminal */
            fprintf(stderr, "sluice-logdump: %s\n", err);
            status = 1;
            continue;
        }
        if (!json && !first)
            putchar('\n');
        first = 0;
        int rc = json ? sluice_logdump_json(stdout, argv[i], log) : sluice_logdump_text(stdout, argv[i], log);
        sluice_logreader_close(log);
        if (rc < 0) {
            fflush(stdout);
            fprintf(stderr, "sluice-logdump: %s: out of memory\n", argv[i]);
            status = 1;
        }
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fputs("sluice-logdump: cannot write the output\n", stderr);
        return 1;
    }
    return status;
}

#endif
