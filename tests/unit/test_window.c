/* Unit tests of the write-behind window (extents, growth under a memory
 * refusal, copy-out, truncate) and of the Lustre layout parser. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "buffer/unit.h"
#include "buffer/window.h"
#include "harness.h"

static int64_t granted, limit = 1 << 30;

static int reserve(int64_t delta)
{
    if (delta > 0 && granted + delta > limit)
        return -ENOMEM;
    granted += delta;
    return 0;
}

int main(void)
{
    struct buffer_window w = {0};
    unsigned char buf[300000], out[300000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 7 + 3);

    /* the span containing the offset, aligned */
    window_start(&w, 70000, 65536);
    CHECK_EQ(w.base, 65536);
    CHECK(window_empty(&w));
    /* a write outside the span takes nothing */
    CHECK_EQ(window_add(&w, buf, 10, 5, reserve), 0);
    /* a write crossing the end takes what fits */
    CHECK_EQ(window_add(&w, buf, 131000, 1000, reserve), 72);
    CHECK_EQ(window_end(&w), 131072);
    CHECK_EQ(w.next, 1);
    /* disjoint extents stay sorted; one that bridges two merges them */
    CHECK_EQ(window_add(&w, buf, 70000, 100, reserve), 100);
    CHECK_EQ(window_add(&w, buf, 80000, 100, reserve), 100);
    CHECK_EQ(w.next, 3);
    CHECK_EQ(w.ext[0].start, 70000);
    CHECK_EQ(window_add(&w, buf + 5, 70050, 10000, reserve), 10000);
    CHECK_EQ(w.next, 2);
    CHECK_EQ(w.ext[0].start, 70000);
    CHECK_EQ(w.ext[0].end, 80100);
    /* overlap queries */
    CHECK_EQ(window_overlap(&w, 70010, 20), 1);
    CHECK_EQ(window_overlap(&w, 69990, 20), 2);
    CHECK_EQ(window_overlap(&w, 90000, 20), 0);
    /* the later write wins where they overlap */
    window_copy_out(&w, out, 70000, 100);
    CHECK(memcmp(out, buf, 50) == 0 && memcmp(out + 50, buf + 5, 50) == 0);
    CHECK(!window_full(&w));

    /* too many extents: refused whole, nothing changed */
    struct buffer_window e = {0};
    window_start(&e, 0, 1 << 20);
    for (int i = 0; i < WINDOW_MAX_EXTENTS; i++)
        CHECK_EQ(window_add(&e, buf, i * 1000, 10, reserve), 10);
    CHECK_EQ(window_add(&e, buf, 500000, 10, reserve), -E2BIG);
    CHECK_EQ(e.next, WINDOW_MAX_EXTENTS);
    /* but a write touching an existing extent still fits */
    CHECK_EQ(window_add(&e, buf, 1005, 100, reserve), 100);

    /* truncate drops and trims extents */
    window_truncate(&e, 2050);
    CHECK_EQ(e.next, 3);
    CHECK_EQ(window_end(&e), 2010);
    window_truncate(&e, 1050);
    CHECK_EQ(window_end(&e), 1050);

    /* memory refused: -ENOMEM and nothing changed */
    struct buffer_window m = {0};
    window_start(&m, 0, 4 << 20);
    limit = granted + 8192;
    CHECK_EQ(window_add(&m, buf, 0, 8000, reserve), 8000);
    CHECK_EQ(window_add(&m, buf, 8000, 300000 - 8000, reserve), -ENOMEM);
    CHECK_EQ(m.next, 1);
    CHECK_EQ(window_end(&m), 8000);
    limit = 1 << 30;
    CHECK_EQ(window_add(&m, buf + 8000, 8000, 300000 - 8000, reserve), 300000 - 8000);
    window_copy_out(&m, out, 0, 300000);
    CHECK(memcmp(out, buf, 300000) == 0);

    /* a full span */
    struct buffer_window f = {0};
    window_start(&f, 5, 4096);
    CHECK_EQ(window_add(&f, buf, 0, 4096, reserve), 4096);
    CHECK(window_full(&f));

    int64_t before = granted;
    window_free(&w, reserve);
    window_free(&e, reserve);
    window_free(&m, reserve);
    window_free(&f, reserve);
    window_pool_drain(reserve);
    CHECK(granted < before);
    CHECK_EQ(granted, 0);

    /* Lustre layouts: v1 and v3 carry the stripe size at byte 24 */
    unsigned char lov[32] = {0};
    uint32_t magic = 0x0BD10BD0u, size = 1 << 20;
    memcpy(lov, &magic, 4);
    memcpy(lov + 24, &size, 4);
    CHECK_EQ(lustre_stripe_size(lov, sizeof lov), 1 << 20);
    magic = 0x0BD30BD0u;
    memcpy(lov, &magic, 4);
    CHECK_EQ(lustre_stripe_size(lov, sizeof lov), 1 << 20);
    CHECK_EQ(lustre_stripe_size(lov, 20), 0);   /* truncated */
    magic = 0x12345678u;
    memcpy(lov, &magic, 4);
    CHECK_EQ(lustre_stripe_size(lov, sizeof lov), 0);

    return done();
}
