/*
 * The staged-file table (stage_state.h): the files this process staged,
 * by path, in buckets under stage_st.lock, and the steps that end an
 * entry: rewritten, published, forgotten, discarded.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage/journal.h"
#include "stage/names.h"
#include "stage/publish.h"
#include "stage/stage.h"
#include "stage/stage_state.h"
#include "stage/writers.h"
#include "sys/real.h"

struct stage_state stage_st = {.ownerfd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
                               .done = PTHREAD_COND_INITIALIZER};

static unsigned bucket_of(const char *path)
{
    uint32_t h = 2166136261u;
    for (; *path; path++)
        h = (h ^ (unsigned char)*path) * 16777619u;
    return h % STAGE_BUCKETS;
}

struct staged *stage_table_lookup_locked(const char *path)
{
    struct staged *s = stage_st.buckets[bucket_of(path)];
    while (s && strcmp(s->e.path, path) != 0)
        s = s->next;
    return s;
}

void stage_table_unlink_locked(struct staged *s)
{
    struct staged **pp = &stage_st.buckets[bucket_of(s->e.path)];
    while (*pp != s)
        pp = &(*pp)->next;
    *pp = s->next;
    stage_st.count--;
}

/* The staged data file's stat (data/ID, by name: the program may hold the
 * only descriptor). */
int stage_data_stat(const struct staged *s, struct stat *sb)
{
    return SLUICE_REAL(fstatat)(stage_st.ddir, s->e.id, sb, AT_SYMLINK_NOFOLLOW);
}

void stage_table_insert_locked(struct staged *s)
{
    unsigned b = bucket_of(s->e.path);
    s->next = stage_st.buckets[b];
    stage_st.buckets[b] = s;
    stage_st.count++;
}

/* s is on the shared file system: its entry and data go, then its index
 * link (so that another process always finds the file in one place). */
void stage_published_locked(struct staged *s)
{
    publish_finish(stage_st.ddir, stage_st.jdir, stage_st.ndir, &s->e);
}

/* s's entry was published by another publisher (the job's drainer took it
 * in its last look while this process kept it, `sluice drain`): gone from
 * the journal, or saying published. Asked under the entry's lock, or
 * after an operation on its data file failed with ENOENT. */
int stage_published_elsewhere(const struct staged *s)
{
    struct journal_entry disk;
    int rc = journal_read(stage_st.jdir, s->e.id, &disk);

    return rc == -ENOENT || (rc == 0 && (disk.state == JOURNAL_PUBLISHED || disk.state == JOURNAL_REMOVED));
}

/* ... and then this process forgets it as if it had published it. */
void stage_forget_published_elsewhere_locked(struct staged *s)
{
    stage_dir_note_published_locked(s->e.path);
    stage_forget_locked(s);
}

void stage_forget_locked(struct staged *s)
{
    stage_precopy_drop_locked(s);
    stage_table_unlink_locked(s);
    free(s);
    pthread_cond_broadcast(&stage_st.done);
}

/* Rewrite s's journal entry (stage_st.lock held). An entry this process
 * publishes itself under the job's drainer says open on the tier. */
void stage_entry_write_locked(struct staged *s)
{
    struct journal_entry e = s->e;

    if (s->own_publish && e.state == JOURNAL_CLOSED)
        e.state = JOURNAL_OPEN;
    (void)journal_write(stage_st.jdir, &e);
}

/* s is gone without being published (unlinked, or replaced by a rename):
 * its data, entry and index link go, and this process forgets it. */
void stage_discard_locked(struct staged *s)
{
    if (stage_st.job) {
        /* (the job's drainer counts it as never published, and removes the entry) */
        s->e.state = JOURNAL_REMOVED;
        s->e.updated_ns = journal_now_ns();
        stage_entry_write_locked(s);
    }
    SLUICE_REAL(unlinkat)(stage_st.ddir, s->e.id, 0);
    if (!stage_st.job)
        SLUICE_REAL(unlinkat)(stage_st.jdir, s->e.id, 0);
    names_remove(stage_st.ndir, s->e.path, s->e.id);
    writers_forget(stage_st.ldir, s->e.id);
    stage_forget_locked(s);
}

int stage_active(void)
{
    return stage_st.usable && __atomic_load_n(&stage_st.count, __ATOMIC_RELAXED) > 0;
}
