/* Write-behind windows; see window.h. */
#include "buffer/window.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Smallest buffer a window starts with: many small files must not each
 * cost a whole span. */
#define WINDOW_MIN_CAP 8192

/* Recycled whole-span buffers: a streaming writer reuses the same few
 * buffers instead of faulting in fresh pages for every window. */
#define WINDOW_POOL_SIZE 8
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    unsigned char *data;
    size_t cap;
} pool[WINDOW_POOL_SIZE];

static unsigned char *pool_get(size_t cap)
{
    unsigned char *p = NULL;

    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < WINDOW_POOL_SIZE && !p; i++)
        if (pool[i].data && pool[i].cap == cap) {
            p = pool[i].data;
            pool[i].data = NULL;
        }
    pthread_mutex_unlock(&pool_lock);
    return p;
}

static int pool_put(unsigned char *data, size_t cap)
{
    int done = 0;

    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < WINDOW_POOL_SIZE && !done; i++)
        if (!pool[i].data) {
            pool[i].data = data;
            pool[i].cap = cap;
            done = 1;
        }
    pthread_mutex_unlock(&pool_lock);
    return done;
}

int64_t window_pool_drain(window_reserve_fn reserve)
{
    int64_t freed = 0;

    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < WINDOW_POOL_SIZE; i++)
        if (pool[i].data) {
            free(pool[i].data);
            freed += (int64_t)pool[i].cap;
            pool[i].data = NULL;
        }
    pthread_mutex_unlock(&pool_lock);
    if (freed)
        reserve(-freed);
    return freed;
}

void window_start(struct buffer_window *w, int64_t off, size_t span)
{
    w->span = span ? span : 1;
    w->base = off - off % (int64_t)w->span;
    w->next = 0;
    w->adds = 0;
}

static int window_grow(struct buffer_window *w, size_t need, window_reserve_fn reserve)
{
    size_t cap = w->cap ? w->cap : (WINDOW_MIN_CAP < w->span && !w->streaming ? WINDOW_MIN_CAP : w->span);
    unsigned char *p;

    if (need <= w->cap)
        return 0;
    while (cap < need)
        cap = cap * 2 < w->span ? cap * 2 : w->span;
    if (!w->data && cap == w->span && (p = pool_get(cap)) != NULL) {
        w->data = p;   /* already reserved */
        w->cap = cap;
        return 0;
    }
    if (reserve((int64_t)(cap - w->cap)) != 0)
        return -ENOMEM;
    p = realloc(w->data, cap);
    if (!p) {
        reserve(-(int64_t)(cap - w->cap));
        return -ENOMEM;
    }
    w->data = p;
    w->cap = cap;
    return 0;
}

/* Insert [s, e) into the sorted extent list, merging what touches it. */
static int extents_insert(struct buffer_window *w, int64_t s, int64_t e)
{
    int i = 0, j;

    while (i < w->next && w->ext[i].end < s)
        i++;
    j = i;
    while (j < w->next && w->ext[j].start <= e) {
        if (w->ext[j].start < s)
            s = w->ext[j].start;
        if (w->ext[j].end > e)
            e = w->ext[j].end;
        j++;
    }
    if (j == i) {   /* touches nothing: a new extent at i */
        if (w->next == WINDOW_MAX_EXTENTS)
            return -E2BIG;
        memmove(&w->ext[i + 1], &w->ext[i], (size_t)(w->next - i) * sizeof w->ext[0]);
        w->next++;
    } else if (j > i + 1) {   /* extents i..j-1 merge into i */
        memmove(&w->ext[i + 1], &w->ext[j], (size_t)(w->next - j) * sizeof w->ext[0]);
        w->next -= j - i - 1;
    }
    w->ext[i].start = s;
    w->ext[i].end = e;
    return 0;
}

/* Would inserting [s, e) need a new extent slot that is not there? */
static int extents_would_overflow(const struct buffer_window *w, int64_t s, int64_t e)
{
    if (w->next < WINDOW_MAX_EXTENTS)
        return 0;
    for (int i = 0; i < w->next; i++)
        if (w->ext[i].start <= e && w->ext[i].end >= s)
            return 0;
    return 1;
}

int64_t window_add(struct buffer_window *w, const void *buf, int64_t off, int64_t n,
                   window_reserve_fn reserve)
{
    int64_t lim = w->base + (int64_t)w->span;
    int64_t e;

    if (n <= 0 || off < w->base || off >= lim)
        return 0;
    e = off + n < lim ? off + n : lim;
    if (extents_would_overflow(w, off, e))
        return -E2BIG;
    if (window_grow(w, (size_t)(e - w->base), reserve) != 0)
        return -ENOMEM;
    memcpy(w->data + (off - w->base), buf, (size_t)(e - off));
    (void)extents_insert(w, off, e);
    w->adds++;
    return e - off;
}

int window_overlap(const struct buffer_window *w, int64_t off, int64_t n)
{
    int64_t e = off + n;

    for (int i = 0; i < w->next; i++) {
        if (w->ext[i].start <= off && e <= w->ext[i].end)
            return 1;
        if (w->ext[i].start < e && off < w->ext[i].end)
            return 2;
    }
    return 0;
}

int64_t window_end(const struct buffer_window *w)
{
    return w->next ? w->ext[w->next - 1].end : 0;
}

int window_full(const struct buffer_window *w)
{
    return w->next == 1 && w->ext[0].start == w->base && w->ext[0].end == w->base + (int64_t)w->span;
}

void window_copy_out(const struct buffer_window *w, void *buf, int64_t off, int64_t n)
{
    int64_t e = off + n;

    for (int i = 0; i < w->next; i++) {
        int64_t s = w->ext[i].start > off ? w->ext[i].start : off;
        int64_t t = w->ext[i].end < e ? w->ext[i].end : e;
        if (s < t)
            memcpy((unsigned char *)buf + (s - off), w->data + (s - w->base), (size_t)(t - s));
    }
}

void window_truncate(struct buffer_window *w, int64_t len)
{
    while (w->next > 0 && w->ext[w->next - 1].start >= len)
        w->next--;
    if (w->next > 0 && w->ext[w->next - 1].end > len)
        w->ext[w->next - 1].end = len;
}

void window_move(struct buffer_window *w, struct buffer_window *to)
{
    *to = *w;
    w->data = NULL;
    w->cap = 0;
    w->next = 0;
}

void window_free(struct buffer_window *w, window_reserve_fn reserve)
{
    if (w->data && !(w->cap == w->span && pool_put(w->data, w->cap))) {
        free(w->data);
        reserve(-(int64_t)w->cap);
    }
    w->data = NULL;
    w->cap = 0;
    w->next = 0;
}
