/* Unit tests of the record registry and the counting rules: size buckets,
 * CONSEC/SEQ, MAX_BYTE, RW_SWITCHES, the two sides, and the record cap. */
#include <stdint.h>

#include "core/counters.h"
#include "core/record.h"
#include "harness.h"

#define APP(r, c) (sluice_record_ints((r), SLUICE_SIDE_APP)[c])
#define FS(r, c) (sluice_record_ints((r), SLUICE_SIDE_FS)[c])

int main(void)
{
    CHECK_EQ(sluice_records_init(3), 0);
    struct sluice_record *r = sluice_record_get(SLUICE_MOD_POSIX, "/data/a");
    CHECK(r != NULL);
    CHECK(sluice_record_get(SLUICE_MOD_POSIX, "/data/a") == r);
    CHECK(sluice_record_get(SLUICE_MOD_STDIO, "/data/a") != r);
    CHECK_EQ(APP(r, POSIX_MAX_BYTE_WRITTEN), -1);

    /* writes of 100, 101, 1024, 1025 bytes: buckets 0_100, 100_1K, 100_1K, 1K_10K */
    int64_t off = 0, sizes[] = {100, 101, 1024, 1025};
    for (int i = 0; i < 4; i++) {
        sluice_count_rw(r, SLUICE_SIDES_BOTH, SLUICE_WRITE, off, sizes[i], 10, 20);
        off += sizes[i];
    }
    CHECK_EQ(APP(r, POSIX_WRITES), 4);
    CHECK_EQ(APP(r, POSIX_SIZE_WRITE_0_100), 1);
    CHECK_EQ(APP(r, POSIX_SIZE_WRITE_100_1K), 2);
    CHECK_EQ(APP(r, POSIX_SIZE_WRITE_1K_10K), 1);
    CHECK_EQ(APP(r, POSIX_CONSEC_WRITES), 3);
    CHECK_EQ(APP(r, POSIX_SEQ_WRITES), 3);
    CHECK_EQ(APP(r, POSIX_MAX_BYTE_WRITTEN), 2249);
    CHECK_EQ(FS(r, POSIX_BYTES_WRITTEN), 2250);

    /* both sides counted at once are stored once (mirrored) */
    CHECK_EQ(r->fs_mirror, 1);
    CHECK_EQ(r->ic[r->ni + POSIX_WRITES], 0);
    /* until a stack that changes I/O opens the file: then they split */
    sluice_record_split_sides(r);
    CHECK_EQ(r->fs_mirror, 0);
    CHECK_EQ(FS(r, POSIX_WRITES), 4);
    CHECK_EQ(FS(r, POSIX_MAX_BYTE_WRITTEN), 2249);

    /* a gap is sequential but not consecutive; going back is neither */
    sluice_count_rw(r, SLUICE_SIDES_APP, SLUICE_WRITE, 5000, 10, 30, 40);
    CHECK_EQ(APP(r, POSIX_SEQ_WRITES), 4);
    CHECK_EQ(APP(r, POSIX_CONSEC_WRITES), 3);
    sluice_count_rw(r, SLUICE_SIDES_APP, SLUICE_WRITE, 0, 10, 30, 40);
    CHECK_EQ(APP(r, POSIX_SEQ_WRITES), 4);
    CHECK_EQ(FS(r, POSIX_WRITES), 4);  /* app-only updates leave fs alone */

    /* a read after writes is one switch; reads have their own last offset */
    sluice_count_rw(r, SLUICE_SIDES_BOTH, SLUICE_READ, 0, 1, 50, 60);
    sluice_count_rw(r, SLUICE_SIDES_BOTH, SLUICE_READ, 1, (int64_t)2 << 30, 50, 60);
    CHECK_EQ(APP(r, POSIX_RW_SWITCHES), 1);
    CHECK_EQ(APP(r, POSIX_CONSEC_READS), 1);
    CHECK_EQ(APP(r, POSIX_SIZE_READ_1G_PLUS), 1);
    CHECK_EQ(APP(r, POSIX_MAX_BYTE_READ), ((int64_t)2 << 30));
    /* unknown offset: counted, but no offset-derived counter moves */
    sluice_count_rw(r, SLUICE_SIDES_BOTH, SLUICE_READ, -1, 7, 50, 60);
    CHECK_EQ(APP(r, POSIX_READS), 3);
    CHECK_EQ(APP(r, POSIX_CONSEC_READS), 1);

    sluice_count_meta(r, SLUICE_SIDES_BOTH, POSIX_STATS, 0, 1000000);
    CHECK_EQ(FS(r, POSIX_STATS), 1);
    /* times are kept in clock ticks until the log is written */
    CHECK(r->fc[POSIX_F_META_TIME] == 1000000.0);
    sluice_count_error(r, SLUICE_SIDES_APP);
    CHECK_EQ(APP(r, POSIX_ERRORS), 1);
    CHECK_EQ(FS(r, POSIX_ERRORS), 0);

    /* the cap: 3 POSIX records, then everything goes to "<other files>" */
    CHECK(sluice_record_get(SLUICE_MOD_POSIX, "/data/b") != NULL);
    CHECK(sluice_record_get(SLUICE_MOD_POSIX, "/data/c") != NULL);
    CHECK(!sluice_records_partial());
    struct sluice_record *o1 = sluice_record_get(SLUICE_MOD_POSIX, "/data/d");
    struct sluice_record *o2 = sluice_record_get(SLUICE_MOD_POSIX, "/data/e");
    CHECK(o1 == o2);
    CHECK_STR(o1->path, SLUICE_OTHER_FILES);
    CHECK(sluice_records_partial());

    sluice_records_after_fork_child();
    CHECK_EQ(APP(r, POSIX_WRITES), 0);
    CHECK_EQ(APP(r, POSIX_MAX_BYTE_WRITTEN), -1);
    return done();
}
