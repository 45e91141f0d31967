/*
 * The PNETCDF_FILE and PNETCDF_VAR modules; see pnetcdf.h.
 *
 * Records: PNETCDF_FILE by the file's absolute path (a "driver:" prefix
 * removed, as ROMIO names go), PNETCDF_VAR by "<file path>:<variable>".
 * Open ncids map to their file, (ncid, varid) pairs to their variable's
 * shape (dimensions, element size, record variable or not), taken when
 * the variable is defined or looked up: a data call finds the shape there
 * and counts the elements its arguments name, as Darshan's module does
 * (sizes are in the variable's type, whatever the buffer's).
 *
 * Everything here runs after the program's call returned; errno and the
 * return value pass through unchanged.
 */
#include "pnetcdf/pnetcdf.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/pathnorm.h"
#include "core/accesses.h"
#include "core/counters.h"
#include "core/policy.h"
#include "core/record.h"
#include "mpi/pmpi.h"

#include <sluice/sluice_counters.h>

#define MAX_NDIMS 5   /* dimensions an access tuple describes */

/* ---- the library's queries ---- */

typedef int (*inq_dimlen_fn)(int, int, MPI_Offset *);
typedef int (*inq_unlimdim_fn)(int, int *);
typedef int (*inq_var_fn)(int, int, char *, int *, int *, int *, int *);
typedef int (*inq_size_fn)(int, MPI_Offset *);

static struct {
    inq_dimlen_fn inq_dimlen;
    inq_unlimdim_fn inq_unlimdim;
    inq_var_fn inq_var;
    inq_size_fn inq_put_size, inq_get_size;
} q;
static pthread_once_t q_once = PTHREAD_ONCE_INIT;

void *sluice_pnc_next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void q_resolve(void)
{
    q.inq_dimlen = (inq_dimlen_fn)dlsym(RTLD_DEFAULT, "ncmpi_inq_dimlen");
    q.inq_unlimdim = (inq_unlimdim_fn)dlsym(RTLD_DEFAULT, "ncmpi_inq_unlimdim");
    q.inq_var = (inq_var_fn)dlsym(RTLD_DEFAULT, "ncmpi_inq_var");
    q.inq_put_size = (inq_size_fn)dlsym(RTLD_DEFAULT, "ncmpi_inq_put_size");
    q.inq_get_size = (inq_size_fn)dlsym(RTLD_DEFAULT, "ncmpi_inq_get_size");
}

static int queries(void)
{
    pthread_once(&q_once, q_resolve);
    return q.inq_dimlen && q.inq_unlimdim && q.inq_var;
}

/* Bytes per element of a netCDF type (NC_BYTE .. NC_UINT64); 0: another. */
static int64_t type_size(int xtype)
{
    static const int8_t sizes[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
    return xtype > 0 && xtype < (int)sizeof sizes ? sizes[xtype] : 0;
}

/* ---- open files and variables ---- */

/* One per PNETCDF_VAR record, shared by every (ncid, varid) naming it. */
struct var_state {
    struct var_state *next;
    struct sluice_record *rec;
    int last_io;                      /* 0 none, 1 read, 2 write */
    struct sluice_access_table acc;
};

struct open_file {
    int ncid;
    struct sluice_record *rec;
    char path[PATH_MAX];
};

struct open_var {
    int ncid, varid;
    struct var_state *st;
    int ndims, unlimdim, is_record;
    int64_t elem, npoints;            /* npoints: the record dimension left out */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_file *files;
static size_t nfiles, files_cap;
static struct open_var *vars;
static size_t nvars, vars_cap;
static struct var_state *states;

static struct open_file *file_find(int ncid)
{
    for (size_t i = 0; i < nfiles; i++)
        if (files[i].ncid == ncid)
            return &files[i];
    return NULL;
}

/* The variable's entry, or NULL; the most recent first (a file reopened
 * under an ncid used before has its new variables found). */
static struct open_var *var_find(int ncid, int varid)
{
    for (size_t i = nvars; i-- > 0;)
        if (vars[i].ncid == ncid && vars[i].varid == varid)
            return &vars[i];
    return NULL;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *nv = realloc(*v, ncap * size);
    if (!nv)
        return -1;
    *v = nv;
    *cap = ncap;
    return 0;
}

static struct var_state *state_of(struct sluice_record *rec)
{
    for (struct var_state *s = states; s; s = s->next)
        if (s->rec == rec)
            return s;
    struct var_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->rec = rec;
    s->next = states;
    states = s;
    return s;
}

/* ---- counting ---- */

static double ticks(uint64_t t0, uint64_t t1)
{
    return (double)(int64_t)(t1 - t0);
}

static void stamp_first(double *fc, uint64_t t)
{
    double ts = sluice_ticks_since_start(t);
    if (*fc == 0.0 || ts < *fc)
        *fc = ts;
}

static void stamp_last(double *fc, uint64_t t)
{
    double ts = sluice_ticks_since_start(t);
    if (ts > *fc)
        *fc = ts;
}

static void count_file(struct sluice_record *r, int counter, int ftime, int first, int last, uint64_t t0,
                       uint64_t t1)
{
    sluice_record_lock(r);
    if (counter >= 0)
        r->ic[counter]++;
    if (ftime >= 0)
        r->fc[ftime] += ticks(t0, t1);
    if (first >= 0)
        stamp_first(&r->fc[first], t0);
    if (last >= 0)
        stamp_last(&r->fc[last], t1);
    sluice_record_unlock(r);
}

void sluice_pnc_opened(const char *path, int create, int rc, const int *ncidp, uint64_t t0, uint64_t t1)
{
    char abs[PATH_MAX];
    const char *colon = path ? strchr(path, ':') : NULL, *slash = path ? strchr(path, '/') : NULL;

    if (!path)
        return;
    if (colon && colon - path > 1 && (!slash || colon < slash))
        path = colon + 1;
    if (!*path || sluice_policy_skip_fast(path) || sluice_path_absolute(AT_FDCWD, path, abs, sizeof abs) != 0 ||
        !sluice_policy_records(abs))
        return;
    struct sluice_record *r = sluice_record_get(SLUICE_MOD_PNETCDF_FILE, abs);
    if (!r)
        return;
    if (rc != SLUICE_NC_NOERR) {
        count_file(r, PNETCDF_FILE_ERRORS, -1, -1, -1, t0, t1);
        return;
    }
    count_file(r, create ? PNETCDF_FILE_CREATES : PNETCDF_FILE_OPENS, PNETCDF_FILE_F_META_TIME,
               PNETCDF_FILE_F_OPEN_START_TIMESTAMP, PNETCDF_FILE_F_OPEN_END_TIMESTAMP, t0, t1);
    pthread_mutex_lock(&lock);
    struct open_file *f = file_find(*ncidp);
    if (!f && grow((void **)&files, &files_cap, nfiles, sizeof *files) == 0)
        f = &files[nfiles++];
    if (f) {
        f->ncid = *ncidp;
        f->rec = r;
        memcpy(f->path, abs, sizeof abs);
    }
    pthread_mutex_unlock(&lock);
}

/* The record of an open ncid, or NULL (not recorded, or not open). */
static struct sluice_record *file_record(int ncid)
{
    pthread_mutex_lock(&lock);
    struct open_file *f = file_find(ncid);
    struct sluice_record *r = f ? f->rec : NULL;
    pthread_mutex_unlock(&lock);
    return r;
}

void sluice_pnc_file_call(int ncid, int rc, int counter, uint64_t t0, uint64_t t1)
{
    struct sluice_record *r = file_record(ncid);
    if (!r)
        return;
    if (rc != SLUICE_NC_NOERR)
        count_file(r, PNETCDF_FILE_ERRORS, -1, -1, -1, t0, t1);
    else
        count_file(r, counter, PNETCDF_FILE_F_META_TIME, -1, -1, t0, t1);
}

void sluice_pnc_waited(int ncid, int rc, int collective, uint64_t t0, uint64_t t1)
{
    struct sluice_record *r = file_record(ncid);
    if (!r)
        return;
    sluice_record_lock(r);
    r->ic[collective ? PNETCDF_FILE_COLL_WAITS : PNETCDF_FILE_INDEP_WAITS]++;
    if (rc != SLUICE_NC_NOERR)
        r->ic[PNETCDF_FILE_WAIT_FAILURES]++;
    r->fc[PNETCDF_FILE_F_WAIT_TIME] += ticks(t0, t1);
    stamp_first(&r->fc[PNETCDF_FILE_F_WAIT_START_TIMESTAMP], t0);
    stamp_last(&r->fc[PNETCDF_FILE_F_WAIT_END_TIMESTAMP], t1);
    sluice_record_unlock(r);
}

void sluice_pnc_closing(int ncid, int64_t *put_size, int64_t *get_size)
{
    MPI_Offset put = -1, get = -1;

    *put_size = *get_size = -1;
    if (!file_record(ncid))
        return;
    pthread_once(&q_once, q_resolve);
    if (q.inq_put_size && q.inq_put_size(ncid, &put) == SLUICE_NC_NOERR)
        *put_size = put;
    if (q.inq_get_size && q.inq_get_size(ncid, &get) == SLUICE_NC_NOERR)
        *get_size = get;
}

void sluice_pnc_closed(int ncid, int rc, int64_t put_size, int64_t get_size, uint64_t t0, uint64_t t1)
{
    pthread_mutex_lock(&lock);
    struct open_file *f = file_find(ncid);
    struct sluice_record *r = f ? f->rec : NULL;
    if (f && rc == SLUICE_NC_NOERR) {
        /* its variables' close stamps, and the ncid and its varids forgotten */
        size_t k = 0;
        for (size_t i = 0; i < nvars; i++) {
            if (vars[i].ncid != ncid) {
                vars[k++] = vars[i];
                continue;
            }
            struct sluice_record *vr = vars[i].st->rec;
            sluice_record_lock(vr);
            stamp_first(&vr->fc[PNETCDF_VAR_F_CLOSE_START_TIMESTAMP], t0);
            stamp_last(&vr->fc[PNETCDF_VAR_F_CLOSE_END_TIMESTAMP], t1);
            sluice_record_unlock(vr);
        }
        nvars = k;
        *f = files[--nfiles];
    }
    pthread_mutex_unlock(&lock);
    if (!r)
        return;
    if (rc != SLUICE_NC_NOERR) {
        count_file(r, PNETCDF_FILE_ERRORS, -1, -1, -1, t0, t1);
        return;
    }
    sluice_record_lock(r);
    if (put_size > 0)
        r->ic[PNETCDF_FILE_BYTES_WRITTEN] += put_size;
    if (get_size > 0)
        r->ic[PNETCDF_FILE_BYTES_READ] += get_size;
    r->fc[PNETCDF_FILE_F_META_TIME] += ticks(t0, t1);
    stamp_first(&r->fc[PNETCDF_FILE_F_CLOSE_START_TIMESTAMP], t0);
    stamp_last(&r->fc[PNETCDF_FILE_F_CLOSE_END_TIMESTAMP], t1);
    sluice_record_unlock(r);
}

/* A variable of an open file named, with its shape: its record counts the
 * open and the handle is kept for its data calls. */
static void var_opened(int ncid, int varid, const char *name, int xtype, int ndims, const int *dimids,
                       uint64_t t0, uint64_t t1)
{
    char vname[PATH_MAX + 256];
    int unlimdim = -1;
    int64_t npoints = 1;
    int is_record = 0;

    pthread_mutex_lock(&lock);
    struct open_file *f = file_find(ncid);
    int n = f ? snprintf(vname, sizeof vname, "%s:%s", f->path, name) : -1;
    pthread_mutex_unlock(&lock);
    if (n < 0 || (size_t)n >= sizeof vname)
        return;
    if (queries()) {
        if (q.inq_unlimdim(ncid, &unlimdim) != SLUICE_NC_NOERR)
            unlimdim = -1;
        for (int i = 0; i < ndims; i++) {
            MPI_Offset len = 0;
            if (dimids[i] == unlimdim && unlimdim >= 0) {
                is_record = 1;
                continue;
            }
            if (q.inq_dimlen(ncid, dimids[i], &len) == SLUICE_NC_NOERR)
                npoints *= len;
        }
    }
    struct sluice_record *r = sluice_record_get(SLUICE_MOD_PNETCDF_VAR, vname);
    if (!r)
        return;
    pthread_mutex_lock(&lock);
    struct var_state *st = state_of(r);
    struct open_var *v = st ? var_find(ncid, varid) : NULL;
    if (st && !v && grow((void **)&vars, &vars_cap, nvars, sizeof *vars) == 0)
        v = &vars[nvars++];
    if (v)
        *v = (struct open_var){ncid, varid, st, ndims, unlimdim, is_record, type_size(xtype), npoints};
    pthread_mutex_unlock(&lock);

    sluice_record_lock(r);
    int64_t *ic = r->ic;
    ic[PNETCDF_VAR_OPENS]++;
    ic[PNETCDF_VAR_NDIMS] = ndims;
    ic[PNETCDF_VAR_NPOINTS] = npoints;
    ic[PNETCDF_VAR_DATATYPE_SIZE] = type_size(xtype);
    ic[PNETCDF_VAR_IS_RECORD_VAR] = is_record;
    r->fc[PNETCDF_VAR_F_META_TIME] += ticks(t0, t1);
    stamp_first(&r->fc[PNETCDF_VAR_F_OPEN_START_TIMESTAMP], t0);
    stamp_last(&r->fc[PNETCDF_VAR_F_OPEN_END_TIMESTAMP], t1);
    sluice_record_unlock(r);
}

void sluice_pnc_var_defined(int ncid, const char *name, int xtype, int ndims, const int *dimids, int rc,
                            const int *varidp, uint64_t t0, uint64_t t1)
{
    if (rc == SLUICE_NC_NOERR && name && varidp && ndims >= 0 && (ndims == 0 || dimids))
        var_opened(ncid, *varidp, name, xtype, ndims, dimids, t0, t1);
}

void sluice_pnc_var_found(int ncid, const char *name, int rc, const int *varidp, uint64_t t0, uint64_t t1)
{
    int xtype = 0, ndims = 0, natts = 0, dimids[1024];

    if (rc != SLUICE_NC_NOERR || !name || !varidp || !queries())
        return;
    int known = file_record(ncid) != NULL;
    /* NC_MAX_VAR_DIMS is 1024 in PnetCDF: the dimension ids fit */
    if (known && q.inq_var(ncid, *varidp, NULL, &xtype, &ndims, dimids, &natts) == SLUICE_NC_NOERR && ndims >= 0 &&
        ndims <= 1024)
        var_opened(ncid, *varidp, name, xtype, ndims, dimids, t0, t1);
}

/* Elements a call names, and its access tuple's lengths and strides (the
 * last MAX_NDIMS dimensions, in the call's order, as Darshan stores them). */
static int64_t call_elements(const struct open_var *v, int ncid, const struct sluice_pnc_call *c, int64_t *tuple)
{
    int64_t n = 1;
    int first = v->ndims > MAX_NDIMS ? v->ndims - MAX_NDIMS : 0;

    switch (c->kind) {
    case SLUICE_PNC_VAR:
        n = v->npoints;
        if (v->is_record) {
            MPI_Offset recs = 0;
            if (queries() && q.inq_dimlen(ncid, v->unlimdim, &recs) == SLUICE_NC_NOERR)
                n *= recs;
        }
        return n;
    case SLUICE_PNC_VAR1:
        return 1;
    case SLUICE_PNC_VARA:
    case SLUICE_PNC_VARS:
    case SLUICE_PNC_VARM:
        if (!c->count)
            return 0;
        for (int i = 0; i < v->ndims; i++)
            n *= c->count[i];
        for (int i = first; i < v->ndims; i++) {
            tuple[1 + i - first] = c->count[i];
            if (c->kind != SLUICE_PNC_VARA)
                tuple[1 + MAX_NDIMS + i - first] = c->stride ? c->stride[i] : 1;
        }
        return n;
    case SLUICE_PNC_VARN:
        if (!c->counts)
            return c->num;
        n = 0;
        for (int k = 0; k < c->num; k++) {
            int64_t e = 1;
            for (int i = 0; i < v->ndims; i++)
                e *= c->counts[k] ? c->counts[k][i] : 1;
            n += e;
        }
        return n;
    case SLUICE_PNC_VARD:
        return -1;   /* bytes from the file type */
    }
    return 0;
}

static int64_t filetype_bytes(MPI_Datatype t)
{
    MPI_Count size = 0;

    if (sluice_pmpi_load() != 0 || t == SLUICE_MPI_DATATYPE_NULL ||
        SLUICE_PMPI(Type_size_x)(t, &size) != MPI_SUCCESS)
        return 0;
    return (int64_t)size;
}

void sluice_pnc_data(int ncid, int varid, int rc, const struct sluice_pnc_call *c, uint64_t t0, uint64_t t1)
{
    struct open_var v;

    pthread_mutex_lock(&lock);
    struct open_var *p = var_find(ncid, varid);
    if (p)
        v = *p;
    pthread_mutex_unlock(&lock);
    if (!p)
        return;
    struct sluice_record *r = v.st->rec;
    if (rc != SLUICE_NC_NOERR) {
        sluice_record_lock(r);
        r->ic[PNETCDF_VAR_ERRORS]++;
        sluice_record_unlock(r);
        return;
    }
    int64_t tuple[SLUICE_ACCESS_VALS] = {0};
    int64_t elems = call_elements(&v, ncid, c, tuple);
    int64_t bytes = elems < 0 ? filetype_bytes(c->filetype) : elems * v.elem;
    int rd = c->family == SLUICE_PNC_GET || c->family == SLUICE_PNC_IGET;
    double dt = ticks(t0, t1);
    /* counters of each family follow PNETCDF_VAR_PUT_VAR: 7, 7, 6, 6, 6 kinds */
    static const int family_first[] = {PNETCDF_VAR_PUT_VAR, PNETCDF_VAR_GET_VAR, PNETCDF_VAR_IPUT_VAR,
                                       PNETCDF_VAR_IGET_VAR, PNETCDF_VAR_BPUT_VAR};
    tuple[0] = bytes;

    sluice_record_lock(r);
    int64_t *ic = r->ic;
    double *fc = r->fc;
    ic[family_first[c->family] + c->kind]++;
    if (c->family >= SLUICE_PNC_IPUT)
        ic[rd ? PNETCDF_VAR_NB_READS : PNETCDF_VAR_NB_WRITES]++;
    else if (c->collective)
        ic[rd ? PNETCDF_VAR_COLL_READS : PNETCDF_VAR_COLL_WRITES]++;
    else
        ic[rd ? PNETCDF_VAR_INDEP_READS : PNETCDF_VAR_INDEP_WRITES]++;
    ic[rd ? PNETCDF_VAR_BYTES_READ : PNETCDF_VAR_BYTES_WRITTEN] += bytes;
    ic[(rd ? PNETCDF_VAR_SIZE_READ_AGG_0_100 : PNETCDF_VAR_SIZE_WRITE_AGG_0_100) + sluice_size_bucket(bytes)]++;
    if (v.st->last_io && v.st->last_io != (rd ? 1 : 2))
        ic[PNETCDF_VAR_RW_SWITCHES]++;
    v.st->last_io = rd ? 1 : 2;
    sluice_access_count(&v.st->acc, &ic[PNETCDF_VAR_ACCESS1_ACCESS], &ic[PNETCDF_VAR_ACCESS1_COUNT], tuple);
    fc[rd ? PNETCDF_VAR_F_READ_TIME : PNETCDF_VAR_F_WRITE_TIME] += dt;
    if (dt > fc[rd ? PNETCDF_VAR_F_MAX_READ_TIME : PNETCDF_VAR_F_MAX_WRITE_TIME]) {
        fc[rd ? PNETCDF_VAR_F_MAX_READ_TIME : PNETCDF_VAR_F_MAX_WRITE_TIME] = dt;
        ic[rd ? PNETCDF_VAR_MAX_READ_TIME_SIZE : PNETCDF_VAR_MAX_WRITE_TIME_SIZE] = bytes;
    }
    stamp_first(&fc[rd ? PNETCDF_VAR_F_READ_START_TIMESTAMP : PNETCDF_VAR_F_WRITE_START_TIMESTAMP], t0);
    stamp_last(&fc[rd ? PNETCDF_VAR_F_READ_END_TIMESTAMP : PNETCDF_VAR_F_WRITE_END_TIMESTAMP], t1);
    sluice_record_unlock(r);
}

/* ---- after fork: the child's counts start from zero (core/record.c) ---- */

static void after_fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
    for (struct var_state *s = states; s; s = s->next) {
        s->last_io = 0;
        s->acc.n = 0;
    }
}

__attribute__((constructor)) static void pnetcdf_module_init(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}
