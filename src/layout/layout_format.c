/*
 * The pure parts of layouts at create: the SLUICE_LAYOUT setting, the
 * layout of each class of file, and the attribute values CephFS and
 * Lustre take. No system calls: unit-tested alone (tests/unit/test_layout.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"

/* File per process: one stripe of 1 MiB (Lustre's default stripe size;
 * on CephFS objects of 1 MiB, not the default 4 MiB: fpp-netcdf's 8 files
 * of 12 MB were written in 0.77x the time, docs/layout.md). */
#define SINGLE_STRIPE_SIZE ((int64_t)1 << 20)
/* A shared file: one stripe per rank, at most this many. */
#define SHARED_MAX_STRIPES 16
/* CephFS objects of a shared file hold this many stripe units. */
#define UNITS_PER_OBJECT 4
#define CEPH_MIN_UNIT ((int64_t)64 << 10)

static int parse_size(const char *s, size_t n, int64_t *out)
{
    char buf[32], *end;
    unsigned long long v;

    if (n == 0 || n >= sizeof buf)
        return -EINVAL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (buf[0] < '0' || buf[0] > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (errno)
        return -EINVAL;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end != '\0' || v == 0 || v > ((unsigned long long)1 << 40))
        return -EINVAL;
    *out = (int64_t)v;
    return 0;
}

int sluice_layout_parse(const char *text, struct sluice_layout_spec *spec)
{
    struct sluice_layout l = {0};

    spec->want = SLUICE_LAYOUT_DEFAULT;
    if (!text || !*text)
        return 0;
    if (strcmp(text, "auto") == 0) {
        spec->want = SLUICE_LAYOUT_AUTO;
        return 0;
    }
    if (strcmp(text, "off") == 0) {
        spec->want = SLUICE_LAYOUT_OFF;
        return 0;
    }
    for (const char *p = text; *p;) {
        const char *comma = strchr(p, ','), *eq;
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        int64_t *field;

        eq = memchr(p, '=', n);
        if (!eq)
            return -EINVAL;
        if ((size_t)(eq - p) == 12 && memcmp(p, "stripe_count", 12) == 0)
            field = &l.stripe_count;
        else if ((size_t)(eq - p) == 11 && memcmp(p, "stripe_size", 11) == 0)
            field = &l.stripe_size;
        else if ((size_t)(eq - p) == 11 && memcmp(p, "object_size", 11) == 0)
            field = &l.object_size;
        else
            return -EINVAL;
        if (field == &l.stripe_count && n - (size_t)(eq - p) == 3 && memcmp(eq, "=-1", 3) == 0)
            l.stripe_count = -1;
        else if (parse_size(eq + 1, n - (size_t)(eq - p) - 1, field) != 0)
            return -EINVAL;
        p += n;
        if (*p == ',' && *++p == '\0')
            return -EINVAL;
    }
    if (l.stripe_count == 0 || l.stripe_count > 65535)
        return -EINVAL;
    if (l.stripe_size == 0)
        l.stripe_size = l.object_size ? l.object_size : (int64_t)4 << 20;
    spec->want = SLUICE_LAYOUT_FIXED;
    spec->fixed = l;
    return 0;
}

struct sluice_layout sluice_layout_for_class(int nprocs, int64_t unit)
{
    if (nprocs <= 1)
        return (struct sluice_layout){.stripe_count = 1, .stripe_size = SINGLE_STRIPE_SIZE};
    if (unit < CEPH_MIN_UNIT)
        unit = CEPH_MIN_UNIT;
    return (struct sluice_layout){.stripe_count = nprocs < SHARED_MAX_STRIPES ? nprocs : SHARED_MAX_STRIPES,
                                  .stripe_size = unit};
}

/* The layout as CephFS takes it: a count, a unit and an object size. */
static struct sluice_layout ceph_form(const struct sluice_layout *l)
{
    struct sluice_layout c = *l;

    if (c.stripe_count < 1)
        c.stripe_count = SHARED_MAX_STRIPES;   /* "all" has no meaning on CephFS */
    if (!c.object_size)
        c.object_size = c.stripe_count > 1 ? c.stripe_size * UNITS_PER_OBJECT : c.stripe_size;
    return c;
}

int sluice_layout_ceph_same(const struct sluice_layout *want, const struct sluice_layout *have)
{
    struct sluice_layout c = ceph_form(want);

    return have->stripe_count > 0 && c.stripe_count == have->stripe_count && c.stripe_size == have->stripe_size &&
           c.object_size == have->object_size;
}

int sluice_layout_ceph_value(const struct sluice_layout *l, char *buf, size_t len)
{
    struct sluice_layout c = ceph_form(l);
    int64_t count = c.stripe_count, unit = c.stripe_size, object = c.object_size;
    int n;
    /* CephFS: a unit of at least 64 KiB dividing the object size */
    if (unit < CEPH_MIN_UNIT || unit % CEPH_MIN_UNIT || object % unit || object > ((int64_t)1 << 32))
        return -1;
    n = snprintf(buf, len, "stripe_unit=%lld stripe_count=%lld object_size=%lld", (long long)unit,
                 (long long)count, (long long)object);
    return n > 0 && (size_t)n < len ? n : -1;
}

static int json_int(const char *json, const char *key, int64_t *out)
{
    const char *p = strstr(json, key);
    char *end;

    if (!p)
        return -1;
    p += strlen(key);
    while (*p == ' ' || *p == ':')
        p++;
    errno = 0;
    *out = strtoll(p, &end, 10);
    return end == p || errno ? -1 : 0;
}

int sluice_layout_ceph_json(const char *json, struct sluice_layout *l)
{
    const char *inh = strstr(json, "\"inheritance\"");

    if (json_int(json, "\"stripe_unit\"", &l->stripe_size) || json_int(json, "\"stripe_count\"", &l->stripe_count) ||
        json_int(json, "\"object_size\"", &l->object_size) || !inh)
        return -1;
    if (strstr(inh, "\"@default\""))
        return 0;
    if (strstr(inh, "\"@set\"") || strstr(inh, "\"@inherited\""))
        return 1;
    return -1;
}

int sluice_layout_ceph_parse(const char *text, struct sluice_layout_seen *out)
{
    static const char *const keys[3] = {"stripe_unit=", "stripe_count=", "object_size="};
    int64_t *vals[3] = {&out->stripe_size, &out->stripe_count, &out->object_size};

    *out = (struct sluice_layout_seen){.components = 1};
    for (int k = 0; k < 3; k++) {
        const char *p = text;
        size_t n = strlen(keys[k]);
        /* the key at the start or after a space (not "xstripe_unit=") */
        while ((p = strstr(p, keys[k])) != NULL && p != text && p[-1] != ' ')
            p += n;
        if (!p)
            return -1;
        char *end;
        errno = 0;
        long long v = strtoll(p + n, &end, 10);
        if (end == p + n || errno || v < 0 || (*end && *end != ' ' && *end != '\n'))
            return -1;
        *vals[k] = v;
    }
    return 0;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* lov_mds_md v1/v3: magic, pattern, ost_id (16 bytes), u32 stripe size at
 * 24, u16 stripe count at 28 (0xFFFF: all OSTs); v3 adds a pool name. */
static int lustre_plain(const unsigned char *v, size_t n, struct sluice_layout_seen *out)
{
    uint32_t magic;

    if (n < SLUICE_LOV_V1_SIZE)
        return -1;
    magic = get32(v);
    if (magic != SLUICE_LOV_USER_MAGIC_V1 && magic != SLUICE_LOV_MAGIC_V3)
        return -1;
    out->stripe_size = get32(v + 24);
    out->stripe_count = get16(v + 28) == 0xFFFF ? -1 : get16(v + 28);
    return 0;
}

/* lov_comp_md_v1: u32 magic, u32 size, u32 layout gen, u16 flags, u16
 * entry count, ... (32 bytes), then 48-byte entries whose u32 at 24 is the
 * offset of the component's lov_mds_md from the start, u32 at 28 its size. */
int sluice_layout_lustre_parse(const unsigned char *v, size_t n, struct sluice_layout_seen *out)
{
    *out = (struct sluice_layout_seen){.components = 1};
    if (n >= 4 && get32(v) == SLUICE_LOV_MAGIC_COMP_V1) {
        if (n < 32)
            return -1;
        uint16_t count = get16(v + 14);
        if (count == 0 || n < 32 + 48 * (size_t)count)
            return -1;
        uint32_t off = get32(v + 32 + 24), size = get32(v + 32 + 28);
        if (off > n || size > n - off || lustre_plain(v + off, size, out) < 0)
            return -1;
        out->components = count;
        return 0;
    }
    return lustre_plain(v, n, out);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

/* struct lov_user_md_v1 { __u32 lmm_magic; __u32 lmm_pattern; struct ost_id
 * lmm_oi (16 bytes); __u32 lmm_stripe_size; __u16 lmm_stripe_count; __u16
 * lmm_stripe_offset; } packed: the stripe offset -1 lets the MDS choose. */
int sluice_layout_lustre_value(const struct sluice_layout *l, unsigned char *buf, size_t len)
{
    if (len < SLUICE_LOV_V1_SIZE || l->stripe_size <= 0 || l->stripe_size > UINT32_MAX ||
        l->stripe_size % (64 << 10) || l->stripe_count > 65535 || l->stripe_count == 0 || l->stripe_count < -1)
        return -1;
    memset(buf, 0, SLUICE_LOV_V1_SIZE);
    put32(buf, SLUICE_LOV_USER_MAGIC_V1);
    put32(buf + 4, SLUICE_LOV_PATTERN_RAID0);
    put32(buf + 24, (uint32_t)l->stripe_size);
    put16(buf + 28, (uint16_t)(l->stripe_count < 0 ? 0xFFFF : l->stripe_count));
    put16(buf + 30, 0xFFFF);
    return SLUICE_LOV_V1_SIZE;
}
