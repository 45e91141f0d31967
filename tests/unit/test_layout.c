/* Unit tests of layouts at create (src/layout/layout_format.c): the
 * SLUICE_LAYOUT setting, each class's layout, CephFS's ceph.file.layout
 * value and the bytes of Lustre's lov_user_md v1 against its documented
 * struct (lustre_user.h: magic, pattern, 16-byte object id, stripe size,
 * stripe count, stripe offset; packed, 32 bytes); and the layouts read
 * back from a file: ceph.file.layout's text, lustre.lov's lov_mds_md v1,
 * v3 and composite (lov_comp_md_v1) bytes, built here from the documented
 * structs. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "layout/layout.h"

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static void put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A lov_mds_md v1 (32 bytes) or v3 (+ 16-byte pool name) at p with
 * `objects` OST objects of 24 bytes after it; its size. */
static size_t lov_md(unsigned char *p, uint32_t magic, uint32_t size, uint16_t count, int objects)
{
    size_t head = magic == SLUICE_LOV_MAGIC_V3 ? 48 : 32;
    memset(p, 0, head + 24 * (size_t)objects);
    put_le(p, magic, 4);
    put_le(p + 4, 1, 4);           /* RAID0 */
    put_le(p + 8, 0x1234, 8);      /* lmm_oi */
    put_le(p + 24, size, 4);
    put_le(p + 28, count, 2);
    put_le(p + 30, 7, 2);          /* lmm_layout_gen */
    if (head == 48)
        memcpy(p + 32, "flash", 5);
    for (int i = 0; i < objects; i++)
        put_le(p + head + 24 * (size_t)i + 20, (uint64_t)(3 + i), 4);   /* l_ost_idx */
    return head + 24 * (size_t)objects;
}

static void layouts_read_back(void)
{
    struct sluice_layout_seen seen;
    unsigned char v[1024];

    /* CephFS: the kernel client's and ceph-fuse's text, keys in any order */
    CHECK_EQ(sluice_layout_ceph_parse("stripe_unit=1048576 stripe_count=4 object_size=4194304 pool=cephfs_data", &seen),
             0);
    CHECK_EQ(seen.stripe_size, 1048576);
    CHECK_EQ(seen.stripe_count, 4);
    CHECK_EQ(seen.object_size, 4194304);
    CHECK_EQ(seen.components, 1);
    CHECK_EQ(sluice_layout_ceph_parse("pool=p stripe_count=1 object_size=65536 stripe_unit=65536\n", &seen), 0);
    CHECK_EQ(seen.stripe_size, 65536);
    CHECK_EQ(sluice_layout_ceph_parse("stripe_unit=1048576 stripe_count=4", &seen), -1);
    CHECK_EQ(sluice_layout_ceph_parse("xstripe_unit=1 stripe_count=4 object_size=4", &seen), -1);
    CHECK_EQ(sluice_layout_ceph_parse("stripe_unit=12k stripe_count=4 object_size=4", &seen), -1);

    /* Lustre v1 with two objects, v3 (pool), all OSTs (0xFFFF) */
    size_t n = lov_md(v, 0x0BD10BD0u, 1 << 20, 2, 2);
    CHECK_EQ(sluice_layout_lustre_parse(v, n, &seen), 0);
    CHECK_EQ(seen.stripe_size, 1 << 20);
    CHECK_EQ(seen.stripe_count, 2);
    CHECK_EQ(seen.object_size, 0);
    CHECK_EQ(seen.components, 1);
    CHECK_EQ(sluice_layout_lustre_parse(v, 31, &seen), -1);
    n = lov_md(v, SLUICE_LOV_MAGIC_V3, 4 << 20, 0xFFFF, 0);
    CHECK_EQ(sluice_layout_lustre_parse(v, n, &seen), 0);
    CHECK_EQ(seen.stripe_size, 4 << 20);
    CHECK_EQ(seen.stripe_count, -1);
    put_le(v, 0x0BD20BD0u, 4);      /* not a layout this reads */
    CHECK_EQ(sluice_layout_lustre_parse(v, n, &seen), -1);

    /* a composite layout of 3 components (PFL): the first one's stripes */
    memset(v, 0, sizeof v);
    put_le(v, SLUICE_LOV_MAGIC_COMP_V1, 4);
    put_le(v + 14, 3, 2);           /* lcm_entry_count */
    size_t off = 32 + 3 * 48;
    for (int c = 0; c < 3; c++) {
        unsigned char *e = v + 32 + 48 * c;
        size_t sz = lov_md(v + off, 0x0BD10BD0u, (uint32_t)(1 << 20) << c, (uint16_t)(1 + 3 * c), c);
        put_le(e + 24, off, 4);     /* lcme_offset */
        put_le(e + 28, sz, 4);      /* lcme_size */
        off += sz;
    }
    put_le(v + 4, off, 4);          /* lcm_size */
    CHECK_EQ(sluice_layout_lustre_parse(v, off, &seen), 0);
    CHECK_EQ(seen.stripe_size, 1 << 20);
    CHECK_EQ(seen.stripe_count, 1);
    CHECK_EQ(seen.components, 3);
    CHECK_EQ(sluice_layout_lustre_parse(v, 32 + 2 * 48, &seen), -1);   /* entries cut short */
    put_le(v + 32 + 24, off, 4);    /* first component past the end */
    CHECK_EQ(sluice_layout_lustre_parse(v, off, &seen), -1);
}

int main(void)
{
    struct sluice_layout_spec s;
    struct sluice_layout l;
    unsigned char lov[64];
    char v[160];

    /* the setting */
    CHECK_EQ(sluice_layout_parse("", &s), 0);
    CHECK_EQ(s.want, SLUICE_LAYOUT_DEFAULT);
    CHECK_EQ(sluice_layout_parse("auto", &s), 0);
    CHECK_EQ(s.want, SLUICE_LAYOUT_AUTO);
    CHECK_EQ(sluice_layout_parse("off", &s), 0);
    CHECK_EQ(s.want, SLUICE_LAYOUT_OFF);
    CHECK_EQ(sluice_layout_parse("stripe_count=4,stripe_size=1M", &s), 0);
    CHECK_EQ(s.want, SLUICE_LAYOUT_FIXED);
    CHECK_EQ(s.fixed.stripe_count, 4);
    CHECK_EQ(s.fixed.stripe_size, 1 << 20);
    CHECK_EQ(s.fixed.object_size, 0);
    CHECK_EQ(sluice_layout_parse("stripe_count=-1,stripe_size=4m,object_size=8M", &s), 0);
    CHECK_EQ(s.fixed.stripe_count, -1);
    CHECK_EQ(s.fixed.object_size, 8 << 20);
    CHECK_EQ(sluice_layout_parse("stripe_count=2", &s), 0);
    CHECK_EQ(s.fixed.stripe_size, 4 << 20);
    CHECK_EQ(sluice_layout_parse("stripes=2", &s), -EINVAL);
    CHECK_EQ(s.want, SLUICE_LAYOUT_DEFAULT);
    CHECK_EQ(sluice_layout_parse("stripe_count=0", &s), -EINVAL);
    CHECK_EQ(sluice_layout_parse("stripe_count=2,", &s), -EINVAL);
    CHECK_EQ(sluice_layout_parse("stripe_size=1X", &s), -EINVAL);
    CHECK_EQ(sluice_layout_parse("stripe_count=70000", &s), -EINVAL);

    /* classes: one process's file, a file shared by a communicator */
    l = sluice_layout_for_class(1, 16 << 20);
    CHECK_EQ(l.stripe_count, 1);
    CHECK_EQ(l.stripe_size, 1 << 20);
    l = sluice_layout_for_class(4, 1 << 20);
    CHECK_EQ(l.stripe_count, 4);
    CHECK_EQ(l.stripe_size, 1 << 20);
    l = sluice_layout_for_class(1024, 16 << 20);
    CHECK_EQ(l.stripe_count, 16);
    CHECK_EQ(l.stripe_size, 16 << 20);

    /* CephFS */
    l = (struct sluice_layout){.stripe_count = 4, .stripe_size = 1 << 20};
    CHECK(sluice_layout_ceph_value(&l, v, sizeof v) > 0);
    CHECK_STR(v, "stripe_unit=1048576 stripe_count=4 object_size=4194304");
    l = (struct sluice_layout){.stripe_count = 1, .stripe_size = 4 << 20};
    CHECK(sluice_layout_ceph_value(&l, v, sizeof v) > 0);
    CHECK_STR(v, "stripe_unit=4194304 stripe_count=1 object_size=4194304");
    l = (struct sluice_layout){.stripe_count = 2, .stripe_size = 1 << 20, .object_size = 3 << 19};
    CHECK_EQ(sluice_layout_ceph_value(&l, v, sizeof v), -1);   /* object not a multiple of the unit */
    l = (struct sluice_layout){.stripe_count = 2, .stripe_size = 4096};
    CHECK_EQ(sluice_layout_ceph_value(&l, v, sizeof v), -1);   /* unit under 64 KiB */
    l = (struct sluice_layout){.stripe_count = 4, .stripe_size = 1 << 20};
    CHECK_EQ(sluice_layout_ceph_value(&l, v, 10), -1);

    /* CephFS's ceph.dir.layout.json (Ceph 16) and the layout CephFS would store */
    CHECK_EQ(sluice_layout_ceph_json("{\"stripe_unit\": 4194304, \"stripe_count\": 1, \"object_size\": 4194304, "
                                     "\"pool_name\": \"cephfs_data\", \"pool_id\": 3, \"pool_namespace\": \"\", "
                                     "\"inheritance\": \"@default\"}", &l), 0);
    CHECK_EQ(l.stripe_size, 4 << 20);
    CHECK_EQ(l.stripe_count, 1);
    CHECK_EQ(l.object_size, 4 << 20);
    {
        struct sluice_layout one = sluice_layout_for_class(1, 1 << 20), four = sluice_layout_for_class(4, 1 << 20);
        struct sluice_layout dflt = {.stripe_count = 1, .stripe_size = 4 << 20};
        CHECK_EQ(sluice_layout_ceph_same(&dflt, &l), 1);
        CHECK_EQ(sluice_layout_ceph_same(&one, &l), 0);    /* one process's file: 1 MiB objects */
        CHECK_EQ(sluice_layout_ceph_same(&four, &l), 0);
    }
    CHECK_EQ(sluice_layout_ceph_json("{\"stripe_unit\": 1048576, \"stripe_count\": 6, \"object_size\": 4194304, "
                                     "\"inheritance\": \"@inherited\"}", &l), 1);
    CHECK_EQ(l.stripe_count, 6);
    CHECK_EQ(sluice_layout_ceph_json("{\"stripe_unit\": 1048576, \"stripe_count\": 6, \"object_size\": 4194304, "
                                     "\"inheritance\": \"@set\"}", &l), 1);
    CHECK_EQ(sluice_layout_ceph_json("{\"stripe_unit\": 1048576}", &l), -1);
    CHECK_EQ(sluice_layout_ceph_json("garbage", &l), -1);

    /* Lustre lov_user_md v1 */
    memset(lov, 0xAA, sizeof lov);
    l = (struct sluice_layout){.stripe_count = 8, .stripe_size = 4 << 20};
    CHECK_EQ(sluice_layout_lustre_value(&l, lov, sizeof lov), 32);
    CHECK_EQ(le32(lov), 0x0BD10BD0u);          /* lmm_magic: LOV_USER_MAGIC_V1 */
    CHECK_EQ(le32(lov + 4), 1);                /* lmm_pattern: LOV_PATTERN_RAID0 */
    for (int i = 8; i < 24; i++)               /* lmm_oi: zero */
        CHECK_EQ(lov[i], 0);
    CHECK_EQ(le32(lov + 24), 4 << 20);         /* lmm_stripe_size */
    CHECK_EQ(le16(lov + 28), 8);               /* lmm_stripe_count */
    CHECK_EQ(le16(lov + 30), 0xFFFF);          /* lmm_stripe_offset: -1, the MDS chooses */
    CHECK_EQ(lov[32], 0xAA);                   /* nothing written past the struct */
    l = (struct sluice_layout){.stripe_count = -1, .stripe_size = 1 << 20};
    CHECK_EQ(sluice_layout_lustre_value(&l, lov, sizeof lov), 32);
    CHECK_EQ(le16(lov + 28), 0xFFFF);          /* -1: every OST */
    CHECK_EQ(sluice_layout_lustre_value(&l, lov, 31), -1);
    l = (struct sluice_layout){.stripe_count = 2, .stripe_size = 100000};
    CHECK_EQ(sluice_layout_lustre_value(&l, lov, sizeof lov), -1);   /* not a multiple of 64 KiB */
    layouts_read_back();
    return done();
}
