/* Unit tests of src/common and the config parser: path normalisation,
 * CRC-32 against zlib's known values, integer and boolean settings. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "common/crc32.h"
#include "common/listsplit.h"
#include "common/pathnorm.h"
#include "core/autolarge.h"
#include "core/config.h"
#include "harness.h"

static const char *norm(const char *in)
{
    static char buf[256];
    strcpy(buf, in);
    sluice_path_normalize(buf);
    return buf;
}

static void test_list_next(void)
{
    const char *s = "a:bb::ccc";
    char item[3];
    int too_long;

    CHECK(list_next(&s, ':', item, sizeof item, &too_long));
    CHECK_STR(item, "a");
    CHECK(list_next(&s, ':', item, sizeof item, &too_long));
    CHECK_STR(item, "bb");
    CHECK(list_next(&s, ':', item, sizeof item, &too_long));
    CHECK_STR(item, "");   /* an empty item is an item */
    CHECK(!too_long);
    CHECK(list_next(&s, ':', item, sizeof item, &too_long));
    CHECK(too_long);       /* "ccc" does not fit in 3 bytes */
    CHECK_STR(item, "");
    CHECK(!list_next(&s, ':', item, sizeof item, &too_long));
    const char *empty = "";
    CHECK(!list_next(&empty, ':', item, sizeof item, &too_long));
}

/* SLUICE_DIRECT_FROM: the longest prefix's size, the default elsewhere,
 * bad items left out and counted. */
static void test_direct_from(void)
{
    static struct auto_large_table t;

    CHECK_EQ(auto_large_parse("/mnt/pfs=256K,/mnt/pfs/scratch/=0,/=2M", &t), 0);
    CHECK_EQ(t.n, 3);
    CHECK_EQ(auto_large_of(&t, "/mnt/pfs/run/out.nc", 1 << 20), 256 << 10);
    CHECK_EQ(auto_large_of(&t, "/mnt/pfs/scratch/a", 1 << 20), 0);   /* (trailing slash normalised) */
    CHECK_EQ(auto_large_of(&t, "/mnt/pfsx/a", 1 << 20), 2 << 20);    /* not under /mnt/pfs: "/" */
    CHECK_EQ(auto_large_parse("/a/../b=4096,,", &t), 0);
    CHECK_EQ(auto_large_of(&t, "/b/c", 7), 4096);
    CHECK_EQ(auto_large_of(&t, "/a/c", 7), 7);
    CHECK_EQ(auto_large_parse("rel=1M,/x=big,/y,/z=-1,/ok=1G", &t), 4);
    CHECK_EQ(t.n, 1);
    CHECK_EQ(auto_large_of(&t, "/ok/f", 0), 1 << 30);
    CHECK_EQ(auto_large_parse("", &t), 0);
    CHECK_EQ(auto_large_of(&t, "/any", 1 << 20), 1 << 20);
}

int main(void)
{
    test_list_next();
    test_direct_from();
    CHECK_STR(norm("/"), "/");
    CHECK_STR(norm("//a///b/"), "/a/b");
    CHECK_STR(norm("/a/./b/."), "/a/b");
    CHECK_STR(norm("/a/b/../c"), "/a/c");
    CHECK_STR(norm("/a/../../b"), "/b");
    CHECK_STR(norm("/.."), "/");
    CHECK_STR(norm("/a/.hidden/..x"), "/a/.hidden/..x");

    char out[64], cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_EQ(sluice_path_absolute(AT_FDCWD, "/x/y/../z", out, sizeof out), 0);
    CHECK_STR(out, "/x/z");
    char rel[4200];
    CHECK_EQ(sluice_path_absolute(AT_FDCWD, "sub/../f", rel, sizeof rel), 0);
    char want[4200];
    snprintf(want, sizeof want, "%s/f", strcmp(cwd, "/") ? cwd : "");
    CHECK_STR(rel, want);
    char tiny[8];
    CHECK_EQ(sluice_path_absolute(AT_FDCWD, "/a/long/path", tiny, sizeof tiny), -ENAMETOOLONG);
    int dfd = open("/tmp", O_RDONLY | O_DIRECTORY);
    CHECK(dfd >= 0);
    CHECK_EQ(sluice_path_absolute(dfd, "q/./r", out, sizeof out), 0);
    CHECK_STR(out, "/tmp/q/r");
    close(dfd);

    CHECK(sluice_path_under("/a/b", "/a"));
    CHECK(sluice_path_under("/a", "/a/"));
    CHECK(!sluice_path_under("/ab", "/a"));
    CHECK(sluice_path_under("/anything", "/"));

    /* zlib.crc32 values */
    CHECK_EQ(sluice_crc32(0, "", 0), 0);
    CHECK_EQ(sluice_crc32(0, "123456789", 9), 0xCBF43926u);
    uint32_t c = sluice_crc32(0, "12345", 5);
    CHECK_EQ(sluice_crc32(c, "6789", 4), 0xCBF43926u);
    /* the 8-byte steps, unaligned starts and tails (zlib.crc32 of bytes (i*131+7)%256) */
    unsigned char data[1000];
    for (int i = 0; i < 1000; i++)
        data[i] = (unsigned char)((i * 131 + 7) % 256);
    CHECK_EQ(sluice_crc32(0, data, 1000), 0x1ed57bb9u);
    CHECK_EQ(sluice_crc32(0, data, 13), 0xe7be5425u);
    CHECK_EQ(sluice_crc32(0, data + 3, 997), 0x0891265fu);
    CHECK_EQ(sluice_crc32(sluice_crc32(0, data, 501), data + 501, 499), 0x1ed57bb9u);

    int64_t v;
    CHECK_EQ(sluice_config_parse_int("65536", &v), 0);
    CHECK_EQ(v, 65536);
    CHECK_EQ(sluice_config_parse_int("4M", &v), 0);
    CHECK_EQ(v, 4 << 20);
    CHECK_EQ(sluice_config_parse_int("2g", &v), 0);
    CHECK_EQ(v, 2LL << 30);
    CHECK_EQ(sluice_config_parse_int("", &v), -EINVAL);
    CHECK_EQ(sluice_config_parse_int("-1", &v), -EINVAL);
    CHECK_EQ(sluice_config_parse_int("12x", &v), -EINVAL);
    CHECK_EQ(sluice_config_parse_int("99999999999999999999", &v), -EINVAL);
    CHECK_EQ(sluice_config_parse_int("9999999999999G", &v), -EINVAL);
    int b;
    CHECK_EQ(sluice_config_parse_bool("yes", &b), 0);
    CHECK_EQ(b, 1);
    CHECK_EQ(sluice_config_parse_bool("OFF", &b), 0);
    CHECK_EQ(b, 0);
    CHECK_EQ(sluice_config_parse_bool("maybe", &b), -EINVAL);
    return done();
}
