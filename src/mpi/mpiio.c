/*
 * MPI-IO through the profiling interface: the MPIIO module's counters, and
 * transparent aggregation (--mode acb) of the writes of files opened with
 * MPI_File_open.
 *
 * libsluice.so defines the MPI_File_* functions of mpiio.def without linking
 * to libmpi: a serial program never calls them, and in an MPI program each
 * wrapper calls the next definition of its own name (normally libmpi's),
 * found with dlsym when first needed; sluice's own MPI work goes through
 * PMPI_* (mpi/pmpi.h). Open files are kept in a short list looked up by
 * handle under one mutex: MPI-IO calls are few and large next to that cost.
 *
 * Sides: in profile mode both sides count the same call. For a file that
 * aggregates, the app side counts the program's calls and the fs side what
 * sluice issued to MPI-IO below it: the aggregators' large writes on a
 * private handle (opened on MPI_COMM_SELF, counted as independent opens and
 * writes), and every call passed through.
 *
 * Consistency (docs/acb.md): MPI's default, non-atomic mode makes a rank's
 * writes visible to others only after MPI_File_sync or close, both
 * collective; sluice keeps writes pending until then. A rank reading a range
 * it has pending writes for first writes its own pending data. Atomic mode,
 * an undecodable view or more than SLUICE_ACB_MAX_MEMORY pending turn the
 * file (on that rank) to pass-through, counted in MPIIO_FALLBACKS.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "acb/acb.h"
#include "acb/cost.h"
#include "acb/view.h"
#include "common/clock.h"
#include "common/crc32.h"
#include "common/pathnorm.h"
#include "core/config.h"
#include "stage/stage.h"
#include "core/counters.h"
#include "common/diag.h"
#include "core/file.h"
#include "core/policy.h"
#include "core/record.h"
#include "interpose/interpose.h"
#include "mpi/pmpi.h"
#include "layout/layout.h"
#include "sys/real.h"

/* ---- next definitions ---- */

struct mpiio_next {
#define SLUICE_MPIIO(name, params) int (*name) params;
#include "mpi/mpiio.def"
};

static struct mpiio_next next;

static void *resolve_next(void **slot, const char *name)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    void *lib;

    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        if (!p && (lib = sluice_pmpi_library()) != NULL)
            p = dlsym(lib, name);
        __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    }
    return p;
}

/* The next MPI_<name>; a program calling it has libmpi loaded, so it exists. */
#define NEXT(name) ((__typeof__(next.name))resolve_next((void **)&next.name, "MPI_" #name))

/* ---- open files ---- */

struct mpiio_file {
    struct mpiio_file *next;
    MPI_File fh;                   /* the program's handle */
    struct sluice_record *rec;     /* MPIIO record of the path */
    int aggregating;               /* opened under --mode acb: flushes are collective */
    int passthru;                  /* this rank stopped aggregating (fallback) */
    int alone;                     /* ... in a write, while the other ranks may go on */
    MPI_Comm comm;                 /* private duplicate of the open's communicator */
    int nprocs;                    /* its size */
    uint64_t collectives;          /* collective calls so far: the pending writes' epoch */
    int direct_ok;                 /* no rank holds pending writes of an earlier epoch (see direct_shared_write) */
    struct sluice_acb_hints hints;
    struct sluice_acb_pending pending;
    int64_t disp, etype_size;      /* the file view */
    struct sluice_acb_flat view;   /* its filetype; n == 0: plain bytes */
    MPI_File raw;                  /* aggregator's handle (MPI_COMM_SELF, default view) */
    char *name;                    /* the file name as the program gave it */
    /* the split collective write in progress (MPI allows one per handle) */
    int split_done;                /* its begin was kept or written here: its end only reports it */
    int64_t split_bytes;           /* what that end reports */
};

static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mpiio_file *files;

static struct mpiio_file *file_find(MPI_File fh)
{
    struct mpiio_file *f;

    if (!sluice_active() || !files)
        return NULL;
    pthread_mutex_lock(&files_lock);
    for (f = files; f && f->fh != fh; f = f->next)
        ;
    pthread_mutex_unlock(&files_lock);
    return f;
}

static void file_unlink(struct mpiio_file *f)
{
    pthread_mutex_lock(&files_lock);
    for (struct mpiio_file **p = &files; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    pthread_mutex_unlock(&files_lock);
}

/* ---- counting ---- */

static int64_t type_bytes(int count, MPI_Datatype t)
{
    MPI_Count size = 0;

    if (count <= 0 || SLUICE_PMPI(Type_size_x)(t, &size) != MPI_SUCCESS)
        return 0;
    return (int64_t)count * (int64_t)size;
}

static void count_io(struct mpiio_file *f, unsigned sides, enum sluice_access kind, int counter, int64_t n,
                     int rc, uint64_t t0)
{
    uint64_t t1 = sluice_now();

    if (rc == MPI_SUCCESS)
        sluice_count_rw_as(f->rec, sides, kind, counter, -1, n, t0, t1);
    else
        sluice_count_error(f->rec, sides);
}

/* Hints the program gave (an info object other than MPI_INFO_NULL):
 * MPIIO_HINTS, as Darshan counts them; no time of their own. */
static void count_hints(struct sluice_record *rec, MPI_Info info)
{
    if (info != SLUICE_MPI_INFO_NULL) {
        uint64_t t = sluice_now();
        sluice_count_meta(rec, SLUICE_SIDES_BOTH, MPIIO_HINTS, t, t);
    }
}

static void count_other(struct mpiio_file *f, int counter, int rc, uint64_t t0)
{
    if (rc == MPI_SUCCESS)
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, counter, t0, sluice_now());
    else
        sluice_count_error(f->rec, SLUICE_SIDES_BOTH);
}

/* ---- aggregation ---- */

/* The mode of a path, by the one lookup every layer uses. Auto mode
 * aggregates MPI-IO too: the cost model sends what gains nothing (large or
 * one-rank writes) straight through, so it is acb's own per-file choice. */
static int mode_is_acb(const char *abs_path)
{
    enum sluice_mode m = sluice_policy_mode(abs_path);
    return m == SLUICE_MODE_ACB || m == SLUICE_MODE_AUTO;
}

/* The file system's preferred I/O size (st_blksize: the stripe on Lustre,
 * the 64 KiB block on MooseFS), at least SLUICE_ACB_DEFAULT_DIRECT: the cost
 * model's unit on one client. *sync: the mount is synchronous (each write
 * makes its own round trip to the servers before it returns). */
static int64_t block_unit(const char *abs_path, int *sync)
{
    struct stat sb;
    struct statvfs vfs;
    int64_t unit = SLUICE_ACB_DEFAULT_DIRECT;

    if (SLUICE_REAL(stat)(abs_path, &sb) == 0 && sb.st_blksize > unit)
        unit = sb.st_blksize;
    *sync = statvfs(abs_path, &vfs) == 0 && (vfs.f_flag & ST_SYNCHRONOUS);
    return unit;
}

/* Through how many file-system clients the ranks of comm reach the file:
 * one; several on one host (different mounts of it, different st_dev: the
 * testbed's node clients seen from the host); or ranks on several hosts.
 * Collective over comm. */
enum clients { ONE_CLIENT, CLIENTS_ON_ONE_HOST, CLIENTS_ON_HOSTS };

static enum clients file_clients(MPI_Comm comm, const char *abs_path)
{
    struct stat sb;
    char host[256] = "";
    uint32_t host_key, client_key;
    int64_t mine[4], all[4];

    gethostname(host, sizeof host - 1);
    host_key = client_key = sluice_crc32(0, host, strlen(host));
    if (SLUICE_REAL(stat)(abs_path, &sb) == 0)
        client_key = sluice_crc32(host_key, &sb.st_dev, sizeof sb.st_dev);
    mine[0] = host_key;
    mine[1] = -(int64_t)host_key;
    mine[2] = client_key;
    mine[3] = -(int64_t)client_key;
    SLUICE_PMPI(Allreduce)(mine, all, 4, SLUICE_MPI_INT64, SLUICE_MPI_MIN, comm);
    if (all[0] != -all[1])
        return CLIENTS_ON_HOSTS;
    return all[2] != -all[3] ? CLIENTS_ON_ONE_HOST : ONE_CLIENT;
}

/* The unit when several clients share the file. Pieces below a stripe
 * written into one stripe from several clients make its lock change hands
 * (Lustre's extent locks, MooseFS's chunk lock), which aggregation avoids;
 * from one client its page cache merges them. On one host the unit is the
 * stripe: the exchange is a copy in memory. Across hosts the exchange moves
 * the same bytes over the network once more, which pays only while a
 * write's fixed cost outweighs its bytes: up to HOSTS_UNIT_BLOCKS of the
 * file system's blocks, never past the stripe. On Lustre, whose block is
 * the stripe, that is the stripe; on the testbed's MooseFS (64 KiB blocks)
 * 256 KiB: across 2 and 4 simulated nodes 64 KiB pieces gained 1.35-1.54x
 * from aggregation and 256 KiB ones lost (docs/benchmarks.md, "Ranks
 * inside 2 and 4 simulated nodes"), while on one host through two mounts
 * 256 KiB pieces gained (0.90 -> 0.96 of the best peer, "Several
 * clients"). */
#define HOSTS_UNIT_BLOCKS 4

static int64_t shared_unit(enum clients clients, int64_t block, int64_t stripe)
{
    int64_t unit = clients == CLIENTS_ON_HOSTS ? HOSTS_UNIT_BLOCKS * block : stripe;

    if (unit > stripe)
        unit = stripe;
    return unit > block ? unit : block;
}

/* Whether a file opened with this access mode aggregates: the one place the
 * decision is made. Every rank decides alike (same settings, same amode). */
static int acb_wanted(const char *abs_path, int amode)
{
    return (amode & (MPI_MODE_WRONLY | MPI_MODE_RDWR)) && !(amode & MPI_MODE_SEQUENTIAL) && mode_is_acb(abs_path);
}

/* The pending list a write on f joins. A rank that opens a file a second
 * time on MPI_COMM_SELF while it is open on a larger communicator (PnetCDF's
 * independent handle beside its collective one) writes both in one program
 * order, and the plain run's bytes depend on it (the header's record count,
 * fill values then data): such a handle's writes join the shared handle's
 * list, as independent writes of its current epoch, and go out with its
 * collective flushes. */
static struct mpiio_file *pending_owner(struct mpiio_file *f)
{
    struct mpiio_file *g;

    if (f->nprocs != 1)
        return f;
    pthread_mutex_lock(&files_lock);
    for (g = files; g; g = g->next)
        if (g != f && g->rec == f->rec && g->aggregating && !g->passthru && g->nprocs > 1)
            break;
    pthread_mutex_unlock(&files_lock);
    return g ? g : f;
}

/* The view is plain bytes from offset 0: the program's own handle can
 * write pending data at its byte offsets. */
static int byte_view(const struct mpiio_file *f)
{
    return f->view.n == 0 && f->disp == 0 && f->etype_size == 1;
}

/* The handle the engine writes through: the program's when its view is
 * plain bytes (no second open), else the aggregator's own, opened on first
 * use. SLUICE_MPI_FILE_NULL with *rc set when that open fails. */
static MPI_File writer_handle(struct mpiio_file *f, int *rc)
{
    uint64_t t0;

    *rc = MPI_SUCCESS;
    if (byte_view(f))
        return f->fh;
    if (f->raw == SLUICE_MPI_FILE_NULL) {
        t0 = sluice_now();
        *rc = SLUICE_PMPI(File_open)(SLUICE_MPI_COMM_SELF, f->name, MPI_MODE_WRONLY, SLUICE_MPI_INFO_NULL, &f->raw);
        if (*rc != MPI_SUCCESS) {
            f->raw = SLUICE_MPI_FILE_NULL;
            sluice_count_error(f->rec, SLUICE_SIDES_FS);
            return SLUICE_MPI_FILE_NULL;
        }
        sluice_count_open_as(f->rec, SLUICE_SIDES_FS, MPIIO_INDEP_OPENS, t0, sluice_now());
    }
    return f->raw;
}

/* The engine's writer: a write, or with req only its start (an aggregator
 * writing one round while it exchanges the next; counted when started, its
 * time the start's). */
static int raw_put(struct mpiio_file *f, int64_t off, const void *buf, int64_t len, MPI_Request *req)
{
    int rc;
    MPI_File fh = writer_handle(f, &rc);
    uint64_t t0 = sluice_now();

    if (rc != MPI_SUCCESS)
        return rc;
    rc = req ? SLUICE_PMPI(File_iwrite_at)(fh, off, buf, (int)len, SLUICE_MPI_BYTE, req)
             : SLUICE_PMPI(File_write_at)(fh, off, buf, (int)len, SLUICE_MPI_BYTE, MPI_STATUS_IGNORE);
    count_io(f, SLUICE_SIDES_FS, SLUICE_WRITE, MPIIO_INDEP_WRITES, len, rc, t0);
    return rc;
}

static int raw_write(void *ctx, int64_t off, const void *buf, int64_t len)
{
    return raw_put(ctx, off, buf, len, NULL);
}

static int raw_iwrite(void *ctx, int64_t off, const void *buf, int64_t len, MPI_Request *req)
{
    return raw_put(ctx, off, buf, len, req);
}

static int write_own(struct mpiio_file *f)
{
    struct sluice_acb_writer w = {raw_write, f, NULL};
    struct sluice_acb_stats st = {0};

    return f->pending.n ? sluice_acb_write_own(&f->pending, &f->hints, &w, &st) : MPI_SUCCESS;
}

/* Collective over the file's communicator. A file of one rank has no one
 * to exchange with: its pending pieces go out coalesced, as they are. */
static int acb_flush(struct mpiio_file *f)
{
    struct sluice_acb_writer w = {raw_write, f, raw_iwrite};
    struct sluice_acb_stats st = {0};
    uint64_t t0 = sluice_now();
    int rc;

    if (f->nprocs == 1) {
        st.own = f->pending.n > 0;
        rc = write_own(f);
    } else {
        rc = sluice_acb_exchange(&f->pending, f->comm, &f->hints, &w, &st);
    }
    /* Nothing is pending anywhere now: independent writes may go straight
     * through again. */
    f->direct_ok = 1;
    sluice_count_meta(f->rec, SLUICE_SIDES_FS, MPIIO_ACB_FLUSHES, t0, t0);
    if (st.own)
        sluice_count_meta(f->rec, SLUICE_SIDES_FS, MPIIO_ACB_OWN_FLUSHES, t0, t0);
    for (int64_t r = 0; r < st.rounds; r++)
        sluice_count_meta(f->rec, SLUICE_SIDES_FS, MPIIO_ACB_ROUNDS, t0, t0);
    return rc;
}

/* This rank stops aggregating this file: its pending data goes out now.
 * Returns how that went (MPI_SUCCESS or the write's error, which the
 * caller reports: pending bytes are never dropped silently). */
static int fall_back(struct mpiio_file *f)
{
    uint64_t t0 = sluice_now();
    int rc = write_own(f);

    f->passthru = 1;
    sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, MPIIO_FALLBACKS, t0, t0);
    if (rc != MPI_SUCCESS)
        sluice_count_error(f->rec, SLUICE_SIDES_FS);
    return rc;
}

/* In a write that cannot be aggregated: 0 to go on straight through, or 1
 * with *rc set when writing the pending data failed. */
static int fall_back_in_write(struct mpiio_file *f, int *rc)
{
    int err = fall_back(f);

    f->alone = 1;
    if (err == MPI_SUCCESS)
        return 0;
    *rc = err;
    return 1;
}

/* A collective call that must follow the pending writes (set_size,
 * preallocate, set_atomicity): they go first, and their error is the call's. */
static int flush_first(struct mpiio_file *f)
{
    return f->aggregating && !f->passthru ? acb_flush(f) : MPI_SUCCESS;
}

/* Where the data of an access starts in the view's stream of bytes. */
static int stream_pos(struct mpiio_file *f, const MPI_Offset *explicit_off, int64_t *pos)
{
    MPI_Offset p;

    if (explicit_off) {
        *pos = (int64_t)*explicit_off * f->etype_size;
        return 0;
    }
    if (SLUICE_PMPI(File_get_position)(f->fh, &p) != MPI_SUCCESS)
        return -1;
    *pos = (int64_t)p * f->etype_size;
    return 0;
}

struct add_ctx {
    struct sluice_acb_pending *pending;
    const unsigned char *src;
};

static int add_piece(void *ctx, int64_t file_off, int64_t len, int64_t data_off)
{
    struct add_ctx *a = ctx;
    unsigned char *dst = sluice_acb_pending_add(a->pending, file_off, len);

    if (!dst)
        return -ENOMEM;
    memcpy(dst, a->src + data_off, (size_t)len);
    return 0;
}

static int overlap_piece(void *ctx, int64_t file_off, int64_t len, int64_t data_off)
{
    (void)data_off;
    return sluice_acb_pending_overlaps(ctx, file_off, len);
}

static int view_map(struct mpiio_file *f, int64_t pos, int64_t n,
                    int (*piece)(void *, int64_t, int64_t, int64_t), void *ctx)
{
    if (f->view.n == 0)
        return piece(ctx, f->disp + pos, n, 0);
    return sluice_acb_view_map(&f->view, f->disp, pos, n, piece, ctx);
}

static void set_status(MPI_Status *st, int64_t n)
{
    if (st != MPI_STATUS_IGNORE)
        SLUICE_PMPI(Status_set_elements_x)(st, SLUICE_MPI_BYTE, (MPI_Count)n);
}

/* A collective call on f: writes after it are ordered after those before
 * it on every rank (see struct sluice_acb_pending). */
static void collective_call(struct mpiio_file *f)
{
    f->collectives++;
    /* Another rank may hold writes of the epoch that just ended, which must
     * land before this rank's later ones: until a collective step shows
     * that nobody does, this rank's independent writes stay pending. */
    f->direct_ok = 0;
}

/* The cost model for one write of n bytes at stream position pos: worth
 * making as it is (cost.h). Through a view that is not plain bytes, only a
 * write of a stripe or more. */
static int direct_worthy(const struct mpiio_file *f, int64_t pos, int64_t n)
{
    if (f->view.n != 0)
        return n >= f->hints.stripe_size;
    return sluice_acb_cost_direct(f->hints.direct_size, f->disp + pos, n);
}

/* The cost model for an independent write to a file shared by several
 * ranks: a write worth making as it is goes straight to MPI-IO when no
 * rank can hold a pending write of an earlier epoch (one that must land
 * before it: f->direct_ok), after this rank's own pending writes it
 * overlaps. Returns 1 with *rc set when writing those failed, else 0 (the
 * caller passes the write on, or 0 with *go = 0 to keep it pending). */
static int direct_shared_write(struct mpiio_file *f, int64_t pos, int64_t n, int *go, int *rc)
{
    uint64_t t0 = sluice_now();

    *go = f->direct_ok && f->view.n == 0 && direct_worthy(f, pos, n);
    if (!*go)
        return 0;
    if (f->pending.n && sluice_acb_pending_overlaps(&f->pending, f->disp + pos, n) &&
        (*rc = write_own(f)) != MPI_SUCCESS)
        return 1;
    sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, MPIIO_ACB_DIRECT_WRITES, t0, t0);
    return 0;
}

/* What acb_write did with a write. */
enum acb_outcome {
    ACB_PASS = 0,        /* the write goes to MPI-IO as the program made it */
    ACB_KEPT = 1,        /* kept pending (or failed: *rc) */
    ACB_PASS_INDEP = 2,  /* a collective write goes to MPI-IO as each rank's independent one */
};

/* A write passed to MPI-IO by a rank that stopped aggregating in a write
 * (memory cap, a type it could not pack) while the other ranks of a shared
 * file may keep theirs pending: a collective call would wait for them
 * forever, so it goes as the rank's independent write. (Atomic mode and
 * undecodable views stop every rank alike, in a collective call.) */
static enum acb_outcome alone(const struct mpiio_file *f, int collective)
{
    return collective && f->aggregating && f->nprocs > 1 && f->alone ? ACB_PASS_INDEP : ACB_PASS;
}

/* Keep a blocking write pending, or decide how it goes to MPI-IO. */
static enum acb_outcome acb_write(struct mpiio_file *f, const MPI_Offset *explicit_off, const void *buf, int count,
                     MPI_Datatype t, int collective, MPI_Status *st, int *rc)
{
    int64_t n = type_bytes(count, t), pos;
    MPI_Count lb, extent;
    int ni, na, nd, comb, packed = 0;
    const unsigned char *src = buf;
    struct mpiio_file *owner;
    struct add_ctx a = {NULL, NULL};

    if (collective)
        collective_call(f);
    if (collective && f->aggregating && f->nprocs > 1) {
        /* The cost model for collective writes: when every rank's piece is
         * worth writing as it is (or empty), no copy or exchange is; what
         * is pending anywhere goes first, on every rank alike (all are in
         * this call). Pieces of a stripe or more go to MPI-IO's collective
         * write, whose file domains are then whole stripes; smaller ones
         * as each rank's independent write: a collective write would only
         * add its own exchange to pieces that need none. */
        int64_t mine[3], all[3];
        int known = count >= 0 && stream_pos(f, explicit_off, &pos) == 0;
        mine[0] = known && (n == 0 || direct_worthy(f, pos, n)) ? 0 : 1;
        mine[1] = (int64_t)f->pending.n;
        mine[2] = n == 0 || n >= f->hints.stripe_size ? 0 : 1;
        SLUICE_PMPI(Allreduce)(mine, all, 3, SLUICE_MPI_INT64, SLUICE_MPI_MAX, f->comm);
        if (all[0] == 0) {
            uint64_t t0 = sluice_now();
            if (all[1] != 0 && (*rc = acb_flush(f)) != MPI_SUCCESS)
                return ACB_KEPT;
            f->direct_ok = 1;   /* nothing is pending anywhere */
            sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, MPIIO_ACB_DIRECT_WRITES, t0, t0);
            return all[2] == 0 ? ACB_PASS : ACB_PASS_INDEP;
        }
    }
    if (!f->aggregating || f->passthru || count < 0 || stream_pos(f, explicit_off, &pos) != 0)
        return alone(f, collective);
    owner = pending_owner(f);
    if (n > INT_MAX || owner->pending.bytes + n > owner->hints.max_memory)
        return fall_back_in_write(f, rc) ? ACB_KEPT : alone(f, collective);
    if (!collective && owner == f && f->nprocs > 1) {
        int go;
        if (direct_shared_write(f, pos, n, &go, rc))
            return ACB_KEPT;
        if (go)
            return ACB_PASS;
    }
    if (owner == f && f->nprocs == 1 && direct_worthy(f, pos, n)) {
        /* The cost model: a one-rank file's write of a unit or more gains
         * nothing from a copy. What is pending goes first (program order),
         * then the write itself, straight to MPI-IO. */
        uint64_t t0 = sluice_now();
        if ((*rc = write_own(f)) != MPI_SUCCESS)
            return ACB_KEPT;
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, MPIIO_ACB_DIRECT_WRITES, t0, t0);
        return ACB_PASS;
    }
    /* Collective call k's writes: epoch 2k; independent ones after it: 2k + 1. */
    a.pending = &owner->pending;
    owner->pending.epoch = 2 * owner->collectives + (owner == f && collective ? 0 : 1);
    if (n > 0) {
        /* A named type with no padding is its own packed form. */
        if (SLUICE_PMPI(Type_get_envelope)(t, &ni, &na, &nd, &comb) != MPI_SUCCESS ||
            SLUICE_PMPI(Type_get_extent_x)(t, &lb, &extent) != MPI_SUCCESS ||
            comb != MPI_COMBINER_NAMED || extent * count != n) {
            unsigned char *tmp = malloc((size_t)n);
            int where = 0;
            if (!tmp || SLUICE_PMPI(Pack)(buf, count, t, tmp, (int)n, &where, SLUICE_MPI_COMM_SELF) != MPI_SUCCESS) {
                free(tmp);
                return fall_back_in_write(f, rc) ? ACB_KEPT : alone(f, collective);
            }
            src = tmp;
            packed = 1;
        }
        a.src = src;
        if (view_map(f, pos, n, add_piece, &a) != 0) {
            if (packed)
                free((void *)src);
            return fall_back_in_write(f, rc) ? ACB_KEPT : alone(f, collective);
        }
        if (packed)
            free((void *)src);
    }
    if (!explicit_off)
        SLUICE_PMPI(File_seek)(f->fh, (MPI_Offset)((pos + n) / f->etype_size), MPI_SEEK_SET);
    set_status(st, n);
    *rc = MPI_SUCCESS;
    if (owner == f && f->nprocs == 1 && f->pending.bytes >= f->hints.buffer_size) {
        /* A one-rank file streams: its buffer is written as it fills. */
        uint64_t t0 = sluice_now();
        *rc = write_own(f);
        sluice_count_meta(f->rec, SLUICE_SIDES_FS, MPIIO_ACB_BUFFER_WRITES, t0, t0);
    }
    return ACB_KEPT;
}

/* The first error of two steps. */
static int first_error(int a, int b)
{
    return a != MPI_SUCCESS ? a : b;
}

/* Before a read: a rank reads its own pending writes (those of the shared
 * list too, see pending_owner), so they go out first. Returns the error of
 * writing them (the read is made anyway: it may be collective). */
static int acb_before_read(struct mpiio_file *f, const MPI_Offset *explicit_off, int count, MPI_Datatype t)
{
    int64_t pos, n = type_bytes(count, t);
    struct mpiio_file *owner = f->aggregating ? pending_owner(f) : f;
    int rc = MPI_SUCCESS;

    if (n == 0)
        return rc;
    if (f->pending.n &&
        (stream_pos(f, explicit_off, &pos) != 0 || view_map(f, pos, n, overlap_piece, &f->pending) != 0))
        rc = write_own(f);
    if (owner != f && owner->pending.n &&
        (stream_pos(f, explicit_off, &pos) != 0 || view_map(f, pos, n, overlap_piece, &owner->pending) != 0))
        rc = first_error(rc, write_own(owner));
    return rc;
}

/* Accesses sluice does not keep (shared pointer, non-blocking): after this
 * rank's pending writes, in program order. Returns the error of those. */
static int acb_before_passthru(struct mpiio_file *f)
{
    struct mpiio_file *owner = f->aggregating ? pending_owner(f) : f;
    int rc = MPI_SUCCESS;

    if (f->pending.n)
        rc = write_own(f);
    if (owner != f && owner->pending.n)
        rc = first_error(rc, write_own(owner));
    return rc;
}

static void file_free(struct mpiio_file *f)
{
    sluice_acb_pending_clear(&f->pending);
    sluice_acb_flat_free(&f->view);
    free(f->name);
    free(f);
}

/* ---- open, close, sync, view ---- */

static struct sluice_record *record_for(const char *name)
{
    char abs[PATH_MAX];
    const char *colon = strchr(name, ':'), *slash = strchr(name, '/');

    /* ROMIO-style file-system prefixes: "ufs:/path", "lustre:/path". */
    if (colon && colon - name > 1 && (!slash || colon < slash))
        name = colon + 1;
    if (sluice_policy_skip_fast(name) || sluice_path_absolute(AT_FDCWD, name, abs, sizeof abs) != 0 ||
        !sluice_policy_records(abs))
        return NULL;
    return sluice_record_get(SLUICE_MOD_MPIIO, abs);
}

SLUICE_EXPORT int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    struct sluice_record *rec;
    struct mpiio_file *f;
    uint64_t t0;
    int rc, nprocs = 1;

    if (!sluice_active() || !filename || sluice_pmpi_load() != 0 || (rec = record_for(filename)) == NULL) {
        sluice_shared_open_begin();
        rc = NEXT(File_open)(comm, filename, amode, info, fh);
        sluice_shared_open_end();
        return rc;
    }
    t0 = sluice_now();
    SLUICE_PMPI(Comm_size)(comm, &nprocs);
    /* every rank opens this file: it is never staged privately on a node;
     * if it is created, it is a shared file for its layout (many stripes of
     * the aggregation unit, MPI_Info striping_unit overriding) */
    if (amode & MPI_MODE_CREATE) {
        struct sluice_acb_hints h = {.stripe_size = sluice_cfg.acb_stripe_size};
        sluice_acb_hints_apply(&h, info);
        sluice_layout_shared_begin(nprocs, h.stripe_size);
    }
    /* A file one rank wrote with POSIX or stdio (a header) and that is
     * still on a node's tier goes to the shared file system before any rank
     * opens it, or the MPI library would open (or create) another file and
     * the publish would later replace it. */
    if (stage_publish_for_shared_open(rec->path))
        SLUICE_PMPI(Barrier)(comm);
    sluice_shared_open_begin();
    rc = NEXT(File_open)(comm, filename, amode, info, fh);
    sluice_shared_open_end();
    sluice_layout_shared_end();
    if (rc != MPI_SUCCESS) {
        sluice_count_error(rec, SLUICE_SIDES_BOTH);
        return rc;
    }
    sluice_count_open_as(rec, SLUICE_SIDES_BOTH, nprocs > 1 ? MPIIO_COLL_OPENS : MPIIO_INDEP_OPENS, t0, sluice_now());
    count_hints(rec, info);
    if ((f = calloc(1, sizeof *f)) == NULL || (f->name = strdup(filename)) == NULL) {
        free(f);
        return rc;   /* unrecorded from here on: never fail the program's open */
    }
    f->fh = *fh;
    f->rec = rec;
    f->etype_size = 1;
    f->raw = SLUICE_MPI_FILE_NULL;
    f->comm = SLUICE_MPI_COMM_NULL;
    f->nprocs = nprocs;
    f->direct_ok = 1;   /* nothing is pending yet */
    if (acb_wanted(rec->path, amode)) {
        /* Every rank decides alike (same mode, same amode), so the flushes match. */
        int sync;
        int64_t block = block_unit(rec->path, &sync), stripe = sluice_cfg.acb_stripe_size, unit;
        if (stripe <= 0)
            stripe = SLUICE_ACB_DEFAULT_STRIPE;
        /* on a synchronous mount each write below a stripe is charged a round
         * trip of its own, as on Lustre a whole RPC: the unit is the stripe */
        unit = sync && block < stripe ? stripe : block;
        f->hints = (struct sluice_acb_hints){.aggregators = sluice_cfg.acb_aggregators,
                                             .stripe_size = sluice_cfg.acb_stripe_size,
                                             .write_size = sluice_cfg.acb_write_size,
                                             .max_memory = sluice_cfg.acb_max_memory,
                                             .direct_size = unit};
        sluice_acb_hints_apply(&f->hints, info);
        /* across clients, shared_unit's (unless the program set
         * sluice_acb_direct_size itself) */
        if (nprocs > 1) {
            enum clients clients = file_clients(comm, rec->path);
            if (clients != ONE_CLIENT && f->hints.direct_size == unit)
                f->hints.direct_size = shared_unit(clients, block, f->hints.stripe_size);
        }
        if (SLUICE_PMPI(Comm_dup)(comm, &f->comm) == MPI_SUCCESS) {
            f->aggregating = 1;
            sluice_record_split_sides(rec);
        }
    }
    pthread_mutex_lock(&files_lock);
    f->next = files;
    files = f;
    pthread_mutex_unlock(&files_lock);
    return rc;
}

/* A program that ends MPI with files still open (erroneous, but Open MPI
 * lets it by): no collective flush can be run now, so each rank writes its
 * own pending data, as independent writes would have, before MPI goes. */
SLUICE_EXPORT int MPI_Finalize(void)
{
    int told = 0;

    if (sluice_active()) {
        pthread_mutex_lock(&files_lock);
        for (struct mpiio_file *f = files; f; f = f->next) {
            if (!f->aggregating || f->passthru || f->pending.n == 0)
                continue;
            if (!told++)
                sluice_diag("acb mode: MPI_Finalize with %s still open; each rank writes what it holds", f->name);
            if (write_own(f) != MPI_SUCCESS)
                sluice_count_error(f->rec, SLUICE_SIDES_FS);
        }
        pthread_mutex_unlock(&files_lock);
    }
    return NEXT(Finalize)();
}

SLUICE_EXPORT int MPI_File_close(MPI_File *fh)
{
    struct mpiio_file *f = fh ? file_find(*fh) : NULL;
    uint64_t t0;
    int rc, flush_rc = MPI_SUCCESS;

    if (!f)
        return NEXT(File_close)(fh);
    t0 = sluice_now();
    file_unlink(f);
    if (f->aggregating) {
        flush_rc = acb_flush(f);
        if (f->raw != SLUICE_MPI_FILE_NULL) {
            uint64_t c0 = sluice_now();
            SLUICE_PMPI(File_close)(&f->raw);
            sluice_count_close(f->rec, SLUICE_SIDES_FS, c0, sluice_now());
        }
        SLUICE_PMPI(Comm_free)(&f->comm);
    }
    rc = NEXT(File_close)(fh);
    if (rc == MPI_SUCCESS)
        sluice_count_close(f->rec, SLUICE_SIDES_BOTH, t0, sluice_now());
    else
        sluice_count_error(f->rec, SLUICE_SIDES_BOTH);
    file_free(f);
    return first_error(flush_rc, rc);
}

SLUICE_EXPORT int MPI_File_sync(MPI_File fh)
{
    struct mpiio_file *f = file_find(fh);
    uint64_t t0;
    int rc, flush_rc = MPI_SUCCESS;

    if (!f)
        return NEXT(File_sync)(fh);
    t0 = sluice_now();
    if (f->aggregating) {
        flush_rc = acb_flush(f);
        if (f->raw != SLUICE_MPI_FILE_NULL) {
            uint64_t s0 = sluice_now();
            int src = SLUICE_PMPI(File_sync)(f->raw);
            if (src == MPI_SUCCESS)
                sluice_count_sync(f->rec, SLUICE_SIDES_FS, MPIIO_SYNCS, s0, sluice_now());
            else if (flush_rc == MPI_SUCCESS)
                flush_rc = src;
        }
    }
    rc = NEXT(File_sync)(fh);
    if (rc == MPI_SUCCESS)
        sluice_count_sync(f->rec, SLUICE_SIDES_BOTH, MPIIO_SYNCS, t0, sluice_now());
    else
        sluice_count_error(f->rec, SLUICE_SIDES_BOTH);
    return first_error(flush_rc, rc);
}

SLUICE_EXPORT int MPI_File_set_info(MPI_File fh, MPI_Info info)
{
    struct mpiio_file *f = file_find(fh);
    uint64_t t0;
    int rc;

    if (!f)
        return NEXT(File_set_info)(fh, info);
    t0 = sluice_now();
    collective_call(f);   /* (collective, as set_view) */
    rc = NEXT(File_set_info)(fh, info);
    count_other(f, -1, rc, t0);
    if (rc == MPI_SUCCESS)
        count_hints(f->rec, info);
    return rc;
}

SLUICE_EXPORT int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                                    const char *datarep, MPI_Info info)
{
    struct mpiio_file *f = file_find(fh);
    uint64_t t0;
    int rc;

    if (!f)
        return NEXT(File_set_view)(fh, disp, etype, filetype, datarep, info);
    t0 = sluice_now();
    collective_call(f);
    rc = NEXT(File_set_view)(fh, disp, etype, filetype, datarep, info);
    count_other(f, MPIIO_VIEWS, rc, t0);
    if (rc == MPI_SUCCESS)
        count_hints(f->rec, info);
    if (rc == MPI_SUCCESS && f->aggregating && !f->passthru) {
        struct sluice_acb_flat view = {0};
        int64_t esize = type_bytes(1, etype);
        int native = datarep && strcmp(datarep, "native") == 0;
        if (!native || esize <= 0 || sluice_acb_flatten(filetype, &view) != 0)
            return fall_back(f) == MPI_SUCCESS ? rc : MPI_ERR_IO;
        sluice_acb_flat_free(&f->view);
        if (sluice_acb_flat_contiguous(&view))
            sluice_acb_flat_free(&view);   /* plain bytes from disp */
        f->view = view;
        f->disp = disp;
        f->etype_size = esize;
    }
    return rc;
}

SLUICE_EXPORT int MPI_File_set_atomicity(MPI_File fh, int flag)
{
    struct mpiio_file *f = file_find(fh);
    uint64_t t0;
    int rc;

    if (!f)
        return NEXT(File_set_atomicity)(fh, flag);
    t0 = sluice_now();
    /* Atomic mode promises every write is visible at once: stop keeping them. */
    int flush_rc = flag ? flush_first(f) : MPI_SUCCESS;
    if (flag && f->aggregating && !f->passthru) {
        f->passthru = 1;
        sluice_count_meta(f->rec, SLUICE_SIDES_BOTH, MPIIO_FALLBACKS, t0, t0);
    }
    rc = NEXT(File_set_atomicity)(fh, flag);
    count_other(f, -1, rc, t0);
    return first_error(flush_rc, rc);
}

/* set_size and preallocate are collective: the pending writes go first, in
 * program order, so that a size set after them is the size that stays. */
SLUICE_EXPORT int MPI_File_set_size(MPI_File fh, MPI_Offset size)
{
    struct mpiio_file *f = file_find(fh);
    uint64_t t0;
    int rc;

    if (!f)
        return NEXT(File_set_size)(fh, size);
    t0 = sluice_now();
    int flush_rc = flush_first(f);
    rc = NEXT(File_set_size)(fh, size);
    count_other(f, -1, rc, t0);
    return first_error(flush_rc, rc);
}

SLUICE_EXPORT int MPI_File_preallocate(MPI_File fh, MPI_Offset size)
{
    struct mpiio_file *f = file_find(fh);
    uint64_t t0;
    int rc;

    if (!f)
        return NEXT(File_preallocate)(fh, size);
    t0 = sluice_now();
    int flush_rc = flush_first(f);
    rc = NEXT(File_preallocate)(fh, size);
    count_other(f, -1, rc, t0);
    return first_error(flush_rc, rc);
}

static void grow_to_pending(const struct sluice_acb_pending *p, MPI_Offset *size)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->ext[i].off + p->ext[i].len > *size)
            *size = p->ext[i].off + p->ext[i].len;
}

/* The size includes this rank's own pending writes (others' are not visible
 * before a sync, as without sluice). */
SLUICE_EXPORT int MPI_File_get_size(MPI_File fh, MPI_Offset *size)
{
    struct mpiio_file *f = file_find(fh);
    uint64_t t0;
    int rc;

    if (!f)
        return NEXT(File_get_size)(fh, size);
    t0 = sluice_now();
    rc = NEXT(File_get_size)(fh, size);
    if (rc == MPI_SUCCESS) {
        struct mpiio_file *owner = f->aggregating ? pending_owner(f) : f;
        grow_to_pending(&f->pending, size);
        if (owner != f)
            grow_to_pending(&owner->pending, size);
    }
    count_other(f, -1, rc, t0);
    return rc;
}

/* ---- data ---- */

/* A blocking read: pending writes it overlaps go out first. */
#define READ_BODY(name, off_ptr, counter, collective, ...)                                       \
    struct mpiio_file *f = file_find(fh);                                                        \
    uint64_t t0;                                                                                 \
    int rc;                                                                                      \
    if (!f)                                                                                      \
        return NEXT(name)(__VA_ARGS__);                                                          \
    t0 = sluice_now();                                                                           \
    if (collective)                                                                              \
        collective_call(f);                                                                      \
    int pending_rc = acb_before_read(f, off_ptr, count, t);                                      \
    rc = NEXT(name)(__VA_ARGS__);                                                                \
    count_io(f, SLUICE_SIDES_BOTH, SLUICE_READ, counter, type_bytes(count, t), rc, t0);          \
    return first_error(pending_rc, rc);

/* A blocking write: kept pending when the file aggregates, else passed on
 * (a collective one maybe as its independent counterpart indep_name, which
 * takes the same arguments). */
#define WRITE_BODY(name, indep_name, off_ptr, counter, collective, ...)                          \
    struct mpiio_file *f = file_find(fh);                                                        \
    uint64_t t0;                                                                                 \
    int rc;                                                                                      \
    enum acb_outcome how;                                                                        \
    if (!f)                                                                                      \
        return NEXT(name)(__VA_ARGS__);                                                          \
    t0 = sluice_now();                                                                           \
    how = acb_write(f, off_ptr, buf, count, t, collective, st, &rc);                             \
    if (how == ACB_KEPT) {                                                                       \
        count_io(f, SLUICE_SIDES_APP, SLUICE_WRITE, counter, type_bytes(count, t), rc, t0);      \
        return rc;                                                                               \
    }                                                                                            \
    if (how == ACB_PASS_INDEP) {                                                                 \
        rc = NEXT(indep_name)(__VA_ARGS__);                                                      \
        count_io(f, SLUICE_SIDES_APP, SLUICE_WRITE, counter, type_bytes(count, t), rc, t0);      \
        count_io(f, SLUICE_SIDES_FS, SLUICE_WRITE, MPIIO_INDEP_WRITES, type_bytes(count, t), rc, t0); \
        return rc;                                                                               \
    }                                                                                            \
    rc = NEXT(name)(__VA_ARGS__);                                                                \
    count_io(f, SLUICE_SIDES_BOTH, SLUICE_WRITE, counter, type_bytes(count, t), rc, t0);         \
    return rc;

/* Calls that always go to MPI-IO, after this rank's pending writes. */
#define PASS_BODY(name, kind, counter, ...)                                                      \
    struct mpiio_file *f = file_find(fh);                                                        \
    uint64_t t0;                                                                                 \
    int rc;                                                                                      \
    if (!f)                                                                                      \
        return NEXT(name)(__VA_ARGS__);                                                          \
    t0 = sluice_now();                                                                           \
    int pending_rc = acb_before_passthru(f);                                                     \
    rc = NEXT(name)(__VA_ARGS__);                                                                \
    count_io(f, SLUICE_SIDES_BOTH, kind, counter, type_bytes(count, t), rc, t0);                 \
    return first_error(pending_rc, rc);

SLUICE_EXPORT int MPI_File_read_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    READ_BODY(File_read_at, &off, MPIIO_INDEP_READS, 0, fh, off, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_read_at_all(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t,
                                       MPI_Status *st)
{
    READ_BODY(File_read_at_all, &off, MPIIO_COLL_READS, 1, fh, off, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    READ_BODY(File_read, NULL, MPIIO_INDEP_READS, 0, fh, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_read_all(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    READ_BODY(File_read_all, NULL, MPIIO_COLL_READS, 1, fh, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                                    MPI_Status *st)
{
    WRITE_BODY(File_write_at, File_write_at, &off, MPIIO_INDEP_WRITES, 0, fh, off, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                                        MPI_Status *st)
{
    WRITE_BODY(File_write_at_all, File_write_at, &off, MPIIO_COLL_WRITES, 1, fh, off, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    WRITE_BODY(File_write, File_write, NULL, MPIIO_INDEP_WRITES, 0, fh, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    WRITE_BODY(File_write_all, File_write, NULL, MPIIO_COLL_WRITES, 1, fh, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_read_shared(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    PASS_BODY(File_read_shared, SLUICE_READ, MPIIO_INDEP_READS, fh, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_read_ordered(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    PASS_BODY(File_read_ordered, SLUICE_READ, MPIIO_COLL_READS, fh, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_write_shared(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    PASS_BODY(File_write_shared, SLUICE_WRITE, MPIIO_SHARED_WRITES, fh, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_write_ordered(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Status *st)
{
    PASS_BODY(File_write_ordered, SLUICE_WRITE, MPIIO_SHARED_WRITES, fh, buf, count, t, st)
}

SLUICE_EXPORT int MPI_File_iread_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t,
                                    MPI_Request *req)
{
    PASS_BODY(File_iread_at, SLUICE_READ, MPIIO_NB_READS, fh, off, buf, count, t, req)
}

SLUICE_EXPORT int MPI_File_iread(MPI_File fh, void *buf, int count, MPI_Datatype t, MPI_Request *req)
{
    PASS_BODY(File_iread, SLUICE_READ, MPIIO_NB_READS, fh, buf, count, t, req)
}

/* A non-blocking write kept pending is complete at once (its bytes are
 * copied): the program gets a generalized request that is already done,
 * whose status says how many bytes were written. */
static int done_query(void *extra, MPI_Status *status)
{
    SLUICE_PMPI(Status_set_elements_x)(status, SLUICE_MPI_BYTE, (MPI_Count)(intptr_t)extra);
    SLUICE_PMPI(Status_set_cancelled)(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int done_free(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int done_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static int completed_request(int64_t bytes, MPI_Request *req)
{
    int rc = SLUICE_PMPI(Grequest_start)(done_query, done_free, done_cancel, (void *)(intptr_t)bytes, req);
    return rc == MPI_SUCCESS ? SLUICE_PMPI(Grequest_complete)(*req) : rc;
}

/* A non-blocking write: kept pending when the file aggregates (as a
 * blocking one, answered with a completed request), else passed on. */
#define NB_WRITE_BODY(name, off_ptr, ...)                                                        \
    struct mpiio_file *f = file_find(fh);                                                        \
    uint64_t t0;                                                                                 \
    int rc;                                                                                      \
    if (!f)                                                                                      \
        return NEXT(name)(__VA_ARGS__);                                                          \
    t0 = sluice_now();                                                                           \
    if (acb_write(f, off_ptr, buf, count, t, 0, MPI_STATUS_IGNORE, &rc) == ACB_KEPT) {           \
        if (rc == MPI_SUCCESS)                                                                   \
            rc = completed_request(type_bytes(count, t), req);                                   \
        count_io(f, SLUICE_SIDES_APP, SLUICE_WRITE, MPIIO_NB_WRITES, type_bytes(count, t), rc, t0); \
        return rc;                                                                               \
    }                                                                                            \
    int pending_rc = acb_before_passthru(f);                                                     \
    rc = NEXT(name)(__VA_ARGS__);                                                                \
    count_io(f, SLUICE_SIDES_BOTH, SLUICE_WRITE, MPIIO_NB_WRITES, type_bytes(count, t), rc, t0); \
    return first_error(pending_rc, rc);

SLUICE_EXPORT int MPI_File_iwrite_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                                     MPI_Request *req)
{
    NB_WRITE_BODY(File_iwrite_at, &off, fh, off, buf, count, t, req)
}

SLUICE_EXPORT int MPI_File_iwrite(MPI_File fh, const void *buf, int count, MPI_Datatype t, MPI_Request *req)
{
    NB_WRITE_BODY(File_iwrite, NULL, fh, buf, count, t, req)
}

/* Split collectives (MPI_File_*_begin, then *_end; one in progress per
 * handle). A write's begin is a collective write to acb_write: kept pending,
 * written as the rank's independent write, or passed to MPI-IO's own begin;
 * unless it went there, its end only reports the bytes. Reads, and ordered
 * writes (the shared file pointer), go to MPI-IO after this rank's pending
 * writes, as their blocking forms do. */
#define SPLIT_WRITE_BEGIN(name, indep_name, off_ptr, ...)                                        \
    struct mpiio_file *f = file_find(fh);                                                        \
    uint64_t t0;                                                                                 \
    int rc;                                                                                      \
    enum acb_outcome how;                                                                        \
    if (!f)                                                                                      \
        return NEXT(name)(__VA_ARGS__);                                                          \
    t0 = sluice_now();                                                                           \
    f->split_done = 0;                                                                           \
    how = acb_write(f, off_ptr, buf, count, t, 1, MPI_STATUS_IGNORE, &rc);                       \
    if (how == ACB_PASS) {                                                                       \
        rc = NEXT(name)(__VA_ARGS__);                                                            \
        count_io(f, SLUICE_SIDES_BOTH, SLUICE_WRITE, MPIIO_SPLIT_WRITES, type_bytes(count, t), rc, t0); \
        return rc;                                                                               \
    }                                                                                            \
    if (how == ACB_PASS_INDEP) {                                                                 \
        rc = NEXT(indep_name)(__VA_ARGS__, MPI_STATUS_IGNORE);                                   \
        count_io(f, SLUICE_SIDES_FS, SLUICE_WRITE, MPIIO_INDEP_WRITES, type_bytes(count, t), rc, t0); \
    }                                                                                            \
    count_io(f, SLUICE_SIDES_APP, SLUICE_WRITE, MPIIO_SPLIT_WRITES, type_bytes(count, t), rc, t0); \
    f->split_done = 1;                                                                           \
    f->split_bytes = rc == MPI_SUCCESS ? type_bytes(count, t) : 0;                               \
    return rc;

#define SPLIT_WRITE_END(name)                                                                    \
    struct mpiio_file *f = file_find(fh);                                                        \
    if (!f || !f->split_done)                                                                    \
        return NEXT(name)(fh, buf, st);                                                          \
    f->split_done = 0;                                                                           \
    set_status(st, f->split_bytes);                                                              \
    return MPI_SUCCESS;

SLUICE_EXPORT int MPI_File_write_all_begin(MPI_File fh, const void *buf, int count, MPI_Datatype t)
{
    SPLIT_WRITE_BEGIN(File_write_all_begin, File_write, NULL, fh, buf, count, t)
}

SLUICE_EXPORT int MPI_File_write_all_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    SPLIT_WRITE_END(File_write_all_end)
}

SLUICE_EXPORT int MPI_File_write_at_all_begin(MPI_File fh, MPI_Offset off, const void *buf, int count,
                                              MPI_Datatype t)
{
    SPLIT_WRITE_BEGIN(File_write_at_all_begin, File_write_at, &off, fh, off, buf, count, t)
}

SLUICE_EXPORT int MPI_File_write_at_all_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    SPLIT_WRITE_END(File_write_at_all_end)
}

SLUICE_EXPORT int MPI_File_write_ordered_begin(MPI_File fh, const void *buf, int count, MPI_Datatype t)
{
    PASS_BODY(File_write_ordered_begin, SLUICE_WRITE, MPIIO_SPLIT_WRITES, fh, buf, count, t)
}

SLUICE_EXPORT int MPI_File_write_ordered_end(MPI_File fh, const void *buf, MPI_Status *st)
{
    return NEXT(File_write_ordered_end)(fh, buf, st);
}

SLUICE_EXPORT int MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype t)
{
    READ_BODY(File_read_all_begin, NULL, MPIIO_SPLIT_READS, 1, fh, buf, count, t)
}

SLUICE_EXPORT int MPI_File_read_all_end(MPI_File fh, void *buf, MPI_Status *st)
{
    return NEXT(File_read_all_end)(fh, buf, st);
}

SLUICE_EXPORT int MPI_File_read_at_all_begin(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t)
{
    READ_BODY(File_read_at_all_begin, &off, MPIIO_SPLIT_READS, 1, fh, off, buf, count, t)
}

SLUICE_EXPORT int MPI_File_read_at_all_end(MPI_File fh, void *buf, MPI_Status *st)
{
    return NEXT(File_read_at_all_end)(fh, buf, st);
}

SLUICE_EXPORT int MPI_File_read_ordered_begin(MPI_File fh, void *buf, int count, MPI_Datatype t)
{
    PASS_BODY(File_read_ordered_begin, SLUICE_READ, MPIIO_SPLIT_READS, fh, buf, count, t)
}

SLUICE_EXPORT int MPI_File_read_ordered_end(MPI_File fh, void *buf, MPI_Status *st)
{
    return NEXT(File_read_ordered_end)(fh, buf, st);
}
