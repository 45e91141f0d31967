/* Buffered inodes; see inode.h. */
#include "buffer/inode.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "buffer/budget.h"

#define INODE_BUCKETS 1024

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct buffer_inode *buckets[INODE_BUCKETS];
static atomic_int ninodes;
static atomic_uint_fast64_t ticks;
static atomic_int dirty_windows;

int inode_dirty_windows(void)
{
    return atomic_load_explicit(&dirty_windows, memory_order_relaxed);
}

void inode_note_window(struct buffer_inode *ino)
{
    int dirty = !window_empty(&ino->win);

    if (dirty != ino->dirty_noted) {
        atomic_fetch_add(&dirty_windows, dirty ? 1 : -1);
        ino->dirty_noted = dirty;
    }
}

static unsigned bucket_of(dev_t dev, ino_t ino)
{
    uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev;
    return (unsigned)(h >> 54) % INODE_BUCKETS;
}

uint64_t inode_tick(void)
{
    return atomic_fetch_add_explicit(&ticks, 1, memory_order_relaxed);
}

static struct buffer_inode *lookup_locked(dev_t dev, ino_t ino)
{
    struct buffer_inode *p = buckets[bucket_of(dev, ino)];
    while (p && (p->dev != dev || p->ino != ino))
        p = p->next;
    return p;
}

struct buffer_inode *inode_attach(dev_t dev, ino_t ino, size_t unit, struct buffer_desc *d)
{
    struct buffer_inode *p;

    pthread_mutex_lock(&table_lock);
    p = lookup_locked(dev, ino);
    if (!p && (p = calloc(1, sizeof *p)) != NULL) {
        unsigned b = bucket_of(dev, ino);
        p->dev = dev;
        p->ino = ino;
        p->unit = unit;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->idle, NULL);
        p->next = buckets[b];
        buckets[b] = p;
        atomic_fetch_add(&ninodes, 1);
    }
    if (p) {
        p->refs++;
        d->ino = p;
        pthread_mutex_lock(&p->lock);
        d->next = p->descs;
        p->descs = d;
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&table_lock);
    return p;
}

static void inode_free_locked(struct buffer_inode *p)
{
    struct buffer_inode **pp = &buckets[bucket_of(p->dev, p->ino)];

    while (*pp != p)
        pp = &(*pp)->next;
    *pp = p->next;
    atomic_fetch_sub(&ninodes, 1);
    if (p->dirty_noted)
        atomic_fetch_sub(&dirty_windows, 1);
    window_free(&p->win, budget_reserve);
    if (p->ra) {
        free(p->ra);
        budget_reserve(-(int64_t)p->ra_cap);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->idle);
    free(p);
}

void inode_detach(struct buffer_desc *d)
{
    struct buffer_inode *p = d->ino;

    if (!p)
        return;
    pthread_mutex_lock(&table_lock);
    pthread_mutex_lock(&p->lock);
    for (struct buffer_desc **dp = &p->descs; *dp; dp = &(*dp)->next)
        if (*dp == d) {
            *dp = d->next;
            break;
        }
    pthread_mutex_unlock(&p->lock);
    d->ino = NULL;
    if (--p->refs == 0)
        inode_free_locked(p);
    pthread_mutex_unlock(&table_lock);
}

struct buffer_inode *inode_find(dev_t dev, ino_t ino)
{
    struct buffer_inode *p;

    if (atomic_load_explicit(&ninodes, memory_order_relaxed) == 0)
        return NULL;
    pthread_mutex_lock(&table_lock);
    p = lookup_locked(dev, ino);
    if (p)
        p->refs++;
    pthread_mutex_unlock(&table_lock);
    return p;
}

void inode_release(struct buffer_inode *p)
{
    pthread_mutex_lock(&table_lock);
    if (--p->refs == 0)
        inode_free_locked(p);
    pthread_mutex_unlock(&table_lock);
}

int inode_count(void)
{
    return atomic_load_explicit(&ninodes, memory_order_relaxed);
}

int inode_for_each(void (*fn)(struct buffer_inode *, void *), void *arg, int try)
{
    if (try) {
        if (pthread_mutex_trylock(&table_lock) != 0)
            return -EBUSY;
    } else {
        pthread_mutex_lock(&table_lock);
    }
    for (int b = 0; b < INODE_BUCKETS; b++)
        for (struct buffer_inode *p = buckets[b]; p; p = p->next)
            fn(p, arg);
    pthread_mutex_unlock(&table_lock);
    return 0;
}

void inode_after_fork_child(void)
{
    pthread_mutex_init(&table_lock, NULL);
    for (int b = 0; b < INODE_BUCKETS; b++)
        for (struct buffer_inode *p = buckets[b]; p; p = p->next) {
            pthread_mutex_init(&p->lock, NULL);
            pthread_cond_init(&p->idle, NULL);
            p->inflight = 0;   /* the parent's jobs stay the parent's */
        }
}
