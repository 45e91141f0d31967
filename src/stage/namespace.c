/*
 * The node-wide namespace as this process sees it: which directories are
 * known to exist on the shared file system, which files it published
 * lately, whether a directory holds staged files, the stat of a path
 * staged by any process on the node (through symbolic links too), and
 * the staged names a directory listing adds (the index, names.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/pathnorm.h"
#include "stage/names.h"
#include "stage/stage.h"
#include "stage/stage_state.h"
#include "sys/real.h"

/* Directories known to exist on the shared file system: a new file in one
 * costs no stat of its directory (most recent first, a small ring). */
#define KNOWN_DIRS 64
static struct {
    char path[512];
    int made_here;   /* this process created it: nothing in it existed before */
} known_dirs[KNOWN_DIRS];
static unsigned known_next;

/* 0: unknown; 1: known to exist; 2: created by this process. */
int stage_dir_known_locked(const char *dir)
{
    for (int i = 0; i < KNOWN_DIRS; i++)
        if (known_dirs[i].path[0] && strcmp(known_dirs[i].path, dir) == 0)
            return 1 + known_dirs[i].made_here;
    return 0;
}

void stage_dir_remember_locked(const char *dir, int made_here)
{
    if (strlen(dir) < sizeof known_dirs[0].path) {
        unsigned i = known_next++ % KNOWN_DIRS;
        snprintf(known_dirs[i].path, sizeof known_dirs[i].path, "%s", dir);
        known_dirs[i].made_here = made_here;
    }
}

/* Files this process published lately (a small ring): an open of one that
 * neither truncates nor stages it (O_APPEND, update) goes straight to the
 * shared file system without asking first whether it exists (the
 * ensemble's reopen of its own output). */
#define RECENT_PUBLISHED 64
static char recent_published[RECENT_PUBLISHED][512];
static unsigned recent_next;

int stage_recently_published_locked(const char *path)
{
    for (int i = 0; i < RECENT_PUBLISHED; i++)
        if (recent_published[i][0] && strcmp(recent_published[i], path) == 0)
            return 1;
    return 0;
}

void stage_recent_forget_locked(const char *path)
{
    for (int i = 0; i < RECENT_PUBLISHED; i++)
        if (strcmp(recent_published[i], path) == 0)
            recent_published[i][0] = '\0';
}

/* A file of ours now exists on the shared file system in its directory:
 * that directory no longer holds only what is staged, so a new file there
 * is checked again (a re-created name must replace, unlink and rename the
 * published one). */
void stage_dir_note_published_locked(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;

    for (int i = 0; i < KNOWN_DIRS; i++)
        if (known_dirs[i].made_here && strlen(known_dirs[i].path) == n && strncmp(known_dirs[i].path, path, n) == 0)
            known_dirs[i].made_here = 0;
    if (strlen(path) < sizeof recent_published[0] && !stage_recently_published_locked(path))
        snprintf(recent_published[recent_next++ % RECENT_PUBLISHED], sizeof recent_published[0], "%s", path);
}

void stage_dir_created(const char *abs)
{
    if (!stage_st.usable)
        return;
    pthread_mutex_lock(&stage_st.lock);
    stage_dir_remember_locked(abs, 1);
    pthread_mutex_unlock(&stage_st.lock);
}

int stage_dir_exists(const char *abs)
{
    if (!stage_st.usable)
        return 0;
    pthread_mutex_lock(&stage_st.lock);
    int known = stage_dir_known_locked(abs);
    pthread_mutex_unlock(&stage_st.lock);
    return known;
}

/* The child of a fork forgets the directories it knew (stage_after_fork_child). */
void stage_known_dirs_clear(void)
{
    memset(known_dirs, 0, sizeof known_dirs);
}

/* The shared file system's directories changed (one removed or renamed):
 * what was remembered about them may be wrong now. */
void stage_forget_known_dirs(void)
{
    pthread_mutex_lock(&stage_st.lock);
    memset(known_dirs, 0, sizeof known_dirs);
    memset(recent_published, 0, sizeof recent_published);
    pthread_mutex_unlock(&stage_st.lock);
}

/* Files staged directly under dir, by this process or another on the node
 * (counted up to 1: whether there are any). An index link whose entry is
 * gone, published or removed is not a staged file: a publisher between
 * its steps, or one killed there, left it. */
static void count_one(void *arg, const char *name, const char *id)
{
    struct journal_entry e;

    (void)name;
    if (*(int *)arg || journal_read(stage_st.jdir, id, &e) != 0)
        return;
    if (e.state == JOURNAL_OPEN || e.state == JOURNAL_CLOSED)
        *(int *)arg = 1;
}

int stage_dir_holds_staged(const char *dir)
{
    size_t n = strlen(dir);
    int any = 0;

    pthread_mutex_lock(&stage_st.lock);
    for (int b = 0; b < STAGE_BUCKETS && !any; b++)
        for (struct staged *s = stage_st.buckets[b]; s && !any; s = s->next)
            any = strncmp(s->e.path, dir, n) == 0 && s->e.path[n] == '/' && !strchr(s->e.path + n + 1, '/');
    pthread_mutex_unlock(&stage_st.lock);
    if (!any)
        names_list(stage_st.ndir, dir, count_one, &any);
    return any;
}

/* stat of a path staged here or by another process on the node. */
int stage_staged_stat_abs(const char *abs, struct stat *sb)
{
    struct names_entry e;

    if (stage_active() && stage_path_stat(abs, sb))
        return 1;
    if (!stage_foreign_lookup(abs, &e) || SLUICE_REAL(fstatat)(stage_st.ddir, e.id, sb, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    sb->st_mode = (sb->st_mode & ~07777) | e.mode;
    return 1;
}

/* abs names a staged file through symbolic links on the shared file
 * system (a link to a file not yet published dangles there): the path they
 * lead to, in out. Asked only once the file system said ENOENT, so a path
 * without links costs nothing more; each link is a readlink. follow_last:
 * the last component too (stat, open; not lstat). 1 when out is staged. */
int stage_staged_through_links(const char *abs, int follow_last, char *out, size_t len)
{
    char cur[PATH_MAX], rest[PATH_MAX], link[PATH_MAX], next[2 * PATH_MAX];
    struct stat sb;
    int links = 0;

    if (!stage_st.usable || abs[0] != '/' || strlen(abs) >= sizeof rest)
        return 0;
    cur[0] = '\0';
    snprintf(rest, sizeof rest, "%s", abs + 1);
    while (rest[0]) {
        char *slash = strchr(rest, '/');
        size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
        const char *after = slash ? slash + 1 : "";
        if ((size_t)snprintf(next, sizeof next, "%s/%.*s", cur, (int)n, rest) >= sizeof cur)
            return 0;
        ssize_t r = (slash || follow_last) ? readlink(next, link, sizeof link - 1) : -1;
        if (r < 0) {
            memcpy(cur, next, strlen(next) + 1);   /* (shorter than cur: checked above) */
            memmove(rest, after, strlen(after) + 1);
            continue;
        }
        if (++links > 40)
            return 0;
        link[r] = '\0';
        if ((size_t)snprintf(next, sizeof next, "%s/%s%s%s", link[0] == '/' ? "" : cur, link, *after ? "/" : "",
                             after) >= sizeof rest)
            return 0;
        sluice_path_normalize(next);
        memcpy(rest, next + 1, strlen(next + 1) + 1);   /* (shorter than rest: checked above) */
        cur[0] = '\0';
    }
    if (!links || (size_t)snprintf(out, len, "%s", cur[0] ? cur : "/") >= len)
        return 0;
    return stage_staged_stat_abs(out, &sb);
}

/* Names staged directly under dir, by any process on the node (the
 * index), not yet published. */
struct list_ctx {
    void (*emit)(void *ctx, const char *name, ino_t ino);
    void *ctx;
};

static void list_one(void *arg, const char *name, const char *id)
{
    struct list_ctx *l = arg;
    struct stat sb;

    if (SLUICE_REAL(fstatat)(stage_st.ddir, id, &sb, AT_SYMLINK_NOFOLLOW) == 0)
        l->emit(l->ctx, name, sb.st_ino);
}

void stage_tier_path_list(const struct sluice_path *dir, void (*emit)(void *ctx, const char *name, ino_t ino),
                          void *ctx)
{
    struct list_ctx l = {emit, ctx};

    if (!dir->abs || !stage_st.usable)
        return;
    names_list(stage_st.ndir, dir->abs, list_one, &l);
}

/* A publish in flight shows as DIR/.NAME.sluice-ID (publish.c's temporary
 * name): not the program's file, and gone in a moment. */
int stage_path_hides(const char *name)
{
    return name[0] == '.' && strstr(name, ".sluice-") != NULL;
}
