/* The node-wide index of staged files; see names.h. */
#include "stage/names.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sys/real.h"

#define TARGET_MAX (PATH_MAX + 128)

static void names_key(const char *abs, char out[17])
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)abs; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static int names_target(const char *abs, const char *id, mode_t mode, char *out, size_t len)
{
    int n = snprintf(out, len, "%s %04o %s", id, (unsigned)(mode & 07777), abs);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int names_add(int ndir, const char *abs, const char *id, mode_t mode)
{
    char key[17], target[TARGET_MAX];
    int rc = names_target(abs, id, mode, target, sizeof target);

    if (rc)
        return rc;
    names_key(abs, key);
    return SLUICE_REAL(symlinkat)(target, ndir, key) == 0 ? 0 : -errno;
}

int names_update(int ndir, const char *abs, const char *id, mode_t mode)
{
    char key[17], tmp[128], target[TARGET_MAX];
    int rc = names_target(abs, id, mode, target, sizeof target);

    if (rc)
        return rc;
    names_key(abs, key);
    snprintf(tmp, sizeof tmp, ".%s.%s", key, id);
    (void)SLUICE_REAL(unlinkat)(ndir, tmp, 0);
    if (SLUICE_REAL(symlinkat)(target, ndir, tmp) != 0)
        return -errno;
    if (SLUICE_REAL(renameat)(ndir, tmp, ndir, key) != 0) {
        rc = -errno;
        (void)SLUICE_REAL(unlinkat)(ndir, tmp, 0);
    }
    return rc;
}

/* The entry indexed under key, when it is for abs. */
static int lookup_key(int ndir, const char *key, const char *abs, struct names_entry *e)
{
    char target[TARGET_MAX];
    const char *path;
    size_t plen;
    ssize_t n = readlinkat(ndir, key, target, sizeof target);

    if (n <= 0 || (size_t)n >= sizeof target || names_parse(target, (size_t)n, e, &path, &plen) != 0)
        return 0;
    return plen == strlen(abs) && memcmp(path, abs, plen) == 0;
}

void names_remove(int ndir, const char *abs, const char *id)
{
    char key[17];
    struct names_entry e;

    names_key(abs, key);
    if (lookup_key(ndir, key, abs, &e) && strcmp(e.id, id) == 0)
        (void)SLUICE_REAL(unlinkat)(ndir, key, 0);
}

int names_lookup(int ndir, const char *abs, struct names_entry *e)
{
    char key[17];

    names_key(abs, key);
    return lookup_key(ndir, key, abs, e);
}

/* emit for each indexed path under dir: directly under it (name: the
 * last part), or at any depth (name: the path below dir). */
static void names_scan(int ndir, const char *dir, int deep, void (*emit)(void *ctx, const char *name, const char *id),
                       void *ctx)
{
    size_t dlen = strlen(dir);
    int fd = SLUICE_REAL(openat)(ndir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    DIR *d = fd >= 0 ? SLUICE_REAL(fdopendir)(fd) : NULL;
    struct dirent *de;

    if (!d) {
        if (fd >= 0)
            SLUICE_REAL(close)(fd);
        return;
    }
    while ((de = SLUICE_REAL(readdir)(d)) != NULL) {
        char target[TARGET_MAX], name[TARGET_MAX];
        struct names_entry e;
        const char *path;
        size_t plen;
        if (de->d_name[0] == '.')
            continue;
        ssize_t n = readlinkat(ndir, de->d_name, target, sizeof target);
        if (n <= 0 || (size_t)n >= sizeof target || names_parse(target, (size_t)n, &e, &path, &plen) != 0)
            continue;
        /* "dir/NAME": NAME without a slash (or any below dir, deep) */
        if (plen <= dlen + 1 || memcmp(path, dir, dlen) != 0 || path[dlen] != '/' ||
            (!deep && (memchr(path + dlen + 1, '/', plen - dlen - 1) || plen - dlen - 1 > NAME_MAX)))
            continue;
        memcpy(name, path + dlen + 1, plen - dlen - 1);
        name[plen - dlen - 1] = '\0';
        emit(ctx, name, e.id);
    }
    SLUICE_REAL(closedir)(d);
}

void names_list(int ndir, const char *dir, void (*emit)(void *ctx, const char *name, const char *id), void *ctx)
{
    names_scan(ndir, dir, 0, emit, ctx);
}

void names_under(int ndir, const char *dir, void (*emit)(void *ctx, const char *below, const char *id), void *ctx)
{
    names_scan(ndir, dir, 1, emit, ctx);
}
