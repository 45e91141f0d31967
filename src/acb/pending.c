/*
 * A rank's pending writes (see acb.h). Data is copied into chunks of at
 * least CHUNK_MIN bytes, so that many small writes cost few allocations;
 * extents point into the chunks and live until the list is cleared.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acb/acb.h"

#define CHUNK_MIN ((int64_t)4 << 20)

struct sluice_acb_chunk {
    struct sluice_acb_chunk *next;
    int64_t size, used;
    unsigned char data[];
};

static unsigned char *chunk_take(struct sluice_acb_pending *p, int64_t len)
{
    struct sluice_acb_chunk *c = p->chunks;

    if (!c || c->size - c->used < len) {
        int64_t size = len > CHUNK_MIN ? len : CHUNK_MIN;
        c = malloc(sizeof *c + (size_t)size);
        if (!c)
            return NULL;
        c->size = size;
        c->used = 0;
        c->next = p->chunks;
        p->chunks = c;
    }
    c->used += len;
    return c->data + c->used - len;
}

static int grow(struct sluice_acb_pending *p)
{
    size_t cap = p->cap ? p->cap * 2 : 256;
    struct sluice_acb_extent *e = realloc(p->ext, cap * sizeof *e);

    if (!e)
        return -ENOMEM;
    p->ext = e;
    p->cap = cap;
    return 0;
}

unsigned char *sluice_acb_pending_add(struct sluice_acb_pending *p, int64_t off, int64_t len)
{
    unsigned char *dst;

    if (p->n == p->cap && grow(p) != 0)
        return NULL;
    if ((dst = chunk_take(p, len > 0 ? len : 1)) == NULL)
        return NULL;
    p->ext[p->n++] = (struct sluice_acb_extent){
        .off = off, .len = len, .data = dst, .seq = p->seq++, .epoch = p->epoch};
    p->bytes += len;
    return dst;
}

int sluice_acb_pending_add_ref(struct sluice_acb_pending *p, int64_t off, int64_t len, const unsigned char *data)
{
    if (p->n == p->cap && grow(p) != 0)
        return -ENOMEM;
    p->ext[p->n++] = (struct sluice_acb_extent){
        .off = off, .len = len, .data = data, .seq = p->seq++, .epoch = p->epoch};
    p->bytes += len;
    return 0;
}

int sluice_acb_pending_overlaps(const struct sluice_acb_pending *p, int64_t off, int64_t len)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->ext[i].off < off + len && off < p->ext[i].off + p->ext[i].len)
            return 1;
    return 0;
}

static int by_offset_then_seq(const void *a, const void *b)
{
    const struct sluice_acb_extent *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_seq(const void *a, const void *b)
{
    const struct sluice_acb_extent *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Replace the overlapping extents ext[from..to) (their union is one range)
 * by one extent painted in program order. */
static int merge_cluster(struct sluice_acb_pending *p, size_t from, size_t to, int64_t end, size_t out)
{
    int64_t start = p->ext[from].off;
    unsigned char *buf = chunk_take(p, end - start);
    uint64_t last_seq = 0, last_epoch = 0;

    if (!buf)
        return -ENOMEM;
    qsort(p->ext + from, to - from, sizeof *p->ext, by_seq);
    for (size_t i = from; i < to; i++) {
        memcpy(buf + (p->ext[i].off - start), p->ext[i].data, (size_t)p->ext[i].len);
        last_seq = p->ext[i].seq;
        last_epoch = p->ext[i].epoch;
    }
    p->ext[out] = (struct sluice_acb_extent){
        .off = start, .len = end - start, .data = buf, .seq = last_seq, .epoch = last_epoch};
    return 0;
}

int sluice_acb_pending_normalize(struct sluice_acb_pending *p)
{
    size_t out = 0, i = 0;

    if (p->n == 0)
        return 0;
    sluice_acb_pending_sort(p);
    while (i < p->n) {
        size_t j = i + 1;
        int64_t end = p->ext[i].off + p->ext[i].len;
        while (j < p->n && p->ext[j].off < end) {
            if (p->ext[j].off + p->ext[j].len > end)
                end = p->ext[j].off + p->ext[j].len;
            j++;
        }
        if (j == i + 1) {
            p->ext[out] = p->ext[i];
        } else if (merge_cluster(p, i, j, end, out) != 0) {
            return -ENOMEM;
        }
        out++;
        i = j;
    }
    p->n = out;
    p->bytes = 0;
    for (i = 0; i < p->n; i++)
        p->bytes += p->ext[i].len;
    return 0;
}

void sluice_acb_pending_sort(struct sluice_acb_pending *p)
{
    if (p->n > 1)
        qsort(p->ext, p->n, sizeof *p->ext, by_offset_then_seq);
}

int sluice_acb_pending_one_epoch(const struct sluice_acb_pending *p)
{
    for (size_t i = 1; i < p->n; i++)
        if (p->ext[i].epoch != p->ext[0].epoch)
            return 0;
    return 1;
}

void sluice_acb_pending_clear(struct sluice_acb_pending *p)
{
    while (p->chunks) {
        struct sluice_acb_chunk *c = p->chunks;
        p->chunks = c->next;
        free(c);
    }
    free(p->ext);
    p->ext = NULL;
    p->n = p->cap = 0;
    p->bytes = 0;
}
