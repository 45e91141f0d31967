/* Path calls; see pathcall.h. */
#include "core/pathcall.h"

#include <errno.h>
#include <fcntl.h>

#include "common/pathnorm.h"
#include "core/counters.h"
#include "core/policy.h"
#include "sys/userptr.h"

/* The record of an absolute path, or NULL when it is not recorded. */
static struct sluice_record *record_of(const char *path, int dirfd, char *abs)
{
    if (sluice_policy_skip_fast(path) || sluice_path_absolute(dirfd, path, abs, PATH_MAX) != 0 ||
        !sluice_policy_records(abs))
        return NULL;
    return sluice_record_get(SLUICE_MOD_POSIX, abs);
}

void sluice_pathcall_begin(struct sluice_pathcall *c, int dirfd, const char *path, int counter)
{
    c->p = (struct sluice_path){.dirfd = dirfd, .path = path, .abs = NULL, .fs_rec = NULL};
    c->stack = sluice_stack_of(SLUICE_MODE_PROFILE);
    c->rec = NULL;
    c->counter = counter;
    c->resolved = 0;
    if (sluice_stack_has_path_tiers() && sluice_user_str_ok(path)) {
        c->resolved = 1;
        c->rec = record_of(path, dirfd, c->abs);
        if (c->rec) {
            c->p.abs = c->abs;
            c->stack = sluice_stack_of(sluice_policy_mode(c->abs));
            if (c->stack->depth > 1) {
                /* the bottom tier counts the fs side, if the call gets there */
                sluice_record_split_sides(c->rec);
                c->p.fs_rec = c->rec;
            }
        }
    }
    c->t0 = sluice_now();
}

void sluice_pathcall_second(const struct sluice_pathcall *c, struct sluice_path *p, char *abs, int dirfd,
                            const char *path)
{
    *p = (struct sluice_path){.dirfd = dirfd, .path = path, .abs = NULL, .fs_rec = NULL};
    if (c->resolved && sluice_user_str_ok(path) && !sluice_policy_skip_fast(path) &&
        sluice_path_absolute(dirfd, path, abs, PATH_MAX) == 0)
        p->abs = abs;
}

long sluice_pathcall_end(struct sluice_pathcall *c, long rc)
{
    uint64_t t1 = sluice_now();
    unsigned sides = c->p.fs_rec ? SLUICE_SIDES_APP : SLUICE_SIDES_BOTH;

    if (!c->resolved) {
        /* The kernel has read the path: read it too, unless it could not. */
        if (rc == -EFAULT && !sluice_user_str_ok(c->p.path))
            return rc;
        c->rec = record_of(c->p.path, c->p.dirfd, c->abs);
    }
    if (c->rec) {
        if (rc < 0)
            sluice_count_error(c->rec, sides);
        else
            sluice_count_meta(c->rec, sides, c->counter, c->t0, t1);
    }
    return rc;
}
