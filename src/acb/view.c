/*
 * Datatype flattening and view mapping; see view.h. Recursion follows the
 * datatype's construction; each constructor's old type is flattened once
 * and its blocks replicated, so a vector of a million doubles costs one
 * block when it is contiguous.
 */
#include "acb/view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BLOCKS ((size_t)1 << 22)

static int push(struct sluice_acb_flat *f, int64_t off, int64_t len)
{
    if (len <= 0)
        return 0;
    if (f->n && f->b[f->n - 1].off + f->b[f->n - 1].len == off) {
        f->b[f->n - 1].len += len;
        return 0;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct sluice_acb_block *b;
        if (cap > MAX_BLOCKS)
            return -E2BIG;
        if ((b = realloc(f->b, cap * sizeof *b)) == NULL)
            return -ENOMEM;
        f->b = b;
        f->cap = cap;
    }
    f->b[f->n++] = (struct sluice_acb_block){off, len};
    return 0;
}

void sluice_acb_flat_free(struct sluice_acb_flat *f)
{
    free(f->b);
    free(f->prefix);
    memset(f, 0, sizeof *f);
}

static int flatten_at(MPI_Datatype t, int64_t base, struct sluice_acb_flat *out);

/* `count` copies of old, copy j at disp + j * extent(old). */
static int replicate(const struct sluice_acb_flat *old, int64_t disp, int64_t count, struct sluice_acb_flat *out)
{
    int rc = 0;

    if (old->n == 1 && old->b[0].off == 0 && old->b[0].len == old->extent)
        return push(out, disp, count * old->extent);
    for (int64_t j = 0; j < count && rc == 0; j++)
        for (size_t k = 0; k < old->n && rc == 0; k++)
            rc = push(out, disp + j * old->extent + old->b[k].off, old->b[k].len);
    return rc;
}

static int flatten_old(MPI_Datatype t, struct sluice_acb_flat *f)
{
    MPI_Count lb, extent;

    memset(f, 0, sizeof *f);
    if (SLUICE_PMPI(Type_get_extent_x)(t, &lb, &extent) != MPI_SUCCESS)
        return -ENOTSUP;
    f->extent = (int64_t)extent;
    return flatten_at(t, 0, f);
}

static int64_t prod(const int *v, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= v[i];
    return p;
}

/* Subarray: rows along the fastest dimension, each a run of old types. */
static int subarray(const int *ints, const struct sluice_acb_flat *old, int64_t base, struct sluice_acb_flat *out)
{
    int nd = ints[0], order = ints[1 + 3 * nd];
    int sizes[32], subs[32], starts[32], idx[32] = {0};
    int rc = 0;

    if (nd < 1 || nd > 32)
        return -ENOTSUP;
    /* Work in C order: the last dimension varies fastest. */
    for (int d = 0; d < nd; d++) {
        int s = order == MPI_ORDER_C ? d : nd - 1 - d;
        sizes[d] = ints[1 + s];
        subs[d] = ints[1 + nd + s];
        starts[d] = ints[1 + 2 * nd + s];
        if (subs[d] <= 0)
            return 0;
    }
    for (;;) {
        int64_t elem = 0;
        for (int d = 0; d < nd; d++)
            elem += (int64_t)(starts[d] + (d == nd - 1 ? 0 : idx[d])) * prod(sizes, d + 1, nd);
        rc = replicate(old, base + elem * old->extent, subs[nd - 1], out);
        if (rc)
            return rc;
        int d = nd - 2;
        while (d >= 0 && ++idx[d] == subs[d])
            idx[d--] = 0;
        if (d < 0)
            return 0;
    }
}

static int flatten_at(MPI_Datatype t, int64_t base, struct sluice_acb_flat *out)
{
    int ni, na, nd, comb, rc = 0;
    int *ints = NULL;
    MPI_Aint *addrs = NULL;
    MPI_Datatype *types = NULL;
    struct sluice_acb_flat old = {0};

    if (SLUICE_PMPI(Type_get_envelope)(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return -ENOTSUP;
    if (comb == MPI_COMBINER_NAMED) {
        MPI_Count size;
        SLUICE_PMPI(Type_size_x)(t, &size);
        return push(out, base, (int64_t)size);
    }
    ints = malloc(sizeof *ints * (size_t)(ni + 1));
    addrs = malloc(sizeof *addrs * (size_t)(na + 1));
    types = malloc(sizeof *types * (size_t)(nd + 1));
    if (!ints || !addrs || !types) {
        rc = -ENOMEM;
        goto out;
    }
    if (SLUICE_PMPI(Type_get_contents)(t, ni, na, nd, ints, addrs, types) != MPI_SUCCESS) {
        nd = 0;
        rc = -ENOTSUP;
        goto out;
    }
    if (comb == MPI_COMBINER_STRUCT) {
        for (int i = 0; i < ints[0] && rc == 0; i++) {
            rc = flatten_old(types[i], &old);
            if (rc == 0)
                rc = replicate(&old, base + addrs[i], ints[1 + i], out);
            sluice_acb_flat_free(&old);
        }
        goto out;
    }
    if (nd < 1 || (rc = flatten_old(types[0], &old)) != 0) {
        rc = rc ? rc : -ENOTSUP;
        goto out;
    }
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
        rc = replicate(&old, base, 1, out);
        break;
    case MPI_COMBINER_CONTIGUOUS:
        rc = replicate(&old, base, ints[0], out);
        break;
    case MPI_COMBINER_VECTOR:
        for (int i = 0; i < ints[0] && rc == 0; i++)
            rc = replicate(&old, base + (int64_t)i * ints[2] * old.extent, ints[1], out);
        break;
    case MPI_COMBINER_HVECTOR:
        for (int i = 0; i < ints[0] && rc == 0; i++)
            rc = replicate(&old, base + (int64_t)i * addrs[0], ints[1], out);
        break;
    case MPI_COMBINER_INDEXED:
        for (int i = 0; i < ints[0] && rc == 0; i++)
            rc = replicate(&old, base + (int64_t)ints[1 + ints[0] + i] * old.extent, ints[1 + i], out);
        break;
    case MPI_COMBINER_HINDEXED:
        for (int i = 0; i < ints[0] && rc == 0; i++)
            rc = replicate(&old, base + addrs[i], ints[1 + i], out);
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        for (int i = 0; i < ints[0] && rc == 0; i++)
            rc = replicate(&old, base + (int64_t)ints[2 + i] * old.extent, ints[1], out);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        for (int i = 0; i < ints[0] && rc == 0; i++)
            rc = replicate(&old, base + addrs[i], ints[1], out);
        break;
    case MPI_COMBINER_SUBARRAY:
        rc = subarray(ints, &old, base, out);
        break;
    default:
        rc = -ENOTSUP;
        break;
    }
out:
    sluice_acb_flat_free(&old);
    for (int i = 0; i < nd; i++) {
        int a, b, c, k;
        if (SLUICE_PMPI(Type_get_envelope)(types[i], &a, &b, &c, &k) == MPI_SUCCESS && k != MPI_COMBINER_NAMED)
            SLUICE_PMPI(Type_free)(&types[i]);
    }
    free(ints);
    free(addrs);
    free(types);
    return rc;
}

int sluice_acb_flatten(MPI_Datatype t, struct sluice_acb_flat *f)
{
    MPI_Count size = 0;
    int rc = flatten_old(t, f);

    if (rc == 0) {
        SLUICE_PMPI(Type_size_x)(t, &size);
        f->size = 0;
        if ((f->prefix = malloc((f->n + 1) * sizeof *f->prefix)) == NULL)
            rc = -ENOMEM;
        for (size_t i = 0; rc == 0 && i < f->n; i++) {
            f->prefix[i] = f->size;
            f->size += f->b[i].len;
        }
        if (rc == 0)
            f->prefix[f->n] = f->size;
        /* A decoding we got wrong must not write wrong bytes. */
        if (rc == 0 && (f->size != (int64_t)size || f->size == 0 || f->extent <= 0))
            rc = -ENOTSUP;
    }
    if (rc != 0)
        sluice_acb_flat_free(f);
    return rc;
}

int sluice_acb_flat_contiguous(const struct sluice_acb_flat *f)
{
    return f->n == 1 && f->b[0].off == 0 && f->b[0].len == f->extent;
}

int sluice_acb_view_map(const struct sluice_acb_flat *f, int64_t disp, int64_t pos, int64_t n,
                        int (*piece)(void *ctx, int64_t file_off, int64_t len, int64_t data_off), void *ctx)
{
    int64_t tile = pos / f->size, within = pos % f->size, done = 0;
    size_t lo = 0, hi = f->n - 1;
    int rc = 0;

    /* The block holding byte `within` of a tile. */
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (f->prefix[mid] <= within)
            lo = mid;
        else
            hi = mid - 1;
    }
    while (done < n && rc == 0) {
        const struct sluice_acb_block *b = &f->b[lo];
        int64_t skip = within - f->prefix[lo];
        int64_t len = b->len - skip < n - done ? b->len - skip : n - done;
        rc = piece(ctx, disp + tile * f->extent + b->off + skip, len, done);
        done += len;
        within += len;
        if (skip + len < b->len)
            break;   /* the range ended inside this block */
        if (++lo == f->n) {
            lo = 0;
            tile++;
            within = 0;
        }
    }
    return rc;
}
