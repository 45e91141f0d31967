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

#include <errno.h>
#include <getopt.h>
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
            fprintf(stderr, "%s: error: rank %d: %s: %s: %s\n", prog, rank, path, #call,     \
                    nc_strerror(nc_rc_));                                                   \
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
        fprintf(stderr, "%s: error: rank %d: out of memory\n", prog, rank);
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
        fprintf(stderr, "%s: error: stat %s: %s\n", prog, path, strerror(errno));
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
        fprintf(stderr, "%s: error: %s has %zu records, expected %" PRIu64 "\n", prog, path,
                nrec, o->steps);
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
    static const struct option longopts[] = {
        {"dir", required_argument, NULL, 'd'},
        {"procs", required_argument, NULL, 'P'},
        {"nx", required_argument, NULL, 'x'},
        {"ny", required_argument, NULL, 'y'},
        {"nz", required_argument, NULL, 'z'},
        {"vars", required_argument, NULL, 'v'},
        {"steps", required_argument, NULL, 'S'},
        {"format", required_argument, NULL, 'f'},
        {"nofill", no_argument, NULL, 'N'},
        {"verify", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {
        .procs = 8, .nx = 96, .ny = 96, .nz = 5, .vars = 4, .steps = 4,
        .cmode = NC_64BIT_OFFSET, .format = "64bit",
    };
    struct counts *counts;
    uint64_t data_bytes = 0, file_bytes = 0, puts = 0, mismatches = 0;
    struct bench_group g;
    struct ctx cx;
    double t0, t1, verify_seconds = 0;
    int c, li = 0, failed;

    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        uint64_t *num = NULL;

        switch (c) {
        case 'd': o.dir = optarg; continue;
        case 'P': num = &o.procs; break;
        case 'x': num = &o.nx; break;
        case 'y': num = &o.ny; break;
        case 'z': num = &o.nz; break;
        case 'v': num = &o.vars; break;
        case 'S': num = &o.steps; break;
        case 'f':
            o.format = optarg;
            if (strcmp(optarg, "classic") == 0)
                o.cmode = 0;
            else if (strcmp(optarg, "64bit") == 0)
                o.cmode = NC_64BIT_OFFSET;
            else if (strcmp(optarg, "netcdf4") == 0)
                o.cmode = NC_NETCDF4;
            else
                bench_die(prog, 0, "bad --format '%s' (classic, 64bit or netcdf4)", optarg);
            continue;
        case 'N': o.nofill = 1; continue;
        case 'V': o.verify = 1; continue;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bench_parse_u64(optarg, num) != 0)
            bench_die(prog, 0, "bad value '%s' for --%s", optarg, longopts[li].name);
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (o.dir == NULL)
        bench_die(prog, 0, "--dir is required (see --help)");
    if (o.procs == 0 || o.procs > 4096)
        bench_die(prog, 0, "--procs must be 1..4096");
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
    t0 = bench_now();
    bench_release(&g);
    failed = bench_wait(&g);
    t1 = bench_now();
    if (failed)
        bench_die(prog, 0, "%d of %" PRIu64 " writers failed", failed, o.procs);
    if (o.verify) {
        double v0 = bench_now();

        bench_spawn(&g, (int)o.procs, verify_file, &cx, prog);
        bench_release(&g);
        failed = bench_wait(&g);
        verify_seconds = bench_now() - v0;
        if (failed)
            bench_die(prog, 0, "%d of %" PRIu64 " verifiers failed", failed, o.procs);
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
           o.nofill ? "false" : "true", data_bytes, file_bytes, puts, t1 - t0,
           o.verify ? "true" : "false", mismatches, verify_seconds);
    if (fflush(stdout) != 0)
        return 1;
    return mismatches == 0 ? 0 : 1;
}
