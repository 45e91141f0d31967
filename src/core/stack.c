/* Tier stacks and the dispatchers of sluice_tier.h. */
#include "core/stack.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "common/arena.h"
#include "common/diag.h"
#include "core/counters.h"

#define SLUICE_TIER(sym) extern const struct sluice_tier_ops sym;
#include "core/tiers.def"
#undef SLUICE_TIER

static const struct sluice_tier_ops *const all_tiers[] = {
#define SLUICE_TIER(sym) &sym,
#include "core/tiers.def"
#undef SLUICE_TIER
};

static const struct sluice_tier_ops *stack_template[SLUICE_MAX_TIERS];
static int stack_depth;

const struct sluice_tier_ops *sluice_tier_find(const char *name)
{
    for (size_t i = 0; i < sizeof all_tiers / sizeof *all_tiers; i++)
        if (strcmp(all_tiers[i]->name, name) == 0)
            return all_tiers[i];
    return NULL;
}

static const char *tier_check(const struct sluice_tier_ops *t, int allow_test)
{
    if (t->abi != SLUICE_TIER_ABI)
        return "was built for another tier ABI";
    if (t->size < offsetof(struct sluice_tier_ops, control))
        return "has a truncated operations table";
    if ((t->caps & SLUICE_TIER_TEST_ONLY) && !allow_test)
        return "is for tests only (set SLUICE_ALLOW_TEST_TIERS=1)";
    if (t->caps & SLUICE_TIER_BOTTOM)
        return "is the bottom tier and is always last";
    if (t->init && t->init() != 0)
        return "failed to initialise";
    return NULL;
}

int sluice_stack_init(const char *tiers, int allow_test_tiers)
{
    const char *s = tiers;

    stack_depth = 0;
    while (*s && stack_depth < SLUICE_MAX_TIERS - 1) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char name[64];
        if (len > 0 && len < sizeof name) {
            memcpy(name, s, len);
            name[len] = '\0';
            const struct sluice_tier_ops *t = sluice_tier_find(name);
            const char *why = t ? tier_check(t, allow_test_tiers) : "does not exist";
            if (why)
                sluice_diag("tier '%s' %s; left out of the stack", name, why);
            else
                stack_template[stack_depth++] = t;
        }
        if (!e)
            break;
        s = e + 1;
    }
    stack_template[stack_depth++] = sluice_tier_find("passthru");
    return stack_depth;
}

int sluice_stack_build(struct sluice_file *f)
{
    f->depth = stack_depth;
    for (int i = 0; i < stack_depth; i++) {
        f->tier[i] = stack_template[i];
        f->tier_state[i] = NULL;
        if (stack_template[i]->file_state) {
            /* Arena memory is never freed: tiers with per-file state will
             * need a recycling allocator; none in this build has any. */
            f->tier_state[i] = sluice_arena_alloc(stack_template[i]->file_state);
            if (!f->tier_state[i])
                return -ENOMEM;
        }
    }
    /* Nothing between the application and the file system: both sides see
     * the same calls, so the core counts both at once. */
    f->sides = stack_depth == 1 ? SLUICE_SIDES_BOTH : SLUICE_SIDES_APP;
    return 0;
}

/* Each dispatcher: the first tier at or below `level` that fills the slot. */
#define TIER_DISPATCH(ret, op, params, args)                                  \
    ret sluice_tier_##op params                                               \
    {                                                                         \
        for (; level < f->depth; level++)                                     \
            if (SLUICE_TIER_HAS(f->tier[level], op))                          \
                return f->tier[level]->op args;                               \
        return -ENOSYS;                                                       \
    }

TIER_DISPATCH(int, open, (struct sluice_file *f, int level, int dirfd, const char *path, int flags, mode_t mode),
              (f, level, dirfd, path, flags, mode))
TIER_DISPATCH(ssize_t, read, (struct sluice_file *f, int level, void *buf, size_t n, off_t off),
              (f, level, buf, n, off))
TIER_DISPATCH(ssize_t, write, (struct sluice_file *f, int level, const void *buf, size_t n, off_t off),
              (f, level, buf, n, off))
TIER_DISPATCH(ssize_t, readv, (struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags),
              (f, level, iov, cnt, off, flags))
TIER_DISPATCH(ssize_t, writev, (struct sluice_file *f, int level, const struct iovec *iov, int cnt, off_t off, int flags),
              (f, level, iov, cnt, off, flags))
TIER_DISPATCH(off_t, lseek, (struct sluice_file *f, int level, off_t off, int whence), (f, level, off, whence))
TIER_DISPATCH(int, fsync, (struct sluice_file *f, int level, int datasync), (f, level, datasync))
TIER_DISPATCH(int, ftruncate, (struct sluice_file *f, int level, off_t len), (f, level, len))
TIER_DISPATCH(int, fstat, (struct sluice_file *f, int level, struct stat *st), (f, level, st))
TIER_DISPATCH(int, close, (struct sluice_file *f, int level), (f, level))
TIER_DISPATCH(int, control, (struct sluice_file *f, int level, int op, void *arg), (f, level, op, arg))
