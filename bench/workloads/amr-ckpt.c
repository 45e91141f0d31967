/*
 * An AMR checkpoint (Chombo / BISICLES style): levels of boxes, each box a
 * block of `--box-bytes` bytes. Boxes are numbered in lexicographic (i,j,k)
 * order on a cubic grid per level, and that is their order in the file; they
 * are dealt to ranks in Morton (Z-curve) order, as AMR load balancers do, so
 * each rank's boxes lie scattered across the file.
 *
 *   mpirun -np 4 sluice-bench-amr-ckpt --variant indep|coll|acb|h5-indep|h5-coll
 *          --file PATH [--boxes N[,N...]] [--box-bytes S] [--gap G]
 *          [--hints key=value,...] [--prefill] [--check]
 *
 *  indep     one MPI_File_write_at per box
 *  coll      one MPI_File_write_at_all per box (ranks with fewer boxes join
 *            with empty writes)
 *  acb       the explicit ACB API of libsluice-mpi: sluice_acb_put per box
 *  h5-indep  parallel HDF5, one dataset per level, one hyperslab H5Dwrite per
 *  h5-coll   box, independent or collective transfer (h5 builds only)
 *
 * --gap leaves G bytes between boxes (holes nobody writes); --prefill has
 * rank 0 fill the file's whole extent with 0xFF first, so a layer that
 * wrote bytes nobody wrote would show. --check: rank 0 reads the file back
 * and verifies every byte. Rank 0 prints one JSON line; besides the total,
 * it splits the time of the slowest rank into open, writes (or puts) and
 * close, where aggregation does its exchange and writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice/sluice_acb.h"
#ifdef AMR_WITH_HDF5
#include <hdf5.h>
#endif

#define MAX_LEVELS 16

struct options {
    const char *variant, *file, *hints;
    int64_t boxes[MAX_LEVELS];
    int levels;
    int64_t box_bytes, gap;
    int prefill, check;
};

struct box {
    int level;
    int64_t lex;          /* index in file order within its level */
    uint64_t morton;
};

static int rank, nprocs;

/* When this rank finished opening the file and issuing its writes (MPI_Wtime):
 * splits the time into open, writes and close (where ACB does its work). */
static double opened_at, written_at;

static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sluice-bench-amr-ckpt: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static int64_t parse_size(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0)
        die("bad size '%s'", s);
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    if (*end)
        die("bad size '%s'", s);
    return v;
}

static void parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){.variant = "indep", .box_bytes = 1 << 20, .levels = 1, .boxes = {64}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--prefill")) { o->prefill = 1; continue; }
        if (!strcmp(a, "--check")) { o->check = 1; continue; }
        if (!v)
            die("%s needs a value", a);
        i++;
        if (!strcmp(a, "--variant")) o->variant = v;
        else if (!strcmp(a, "--file")) o->file = v;
        else if (!strcmp(a, "--hints")) o->hints = v;
        else if (!strcmp(a, "--box-bytes")) o->box_bytes = parse_size(v);
        else if (!strcmp(a, "--gap")) o->gap = parse_size(v);
        else if (!strcmp(a, "--boxes")) {
            char *copy = strdup(v), *save = NULL;
            o->levels = 0;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (o->levels == MAX_LEVELS)
                    die("at most %d levels", MAX_LEVELS);
                o->boxes[o->levels++] = parse_size(t);
            }
            free(copy);
        } else die("unknown option %s", a);
    }
    if (!o->file || o->box_bytes <= 0 || o->levels == 0)
        die("--file and a positive --box-bytes are needed");
}

/* The box's byte i: a function of where it is, so any misplaced byte shows. */
static unsigned char pattern(int level, int64_t lex, int64_t i)
{
    uint64_t h = ((uint64_t)level * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)lex * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    return (unsigned char)(h + (uint64_t)i * 131u + (uint64_t)(i >> 8));
}

static uint64_t spread3(uint64_t x)
{
    uint64_t r = 0;
    for (int b = 0; b < 21; b++)
        r |= ((x >> b) & 1u) << (3 * b);
    return r;
}

static int64_t grid_dim(int64_t n)
{
    int64_t g = 1;
    while (g * g * g < n)
        g++;
    return g;
}

static int by_morton(const void *a, const void *b)
{
    const struct box *x = a, *y = b;
    if (x->level != y->level)
        return x->level - y->level;
    return x->morton < y->morton ? -1 : x->morton > y->morton;
}

static int by_file_order(const void *a, const void *b)
{
    const struct box *x = a, *y = b;
    if (x->level != y->level)
        return x->level - y->level;
    return x->lex < y->lex ? -1 : x->lex > y->lex;
}

/* This rank's boxes: per level, a contiguous share of the Morton order. */
static struct box *my_boxes(const struct options *o, int64_t *count)
{
    int64_t total = 0, n = 0;
    struct box *all, *mine;

    for (int l = 0; l < o->levels; l++)
        total += o->boxes[l];
    all = malloc(sizeof *all * (size_t)(total ? total : 1));
    mine = malloc(sizeof *mine * (size_t)(total ? total : 1));
    for (int l = 0, k = 0; l < o->levels; l++) {
        int64_t g = grid_dim(o->boxes[l]);
        for (int64_t lex = 0; lex < o->boxes[l]; lex++, k++) {
            int64_t i = lex / (g * g), j = (lex / g) % g, kk = lex % g;
            all[k] = (struct box){l, lex, spread3((uint64_t)i) << 2 | spread3((uint64_t)j) << 1 | spread3((uint64_t)kk)};
        }
    }
    qsort(all, (size_t)total, sizeof *all, by_morton);
    for (int l = 0, base = 0; l < o->levels; base += (int)o->boxes[l], l++) {
        int64_t lo = o->boxes[l] * rank / nprocs, hi = o->boxes[l] * (rank + 1) / nprocs;
        for (int64_t b = lo; b < hi; b++)
            mine[n++] = all[base + b];
    }
    free(all);
    *count = n;
    return mine;
}

static int64_t box_offset(const struct options *o, const struct box *b)
{
    int64_t off = 0;
    for (int l = 0; l < b->level; l++)
        off += o->boxes[l] * (o->box_bytes + o->gap);
    return off + b->lex * (o->box_bytes + o->gap);
}

static int64_t file_extent(const struct options *o)
{
    int64_t total = 0;
    for (int l = 0; l < o->levels; l++)
        total += o->boxes[l];
    return total ? total * (o->box_bytes + o->gap) - o->gap : 0;
}

static MPI_Info make_info(const char *hints)
{
    MPI_Info info = MPI_INFO_NULL;
    if (hints && *hints) {
        char *copy = strdup(hints), *save = NULL;
        MPI_Info_create(&info);
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(t, '=');
            if (!eq)
                die("hint '%s' is not key=value", t);
            *eq = '\0';
            MPI_Info_set(info, t, eq + 1);
        }
        free(copy);
    }
    return info;
}

static void fill_box(const struct box *b, unsigned char *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        buf[i] = pattern(b->level, b->lex, i);
}

static void write_mpiio(const struct options *o, const struct box *mine, int64_t n, MPI_Info info, int collective)
{
    MPI_File fh;
    unsigned char *buf = malloc((size_t)o->box_bytes);
    int64_t most = n;

    if (MPI_File_open(MPI_COMM_WORLD, o->file, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh) != MPI_SUCCESS)
        die("cannot open %s", o->file);
    opened_at = MPI_Wtime();
    MPI_Allreduce(&n, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    for (int64_t k = 0; k < (collective ? most : n); k++) {
        int rc;
        if (k < n) {
            fill_box(&mine[k], buf, o->box_bytes);
            if (collective)
                rc = MPI_File_write_at_all(fh, box_offset(o, &mine[k]), buf, (int)o->box_bytes, MPI_BYTE, MPI_STATUS_IGNORE);
            else
                rc = MPI_File_write_at(fh, box_offset(o, &mine[k]), buf, (int)o->box_bytes, MPI_BYTE, MPI_STATUS_IGNORE);
        } else {
            rc = MPI_File_write_at_all(fh, 0, buf, 0, MPI_BYTE, MPI_STATUS_IGNORE);
        }
        if (rc != MPI_SUCCESS)
            die("write failed");
    }
    written_at = MPI_Wtime();
    if (MPI_File_close(&fh) != MPI_SUCCESS)
        die("close failed");
    free(buf);
}

static void write_acb(const struct options *o, const struct box *mine, int64_t n, MPI_Info info)
{
    struct sluice_acb_file *f;
    unsigned char *buf = malloc((size_t)o->box_bytes);

    if (sluice_acb_open(MPI_COMM_WORLD, o->file, info, &f) != MPI_SUCCESS)
        die("cannot open %s", o->file);
    opened_at = MPI_Wtime();
    for (int64_t k = 0; k < n; k++) {
        fill_box(&mine[k], buf, o->box_bytes);
        if (sluice_acb_put(f, box_offset(o, &mine[k]), buf, o->box_bytes) != MPI_SUCCESS)
            die("put failed");
    }
    written_at = MPI_Wtime();
    if (sluice_acb_close(&f) != MPI_SUCCESS)
        die("close failed");
    free(buf);
}

#ifdef AMR_WITH_HDF5
/* One 1-D dataset of doubles per level, boxes one after another in file
 * order (Chombo's "data:datatype=0" layout). */
static void write_hdf5(const struct options *o, const struct box *mine, int64_t n, MPI_Info info, int collective)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), dxpl = H5Pcreate(H5P_DATASET_XFER), fcpl = H5Pcreate(H5P_FILE_CREATE);
    hid_t file, dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int64_t elems = o->box_bytes / 8, most = 0;
    unsigned char *buf = malloc((size_t)o->box_bytes);
    char name[32];

    if (o->box_bytes % 8 || o->gap)
        die("the HDF5 variants need --box-bytes a multiple of 8 and no --gap");
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, info);
    H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    /* Times in object headers would make two runs' files differ. */
    H5Pset_obj_track_times(dcpl, 0);
    file = H5Fcreate(o->file, H5F_ACC_TRUNC, fcpl, fapl);
    if (file < 0)
        die("cannot create %s", o->file);
    opened_at = MPI_Wtime();
    for (int l = 0; l < o->levels; l++) {
        hsize_t dim = (hsize_t)(o->boxes[l] * elems), count = (hsize_t)elems;
        hid_t space = H5Screate_simple(1, &dim, NULL), mem = H5Screate_simple(1, &count, NULL);
        hid_t dset;
        int64_t mine_here = 0, k0 = -1;
        snprintf(name, sizeof name, "level_%d", l);
        dset = H5Dcreate2(file, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        for (int64_t k = 0; k < n; k++)
            if (mine[k].level == l) {
                if (k0 < 0)
                    k0 = k;
                mine_here++;
            }
        MPI_Allreduce(&mine_here, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
        for (int64_t k = 0; k < (collective ? most : mine_here); k++) {
            herr_t rc;
            if (k < mine_here) {
                hsize_t start = (hsize_t)(mine[k0 + k].lex * elems);
                fill_box(&mine[k0 + k], buf, o->box_bytes);
                H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL);
                H5Sselect_all(mem);
            } else {
                H5Sselect_none(space);
                H5Sselect_none(mem);
            }
            rc = H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf);
            if (rc < 0)
                die("H5Dwrite failed");
        }
        H5Dclose(dset);
        H5Sclose(space);
        H5Sclose(mem);
    }
    written_at = MPI_Wtime();
    if (H5Fclose(file) < 0)
        die("H5Fclose failed");
    H5Pclose(fapl);
    H5Pclose(dxpl);
    H5Pclose(fcpl);
    H5Pclose(dcpl);
    free(buf);
}

static int64_t check_hdf5(const struct options *o)
{
    hid_t file = H5Fopen(o->file, H5F_ACC_RDONLY, H5P_DEFAULT);
    int64_t bad = 0, elems = o->box_bytes / 8;
    char name[32];

    if (file < 0)
        return -1;
    for (int l = 0; l < o->levels; l++) {
        size_t bytes = (size_t)(o->boxes[l] * o->box_bytes);
        unsigned char *buf = malloc(bytes ? bytes : 1);
        hid_t dset;
        snprintf(name, sizeof name, "level_%d", l);
        dset = H5Dopen2(file, name, H5P_DEFAULT);
        if (dset < 0 || (bytes && H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0))
            bad++;
        for (int64_t lex = 0; !bad && lex < o->boxes[l]; lex++)
            for (int64_t i = 0; i < elems * 8; i++)
                bad += buf[lex * o->box_bytes + i] != pattern(l, lex, i);
        H5Dclose(dset);
        free(buf);
    }
    H5Fclose(file);
    return bad;
}
#endif

/* Rank 0: every box byte in place, holes untouched (0xFF after --prefill). */
static int64_t check_raw(const struct options *o)
{
    int64_t size = file_extent(o), bad = 0;
    unsigned char *buf = malloc((size_t)(size ? size : 1));
    int fd = open(o->file, O_RDONLY);
    ssize_t got = fd >= 0 ? pread(fd, buf, (size_t)size, 0) : -1;

    if (fd >= 0)
        close(fd);
    if (got != size) {
        free(buf);
        return -1;
    }
    for (int l = 0; l < o->levels; l++)
        for (int64_t lex = 0; lex < o->boxes[l]; lex++) {
            struct box b = {l, lex, 0};
            int64_t off = box_offset(o, &b);
            for (int64_t i = 0; i < o->box_bytes; i++)
                bad += buf[off + i] != pattern(l, lex, i);
            for (int64_t i = 0; o->prefill && i < o->gap && off + o->box_bytes + i < size; i++)
                bad += buf[off + o->box_bytes + i] != 0xFF;
        }
    free(buf);
    return bad;
}

static void prefill(const struct options *o)
{
    int64_t size = file_extent(o);
    unsigned char *buf = malloc((size_t)(size ? size : 1));
    int fd = open(o->file, O_CREAT | O_TRUNC | O_WRONLY, 0644);

    memset(buf, 0xFF, (size_t)size);
    if (fd < 0 || pwrite(fd, buf, (size_t)size, 0) != size || close(fd) != 0)
        die("prefill of %s failed", o->file);
    free(buf);
}

int main(int argc, char **argv)
{
    struct options o;
    struct box *mine;
    int64_t n, total_boxes = 0, bad = 0;
    double t0, t1, phase[2], slowest[2];
    MPI_Info info;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    parse(argc, argv, &o);
    info = make_info(o.hints);
    mine = my_boxes(&o, &n);
    qsort(mine, (size_t)n, sizeof *mine, by_file_order);
    if (rank == 0) {
        if (o.prefill)
            prefill(&o);
        else
            unlink(o.file);
    }
    for (int l = 0; l < o.levels; l++)
        total_boxes += o.boxes[l];
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (!strcmp(o.variant, "indep"))
        write_mpiio(&o, mine, n, info, 0);
    else if (!strcmp(o.variant, "coll"))
        write_mpiio(&o, mine, n, info, 1);
    else if (!strcmp(o.variant, "acb"))
        write_acb(&o, mine, n, info);
#ifdef AMR_WITH_HDF5
    else if (!strcmp(o.variant, "h5-indep"))
        write_hdf5(&o, mine, n, info, 0);
    else if (!strcmp(o.variant, "h5-coll"))
        write_hdf5(&o, mine, n, info, 1);
#endif
    else
        die("unknown variant %s", o.variant);
    MPI_Barrier(MPI_COMM_WORLD);
    t1 = MPI_Wtime();
    /* The slowest rank's open and open + writes; close is the rest. */
    phase[0] = opened_at - t0;
    phase[1] = written_at - t0;
    MPI_Reduce(phase, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && o.check) {
#ifdef AMR_WITH_HDF5
        if (!strncmp(o.variant, "h5-", 3))
            bad = check_hdf5(&o);
        else
#endif
            bad = check_raw(&o);
    }
    if (rank == 0)
        printf("{\"variant\": \"%s\", \"procs\": %d, \"boxes\": %" PRId64 ", \"box_bytes\": %" PRId64
               ", \"bytes_written\": %" PRId64 ", \"seconds\": %.6f, \"open_seconds\": %.6f, \"write_seconds\": %.6f, \"close_seconds\": %.6f"
               ", \"checked\": %s, \"bad_bytes\": %" PRId64 "}\n",
               o.variant, nprocs, total_boxes, o.box_bytes, total_boxes * o.box_bytes, t1 - t0, slowest[0],
               slowest[1] - slowest[0], t1 - t0 - slowest[1],
               o.check ? "true" : "false", bad);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    free(mine);
    MPI_Finalize();
    return bad != 0;
}
