/*
 * The record registry; see record.h. Records are never freed: the count is
 * bounded by SLUICE_MAX_RECORDS per module and the memory by that times the
 * record size (about 3.3 KiB for POSIX, half of it the two sides' tables of
 * access sizes and strides).
 */
#include "core/record.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "common/arena.h"
#include "core/mounts.h"
#include "core/trace.h"
#include "sluice/sluice_logfmt.h"

/* The counter names of module M: a string per counter of M, nothing for the others. */
#define SLUICE_INAME_(x) #x
#define SLUICE_SEL_INAME(mod, want, name) SLUICE_SEL(mod, want, SLUICE_INAME_(name))

static const char *const posix_inames[] = {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, POSIX, name)
#include "sluice/sluice_counters.def"
};
static const char *const posix_fnames[] = {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, POSIX, name)
#include "sluice/sluice_counters.def"
};
static const char *const stdio_inames[] = {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, STDIO, name)
#include "sluice/sluice_counters.def"
};
static const char *const stdio_fnames[] = {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, STDIO, name)
#include "sluice/sluice_counters.def"
};
static const char *const mpiio_inames[] = {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, MPIIO, name)
#include "sluice/sluice_counters.def"
};
static const char *const mpiio_fnames[] = {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, MPIIO, name)
#include "sluice/sluice_counters.def"
};

static const char *const h5f_inames[] = {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, H5F, name)
#include "sluice/sluice_counters.def"
};
static const char *const h5f_fnames[] = {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, H5F, name)
#include "sluice/sluice_counters.def"
};
static const char *const h5d_inames[] = {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, H5D, name)
#include "sluice/sluice_counters.def"
};
static const char *const h5d_fnames[] = {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, H5D, name)
#include "sluice/sluice_counters.def"
};

static const char *const pncf_inames[] = {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, PNETCDF_FILE, name)
#include "sluice/sluice_counters.def"
};
static const char *const pncf_fnames[] = {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, PNETCDF_FILE, name)
#include "sluice/sluice_counters.def"
};
static const char *const pncv_inames[] = {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, PNETCDF_VAR, name)
#include "sluice/sluice_counters.def"
};
static const char *const pncv_fnames[] = {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_INAME(mod, PNETCDF_VAR, name)
#include "sluice/sluice_counters.def"
};

static const struct sluice_module_info modules[SLUICE_MOD_END] = {
    [SLUICE_MOD_POSIX] = {"POSIX", SLUICE_MOD_POSIX, 1, POSIX_NUM_ICOUNTERS, POSIX_NUM_FCOUNTERS,
                          posix_inames, posix_fnames},
    [SLUICE_MOD_STDIO] = {"STDIO", SLUICE_MOD_STDIO, 1, STDIO_NUM_ICOUNTERS, STDIO_NUM_FCOUNTERS,
                          stdio_inames, stdio_fnames},
    [SLUICE_MOD_MPIIO] = {"MPIIO", SLUICE_MOD_MPIIO, 1, MPIIO_NUM_ICOUNTERS, MPIIO_NUM_FCOUNTERS,
                          mpiio_inames, mpiio_fnames},
    [SLUICE_MOD_H5F] = {"H5F", SLUICE_MOD_H5F, 1, H5F_NUM_ICOUNTERS, H5F_NUM_FCOUNTERS, h5f_inames, h5f_fnames},
    [SLUICE_MOD_H5D] = {"H5D", SLUICE_MOD_H5D, 1, H5D_NUM_ICOUNTERS, H5D_NUM_FCOUNTERS, h5d_inames, h5d_fnames},
    [SLUICE_MOD_PNETCDF_FILE] = {"PNETCDF_FILE", SLUICE_MOD_PNETCDF_FILE, 1, PNETCDF_FILE_NUM_ICOUNTERS,
                                 PNETCDF_FILE_NUM_FCOUNTERS, pncf_inames, pncf_fnames},
    [SLUICE_MOD_PNETCDF_VAR] = {"PNETCDF_VAR", SLUICE_MOD_PNETCDF_VAR, 1, PNETCDF_VAR_NUM_ICOUNTERS,
                                PNETCDF_VAR_NUM_FCOUNTERS, pncv_inames, pncv_fnames},
};

_Static_assert(sizeof posix_inames / sizeof *posix_inames == POSIX_NUM_ICOUNTERS, "posix names");
_Static_assert(sizeof stdio_fnames / sizeof *stdio_fnames == STDIO_NUM_FCOUNTERS, "stdio names");
_Static_assert(sizeof mpiio_inames / sizeof *mpiio_inames == MPIIO_NUM_ICOUNTERS, "mpiio names");
_Static_assert(sizeof h5d_fnames / sizeof *h5d_fnames == H5D_NUM_FCOUNTERS, "h5d names");
_Static_assert(sizeof pncv_inames / sizeof *pncv_inames == PNETCDF_VAR_NUM_ICOUNTERS, "pnetcdf var names");

const struct sluice_module_info *sluice_module(unsigned id)
{
    if (id >= SLUICE_MOD_END || modules[id].name == NULL)
        return NULL;
    return &modules[id];
}

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sluice_record **buckets; /* nbuckets chains */
static size_t nbuckets;
static struct sluice_record *all_records;      /* newest first */
static int64_t record_limit;
static int64_t record_count[SLUICE_MOD_END];
static struct sluice_record *overflow[SLUICE_MOD_END];
static int partial;

/* The log format's record id (logs of 3.x do not store it: readers
 * compute it the same way). */
static uint64_t record_hash(unsigned module, const char *path)
{
    return sluice_log_record_id(module, path, strlen(path));
}

int sluice_records_init(int64_t max_records)
{
    record_limit = max_records;
    nbuckets = 1024;
    while ((int64_t)nbuckets < max_records && nbuckets < (1u << 20))
        nbuckets <<= 1;
    buckets = mmap(NULL, nbuckets * sizeof *buckets, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (buckets == MAP_FAILED) {
        buckets = NULL;
        return -ENOMEM;
    }
    return 0;
}

/* A POSIX record's properties of the file, kept across a reset: the
 * alignments it compares against, the layout (when read). */
static void record_set_alignment(struct sluice_record *r)
{
    if (r->module != SLUICE_MOD_POSIX)
        return;
    for (int s = 0; s < SLUICE_NUM_SIDES; s++) {
        r->ic[s * r->ni + POSIX_MEM_ALIGNMENT] = SLUICE_MEM_ALIGNMENT;
        r->ic[s * r->ni + POSIX_FILE_ALIGNMENT] = r->file_align;
        r->ic[s * r->ni + POSIX_STRIPE_SIZE] = r->layout[0];
        r->ic[s * r->ni + POSIX_STRIPE_COUNT] = r->layout[1];
        r->ic[s * r->ni + POSIX_OBJECT_SIZE] = r->layout[2];
        r->ic[s * r->ni + POSIX_LAYOUT_COMPONENTS] = r->layout[3];
    }
}

void sluice_record_set_layout(struct sluice_record *r, const int64_t layout[4])
{
    sluice_record_lock(r);
    memcpy(r->layout, layout, sizeof r->layout);
    record_set_alignment(r);
    sluice_record_unlock(r);
}

static void record_reset(struct sluice_record *r)
{
    memset(r->ic, 0, sizeof(int64_t) * SLUICE_NUM_SIDES * r->ni);
    memset(r->fc, 0, sizeof(double) * SLUICE_NUM_SIDES * r->nf);
    for (int s = 0; s < SLUICE_NUM_SIDES; s++) {
        r->last_end[s][0] = r->last_end[s][1] = -1;
        r->last_kind[s] = 0;
    }
    /* MAX_BYTE_* start at -1 ("nothing touched") */
    if (r->module == SLUICE_MOD_POSIX) {
        for (int s = 0; s < SLUICE_NUM_SIDES; s++) {
            r->ic[s * r->ni + POSIX_MAX_BYTE_READ] = -1;
            r->ic[s * r->ni + POSIX_MAX_BYTE_WRITTEN] = -1;
        }
    } else if (r->module == SLUICE_MOD_STDIO) {
        for (int s = 0; s < SLUICE_NUM_SIDES; s++) {
            r->ic[s * r->ni + STDIO_MAX_BYTE_READ] = -1;
            r->ic[s * r->ni + STDIO_MAX_BYTE_WRITTEN] = -1;
        }
    }
    if (r->cv)
        for (int t = 0; t < SLUICE_NUM_SIDES * SLUICE_CV_KINDS; t++)
            r->cv[t].n = 0;
    record_set_alignment(r);
}

static struct sluice_record *record_new(const struct sluice_module_info *m, const char *path,
                                        uint64_t id, uint32_t flags)
{
    size_t plen = strlen(path) + 1;
    size_t ncv = (m->id == SLUICE_MOD_POSIX || m->id == SLUICE_MOD_MPIIO) ? SLUICE_NUM_SIDES * SLUICE_CV_KINDS : 0;
    size_t sz = sizeof(struct sluice_record) + sizeof(struct sluice_cvals) * ncv +
                sizeof(int64_t) * SLUICE_NUM_SIDES * m->ni + sizeof(double) * SLUICE_NUM_SIDES * m->nf + plen;
    char *mem = sluice_arena_alloc(sz);
    struct sluice_record *r = (struct sluice_record *)mem;

    if (!r)
        return NULL;
    r->id = id;
    r->module = m->id;
    r->ni = m->ni;
    r->nf = m->nf;
    r->flags = flags;
    atomic_init(&r->lock, 0);
    atomic_init(&r->open_files, 0);
    atomic_init(&r->layout_seen, m->id != SLUICE_MOD_POSIX);
    r->fs_mirror = 1;
    r->cv = ncv ? (struct sluice_cvals *)(mem + sizeof *r) : NULL;
    r->ic = (int64_t *)(mem + sizeof *r + sizeof(struct sluice_cvals) * ncv);
    r->fc = (double *)(r->ic + SLUICE_NUM_SIDES * m->ni);
    r->path = memcpy((char *)(r->fc + SLUICE_NUM_SIDES * m->nf), path, plen);
    r->mount = (flags & SLUICE_REC_OVERFLOW) ? -1 : sluice_mount_of(path);
    r->file_align = r->mount >= 0 && m->id == SLUICE_MOD_POSIX ? sluice_mount_block_size(r->mount) : 0;
    record_reset(r);
    r->next = all_records;
    __atomic_store_n(&all_records, r, __ATOMIC_RELEASE);
    return r;
}

/* The record of (module, path) in its chain, or NULL. Chains only grow, at
 * their head, by a release store of a complete record: a lookup needs no
 * lock. */
static struct sluice_record *record_find(unsigned module, const char *path, uint64_t id)
{
    for (struct sluice_record *r = __atomic_load_n(&buckets[id & (nbuckets - 1)], __ATOMIC_ACQUIRE); r;
         r = r->hnext)
        if (r->id == id && r->module == module && strcmp(r->path, path) == 0)
            return r;
    return NULL;
}

/* Each thread's last record per module: programs reopen and stat the file
 * they just used, and a string compare costs less than the hash. */
static __thread struct sluice_record *last_rec[SLUICE_MOD_END] __attribute__((tls_model("initial-exec")));

struct sluice_record *sluice_record_get(unsigned module, const char *path)
{
    const struct sluice_module_info *m = sluice_module(module);
    struct sluice_record *r;
    uint64_t id;

    if (!m || !buckets)
        return NULL;
    if ((r = last_rec[module]) != NULL && strcmp(r->path, path) == 0)
        return r;
    id = record_hash(module, path);
    if ((r = record_find(module, path, id)) != NULL) {
        last_rec[module] = r;   /* a known file: every open or path call after the first */
        return r;
    }
    pthread_mutex_lock(&registry_lock);
    if ((r = record_find(module, path, id)) != NULL)
        goto out;
    if (record_count[module] >= record_limit) {
        partial = 1;
        if (!overflow[module])
            overflow[module] = record_new(m, SLUICE_OTHER_FILES,
                                          record_hash(module, SLUICE_OTHER_FILES), SLUICE_REC_OVERFLOW);
        r = overflow[module];
        goto out;
    }
    r = record_new(m, path, id, 0);
    if (r) {
        r->hnext = buckets[id & (nbuckets - 1)];
        __atomic_store_n(&buckets[id & (nbuckets - 1)], r, __ATOMIC_RELEASE);
        record_count[module]++;
    }
out:
    pthread_mutex_unlock(&registry_lock);
    return r;
}

void sluice_record_split_sides(struct sluice_record *r)
{
    sluice_record_lock(r);
    if (r->fs_mirror) {
        memcpy(r->ic + r->ni, r->ic, sizeof(int64_t) * r->ni);
        memcpy(r->fc + r->nf, r->fc, sizeof(double) * r->nf);
        r->last_end[SLUICE_SIDE_FS][0] = r->last_end[SLUICE_SIDE_APP][0];
        r->last_end[SLUICE_SIDE_FS][1] = r->last_end[SLUICE_SIDE_APP][1];
        r->last_kind[SLUICE_SIDE_FS] = r->last_kind[SLUICE_SIDE_APP];
        if (r->cv)
            memcpy(r->cv + SLUICE_CV_KINDS, r->cv, sizeof *r->cv * SLUICE_CV_KINDS);
        r->fs_mirror = 0;
    }
    sluice_record_unlock(r);
}

struct sluice_record *sluice_records_first(void)
{
    return __atomic_load_n(&all_records, __ATOMIC_ACQUIRE);
}

int sluice_records_partial(void)
{
    return partial;
}

void sluice_records_after_fork_child(void)
{
    /* the child's trace starts empty too */
    for (int64_t i = 0; i < sluice_trace_kept(); i++)
        atomic_store_explicit(&sluice_trace_segs[i].done, 0, memory_order_relaxed);
    atomic_store(&sluice_trace_next, 0);
    pthread_mutex_init(&registry_lock, NULL);
    for (struct sluice_record *r = all_records; r; r = r->next) {
        atomic_store(&r->lock, 0);
        record_reset(r);
    }
}
