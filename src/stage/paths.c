/*
 * The tier's path slots: a path this process staged is answered or
 * changed on the tier (own_paths.c), one another process staged waits for
 * that process to let go of it (foreign.c), one left to the job is
 * changed under its entry's lock (handed_paths.c); what the tier does not
 * keep publishes the file first and goes down to the shared file system.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/statconv.h"
#include "core/policy.h"
#include "core/record.h"
#include "core/stack.h"
#include "stage/handoff.h"
#include "stage/names.h"
#include "stage/stage.h"
#include "stage/stage_state.h"

typedef const struct sluice_stack cstack;
typedef const struct sluice_path cpath;

/* The path's absolute name when this process may have staged it. */
static const char *staged_name(cpath *p)
{
    return p->abs && stage_active() ? p->abs : NULL;
}

/* The path's absolute name when any process on the node may have. */
static const char *managed_name(cpath *p)
{
    return p->abs && stage_st.usable ? p->abs : NULL;
}

static int any_staged_stat(cpath *p, struct stat *sb)
{
    const char *any = managed_name(p);

    return any && stage_staged_stat_abs(any, sb);
}

/* A call that changes a path another process staged waits until that
 * process has let go of it (stage_wait_published). */
static void settle_foreign(cpath *p)
{
    const char *any = managed_name(p);
    struct names_entry e;

    if (any && stage_foreign_lookup(any, &e))
        stage_wait_published(any);
}

int stage_tier_path_stat(cstack *s, int level, cpath *p, struct stat *sb, int flags)
{
    char real[PATH_MAX];

    if (any_staged_stat(p, sb))
        return 0;
    int rc = sluice_tier_path_stat(s, level + 1, p, sb, flags);
    if (rc == -ENOENT && p->abs &&
        stage_staged_through_links(p->abs, !(flags & AT_SYMLINK_NOFOLLOW), real, sizeof real) &&
        stage_staged_stat_abs(real, sb))
        return 0;
    return rc;
}

int stage_tier_path_statx(cstack *s, int level, cpath *p, int flags, unsigned mask, struct statx *stx)
{
    char real[PATH_MAX];
    struct stat sb;
    if (any_staged_stat(p, &sb)) {
        sluice_stat_to_statx(&sb, stx);
        return 0;
    }
    int rc = sluice_tier_path_statx(s, level + 1, p, flags, mask, stx);
    if (rc == -ENOENT && p->abs &&
        stage_staged_through_links(p->abs, !(flags & AT_SYMLINK_NOFOLLOW), real, sizeof real) &&
        stage_staged_stat_abs(real, &sb)) {
        sluice_stat_to_statx(&sb, stx);
        return 0;
    }
    return rc;
}

int stage_tier_path_access(cstack *s, int level, cpath *p, int mode, int flags)
{
    char real[PATH_MAX];
    struct stat sb;
    if (any_staged_stat(p, &sb))
        return 0;
    int rc = sluice_tier_path_access(s, level + 1, p, mode, flags);
    if (rc == -ENOENT && p->abs &&
        stage_staged_through_links(p->abs, !(flags & AT_SYMLINK_NOFOLLOW), real, sizeof real))
        return 0;
    return rc;
}

/* mkdir of a directory stage mode knows exists: EEXIST, as the file system
 * would answer, without asking it again; a directory made is remembered. */
int stage_tier_path_mkdir(cstack *s, int level, cpath *p, mode_t mode)
{
    if (p->abs && stage_dir_exists(p->abs))
        return -EEXIST;
    int rc = sluice_tier_path_mkdir(s, level + 1, p, mode);
    if (rc == 0 && p->abs)
        stage_dir_created(p->abs);
    return rc;
}

int stage_tier_path_unlink(cstack *s, int level, cpath *p, int flags)
{
    const char *abs = staged_name(p), *any = managed_name(p);
    int rc;
    if (abs && !(flags & AT_REMOVEDIR) && stage_path_unlink(abs, &rc))
        return rc;
    if (!(flags & AT_REMOVEDIR)) {
        settle_foreign(p);
        int existed;
        if (stage_handed_unlink(any, &existed))
            return stage_unlink_replaced(any, existed);
        if (any) {
            pthread_mutex_lock(&stage_st.lock);
            stage_recent_forget_locked(any);   /* a new file of that name is staged again */
            pthread_mutex_unlock(&stage_st.lock);
        }
        return sluice_tier_path_unlink(s, level + 1, p, flags);
    }
    /* rmdir: a directory holding staged files is not empty, as it would not be */
    if (any && stage_dir_holds_staged(any))
        return -ENOTEMPTY;
    rc = sluice_tier_path_unlink(s, level + 1, p, flags);
    if (rc == 0 && any)
        stage_forget_known_dirs();
    return rc;
}

/* A rename that is not of a staged file (a shared file, a directory, or
 * the exchange of two directories) on the shared file system; the staged
 * files of any process under a renamed directory follow it, locked while
 * it moves so that no publish into the old directory runs meanwhile. */
static int rename_shared(cstack *s, int level, cpath *from, cpath *to, unsigned flags)
{
    struct handoff_dir held = {0};
    int exchanged = (flags & RENAME_EXCHANGE) != 0, dropped, rc;

    handoff_dir_lock(&stage_st.dirs, from->abs, exchanged ? to->abs : NULL, &held);
    rc = sluice_tier_path_rename(s, level + 1, from, to, flags);
    if (rc == 0) {
        if (!exchanged) {
            /* a file of the shared file system over a staged name replaces the staged file */
            stage_drop_replaced(to->abs);
            (void)stage_handed_unlink(to->abs, &dropped);
            stage_dir_renamed(from->abs, to->abs);
        } else {
            stage_forget_known_dirs();
        }
        handoff_dir_moved(&stage_st.dirs, &held, from->abs, to->abs, exchanged);
    }
    handoff_dir_release(&held);
    return rc;
}

int stage_tier_path_rename(cstack *s, int level, cpath *from, cpath *to, unsigned flags)
{
    const char *abs = staged_name(from), *fany = managed_name(from), *tany = managed_name(to);
    struct stat sb;
    int rc, dropped;

    settle_foreign(from);
    settle_foreign(to);
    if (!fany || !tany)
        return sluice_tier_path_rename(s, level + 1, from, to, flags);
    if (strcmp(fany, tany) == 0 && any_staged_stat(from, &sb))
        return (flags & RENAME_NOREPLACE) ? -EEXIST : 0;   /* (onto itself: nothing changes) */
    if ((flags & ~(unsigned)RENAME_NOREPLACE) == 0) {
        int staged_from = any_staged_stat(from, &sb);
        if (flags & RENAME_NOREPLACE) {
            /* a name staged, or standing on the shared file system, is taken */
            if (any_staged_stat(to, &sb))
                return -EEXIST;
            if (staged_from && sluice_tier_path_stat(s, level + 1, to, &sb, AT_SYMLINK_NOFOLLOW) == 0)
                return -EEXIST;
        }
        if (staged_from) {
            /* a staged file moves on the tier, over whatever was staged there */
            if (abs) {
                pthread_mutex_lock(&stage_st.lock);
                int own = stage_table_lookup_locked(abs) != NULL;
                pthread_mutex_unlock(&stage_st.lock);
                if (own) {
                    (void)stage_handed_unlink(tany, &dropped);
                    if (stage_path_rename(abs, tany, &rc))
                        return rc;
                }
            }
            if (stage_handed_rename(fany, tany, &rc))
                return rc;
        }
        return rename_shared(s, level, from, to, flags);
    }
    if ((flags & RENAME_EXCHANGE) && !any_staged_stat(from, &sb) && !any_staged_stat(to, &sb))
        return rename_shared(s, level, from, to, flags);
    /* an exchange (or whiteout) with a staged file: both are published first */
    if ((rc = stage_publish_now(abs)) != 0 || (rc = stage_publish_now(staged_name(to))) != 0 ||
        (rc = stage_handed_publish_now(fany, NULL)) != 0 || (rc = stage_handed_publish_now(tany, NULL)) != 0)
        return rc;
    return sluice_tier_path_rename(s, level + 1, from, to, flags);
}

int stage_tier_path_truncate(cstack *s, int level, cpath *p, off_t len)
{
    const char *abs = staged_name(p);
    int rc;
    if (abs && stage_path_truncate(abs, len, &rc))
        return rc;
    settle_foreign(p);
    if (stage_handed_truncate(managed_name(p), len, &rc))
        return rc;
    return sluice_tier_path_truncate(s, level + 1, p, len);
}

int stage_tier_path_chmod(cstack *s, int level, cpath *p, mode_t mode, int flags)
{
    const char *abs = staged_name(p);
    if (abs && stage_path_set_mode(abs, mode))
        return 0;
    settle_foreign(p);
    if (stage_handed_chmod(managed_name(p), mode))
        return 0;
    return sluice_tier_path_chmod(s, level + 1, p, mode, flags);
}

int stage_publish_for_shared_open(const char *abs)
{
    enum sluice_mode m = sluice_policy_mode(abs);

    if (m != SLUICE_MODE_STAGE && m != SLUICE_MODE_AUTO)
        return 0;
    if (!stage_st.usable)
        return 1;
    struct sluice_record *rec = sluice_record_get(SLUICE_MOD_POSIX, abs);
    if (rec)
        sluice_record_split_sides(rec);
    (void)stage_publish_now(stage_active() ? abs : NULL);
    /* (a file another process has open: it is the job's once closed) */
    struct names_entry ne;
    if (stage_foreign_lookup(abs, &ne))
        stage_wait_published(abs);
    (void)stage_handed_publish_now(abs, rec);
    return 1;
}

int stage_tier_path_link(cstack *s, int level, cpath *from, cpath *to, int flags)
{
    settle_foreign(from);
    settle_foreign(to);
    int rc = stage_publish_now(staged_name(from));
    if (!rc)
        rc = stage_handed_publish_now(managed_name(from), NULL);
    return rc ? rc : sluice_tier_path_link(s, level + 1, from, to, flags);
}

int stage_tier_path_chown(cstack *s, int level, cpath *p, uid_t uid, gid_t gid, int flags)
{
    settle_foreign(p);
    int rc = stage_publish_now(staged_name(p));
    if (!rc)
        rc = stage_handed_publish_now(managed_name(p), NULL);
    return rc ? rc : sluice_tier_path_chown(s, level + 1, p, uid, gid, flags);
}

int stage_tier_path_utimens(cstack *s, int level, cpath *p, const struct timespec times[2], int flags)
{
    int rc = 0;

    if (stage_set_times_open(staged_name(p), times, &rc))
        return rc;
    settle_foreign(p);
    rc = stage_publish_now(staged_name(p));
    if (!rc)
        rc = stage_handed_publish_now(managed_name(p), NULL);
    return rc ? rc : sluice_tier_path_utimens(s, level + 1, p, times, flags);
}

ssize_t stage_tier_path_xattr(cstack *s, int level, cpath *p, const struct sluice_xattr *x)
{
    struct stat sb;

    if (x->op == SLUICE_XATTR_GET || x->op == SLUICE_XATTR_LIST) {
        /* A staged file has no extended attributes (setting one publishes
         * it first): the answers of a file without any. */
        if (any_staged_stat(p, &sb))
            return x->op == SLUICE_XATTR_GET ? -ENODATA : 0;
        return sluice_tier_path_xattr(s, level + 1, p, x);
    }
    settle_foreign(p);
    int rc = stage_publish_now(staged_name(p));
    if (!rc)
        rc = stage_handed_publish_now(managed_name(p), NULL);
    return rc ? rc : sluice_tier_path_xattr(s, level + 1, p, x);
}
