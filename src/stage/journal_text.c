/*
 * Journal entries as text (docs/stage.md, "Journal entries"): written by
 * journal_format, read by journal_parse. The bytes come from a shared
 * directory and may be torn or foreign, so the parser checks every byte,
 * as python/sluice/stage/journal.py does; no allocation, no system call
 * (the fuzz target links this file alone, with crc32.c).
 */
#include "stage/journal.h"

#include <stdio.h>
#include <string.h>

#include "common/crc32.h"

static const char *const state_names[] = {"open", "closed", "published", "removed"};

/* A path on one line: '%' and newline percent-encoded. */
static size_t encode_path(const char *in, char *out, size_t len)
{
    size_t o = 0;

    for (; *in && o + 4 < len; in++) {
        if (*in == '%' || *in == '\n') {
            o += (size_t)snprintf(out + o, len - o, "%%%02X", (unsigned char)*in);
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
    return o;
}

ssize_t journal_format(const struct journal_entry *e, char *buf, size_t len)
{
    char path[3 * 4096 + 1], error[sizeof e->error];
    size_t n;
    int k;

    encode_path(e->path, path, sizeof path);
    /* one line, whatever strerror said */
    snprintf(error, sizeof error, "%s", e->error);
    for (char *p = error; *p; p++)
        if (*p == '\n')
            *p = ' ';
    k = snprintf(buf, len,
                 "sluice-stage 2\nid=%s\npath=%s\nmode=%04o\npublish=%s\nstate=%s\npid=%ld\ncreated_ns=%lld\n"
                 "updated_ns=%lld\nerror=%s\n",
                 e->id, path, (unsigned)(e->mode & 07777), e->inplace ? "inplace" : e->existed ? "replace" : "create",
                 state_names[e->state], (long)e->pid,
                 (long long)e->created_ns, (long long)e->updated_ns, error);
    if (k < 0 || (size_t)k >= len)
        return -1;
    n = (size_t)k;
    k = snprintf(buf + n, len - n, "crc=%08x\n", sluice_crc32(0, buf, n));
    if (k < 0 || (size_t)k >= len - n)
        return -1;
    return (ssize_t)(n + (size_t)k);
}

static const char *const keys_v2[] = {"id", "path", "mode", "publish", "state", "pid", "created_ns", "updated_ns",
                                      "error"};
enum { KEYS_V2 = 9 };

/* The next line of [*p, end) without its newline; 0 when none is left. */
static int next_line(const char **p, const char *end, const char **line, size_t *len)
{
    const char *nl = *p < end ? memchr(*p, '\n', (size_t)(end - *p)) : NULL;

    if (!nl)
        return 0;
    *line = *p;
    *len = (size_t)(nl - *p);
    *p = nl + 1;
    return 1;
}

static int parse_u64(const char *s, size_t n, int base, unsigned long long max, unsigned long long *out)
{
    unsigned long long v = 0;

    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d >= (unsigned)base)
            return -1;
        if (v > (max - d) / (unsigned)base)
            return -1;
        v = v * (unsigned)base + d;
    }
    *out = v;
    return 0;
}

/* The stored path: '%25' and '%0A' decoded, any other '%' refused. */
static int decode_path(const char *s, size_t n, char *out, size_t len)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\0')
            return -1;
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            if (s[i + 1] == '2' && s[i + 2] == '5')
                c = '%';
            else if (s[i + 1] == '0' && s[i + 2] == 'A')
                c = '\n';
            else
                return -1;
            i += 2;
        }
        if (o + 1 >= len)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

/* An id HOST-PID-SEQ: a safe file name (no '/', no leading '.'), the last
 * two dash-separated fields decimal. */
static int valid_id(const char *s, size_t n)
{
    const char *d2, *d1;

    if (n == 0 || s[0] == '.' || memchr(s, '/', n) || memchr(s, '\0', n) || memchr(s, '\n', n))
        return 0;
    d2 = memrchr(s, '-', n);
    if (!d2 || d2 + 1 == s + n)
        return 0;
    d1 = memrchr(s, '-', (size_t)(d2 - s));
    if (!d1 || d1 == s || d1 + 1 == d2)
        return 0;
    for (const char *p = d1 + 1; p < s + n; p++)
        if (p != d2 && (*p < '0' || *p > '9'))
            return 0;
    return 1;
}

int journal_parse(const char *buf, size_t n, struct journal_entry *e)
{
    const char *p = buf, *end = buf + n, *line;
    size_t len;
    unsigned long long v;

    memset(e, 0, sizeof *e);
    if (n == 0 || buf[n - 1] != '\n' || !next_line(&p, end, &line, &len))
        return -1;
    int v1 = len == 14 && memcmp(line, "sluice-stage 1", 14) == 0;
    if (!v1 && !(len == 14 && memcmp(line, "sluice-stage 2", 14) == 0))
        return -1;
    for (int k = 0; k < KEYS_V2; k++) {
        if (v1 && k == 3)
            continue;   /* (version 1 has no `publish`: create) */
        size_t kl = strlen(keys_v2[k]);
        if (!next_line(&p, end, &line, &len) || len <= kl || memcmp(line, keys_v2[k], kl) != 0 || line[kl] != '=')
            return -1;
        const char *val = line + kl + 1;
        size_t vl = len - kl - 1;
        switch (k) {
        case 0:
            if (!valid_id(val, vl) || vl >= sizeof e->id)
                return -1;
            memcpy(e->id, val, vl);
            break;
        case 1:
            if (decode_path(val, vl, e->path, sizeof e->path) != 0 || e->path[0] != '/' ||
                e->path[strlen(e->path) - 1] == '/')
                return -1;
            break;
        case 2:
            if (vl > 6 || parse_u64(val, vl, 8, 07777, &v) != 0)
                return -1;
            e->mode = (mode_t)v;
            break;
        case 3:
            if (vl == 7 && memcmp(val, "inplace", 7) == 0)
                e->inplace = 1;
            else if (vl == 7 && memcmp(val, "replace", 7) == 0)
                e->existed = 1;
            else if (!(vl == 6 && memcmp(val, "create", 6) == 0))
                return -1;
            break;
        case 4:
            if (vl == 4 && memcmp(val, "open", 4) == 0)
                e->state = JOURNAL_OPEN;
            else if (vl == 6 && memcmp(val, "closed", 6) == 0)
                e->state = JOURNAL_CLOSED;
            else if (vl == 9 && memcmp(val, "published", 9) == 0)
                e->state = JOURNAL_PUBLISHED;
            else if (vl == 7 && memcmp(val, "removed", 7) == 0)
                e->state = JOURNAL_REMOVED;
            else
                return -1;
            break;
        case 5:
            if (parse_u64(val, vl, 10, 0x7fffffff, &v) != 0 || v == 0)
                return -1;
            e->pid = (pid_t)v;
            break;
        case 6:
        case 7:
            if (parse_u64(val, vl, 10, 0x7fffffffffffffffULL, &v) != 0)
                return -1;
            *(k == 6 ? &e->created_ns : &e->updated_ns) = (int64_t)v;
            break;
        default:
            if (memchr(val, '\0', vl))
                return -1;
            size_t c = vl < sizeof e->error - 1 ? vl : sizeof e->error - 1;
            memcpy(e->error, val, c);
            e->error[c] = '\0';
            break;
        }
    }
    /* crc=8 lowercase hex of every byte before this line, then the end */
    const char *crc_at = p;
    if (!next_line(&p, end, &line, &len) || p != end || len != 12 || memcmp(line, "crc=", 4) != 0)
        return -1;
    unsigned crc = 0;
    for (size_t i = 4; i < 12; i++) {
        char c = line[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
        if (d == 16)
            return -1;
        crc = crc << 4 | d;
    }
    if (sluice_crc32(0, buf, (size_t)(crc_at - buf)) != crc)
        return -1;
    if (e->inplace)
        e->existed = 1;
    return 0;
}
