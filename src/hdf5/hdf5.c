/*
 * The H5F and H5D modules: HDF5 files and datasets, with Darshan's counters
 * (docs/counters.md). libsluice defines the HDF5 functions Darshan's HDF5
 * module wraps, and H5Oopen (how h5py opens datasets); each calls the next
 * definition (h5api.c) and counts the call when it succeeded on a recorded
 * file.
 *
 * Records: H5F by the file's absolute path (a "driver:" prefix removed, as
 * ROMIO names go), H5D by "<file path>:<dataset path>". Open identifiers
 * are kept in a table (hid -> file record, or dataset handle); a read or
 * write finds its dataset there, asks HDF5 about the file selection (its
 * type and points; a regular hyperslab's shape) and updates the record
 * under its lock. Nothing is allocated on that path: the table grows, and
 * the per-dataset state is allocated, when a file or dataset is opened.
 *
 * Identifiers a program drops without H5Dclose/H5Fclose (h5py releases
 * them with H5Idec_ref) stay in the table until it would grow; then the
 * ones HDF5 no longer knows (H5Iis_valid) are removed.
 *
 * The program's errno and return values pass through unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/pathnorm.h"
#include "core/accesses.h"
#include "core/counters.h"
#include "core/policy.h"
#include "core/record.h"
#include "hdf5/h5api.h"
#include "interpose/interpose.h"

/* ---- per-dataset state ---- */

#define H5_ACC_VALS SLUICE_ACCESS_VALS
_Static_assert(SLUICE_ACCESS_VALS == 1 + 2 * SLUICE_H5_MAX_NDIMS, "Darshan's access tuples");

/* One per H5D record (shared by every handle of that dataset); under the record's lock. */
struct h5d_state {
    struct h5d_state *next;
    struct sluice_record *rec;
    int last_io;                    /* 0 none, 1 read, 2 write */
    struct sluice_access_table common;
};

/* One per open dataset identifier. */
struct h5d_handle {
    struct h5d_state *st;
    int ndims;                      /* of its dataspace */
    int64_t npoints;
    int64_t type_size;
};

static pthread_mutex_t states_lock = PTHREAD_MUTEX_INITIALIZER;
static struct h5d_state *states;

static struct h5d_state *state_of(struct sluice_record *rec)
{
    struct h5d_state *s;

    pthread_mutex_lock(&states_lock);
    for (s = states; s && s->rec != rec; s = s->next)
        ;
    if (!s && (s = calloc(1, sizeof *s)) != NULL) {
        s->rec = rec;
        s->next = states;
        states = s;
    }
    pthread_mutex_unlock(&states_lock);
    return s;
}

/* ---- open identifiers ---- */

enum { H5_FILE = 1, H5_DATASET = 2 };
#define H5_TOMB ((int64_t)-1)

struct hid_slot {
    int64_t hid;                    /* 0: empty; H5_TOMB: removed */
    const struct sluice_h5_api *api; /* the library the id belongs to (ids of two are unrelated) */
    int kind;
    void *obj;                      /* struct sluice_record * (file), struct h5d_handle * (dataset) */
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hid_slot *table;
static size_t table_cap, table_used, table_live;   /* used: live and tombstones */

static size_t hid_hash(int64_t hid)
{
    uint64_t h = (uint64_t)hid * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32);
}

/* The slot of a's hid, or NULL. Under table_lock. */
static struct hid_slot *slot_find(const struct sluice_h5_api *a, int64_t hid)
{
    if (!table || hid <= 0)
        return NULL;
    for (size_t i = hid_hash(hid) & (table_cap - 1);; i = (i + 1) & (table_cap - 1)) {
        if (table[i].hid == hid && table[i].api == a)
            return &table[i];
        if (table[i].hid == 0)
            return NULL;
    }
}

static void slot_remove(struct hid_slot *s)
{
    s->hid = H5_TOMB;
    s->obj = NULL;
    table_live--;
}

static void obj_free(int kind, void *obj)
{
    if (kind == H5_DATASET)
        free(obj);
}

/* Rebuild the table with room for more (dropping identifiers HDF5 no longer
 * knows when it is large). Under table_lock. 0 or -1. */
static int table_grow(void)
{
    size_t cap = table_cap ? table_cap : 256;
    struct hid_slot *old = table, *nt;
    size_t oldcap = table_cap;

    if (old && table_live > 1024)
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].hid > 0 && old[i].api->H5Iis_valid && old[i].api->H5Iis_valid(old[i].hid) <= 0) {
                obj_free(old[i].kind, old[i].obj);
                slot_remove(&old[i]);
            }
    while (table_live * 2 >= cap)
        cap *= 2;
    if ((nt = calloc(cap, sizeof *nt)) == NULL)
        return -1;
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].hid <= 0)
            continue;
        size_t j = hid_hash(old[i].hid) & (cap - 1);
        while (nt[j].hid != 0)
            j = (j + 1) & (cap - 1);
        nt[j] = old[i];
    }
    free(old);
    table = nt;
    table_cap = cap;
    table_used = table_live;
    return 0;
}

/* Remember hid (a new identifier: an old entry of the same number is stale). */
static void table_put(const struct sluice_h5_api *a, int64_t hid, int kind, void *obj)
{
    struct hid_slot *s;

    if (hid <= 0) {
        obj_free(kind, obj);
        return;
    }
    pthread_mutex_lock(&table_lock);
    if ((s = slot_find(a, hid)) != NULL) {
        obj_free(s->kind, s->obj);
        slot_remove(s);
    }
    if ((table_used + 1) * 4 >= table_cap * 3 && table_grow() != 0) {
        pthread_mutex_unlock(&table_lock);
        obj_free(kind, obj);
        return;
    }
    size_t i = hid_hash(hid) & (table_cap - 1);
    while (table[i].hid > 0)
        i = (i + 1) & (table_cap - 1);
    if (table[i].hid == 0)
        table_used++;
    table[i] = (struct hid_slot){hid, a, kind, obj};
    table_live++;
    pthread_mutex_unlock(&table_lock);
}

/* The object of hid if it is of this kind (dataset: a copy of its handle). */
static struct sluice_record *table_file(const struct sluice_h5_api *a, int64_t hid)
{
    struct sluice_record *r = NULL;

    pthread_mutex_lock(&table_lock);
    struct hid_slot *s = slot_find(a, hid);
    if (s && s->kind == H5_FILE)
        r = s->obj;
    pthread_mutex_unlock(&table_lock);
    return r;
}

static int table_dataset(const struct sluice_h5_api *a, int64_t hid, struct h5d_handle *out)
{
    int found = 0;

    pthread_mutex_lock(&table_lock);
    struct hid_slot *s = slot_find(a, hid);
    if (s && s->kind == H5_DATASET) {
        *out = *(struct h5d_handle *)s->obj;
        found = 1;
    }
    pthread_mutex_unlock(&table_lock);
    return found;
}

/* Forget hid (after a successful close). */
static void table_drop(const struct sluice_h5_api *a, int64_t hid)
{
    pthread_mutex_lock(&table_lock);
    struct hid_slot *s = slot_find(a, hid);
    if (s) {
        obj_free(s->kind, s->obj);
        slot_remove(s);
    }
    pthread_mutex_unlock(&table_lock);
}

/* ---- counting ---- */

static double ticks(uint64_t t0, uint64_t t1)
{
    return (double)(int64_t)(t1 - t0);
}

static void stamp_first(double *fc, double ts)
{
    if (*fc == 0.0 || ts < *fc)
        *fc = ts;
}

static void stamp_last(double *fc, double ts)
{
    if (ts > *fc)
        *fc = ts;
}

/* The record of an HDF5 file name, or NULL when it is not recorded. */
static struct sluice_record *file_record(const char *name)
{
    char abs[PATH_MAX];
    const char *colon = strchr(name, ':'), *slash = strchr(name, '/');

    if (colon && colon - name > 1 && (!slash || colon < slash))
        name = colon + 1;
    if (!*name || sluice_policy_skip_fast(name) || sluice_path_absolute(AT_FDCWD, name, abs, sizeof abs) != 0 ||
        !sluice_policy_records(abs))
        return NULL;
    return sluice_record_get(SLUICE_MOD_H5F, abs);
}

static void count_error(struct sluice_record *r, int counter)
{
    sluice_record_lock(r);
    r->ic[counter]++;
    sluice_record_unlock(r);
}

/* A meta call of a file or dataset: its counter (-1: none), time and stamps
 * (-1: none). */
static void count_meta(struct sluice_record *r, int counter, int ftime, int first, int last, uint64_t t0,
                       uint64_t t1)
{
    sluice_record_lock(r);
    if (counter >= 0)
        r->ic[counter]++;
    r->fc[ftime] += ticks(t0, t1);
    if (first >= 0)
        stamp_first(&r->fc[first], sluice_ticks_since_start(t0));
    if (last >= 0)
        stamp_last(&r->fc[last], sluice_ticks_since_start(t1));
    sluice_record_unlock(r);
}

/* A read or write that succeeded on dataset handle h. */
static void count_rw(const struct sluice_h5_api *a, const struct h5d_handle *h, enum sluice_access kind,
                     sluice_hid_t file_space, sluice_hid_t xfer, uint64_t t0, uint64_t t1)
{
    struct sluice_record *r = h->st->rec;
    int64_t v[H5_ACC_VALS] = {0}, npoints = h->npoints, bytes;
    int sel = SLUICE_H5S_SEL_ALL, regular = 0, collective = 0;
    double dt = ticks(t0, t1);

    if (file_space != SLUICE_H5S_ALL) {
        /* each query is an API call with HDF5's own locking: a regular
         * hyperslab's points come from its shape, not from one more call */
        int have_points = 0;
        sel = a->H5Sget_select_type(file_space);
        if (sel == SLUICE_H5S_SEL_HYPERSLABS && a->H5Sis_regular_hyperslab && a->H5Sget_regular_hyperslab &&
            a->H5Sis_regular_hyperslab(file_space) > 0) {
            sluice_hsize_t start[SLUICE_H5_RANK_MAX], stride[SLUICE_H5_RANK_MAX], count[SLUICE_H5_RANK_MAX],
                block[SLUICE_H5_RANK_MAX];
            int nd = h->ndims < SLUICE_H5_RANK_MAX ? h->ndims : SLUICE_H5_RANK_MAX;
            regular = 1;
            if (nd > 0 && a->H5Sget_regular_hyperslab(file_space, start, stride, count, block) >= 0) {
                npoints = 1;
                for (int i = 0; i < nd; i++)
                    npoints *= (int64_t)(count[i] * block[i]);
                have_points = 1;
                for (int i = 0; i < nd && i < SLUICE_H5_MAX_NDIMS; i++) {   /* D1: the last dimension */
                    v[1 + i] = (int64_t)(count[nd - 1 - i] * block[nd - 1 - i]);
                    v[1 + SLUICE_H5_MAX_NDIMS + i] = (int64_t)stride[nd - 1 - i];
                }
            }
        }
        if (!have_points)
            npoints = a->H5Sget_select_npoints(file_space);
        if (npoints < 0)
            npoints = 0;
    }
    if (xfer != SLUICE_H5P_DEFAULT && a->H5Pget_dxpl_mpio) {
        int mode = 0;
        collective = a->H5Pget_dxpl_mpio(xfer, &mode) >= 0 && mode == SLUICE_H5FD_MPIO_COLLECTIVE;
    }
    bytes = npoints * h->type_size;
    v[0] = bytes;

    int rd = kind == SLUICE_READ;
    sluice_record_lock(r);
    int64_t *ic = r->ic;
    double *fc = r->fc;
    ic[rd ? H5D_READS : H5D_WRITES]++;
    ic[rd ? H5D_BYTES_READ : H5D_BYTES_WRITTEN] += bytes;
    ic[(rd ? H5D_SIZE_READ_AGG_0_100 : H5D_SIZE_WRITE_AGG_0_100) + sluice_size_bucket(bytes)]++;
    if (h->st->last_io && h->st->last_io != (rd ? 1 : 2))
        ic[H5D_RW_SWITCHES]++;
    h->st->last_io = rd ? 1 : 2;
    if (sel == SLUICE_H5S_SEL_POINTS)
        ic[H5D_POINT_SELECTS]++;
    else if (sel == SLUICE_H5S_SEL_HYPERSLABS)
        ic[regular ? H5D_REGULAR_HYPERSLAB_SELECTS : H5D_IRREGULAR_HYPERSLAB_SELECTS]++;
    sluice_access_count(&h->st->common, &ic[H5D_ACCESS1_ACCESS], &ic[H5D_ACCESS1_COUNT], v);
    if (collective)
        ic[H5D_USE_MPIIO_COLLECTIVE] = 1;
    fc[rd ? H5D_F_READ_TIME : H5D_F_WRITE_TIME] += dt;
    if (dt > fc[rd ? H5D_F_MAX_READ_TIME : H5D_F_MAX_WRITE_TIME]) {
        fc[rd ? H5D_F_MAX_READ_TIME : H5D_F_MAX_WRITE_TIME] = dt;
        ic[rd ? H5D_MAX_READ_TIME_SIZE : H5D_MAX_WRITE_TIME_SIZE] = bytes;
    }
    stamp_first(&fc[rd ? H5D_F_READ_START_TIMESTAMP : H5D_F_WRITE_START_TIMESTAMP], sluice_ticks_since_start(t0));
    stamp_last(&fc[rd ? H5D_F_READ_END_TIMESTAMP : H5D_F_WRITE_END_TIMESTAMP], sluice_ticks_since_start(t1));
    sluice_record_unlock(r);
}

/* The H5D record name of dataset `name` opened at loc_id: "<file>:<path>";
 * 0, or -1 when the file is not recorded. */
static int dataset_name(const struct sluice_h5_api *a, sluice_hid_t loc_id, const char *name, char *out,
                        size_t outlen)
{
    char file[PATH_MAX], loc[PATH_MAX];
    ssize_t n = a->H5Fget_name(loc_id, file, sizeof file);
    const char *colon, *slash, *fname = file;
    int len;

    if (n <= 0 || (size_t)n >= sizeof file)
        return -1;
    colon = strchr(file, ':');
    slash = strchr(file, '/');
    if (colon && colon - file > 1 && (!slash || colon < slash))
        fname = colon + 1;
    if (sluice_policy_skip_fast(fname) || sluice_path_absolute(AT_FDCWD, fname, out, outlen) != 0 ||
        !sluice_policy_records(out))
        return -1;
    len = (int)strlen(out);
    if (name[0] == '/') {
        n = snprintf(out + len, outlen - (size_t)len, ":%s", name);
    } else {
        ssize_t ln = a->H5Iget_name(loc_id, loc, sizeof loc);
        if (ln <= 0 || (size_t)ln >= sizeof loc)
            strcpy(loc, "/");
        n = snprintf(out + len, outlen - (size_t)len, ":%s%s%s", loc, loc[strlen(loc) - 1] == '/' ? "" : "/", name);
    }
    return n > 0 && (size_t)n < outlen - (size_t)len ? 0 : -1;
}

/* A dataset opened or created: its record, properties and handle. */
static void dataset_opened(const struct sluice_h5_api *a, sluice_hid_t loc_id, const char *name, sluice_hid_t d,
                           int deprecated, uint64_t t0, uint64_t t1)
{
    char key[PATH_MAX + 1024];
    sluice_hsize_t chunk[SLUICE_H5_RANK_MAX] = {0};
    struct sluice_record *r;
    struct h5d_handle *h;
    int nchunk = 0;

    if (!a->queries_ok || !name || dataset_name(a, loc_id, name, key, sizeof key) != 0 ||
        (r = sluice_record_get(SLUICE_MOD_H5D, key)) == NULL || (h = calloc(1, sizeof *h)) == NULL)
        return;
    if ((h->st = state_of(r)) == NULL) {
        free(h);
        return;
    }
    sluice_hid_t space = a->H5Dget_space(d), type = a->H5Dget_type(d), dcpl = a->H5Dget_create_plist(d);
    if (space >= 0) {
        h->ndims = a->H5Sget_simple_extent_ndims(space);
        h->npoints = a->H5Sget_simple_extent_npoints(space);
        a->H5Sclose(space);
    }
    if (type >= 0) {
        h->type_size = (int64_t)a->H5Tget_size(type);
        a->H5Tclose(type);
    }
    if (dcpl >= 0) {
        if (a->H5Pget_layout(dcpl) == SLUICE_H5D_CHUNKED)
            nchunk = a->H5Pget_chunk(dcpl, SLUICE_H5_RANK_MAX, chunk);
        a->H5Pclose(dcpl);
    }
    sluice_record_lock(r);
    r->ic[H5D_OPENS]++;
    r->ic[H5D_USE_DEPRECATED] = deprecated;
    r->ic[H5D_DATASPACE_NDIMS] = h->ndims;
    r->ic[H5D_DATASPACE_NPOINTS] = h->npoints;
    r->ic[H5D_DATATYPE_SIZE] = h->type_size;
    for (int i = 0; i < SLUICE_H5_MAX_NDIMS; i++)   /* D1: the last dimension */
        r->ic[H5D_CHUNK_SIZE_D1 + i] = i < nchunk ? (int64_t)chunk[nchunk - 1 - i] : 0;
    r->fc[H5D_F_META_TIME] += ticks(t0, t1);
    stamp_first(&r->fc[H5D_F_OPEN_START_TIMESTAMP], sluice_ticks_since_start(t0));
    stamp_last(&r->fc[H5D_F_OPEN_END_TIMESTAMP], sluice_ticks_since_start(t1));
    sluice_record_unlock(r);
    table_put(a, d, H5_DATASET, h);
}

/* ---- after fork: the child's counts start from zero (core/record.c) ---- */

static void after_fork_child(void)
{
    pthread_mutex_init(&table_lock, NULL);
    pthread_mutex_init(&states_lock, NULL);
    sluice_h5_api_after_fork_child();
    for (struct h5d_state *s = states; s; s = s->next) {
        s->last_io = 0;
        s->common.n = 0;
    }
}

__attribute__((constructor)) static void hdf5_module_init(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}

/* ---- wrappers ---- */

/* (in the exported function itself: its return address is its caller's) */
#define H5_NEXT_OR_FAIL(name, fail)                                              \
    const struct sluice_h5_api *a = sluice_h5_api_of(__builtin_return_address(0)); \
    if (!a->name) {                                                              \
        return fail;                                                             \
    }

static sluice_hid_t file_opened(const struct sluice_h5_api *a, const char *filename, sluice_hid_t fapl,
                                sluice_hid_t ret, uint64_t t0)
{
    uint64_t t1 = sluice_now();
    int saved = errno;
    struct sluice_record *r = filename ? file_record(filename) : NULL;

    if (!r)
        return ret;
    if (ret < 0) {
        count_error(r, H5F_ERRORS);
    } else {
        int mpio = fapl != SLUICE_H5P_DEFAULT && a->H5Pget_driver && a->H5FD_mpio_init &&
                   a->H5Pget_driver(fapl) == a->H5FD_mpio_init();
        sluice_record_lock(r);
        r->ic[H5F_OPENS]++;
        if (mpio)
            r->ic[H5F_USE_MPIIO] = 1;
        r->fc[H5F_F_META_TIME] += ticks(t0, t1);
        stamp_first(&r->fc[H5F_F_OPEN_START_TIMESTAMP], sluice_ticks_since_start(t0));
        stamp_last(&r->fc[H5F_F_OPEN_END_TIMESTAMP], sluice_ticks_since_start(t1));
        sluice_record_unlock(r);
        table_put(a, ret, H5_FILE, r);
    }
    errno = saved;
    return ret;
}

SLUICE_EXPORT sluice_hid_t H5Fcreate(const char *filename, unsigned flags, sluice_hid_t fcpl, sluice_hid_t fapl)
{
    H5_NEXT_OR_FAIL(H5Fcreate, -1)
    if (!sluice_active())
        return a->H5Fcreate(filename, flags, fcpl, fapl);
    uint64_t t0 = sluice_now();
    return file_opened(a, filename, fapl, a->H5Fcreate(filename, flags, fcpl, fapl), t0);
}

SLUICE_EXPORT sluice_hid_t H5Fopen(const char *filename, unsigned flags, sluice_hid_t fapl)
{
    H5_NEXT_OR_FAIL(H5Fopen, -1)
    if (!sluice_active())
        return a->H5Fopen(filename, flags, fapl);
    uint64_t t0 = sluice_now();
    return file_opened(a, filename, fapl, a->H5Fopen(filename, flags, fapl), t0);
}

SLUICE_EXPORT sluice_herr_t H5Fflush(sluice_hid_t object_id, int scope)
{
    H5_NEXT_OR_FAIL(H5Fflush, -1)
    if (!sluice_active())
        return a->H5Fflush(object_id, scope);
    uint64_t t0 = sluice_now();
    sluice_herr_t rc = a->H5Fflush(object_id, scope);
    uint64_t t1 = sluice_now();
    int saved = errno;
    struct sluice_record *r = table_file(a, object_id);
    if (!r && rc >= 0 && a->queries_ok) {   /* a dataset or group of the file: by its file's name */
        char file[PATH_MAX];
        ssize_t n = a->H5Fget_name(object_id, file, sizeof file);
        if (n > 0 && (size_t)n < sizeof file)
            r = file_record(file);
    }
    if (r) {
        if (rc < 0)
            count_error(r, H5F_ERRORS);
        else
            count_meta(r, H5F_FLUSHES, H5F_F_META_TIME, -1, -1, t0, t1);
    }
    errno = saved;
    return rc;
}

SLUICE_EXPORT sluice_herr_t H5Fclose(sluice_hid_t file_id)
{
    H5_NEXT_OR_FAIL(H5Fclose, -1)
    struct sluice_record *r;
    if (!sluice_active() || (r = table_file(a, file_id)) == NULL)
        return a->H5Fclose(file_id);
    uint64_t t0 = sluice_now();
    sluice_herr_t rc = a->H5Fclose(file_id);
    uint64_t t1 = sluice_now();
    int saved = errno;
    if (rc < 0) {
        count_error(r, H5F_ERRORS);
    } else {
        table_drop(a, file_id);
        count_meta(r, -1, H5F_F_META_TIME, H5F_F_CLOSE_START_TIMESTAMP, H5F_F_CLOSE_END_TIMESTAMP, t0, t1);
    }
    errno = saved;
    return rc;
}

static sluice_hid_t dataset_done(const struct sluice_h5_api *a, sluice_hid_t loc_id, const char *name, sluice_hid_t d,
                                 int deprecated, uint64_t t0)
{
    uint64_t t1 = sluice_now();
    int saved = errno;

    if (d >= 0)
        dataset_opened(a, loc_id, name, d, deprecated, t0, t1);
    errno = saved;
    return d;
}

SLUICE_EXPORT sluice_hid_t H5Dcreate1(sluice_hid_t loc_id, const char *name, sluice_hid_t type_id,
                                      sluice_hid_t space_id, sluice_hid_t dcpl_id)
{
    H5_NEXT_OR_FAIL(H5Dcreate1, -1)
    if (!sluice_active())
        return a->H5Dcreate1(loc_id, name, type_id, space_id, dcpl_id);
    uint64_t t0 = sluice_now();
    return dataset_done(a, loc_id, name, a->H5Dcreate1(loc_id, name, type_id, space_id, dcpl_id), 1, t0);
}

SLUICE_EXPORT sluice_hid_t H5Dcreate2(sluice_hid_t loc_id, const char *name, sluice_hid_t type_id,
                                      sluice_hid_t space_id, sluice_hid_t lcpl_id, sluice_hid_t dcpl_id,
                                      sluice_hid_t dapl_id)
{
    H5_NEXT_OR_FAIL(H5Dcreate2, -1)
    if (!sluice_active())
        return a->H5Dcreate2(loc_id, name, type_id, space_id, lcpl_id, dcpl_id, dapl_id);
    uint64_t t0 = sluice_now();
    return dataset_done(a, loc_id, name, a->H5Dcreate2(loc_id, name, type_id, space_id, lcpl_id, dcpl_id, dapl_id), 0,
                        t0);
}

SLUICE_EXPORT sluice_hid_t H5Dopen1(sluice_hid_t loc_id, const char *name)
{
    H5_NEXT_OR_FAIL(H5Dopen1, -1)
    if (!sluice_active())
        return a->H5Dopen1(loc_id, name);
    uint64_t t0 = sluice_now();
    return dataset_done(a, loc_id, name, a->H5Dopen1(loc_id, name), 1, t0);
}

SLUICE_EXPORT sluice_hid_t H5Dopen2(sluice_hid_t loc_id, const char *name, sluice_hid_t dapl_id)
{
    H5_NEXT_OR_FAIL(H5Dopen2, -1)
    if (!sluice_active())
        return a->H5Dopen2(loc_id, name, dapl_id);
    uint64_t t0 = sluice_now();
    return dataset_done(a, loc_id, name, a->H5Dopen2(loc_id, name, dapl_id), 0, t0);
}

/* H5Oopen opens any object by name; h5py opens its datasets this way
 * (Darshan does not see them). A dataset counts as an open of it. */
SLUICE_EXPORT sluice_hid_t H5Oopen(sluice_hid_t loc_id, const char *name, sluice_hid_t lapl_id)
{
    H5_NEXT_OR_FAIL(H5Oopen, -1)
    if (!sluice_active())
        return a->H5Oopen(loc_id, name, lapl_id);
    uint64_t t0 = sluice_now();
    sluice_hid_t o = a->H5Oopen(loc_id, name, lapl_id);
    if (o < 0 || !a->H5Iget_type)
        return o;
    int saved = errno;
    int dataset = a->H5Iget_type(o) == SLUICE_H5I_DATASET;
    errno = saved;
    return dataset ? dataset_done(a, loc_id, name, o, 0, t0) : o;
}

/* A read or write of dataset dset_id returned rc: counted if the dataset is recorded. */
static sluice_herr_t rw_done(const struct sluice_h5_api *a, sluice_hid_t dset_id, sluice_herr_t rc,
                             enum sluice_access kind, sluice_hid_t file_space_id, sluice_hid_t dxpl_id, uint64_t t0)
{
    uint64_t t1 = sluice_now();
    struct h5d_handle h;

    if (table_dataset(a, dset_id, &h)) {
        int saved = errno;
        if (rc < 0)
            count_error(h.st->rec, H5D_ERRORS);
        else
            count_rw(a, &h, kind, file_space_id, dxpl_id, t0, t1);
        errno = saved;
    }
    return rc;
}

SLUICE_EXPORT sluice_herr_t H5Dread(sluice_hid_t dset_id, sluice_hid_t mem_type_id, sluice_hid_t mem_space_id,
                                    sluice_hid_t file_space_id, sluice_hid_t dxpl_id, void *buf)
{
    H5_NEXT_OR_FAIL(H5Dread, -1)
    if (!sluice_active())
        return a->H5Dread(dset_id, mem_type_id, mem_space_id, file_space_id, dxpl_id, buf);
    uint64_t t0 = sluice_now();
    return rw_done(a, dset_id, a->H5Dread(dset_id, mem_type_id, mem_space_id, file_space_id, dxpl_id, buf), SLUICE_READ,
                   file_space_id, dxpl_id, t0);
}

SLUICE_EXPORT sluice_herr_t H5Dwrite(sluice_hid_t dset_id, sluice_hid_t mem_type_id, sluice_hid_t mem_space_id,
                                     sluice_hid_t file_space_id, sluice_hid_t dxpl_id, const void *buf)
{
    H5_NEXT_OR_FAIL(H5Dwrite, -1)
    if (!sluice_active())
        return a->H5Dwrite(dset_id, mem_type_id, mem_space_id, file_space_id, dxpl_id, buf);
    uint64_t t0 = sluice_now();
    return rw_done(a, dset_id, a->H5Dwrite(dset_id, mem_type_id, mem_space_id, file_space_id, dxpl_id, buf),
                   SLUICE_WRITE, file_space_id, dxpl_id, t0);
}

/* A flush or close of dataset h returned rc: counter (-1: none), meta time, stamps (-1: none). */
static sluice_herr_t dataset_meta_done(const struct h5d_handle *h, sluice_herr_t rc, int counter, int first, int last,
                                       uint64_t t0)
{
    uint64_t t1 = sluice_now();
    int saved = errno;

    if (rc < 0)
        count_error(h->st->rec, H5D_ERRORS);
    else
        count_meta(h->st->rec, counter, H5D_F_META_TIME, first, last, t0, t1);
    errno = saved;
    return rc;
}

SLUICE_EXPORT sluice_herr_t H5Dflush(sluice_hid_t dset_id)
{
    H5_NEXT_OR_FAIL(H5Dflush, -1)
    struct h5d_handle h;
    if (!sluice_active() || !table_dataset(a, dset_id, &h))
        return a->H5Dflush(dset_id);
    uint64_t t0 = sluice_now();
    return dataset_meta_done(&h, a->H5Dflush(dset_id), H5D_FLUSHES, -1, -1, t0);
}

SLUICE_EXPORT sluice_herr_t H5Dclose(sluice_hid_t dset_id)
{
    H5_NEXT_OR_FAIL(H5Dclose, -1)
    struct h5d_handle h;
    if (!sluice_active() || !table_dataset(a, dset_id, &h))
        return a->H5Dclose(dset_id);
    uint64_t t0 = sluice_now();
    sluice_herr_t rc = dataset_meta_done(&h, a->H5Dclose(dset_id), -1, H5D_F_CLOSE_START_TIMESTAMP,
                                         H5D_F_CLOSE_END_TIMESTAMP, t0);
    if (rc >= 0)
        table_drop(a, dset_id);   /* frees only our memory: errno stays (glibc's free keeps it) */
    return rc;
}
