/* Tier stacks and the dispatchers of sluice_tier.h. */
#include "core/stack.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "common/arena.h"
#include "common/diag.h"
#include "common/listsplit.h"
#include "core/counters.h"

#define SLUICE_TIER(sym) extern const struct sluice_tier_ops sym;
#include "core/tiers.def"
#undef SLUICE_TIER

static const struct sluice_tier_ops *const all_tiers[] = {
#define SLUICE_TIER(sym) &sym,
#include "core/tiers.def"
#undef SLUICE_TIER
};

/* One stack per mode: the mode's own tiers, then SLUICE_TIERS, then the
 * bottom tier. */
static struct sluice_stack templates[SLUICE_MODE_COUNT];

/* Modes (bits) in which a tier above the bottom one answers path calls: a
 * path's mode must be known before its call goes down. */
static unsigned path_tier_modes;

/* Each mode's tiers with path slots, above the bottom one. */
static const struct sluice_tier_ops *path_tiers[SLUICE_MODE_COUNT][SLUICE_MAX_TIERS];

/* The tiers each mode puts on top. */
static const char *const mode_tiers[SLUICE_MODE_COUNT] = {
#define SLUICE_MODE(id, name, tiers, help) [SLUICE_MODE_##id] = tiers,
#include "core/modes.def"
#undef SLUICE_MODE
};

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
    if (t->size < offsetof(struct sluice_tier_ops, control) + sizeof t->control)
        return "has a truncated operations table";
    if (t->file_state > SLUICE_TIER_STATE_BYTES)
        return "needs more per-file state than the core keeps";
    if ((t->caps & SLUICE_TIER_TEST_ONLY) && !allow_test)
        return "is for tests only (set SLUICE_ALLOW_TEST_TIERS=1)";
    if (t->caps & SLUICE_TIER_BOTTOM)
        return "is the bottom tier and is always last";
    if (t->init && t->init() != 0)
        return "failed to initialise";
    return NULL;
}

/* Already checked and initialised for another stack: init runs once. */
static int tier_inited(const struct sluice_tier_ops *t)
{
    for (int m = 0; m < SLUICE_MODE_COUNT; m++)
        for (int i = 0; i < templates[m].depth; i++)
            if (templates[m].tier[i] == t)
                return 1;
    return 0;
}

/* Append the tiers named in the comma-separated list to template m. */
static void template_add(int m, const char *list, int allow_test)
{
    const char *s = list;
    char name[64];
    int too_long;

    while (templates[m].depth < SLUICE_MAX_TIERS - 1 && list_next(&s, ',', name, sizeof name, &too_long)) {
        if (name[0]) {
            const struct sluice_tier_ops *t = sluice_tier_find(name);
            const char *why = !t ? "does not exist" : tier_inited(t) ? NULL : tier_check(t, allow_test);
            if (why)
                sluice_diag("tier '%s' %s; left out of the stack", name, why);
            else
                templates[m].tier[templates[m].depth++] = t;
        }
    }
}

static int tier_has_path_slots(const struct sluice_tier_ops *t)
{
    return SLUICE_TIER_HAS(t, path_stat) || SLUICE_TIER_HAS(t, path_statx) || SLUICE_TIER_HAS(t, path_access) ||
           SLUICE_TIER_HAS(t, path_mkdir) || SLUICE_TIER_HAS(t, path_unlink) || SLUICE_TIER_HAS(t, path_rename) ||
           SLUICE_TIER_HAS(t, path_link) || SLUICE_TIER_HAS(t, path_symlink) ||
           SLUICE_TIER_HAS(t, path_truncate) || SLUICE_TIER_HAS(t, path_chmod) || SLUICE_TIER_HAS(t, path_chown) ||
           SLUICE_TIER_HAS(t, path_utimens) || SLUICE_TIER_HAS(t, path_xattr) || SLUICE_TIER_HAS(t, path_list);
}

int sluice_stack_init(const char *tiers, int allow_test_tiers)
{
    memset(templates, 0, sizeof templates);
    path_tier_modes = 0;
    for (int m = 0; m < SLUICE_MODE_COUNT; m++) {
        template_add(m, mode_tiers[m], allow_test_tiers);
        template_add(m, tiers, allow_test_tiers);
        templates[m].tier[templates[m].depth++] = sluice_tier_find("passthru");
        int n = 0;
        for (int i = 0; i < templates[m].depth - 1; i++)
            if (tier_has_path_slots(templates[m].tier[i])) {
                path_tier_modes |= 1u << m;
                path_tiers[m][n++] = templates[m].tier[i];
            }
        path_tiers[m][n] = NULL;
    }
    return templates[SLUICE_MODE_PROFILE].depth;
}

int sluice_stack_build(struct sluice_file *f, enum sluice_mode mode)
{
    size_t used = 0;

    if ((unsigned)mode >= SLUICE_MODE_COUNT)
        mode = SLUICE_MODE_PROFILE;
    f->depth = templates[mode].depth;
    f->mode = (int)mode;
    f->owns_pos = 0;
    for (int i = 0; i < f->depth; i++) {
        const struct sluice_tier_ops *t = templates[mode].tier[i];
        f->tier[i] = t;
        f->tier_state[i] = NULL;
        if (t->caps & SLUICE_TIER_OWNS_POSITION)
            f->owns_pos = 1;
        if (t->file_state) {
            size_t need = (t->file_state + 15) & ~(size_t)15;
            if (used + need > sizeof f->tier_mem)
                return -ENOMEM;
            f->tier_state[i] = f->tier_mem + used;
            memset(f->tier_state[i], 0, t->file_state);
            used += need;
        }
    }
    /* Nothing between the application and the file system: both sides see
     * the same calls, so the core counts both at once. */
    f->sides = f->depth == 1 ? SLUICE_SIDES_BOTH : SLUICE_SIDES_APP;
    f->open_sides = f->sides;
    return 0;
}

const struct sluice_stack *sluice_stack_of(enum sluice_mode mode)
{
    return &templates[(unsigned)mode < SLUICE_MODE_COUNT ? mode : SLUICE_MODE_PROFILE];
}

int sluice_stack_has_path_tiers(void)
{
    unsigned modes = path_tier_modes & sluice_policy_modes_used();

    for (int m = 0; modes; m++, modes >>= 1) {
        if (!(modes & 1))
            continue;
        for (int i = 0; path_tiers[m][i]; i++)
            if (!SLUICE_TIER_HAS(path_tiers[m][i], path_idle) || !path_tiers[m][i]->path_idle())
                return 1;
    }
    return 0;
}

int sluice_stack_caps(enum sluice_mode mode)
{
    unsigned caps = 0;
    const struct sluice_stack *s = sluice_stack_of(mode);
    for (int i = 0; i < s->depth; i++)
        caps |= s->tier[i]->caps;
    return (int)caps;
}

int sluice_stack_any_caps(unsigned caps)
{
    for (int m = 0; m < SLUICE_MODE_COUNT; m++)
        if ((unsigned)sluice_stack_caps((enum sluice_mode)m) & caps)
            return 1;
    return 0;
}

int sluice_stack_is_bottom_only(enum sluice_mode mode)
{
    return (unsigned)mode < SLUICE_MODE_COUNT && templates[mode].depth == 1;
}

void *sluice_stack_stream_buffer(enum sluice_mode mode, size_t *size)
{
    const struct sluice_stack *s = sluice_stack_of(mode);
    for (int i = 0; i < s->depth; i++)
        if (SLUICE_TIER_HAS(s->tier[i], stream_buffer))
            return s->tier[i]->stream_buffer(size);
    return NULL;
}

static int distinct_tiers(const struct sluice_tier_ops **out);

void sluice_stack_stream_buffer_free(void *buf, size_t size)
{
    const struct sluice_tier_ops *t[SLUICE_MODE_COUNT * SLUICE_MAX_TIERS];
    int n = distinct_tiers(t);

    for (int i = 0; i < n; i++)
        if (SLUICE_TIER_HAS(t[i], stream_buffer_free)) {
            t[i]->stream_buffer_free(buf, size);
            return;
        }
}

/* Every distinct tier in use, each once. */
static int distinct_tiers(const struct sluice_tier_ops **out)
{
    int n = 0;

    for (int m = 0; m < SLUICE_MODE_COUNT; m++)
        for (int i = 0; i < templates[m].depth; i++) {
            int seen = 0;
            for (int j = 0; j < n; j++)
                seen |= out[j] == templates[m].tier[i];
            if (!seen)
                out[n++] = templates[m].tier[i];
        }
    return n;
}

int sluice_stack_quiesce(unsigned why)
{
    const struct sluice_tier_ops *t[SLUICE_MODE_COUNT * SLUICE_MAX_TIERS];
    int n = distinct_tiers(t), rc = 0;

    for (int i = 0; i < n; i++)
        if (SLUICE_TIER_HAS(t[i], quiesce)) {
            int r = t[i]->quiesce(why);
            if (r < 0 && rc == 0)
                rc = r;
        }
    return rc;
}

void sluice_stack_after_fork_child(void)
{
    const struct sluice_tier_ops *t[SLUICE_MODE_COUNT * SLUICE_MAX_TIERS];
    int n = distinct_tiers(t);

    for (int i = 0; i < n; i++)
        if (SLUICE_TIER_HAS(t[i], after_fork_child))
            t[i]->after_fork_child();
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
TIER_DISPATCH(int, fchmod, (struct sluice_file *f, int level, mode_t mode), (f, level, mode))
TIER_DISPATCH(int, fchown, (struct sluice_file *f, int level, uid_t uid, gid_t gid), (f, level, uid, gid))
TIER_DISPATCH(int, futimens, (struct sluice_file *f, int level, const struct timespec times[2]), (f, level, times))
TIER_DISPATCH(int, fallocate, (struct sluice_file *f, int level, int mode, off_t off, off_t len),
              (f, level, mode, off, len))
TIER_DISPATCH(ssize_t, fxattr, (struct sluice_file *f, int level, const struct sluice_xattr *x), (f, level, x))

/* Path dispatchers: the same walk down the stack of the path's mode. */
#define PATH_DISPATCH(ret, op, params, args)                                  \
    ret sluice_tier_##op params                                               \
    {                                                                         \
        for (; level < s->depth; level++)                                     \
            if (SLUICE_TIER_HAS(s->tier[level], op))                          \
                return s->tier[level]->op args;                               \
        return -ENOSYS;                                                       \
    }

typedef const struct sluice_stack cstack;
typedef const struct sluice_path cpath;

PATH_DISPATCH(int, path_stat, (cstack *s, int level, cpath *p, struct stat *st, int flags), (s, level, p, st, flags))
PATH_DISPATCH(int, path_statx, (cstack *s, int level, cpath *p, int flags, unsigned mask, struct statx *stx),
              (s, level, p, flags, mask, stx))
PATH_DISPATCH(int, path_access, (cstack *s, int level, cpath *p, int mode, int flags), (s, level, p, mode, flags))
PATH_DISPATCH(int, path_mkdir, (cstack *s, int level, cpath *p, mode_t mode), (s, level, p, mode))
PATH_DISPATCH(int, path_unlink, (cstack *s, int level, cpath *p, int flags), (s, level, p, flags))
PATH_DISPATCH(int, path_rename, (cstack *s, int level, cpath *from, cpath *to, unsigned flags),
              (s, level, from, to, flags))
PATH_DISPATCH(int, path_link, (cstack *s, int level, cpath *from, cpath *to, int flags), (s, level, from, to, flags))
PATH_DISPATCH(int, path_symlink, (cstack *s, int level, const char *target, cpath *p), (s, level, target, p))
PATH_DISPATCH(int, path_truncate, (cstack *s, int level, cpath *p, off_t len), (s, level, p, len))
PATH_DISPATCH(int, path_chmod, (cstack *s, int level, cpath *p, mode_t mode, int flags), (s, level, p, mode, flags))
PATH_DISPATCH(int, path_chown, (cstack *s, int level, cpath *p, uid_t uid, gid_t gid, int flags),
              (s, level, p, uid, gid, flags))
PATH_DISPATCH(int, path_utimens, (cstack *s, int level, cpath *p, const struct timespec times[2], int flags),
              (s, level, p, times, flags))
PATH_DISPATCH(ssize_t, path_xattr, (cstack *s, int level, cpath *p, const struct sluice_xattr *x), (s, level, p, x))

int sluice_tier_path_list(cstack *s, cpath *dir, void (*emit)(void *ctx, const char *name, ino_t ino), void *ctx)
{
    int n = 0;
    for (int level = 0; level < s->depth; level++)
        if (SLUICE_TIER_HAS(s->tier[level], path_list) || SLUICE_TIER_HAS(s->tier[level], path_hides)) {
            if (SLUICE_TIER_HAS(s->tier[level], path_list))
                s->tier[level]->path_list(dir, emit, ctx);
            n++;
        }
    return n;
}

int sluice_tier_path_hides(cstack *s, const char *name)
{
    for (int level = 0; level < s->depth; level++)
        if (SLUICE_TIER_HAS(s->tier[level], path_hides) && s->tier[level]->path_hides(name))
            return 1;
    return 0;
}
