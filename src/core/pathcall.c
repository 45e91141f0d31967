/* Path calls; see pathcall.h. */
#include "core/pathcall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>

#include "common/pathnorm.h"
#include "core/counters.h"
#include "core/policy.h"
#include "sys/userptr.h"

/* Each thread's last absolute path as the program spelled it, and its
 * record: an absolute path resolves the same way every time (lexically,
 * under a policy fixed at start), so a program that stats or opens the same
 * name again skips resolution, the policy and the registry. */
#define LAST_PATH_MAX 256
static __thread char last_path[LAST_PATH_MAX] __attribute__((tls_model("initial-exec")));
static __thread struct sluice_record *last_path_rec __attribute__((tls_model("initial-exec")));

struct sluice_record *sluice_path_record(int dirfd, const char *path, char *abs)
{
    struct sluice_record *r;

    /* A signal handler may make path calls too: the entry is emptied while
     * it changes, and read as unchanged only if its record stayed put. */
    if (path[0] == '/' && (r = last_path_rec) != NULL) {
        atomic_signal_fence(memory_order_seq_cst);
        int same = strcmp(path, last_path) == 0;
        atomic_signal_fence(memory_order_seq_cst);
        if (same && last_path_rec == r) {
            strcpy(abs, r->path);
            return r;
        }
    }
    if (sluice_policy_skip_fast(path) || sluice_path_absolute(dirfd, path, abs, PATH_MAX) != 0 ||
        !sluice_policy_records(abs))
        return NULL;
    r = sluice_record_get(SLUICE_MOD_POSIX, abs);
    if (r && path[0] == '/' && !(r->flags & SLUICE_REC_OVERFLOW)) {
        size_t n = strlen(path);
        if (n < LAST_PATH_MAX) {
            last_path_rec = NULL;
            atomic_signal_fence(memory_order_seq_cst);
            memcpy(last_path, path, n + 1);
            atomic_signal_fence(memory_order_seq_cst);
            last_path_rec = r;
        }
    }
    return r;
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
        c->rec = sluice_path_record(dirfd, path, c->abs);
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
        c->rec = sluice_path_record(c->p.dirfd, c->p.path, c->abs);
    }
    if (c->rec) {
        if (rc < 0)
            sluice_count_error(c->rec, sides);
        else
            sluice_count_meta(c->rec, sides, c->counter, c->t0, t1);
    }
    return rc;
}

void sluice_count_rename_target(int dirfd, const char *to, unsigned sides)
{
    char abs[PATH_MAX];
    struct sluice_record *r;
    uint64_t t;

    if (!sluice_user_str_ok(to) || (r = sluice_path_record(dirfd, to, abs)) == NULL)
        return;
    if (sides != SLUICE_SIDES_BOTH)
        sluice_record_split_sides(r);
    t = sluice_now();
    sluice_count_meta(r, sides, POSIX_RENAME_TARGETS, t, t);
}
