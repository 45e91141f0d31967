/* The FILE* table: a sharded hash table; see stream.h. */
#include "core/stream.h"

#include <pthread.h>

#include "common/arena.h"

#define STREAM_SHARDS 64

static struct {
    pthread_mutex_t lock;
    struct sluice_stream *head;
} shards[STREAM_SHARDS];
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sluice_stream *free_streams;
static atomic_long nstreams;   /* recorded streams open now: 0 makes lookups free */
static pthread_once_t shards_once = PTHREAD_ONCE_INIT;

static void shards_init(void)
{
    for (int i = 0; i < STREAM_SHARDS; i++)
        pthread_mutex_init(&shards[i].lock, NULL);
}

static unsigned shard_of(const FILE *fp)
{
    uintptr_t h = (uintptr_t)fp;
    h ^= h >> 17;
    h *= 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 58) % STREAM_SHARDS;
}

struct sluice_stream *sluice_stream_get(FILE *fp)
{
    struct sluice_stream *s;
    unsigned i;

    if (atomic_load_explicit(&nstreams, memory_order_relaxed) == 0 || !fp)
        return NULL;
    i = shard_of(fp);
    pthread_mutex_lock(&shards[i].lock);
    for (s = shards[i].head; s && s->fp != fp; s = s->next)
        ;
    pthread_mutex_unlock(&shards[i].lock);
    return s;
}

void sluice_stream_add(FILE *fp, struct sluice_record *rec, int64_t pos, void *buf, size_t buf_size)
{
    struct sluice_stream *s;
    unsigned i = shard_of(fp);

    pthread_once(&shards_once, shards_init);
    (void)sluice_stream_remove(fp, NULL, NULL);   /* a stale entry for a reused FILE* */
    pthread_mutex_lock(&free_lock);
    s = free_streams;
    if (s)
        free_streams = s->next;
    pthread_mutex_unlock(&free_lock);
    if (!s && !(s = sluice_arena_alloc(sizeof *s)))
        return;
    s->fp = fp;
    s->rec = rec;
    s->buf = buf;
    s->buf_size = buf_size;
    atomic_store(&s->pos, pos);
    atomic_store(&s->kernel_pos, pos);
    pthread_mutex_lock(&shards[i].lock);
    s->next = shards[i].head;
    shards[i].head = s;
    pthread_mutex_unlock(&shards[i].lock);
    atomic_fetch_add(&nstreams, 1);
}

struct sluice_record *sluice_stream_remove(FILE *fp, void **buf, size_t *buf_size)
{
    if (buf)
        *buf = NULL;
    struct sluice_stream **pp, *s = NULL;
    struct sluice_record *rec = NULL;
    unsigned i;

    if (atomic_load(&nstreams) == 0 || !fp)
        return NULL;
    i = shard_of(fp);
    pthread_mutex_lock(&shards[i].lock);
    for (pp = &shards[i].head; *pp; pp = &(*pp)->next) {
        if ((*pp)->fp == fp) {
            s = *pp;
            *pp = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&shards[i].lock);
    if (!s)
        return NULL;
    rec = s->rec;
    if (buf) {
        *buf = s->buf;
        *buf_size = s->buf_size;
    }
    atomic_fetch_sub(&nstreams, 1);
    pthread_mutex_lock(&free_lock);
    s->fp = NULL;
    s->next = free_streams;
    free_streams = s;
    pthread_mutex_unlock(&free_lock);
    return rec;
}

void sluice_streams_each(void (*fn)(struct sluice_stream *s, void *arg), void *arg)
{
    if (atomic_load(&nstreams) == 0)
        return;
    for (int i = 0; i < STREAM_SHARDS; i++) {
        pthread_mutex_lock(&shards[i].lock);
        for (struct sluice_stream *s = shards[i].head; s; s = s->next)
            fn(s, arg);
        pthread_mutex_unlock(&shards[i].lock);
    }
}

void sluice_streams_after_fork_child(void)
{
    shards_init();
    pthread_mutex_init(&free_lock, NULL);
}
