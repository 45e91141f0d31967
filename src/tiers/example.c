/*
 * The example tier: a complete, small tier to copy when adding a mode.
 *
 * What it does: every write larger than EXAMPLE_CHUNK bytes reaches the
 * tier below as several writes of at most EXAMPLE_CHUNK bytes (as a file
 * system with a maximum transfer size would want), so its effect shows in
 * the profile: the app side counts the program's writes, the fs side the
 * pieces. It shows each kind of slot:
 *  - per open file, with per-file state the core allocates (file_state):
 *    write and writev split, everything else is inherited (NULL slots);
 *  - per path: path_unlink passes the call down and counts unlinks seen;
 *  - control: answers SLUICE_CTL_SYNC (it holds nothing) by passing down;
 *  - whole process: init and quiesce.
 * Test-only (SLUICE_TIERS=example needs SLUICE_ALLOW_TEST_TIERS=1); as a
 * mode, it would be one line in core/modes.def naming it. Tested by
 * tests/python/test_example_tier.py. See docs/architecture.md, "Tiers".
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/uio.h>

#include "core/file.h"
#include "core/stack.h"
#include "sluice/sluice_tier.h"

#define EXAMPLE_CHUNK 4096

/* Per open file: what this tier keeps (the core zeroes it at open). */
struct example_file {
    unsigned long pieces;   /* writes sent down for this open file */
};

static atomic_ulong unlinks_seen;

static struct example_file *state_of(struct sluice_file *f, int level)
{
    return f->tier_state[level];
}

static int example_init(void)
{
    atomic_store(&unlinks_seen, 0);
    return 0;
}

/* One write, in pieces; a short piece ends the call as a short write. */
static ssize_t example_write(struct sluice_file *f, int level, const void *buf, size_t n, off_t off)
{
    struct example_file *s = state_of(f, level);
    size_t done = 0;

    do {
        size_t piece = n - done < EXAMPLE_CHUNK ? n - done : EXAMPLE_CHUNK;
        ssize_t rc = sluice_tier_write(f, level + 1, (const char *)buf + done, piece,
                                       off < 0 ? SLUICE_OFF_CURRENT : off + (off_t)done);
        if (rc < 0)
            return done ? (ssize_t)done : rc;   /* an error after progress is reported by the next call */
        s->pieces++;
        done += (size_t)rc;
        if ((size_t)rc < piece)
            break;
    } while (done < n);
    return (ssize_t)done;
}

static ssize_t example_writev(struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off,
                              int flags)
{
    ssize_t total = 0;

    if (flags)   /* RWF_* flags (RWF_APPEND, RWF_DSYNC) apply to the call as one: pass it whole */
        return sluice_tier_writev(f, level + 1, iov, cnt, off, flags);
    for (int i = 0; i < cnt; i++) {
        ssize_t rc = example_write(f, level, iov[i].iov_base, iov[i].iov_len,
                                   off < 0 ? SLUICE_OFF_CURRENT : off + total);
        if (rc < 0)
            return total ? total : rc;
        total += rc;
        if ((size_t)rc < iov[i].iov_len)
            break;
    }
    return total;
}

static int example_control(struct sluice_file *f, int level, int op, void *arg)
{
    /* Nothing held here: a sync or a fallback is the tiers' below. */
    return sluice_tier_control(f, level + 1, op, arg);
}

static int example_path_unlink(const struct sluice_stack *s, int level, const struct sluice_path *p, int flags)
{
    int rc = sluice_tier_path_unlink(s, level + 1, p, flags);
    if (rc == 0)
        atomic_fetch_add(&unlinks_seen, 1);
    return rc;
}

static int example_quiesce(unsigned why)
{
    return 0;   /* it holds no bytes: nothing to bring down before fork, exec or exit */
}

const struct sluice_tier_ops sluice_tier_example = {
    .size = sizeof(struct sluice_tier_ops),
    .abi = SLUICE_TIER_ABI,
    .name = "example",
    .caps = SLUICE_TIER_TEST_ONLY,
    .file_state = sizeof(struct example_file),
    .init = example_init,
    .write = example_write,
    .writev = example_writev,
    .control = example_control,
    .path_unlink = example_path_unlink,
    .quiesce = example_quiesce,
};
