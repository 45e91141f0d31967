/*
 * sluice-bench-fpp-netcdf: one output step of a climate model that writes one
 * netCDF file per process (the FMS pattern at ORNL). --procs processes (fork)
 * each create DIR/out.NNNN.nc through the netCDF C library with dimensions
 * time (unlimited), pfull, lat, lon, coordinate variables, and --vars float
 * fields (time, pfull, lat, lon), then write --steps time records of every
 * field and close. The values are a known function of (rank, var, step, k, j,
 * i), so --verify can read the file back and check it.
 * Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <inttypes.h>
#include <limits.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "sluice-bench-fpp-netcdf";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --dir DIR [options]\n"
        "\n"
        "File-per-process netCDF output (FMS on Lustre): each process writes one\n"
        "netCDF file with a few 4-D float fields through the netCDF C library.\n"
        "Prints one JSON line: files, bytes, netCDF calls and seconds.\n"
        "\n"
        "  --dir DIR        output directory (created if missing; required)\n"
        "  --procs N        processes, one file each (default 8)\n"
        "  --nx N           longitudes per process (default 96)\n"
        "  --ny N           latitudes per process (default 96)\n"
        "  --nz N           vertical levels (default 5)\n"
        "  --vars N         float fields per file (default 4)\n"
        "  --steps N        time records written (default 4)\n"
        "  --format F       classic, 64bit (default) or netcdf4 (HDF5 underneath)\n"
        "  --nofill         nc_set_fill(NC_NOFILL): do not pre-fill records\n"
        "  --verify         read every file back and check every value (exit 1 on a mismatch)\n"
        "  -h, --help       this text\n"
        "\n"
        "Files are DIR/out.NNNN.nc; variable v<k> holds\n"
        "rank*1e6 + var*1e5 + step*1e4 + (k*ny*nx + j*nx + i) mod 1e4.\n",
        prog);
}

struct opts {
    const char *dir;
    uint64_t procs, nx, ny, nz, vars, steps;
    int cmode, nofill, verify;
    const char *format;
};

struct counts {
    uint64_t data_bytes, file_bytes, puts, mismatches;
    int failed;
};

struct ctx {
    const struct opts *o;
    struct counts *counts;
};

static float value(const struct opts *o, uint64_t rank, uint64_t v, uint64_t t, size_t idx)
{
    (void)o;
    return (float)(rank * 1000000u + v * 100000u + t * 10000u + idx % 10000u);
}

static int put_text(int ncid, int varid, const char *name, const char *text)
{
    return nc_put_att_text(ncid, varid, name, strlen(text), text);
}

#define NC_TRY(call)                                                                        \
    do {                                                                                    \
        int nc_rc_ = (call);                                                                \
        if (nc_rc_ != NC_NOERR) {                                                           \
            bench_error(prog, 0, "rank %d: %s: %s: %s", rank, path, #call,                  \
                        nc_strerror(nc_rc_));                                               \
            goto fail;                                                                      \
        }                                                                                   \
    } while (0)

static int write_file(int rank, void *arg)
{
    struct ctx *c = arg;
    const struct opts *o = c->o;
    struct counts *k = &c->counts[rank];
    size_t slab = (size_t)(o->nz * o->ny * o->nx);
    float *buf = malloc(slab * sizeof *buf);
    double *coord = malloc((size_t)(o->nx > o->ny ? (o->nx > o->nz ? o->nx : o->nz)
                                                  : (o->ny > o->nz ? o->ny : o->nz)) *
                           sizeof *coord);
    int *varids = calloc((size_t)o->vars, sizeof *varids);
    char path[PATH_MAX];
    int ncid = -1, dims[4], tvar, zvar, yvar, xvar, old_fill;
    struct stat st;

    snprintf(path, sizeof path, "%s/out.%04d.nc", o->dir, rank);
    if (buf == NULL || coord == NULL || varids == NULL) {
        bench_error(prog, 0, "rank %d: out of memory", rank);
        goto fail;
    }
    NC_TRY(nc_create(path, o->cmode | NC_CLOBBER, &ncid));
    if (o->nofill)
        NC_TRY(nc_set_fill(ncid, NC_NOFILL, &old_fill));
    NC_TRY(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]));
    NC_TRY(nc_def_dim(ncid, "pfull", (size_t)o->nz, &dims[1]));
    NC_TRY(nc_def_dim(ncid, "lat", (size_t)o->ny, &dims[2]));
    NC_TRY(nc_def_dim(ncid, "lon", (size_t)o->nx, &dims[3]));
    NC_TRY(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dims[0], &tvar));
    NC_TRY(put_text(ncid, tvar, "units", "hours since 2000-01-01 00:00:00"));
    NC_TRY(nc_def_var(ncid, "pfull", NC_DOUBLE, 1, &dims[1], &zvar));
    NC_TRY(put_text(ncid, zvar, "units", "mb"));
    NC_TRY(nc_def_var(ncid, "lat", NC_DOUBLE, 1, &dims[2], &yvar));
    NC_TRY(put_text(ncid, yvar, "units", "degrees_north"));
    NC_TRY(nc_def_var(ncid, "lon", NC_DOUBLE, 1, &dims[3], &xvar));
    NC_TRY(put_text(ncid, xvar, "units", "degrees_east"));
    for (uint64_t v = 0; v < o->vars; v++) {
        char name[32], longname[64];

        snprintf(name, sizeof name, "v%" PRIu64, v);
        snprintf(longname, sizeof longname, "diagnostic field %" PRIu64, v);
        NC_TRY(nc_def_var(ncid, name, NC_FLOAT, 4, dims, &varids[v]));
        NC_TRY(put_text(ncid, varids[v], "long_name", longname));
        NC_TRY(put_text(ncid, varids[v], "units", "1"));
    }
    NC_TRY(put_text(ncid, NC_GLOBAL, "title", "sluice fpp-netcdf step"));
    NC_TRY(nc_put_att_int(ncid, NC_GLOBAL, "rank", NC_INT, 1, &rank));
    NC_TRY(nc_enddef(ncid));

    for (uint64_t i = 0; i < o->nz; i++)
        coord[i] = 1000.0 - (double)i * 900.0 / (double)o->nz;
    NC_TRY(nc_put_var_double(ncid, zvar, coord));
    for (uint64_t i = 0; i < o->ny; i++)
        coord[i] = -90.0 + (double)i * 180.0 / (double)o->ny;
    NC_TRY(nc_put_var_double(ncid, yvar, coord));
    for (uint64_t i = 0; i < o->nx; i++)
        coord[i] = (double)rank * 360.0 + (double)i * 360.0 / (double)o->nx;
    NC_TRY(nc_put_var_double(ncid, xvar, coord));
    k->puts += 3;
    k->data_bytes += (o->nz + o->ny + o->nx) * sizeof(double);

    for (uint64_t t = 0; t < o->steps; t++) {
        size_t start1 = (size_t)t, count1 = 1;
        double hours = (double)t;
        size_t start[4] = {(size_t)t, 0, 0, 0};
        size_t count[4] = {1, (size_t)o->nz, (size_t)o->ny, (size_t)o->nx};

        NC_TRY(nc_put_vara_double(ncid, tvar, &start1, &count1, &hours));
        k->puts++;
        k->data_bytes += sizeof(double);
        for (uint64_t v = 0; v < o->vars; v++) {
            for (size_t i = 0; i < slab; i++)
                buf[i] = value(o, (uint64_t)rank, v, t, i);
            NC_TRY(nc_put_vara_float(ncid, varids[v], start, count, buf));
            k->puts++;
            k->data_bytes += slab * sizeof(float);
        }
    }
    NC_TRY(nc_close(ncid));
    ncid = -1;

    if (stat(path, &st) != 0) {
        bench_error(prog, 1, "stat %s", path);
        goto fail;
    }
    k->file_bytes = (uint64_t)st.st_size;
    free(buf);
    free(coord);
    free(varids);
    return 0;
fail:
    if (ncid >= 0)
        nc_close(ncid);
    k->failed = 1;
    free(buf);
    free(coord);
    free(varids);
    return 1;
}

static int verify_file(int rank, void *arg)
{
    struct ctx *c = arg;
    const struct opts *o = c->o;
    struct counts *k = &c->counts[rank];
    size_t slab = (size_t)(o->nz * o->ny * o->nx);
    float *buf = malloc(slab * sizeof *buf);
    char path[PATH_MAX];
    int ncid = -1, varid;
    size_t nrec;
    int dimid;

    snprintf(path, sizeof path, "%s/out.%04d.nc", o->dir, rank);
    if (buf == NULL)
        goto fail;
    NC_TRY(nc_open(path, NC_NOWRITE, &ncid));
    NC_TRY(nc_inq_dimid(ncid, "time", &dimid));
    NC_TRY(nc_inq_dimlen(ncid, dimid, &nrec));
    if (nrec != o->steps) {
        bench_error(prog, 0, "%s has %zu records, expected %" PRIu64, path, nrec, o->steps);
        k->mismatches++;
    }
    for (uint64_t v = 0; v < o->vars; v++) {
        char name[32];

        snprintf(name, sizeof name, "v%" PRIu64, v);
        NC_TRY(nc_inq_varid(ncid, name, &varid));
        for (uint64_t t = 0; t < o->steps && t < nrec; t++) {
            size_t start[4] = {(size_t)t, 0, 0, 0};
            size_t count[4] = {1, (size_t)o->nz, (size_t)o->ny, (size_t)o->nx};

            NC_TRY(nc_get_vara_float(ncid, varid, start, count, buf));
            for (size_t i = 0; i < slab; i++)
                k->mismatches += buf[i] != value(o, (uint64_t)rank, v, t, i);
        }
    }
    NC_TRY(nc_close(ncid));
    free(buf);
    return 0;
fail:
    if (ncid >= 0)
        nc_close(ncid);
    k->failed = 1;
    free(buf);
    return 1;
}

int main(int argc, char **argv)
{
    static const char *const formats[] = {"classic", "64bit", "netcdf4", NULL};
    static const int format_cmodes[] = {0, NC_64BIT_OFFSET, NC_NETCDF4};
    struct opts o = {.procs = 8, .nx = 96, .ny = 96, .nz = 5, .vars = 4, .steps = 4};
    int format = 1;  /* 64bit */
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("dir", &o.dir),
        BENCH_OPT_COUNT("procs", &o.procs),
        BENCH_OPT_COUNT("nx", &o.nx),
        BENCH_OPT_COUNT("ny", &o.ny),
        BENCH_OPT_COUNT("nz", &o.nz),
        BENCH_OPT_COUNT("vars", &o.vars),
        BENCH_OPT_COUNT("steps", &o.steps),
        BENCH_OPT_CHOICE("format", &format, formats),
        BENCH_OPT_FLAG("nofill", &o.nofill, 1),
        BENCH_OPT_FLAG("verify", &o.verify, 1),
        BENCH_OPT_END,
    };
    struct counts *counts;
    uint64_t data_bytes = 0, file_bytes = 0, puts = 0, mismatches = 0;
    struct bench_group g;
    struct ctx cx;
    double seconds, verify_seconds = 0;

    bench_parse_options(prog, argc, argv, options, usage);
    o.format = formats[format];
    o.cmode = format_cmodes[format];
    bench_check_procs(prog, o.procs);
    if (o.nx == 0 || o.ny == 0 || o.nz == 0 || o.vars == 0 || o.vars > 1000)
        bench_die(prog, 0, "--nx, --ny, --nz must be positive and --vars 1..1000");
    if (o.nx * o.ny * o.nz > (256u << 20) / sizeof(float))
        bench_die(prog, 0, "a field record (nx*ny*nz floats) must fit in 256 MiB");
    if (bench_mkdir(o.dir) != 0)
        bench_die(prog, 1, "mkdir %s", o.dir);

    counts = bench_shared_alloc(sizeof *counts * o.procs, prog);
    cx.o = &o;
    cx.counts = counts;
    bench_spawn(&g, (int)o.procs, write_file, &cx, prog);
    seconds = bench_finish_group(&g, prog, "writers", bench_now());
    if (o.verify) {
        double v0 = bench_now();

        bench_spawn(&g, (int)o.procs, verify_file, &cx, prog);
        verify_seconds = bench_finish_group(&g, prog, "verifiers", v0);
    }
    for (uint64_t p = 0; p < o.procs; p++) {
        data_bytes += counts[p].data_bytes;
        file_bytes += counts[p].file_bytes;
        puts += counts[p].puts;
        mismatches += counts[p].mismatches;
    }

    printf("{\"workload\":\"fpp-netcdf\",\"format\":\"%s\",\"procs\":%" PRIu64
           ",\"files\":%" PRIu64 ",\"nx\":%" PRIu64 ",\"ny\":%" PRIu64 ",\"nz\":%" PRIu64
           ",\"vars\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"fill\":%s,\"data_bytes\":%" PRIu64
           ",\"file_bytes\":%" PRIu64 ",\"nc_puts\":%" PRIu64 ",\"seconds\":%.9f"
           ",\"verified\":%s,\"mismatches\":%" PRIu64 ",\"verify_seconds\":%.9f}\n",
           o.format, o.procs, o.procs, o.nx, o.ny, o.nz, o.vars, o.steps,
           o.nofill ? "false" : "true", data_bytes, file_bytes, puts, seconds,
           o.verify ? "true" : "false", mismatches, verify_seconds);
    return bench_exit_status(mismatches == 0);
}
