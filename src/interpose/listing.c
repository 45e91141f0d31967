/*
 * Directory listings that show what the tiers hold: a file stage mode has
 * staged but not yet published is in its directory's listing, as a local
 * file system would show it. When a directory of a mode whose tiers answer
 * listings (path_list) is opened, the tiers' names are collected; readdir
 * returns the kernel's entries, then the tiers' names the kernel did not
 * show. Symbols: readdir, readdir64, rewinddir (wrappers.def); opendir,
 * fdopendir, scandir and closedir (fdlife.c) call in here.
 */
#include "interpose/listing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/pathnorm.h"
#include "core/file.h"
#include "core/pathcall.h"
#include "core/policy.h"
#include "core/stack.h"
#include "interpose/interpose.h"
#include "sys/userptr.h"

#define LISTINGS 64

struct listing {
    DIR *dir;
    const struct sluice_stack *stack;
    char **names;         /* the tiers' names, sorted; NULL once returned or seen */
    ino_t *inos;
    size_t n, next;
    char abs[PATH_MAX];
    struct dirent64 ent;  /* what readdir returns for a tier's name */
};

static pthread_mutex_t listings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct listing *listings[LISTINGS];
static int any_listing;   /* set once a listing was installed: readdir's fast path before that */

struct collect {
    char **names;
    ino_t *inos;
    size_t n, cap;
};

static void collect_name(void *ctx, const char *name, ino_t ino)
{
    struct collect *c = ctx;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        char **names = realloc(c->names, cap * sizeof *names);
        ino_t *inos = names ? realloc(c->inos, cap * sizeof *inos) : NULL;
        if (names)
            c->names = names;
        if (!inos)
            return;
        c->inos = inos;
        c->cap = cap;
    }
    if ((c->names[c->n] = strdup(name)) != NULL)
        c->inos[c->n++] = ino;
}

static void listing_free(struct listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    free(l->inos);
    free(l);
}

/* The tiers' names under the absolute directory abs, into a new listing. */
static struct listing *listing_collect(DIR *d, const char *abs)
{
    struct collect c = {0};
    struct sluice_path p = {.dirfd = AT_FDCWD, .path = abs, .abs = abs, .fs_rec = NULL};
    struct listing *l;

    const struct sluice_stack *stack = sluice_stack_of(sluice_policy_mode(abs));

    if (sluice_tier_path_list(stack, &p, collect_name, &c) == 0 || !(l = calloc(1, sizeof *l))) {
        for (size_t i = 0; i < c.n; i++)
            free(c.names[i]);
        free(c.names);
        free(c.inos);
        return NULL;
    }
    l->dir = d;
    l->stack = stack;
    l->names = c.names;
    l->inos = c.inos;
    l->n = c.n;
    strcpy(l->abs, abs);
    return l;
}

static void listing_install(struct listing *l)
{
    pthread_mutex_lock(&listings_lock);
    for (int i = 0; i < LISTINGS; i++)
        if (!listings[i]) {
            listings[i] = l;
            l = NULL;
            __atomic_store_n(&any_listing, 1, __ATOMIC_RELAXED);
            break;
        }
    pthread_mutex_unlock(&listings_lock);
    if (l)
        listing_free(l);   /* too many directories open at once: the kernel's listing alone */
}

void sluice_listing_begin(DIR *d, int dirfd, const char *path)
{
    char abs[PATH_MAX];
    struct sluice_file *f;
    struct listing *l;

    if (!d || !sluice_stack_has_path_tiers() || sluice_in_vfork_child())
        return;
    if (path) {
        if (!sluice_user_str_ok(path) || sluice_policy_skip_fast(path) ||
            sluice_path_absolute(AT_FDCWD, path, abs, sizeof abs) != 0)
            return;
    } else if ((f = sluice_fd_get(dirfd)) != NULL) {
        size_t n = strlen(f->rec->path);
        if (n < sizeof abs)
            memcpy(abs, f->rec->path, n + 1);
        sluice_file_put(f);
        if (n >= sizeof abs)
            return;
    } else {
        return;
    }
    if (sluice_policy_records(abs) && (l = listing_collect(d, abs)) != NULL)
        listing_install(l);
}

void sluice_listing_end(DIR *d)
{
    struct listing *l = NULL;

    if (!d)
        return;
    pthread_mutex_lock(&listings_lock);
    for (int i = 0; i < LISTINGS; i++)
        if (listings[i] && listings[i]->dir == d) {
            l = listings[i];
            listings[i] = NULL;
            break;
        }
    pthread_mutex_unlock(&listings_lock);
    if (l)
        listing_free(l);
}

static struct listing *listing_of(DIR *d)
{
    struct listing *l = NULL;
    pthread_mutex_lock(&listings_lock);
    for (int i = 0; i < LISTINGS && !l; i++)
        if (listings[i] && listings[i]->dir == d)
            l = listings[i];
    pthread_mutex_unlock(&listings_lock);
    return l;
}

/* The kernel showed `name`: the tiers' copy of it is not shown again. */
static void listing_seen(struct listing *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->names[i] && strcmp(l->names[i], name) == 0) {
            free(l->names[i]);
            l->names[i] = NULL;
        }
}

static struct dirent64 *listing_next(struct listing *l)
{
    while (l->next < l->n && !l->names[l->next])
        l->next++;
    if (l->next >= l->n)
        return NULL;
    size_t i = l->next++;
    memset(&l->ent, 0, sizeof l->ent);
    l->ent.d_ino = l->inos[i] ? l->inos[i] : 1;
    l->ent.d_off = (off64_t)(INT64_MAX - (int64_t)(l->n - i));
    l->ent.d_reclen = sizeof l->ent;
    l->ent.d_type = DT_REG;
    strncpy(l->ent.d_name, l->names[i], sizeof l->ent.d_name - 1);
    return &l->ent;
}

static struct dirent64 *wrap_readdir(DIR *d, struct dirent64 *(*real)(DIR *))
{
    struct listing *l;
    int saved = errno;
    struct dirent64 *e;

    if (!__atomic_load_n(&any_listing, __ATOMIC_RELAXED) || !(l = listing_of(d)))
        return real(d);
    while ((e = real(d)) != NULL && sluice_tier_path_hides(l->stack, e->d_name))
        ;
    if (e) {
        listing_seen(l, e->d_name);
        return e;
    }
    if (errno != saved)
        return NULL;   /* the kernel's error */
    return listing_next(l);
}

SLUICE_EXPORT struct dirent *readdir(DIR *d)
{
    _Static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "dirent is dirent64 on this ABI");
    return (struct dirent *)wrap_readdir(d, (struct dirent64 * (*)(DIR *)) SLUICE_REAL(readdir));
}

SLUICE_EXPORT struct dirent64 *readdir64(DIR *d)
{
    return wrap_readdir(d, SLUICE_REAL(readdir64));
}

SLUICE_EXPORT void rewinddir(DIR *d)
{
    struct listing *l;

    SLUICE_REAL(rewinddir)(d);
    if (__atomic_load_n(&any_listing, __ATOMIC_RELAXED) && (l = listing_of(d)) != NULL) {
        char abs[PATH_MAX];
        strcpy(abs, l->abs);
        sluice_listing_end(d);
        if ((l = listing_collect(d, abs)) != NULL)
            listing_install(l);
    }
}
