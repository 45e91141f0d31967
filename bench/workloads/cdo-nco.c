/*
 * sluice-bench-cdo-nco: the project's own stand-in for the CDO and NCO
 * operators of a climate post-processing workflow (the cdo-nco workload),
 * one short process per step, with the file pattern of the real tools:
 *
 *   setup    make the ensemble's inputs: DIR/in_K.nc, K = 1..N, netCDF-4
 *   timmean  IN OUT         (cdo timmean)  read T steps, write their mean to OUT,
 *                           created in place (NC_CLOBBER), as CDO does
 *   ncap2    -s 'tas_c=tas-273.15f' IN OUT
 *                           (ncap2)  IN copied with tas_c added, into
 *                           OUT.pid<PID>.ncap2.tmp next to OUT (O_EXCL), then
 *                           system("/bin/mv -f TMP OUT"), as NCO does
 *   ensmean  IN... OUT      (cdo ensmean)  every input open at once, the mean
 *                           of each float field written to OUT in place
 *   nces     IN... OUT      (nces)  the same mean, inputs read one after the
 *                           other, through a temporary file and /bin/mv
 *   ncks     -v VAR IN OUT  (ncks)  VAR and its coordinates, through a
 *                           temporary file and /bin/mv
 *   digest   FILE...        one JSON line: per file a 64-bit FNV-1a hash of its
 *                           netCDF content (dimensions, variables, attributes,
 *                           data) without the global attribute "history"
 *                           (CDO and NCO put the time of day in it)
 *
 * The operators print nothing and exit 0, or print one error line and exit 1.
 * setup and digest print one JSON line. Nothing writes a time into a file, so
 * two runs give byte-identical files.
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
#include <sys/wait.h>
#include <unistd.h>

static const char *prog = "sluice-bench-cdo-nco";

/* the derived variable of the field report's ncap2 step */
#define NCAP2_EXPR "tas_c=tas-273.15f"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s setup --dir DIR [--members N] [--steps T] [--nx X] [--ny Y]\n"
        "       %s timmean IN OUT\n"
        "       %s ncap2 -s 'tas_c=tas-273.15f' IN OUT\n"
        "       %s ensmean IN... OUT\n"
        "       %s nces IN... OUT\n"
        "       %s ncks -v VAR IN OUT\n"
        "       %s digest FILE...\n"
        "\n"
        "Stand-ins for the CDO and NCO operators of a climate post-processing\n"
        "workflow, each step one short process with the real tool's file pattern\n"
        "(docs/benchmarks.md, \"A CDO/NCO post-processing workflow\").\n"
        "\n"
        "  setup    make DIR/in_K.nc, K = 1..N (netCDF-4): tas(time, lat, lon),\n"
        "           T time steps of Y x X floats, with time, lat, lon coordinates\n"
        "           (defaults: --members 40 --steps 12 --nx 128 --ny 64); one JSON line\n"
        "  timmean  the mean over time of every variable with a time dimension,\n"
        "           written to OUT in place (cdo timmean)\n"
        "  ncap2    IN copied with tas_c = tas - 273.15 added, written to\n"
        "           OUT.pid<PID>.ncap2.tmp (O_EXCL) and moved to OUT with\n"
        "           system(\"/bin/mv -f TMP OUT\") (ncap2 -s 'tas_c=tas-273.15f')\n"
        "  ensmean  the mean over the inputs of every float variable, all inputs\n"
        "           open at once, OUT written in place (cdo ensmean)\n"
        "  nces     the same mean, one input at a time, through a temporary file (nces)\n"
        "  ncks     VAR and the coordinates it uses, through a temporary file (ncks -v VAR)\n"
        "  digest   per file its size and a hash of its netCDF content without the\n"
        "           global attribute history; one JSON line\n"
        "  -h, --help  this text\n",
        prog, prog, prog, prog, prog, prog, prog);
}

#define NC_CHECK(call, what)                                                              \
    do {                                                                                  \
        int nc_rc_ = (call);                                                              \
        if (nc_rc_ != NC_NOERR)                                                           \
            bench_die(prog, 0, "%s: %s: %s", (what), #call, nc_strerror(nc_rc_));         \
    } while (0)

/* ------------------------------------------------------------------------ */
/* setup */

static float input_value(uint64_t member, uint64_t t, uint64_t j, uint64_t i)
{
    /* a field with structure, different per member and step, exact in float */
    uint64_t h = bench_mix64(member * 1000003u + t * 7919u + j * 131u + i) % 4096u;
    return 230.0f + (float)((j * 7u + i * 3u + t * 11u) % 700u) / 10.0f + (float)member +
           (float)h / 4096.0f;
}

static int put_text(int ncid, int varid, const char *name, const char *text)
{
    return nc_put_att_text(ncid, varid, name, strlen(text), text);
}

static void setup(int argc, char **argv)
{
    const char *dir = NULL;
    uint64_t members = 40, steps = 12, nx = 128, ny = 64;
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("dir", &dir),
        BENCH_OPT_COUNT("members", &members),
        BENCH_OPT_COUNT("steps", &steps),
        BENCH_OPT_COUNT("nx", &nx),
        BENCH_OPT_COUNT("ny", &ny),
        BENCH_OPT_END,
    };
    uint64_t file_bytes = 0;
    double t0;

    bench_parse_options(prog, argc, argv, options, usage);
    if (members == 0 || members > 100000 || steps == 0 || nx == 0 || ny == 0)
        bench_die(prog, 0, "--members 1..100000, --steps, --nx and --ny positive");
    if (nx * ny > (64u << 20) / sizeof(float))
        bench_die(prog, 0, "a field (nx*ny floats) must fit in 64 MiB");
    if (bench_mkdir(dir) != 0)
        bench_die(prog, 1, "mkdir %s", dir);
    t0 = bench_now();

    float *field = malloc((size_t)(nx * ny) * sizeof *field);
    double *coord = malloc((size_t)(nx > ny ? nx : ny) * sizeof *coord);
    if (field == NULL || coord == NULL)
        bench_die(prog, 0, "out of memory");
    for (uint64_t m = 1; m <= members; m++) {
        char path[PATH_MAX];
        int ncid, dims[3], tvar, yvar, xvar, var;
        struct stat st;

        snprintf(path, sizeof path, "%s/in_%" PRIu64 ".nc", dir, m);
        NC_CHECK(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid), path);
        NC_CHECK(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]), path);
        NC_CHECK(nc_def_dim(ncid, "lat", (size_t)ny, &dims[1]), path);
        NC_CHECK(nc_def_dim(ncid, "lon", (size_t)nx, &dims[2]), path);
        NC_CHECK(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dims[0], &tvar), path);
        NC_CHECK(put_text(ncid, tvar, "standard_name", "time"), path);
        NC_CHECK(put_text(ncid, tvar, "units", "days since 2000-01-01 00:00:00"), path);
        NC_CHECK(put_text(ncid, tvar, "calendar", "standard"), path);
        NC_CHECK(nc_def_var(ncid, "lat", NC_DOUBLE, 1, &dims[1], &yvar), path);
        NC_CHECK(put_text(ncid, yvar, "standard_name", "latitude"), path);
        NC_CHECK(put_text(ncid, yvar, "units", "degrees_north"), path);
        NC_CHECK(nc_def_var(ncid, "lon", NC_DOUBLE, 1, &dims[2], &xvar), path);
        NC_CHECK(put_text(ncid, xvar, "standard_name", "longitude"), path);
        NC_CHECK(put_text(ncid, xvar, "units", "degrees_east"), path);
        NC_CHECK(nc_def_var(ncid, "tas", NC_FLOAT, 3, dims, &var), path);
        NC_CHECK(put_text(ncid, var, "standard_name", "air_temperature"), path);
        NC_CHECK(put_text(ncid, var, "units", "K"), path);
        NC_CHECK(put_text(ncid, NC_GLOBAL, "Conventions", "CF-1.6"), path);
        NC_CHECK(nc_put_att_int(ncid, NC_GLOBAL, "realization", NC_INT, 1, (const int[]){(int)m}), path);
        NC_CHECK(nc_enddef(ncid), path);
        for (uint64_t j = 0; j < ny; j++)
            coord[j] = -90.0 + 180.0 * ((double)j + 0.5) / (double)ny;
        NC_CHECK(nc_put_var_double(ncid, yvar, coord), path);
        for (uint64_t i = 0; i < nx; i++)
            coord[i] = 360.0 * (double)i / (double)nx;
        NC_CHECK(nc_put_var_double(ncid, xvar, coord), path);
        for (uint64_t t = 0; t < steps; t++) {
            size_t start[3] = {(size_t)t, 0, 0}, count[3] = {1, (size_t)ny, (size_t)nx};
            size_t s1 = (size_t)t, c1 = 1;
            double day = 15.0 + 30.0 * (double)t;

            for (uint64_t j = 0; j < ny; j++)
                for (uint64_t i = 0; i < nx; i++)
                    field[j * nx + i] = input_value(m, t, j, i);
            NC_CHECK(nc_put_vara_double(ncid, tvar, &s1, &c1, &day), path);
            NC_CHECK(nc_put_vara_float(ncid, var, start, count, field), path);
        }
        NC_CHECK(nc_close(ncid), path);
        if (stat(path, &st) != 0)
            bench_die(prog, 1, "stat %s", path);
        file_bytes += (uint64_t)st.st_size;
    }
    free(field);
    free(coord);
    bench_json_begin("cdo-nco", "setup", "dir", dir);
    printf(",\"members\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"nx\":%" PRIu64 ",\"ny\":%" PRIu64
           ",\"file_bytes\":%" PRIu64 ",\"seconds\":%.6f}\n",
           members, steps, nx, ny, file_bytes, bench_now() - t0);
    exit(bench_exit_status(1));
}

/* ------------------------------------------------------------------------ */
/* Copying a file's definitions and data, as the NCO operators do */

static size_t type_size(int ncid, nc_type type, const char *what)
{
    size_t n;

    NC_CHECK(nc_inq_type(ncid, type, NULL, &n), what);
    return n;
}

/* The shape of variable v: its dimension count, lengths (and their product). */
static size_t var_shape(int ncid, int v, int *ndims, size_t *lens, const char *what)
{
    int dimids[NC_MAX_VAR_DIMS];
    size_t n = 1;

    NC_CHECK(nc_inq_varndims(ncid, v, ndims), what);
    NC_CHECK(nc_inq_vardimid(ncid, v, dimids), what);
    for (int d = 0; d < *ndims; d++) {
        NC_CHECK(nc_inq_dimlen(ncid, dimids[d], &lens[d]), what);
        n *= lens[d];
    }
    return n;
}

static void *read_var(int ncid, int v, size_t *nvalues, const char *what)
{
    int ndims;
    size_t lens[NC_MAX_VAR_DIMS], start[NC_MAX_VAR_DIMS] = {0};
    nc_type type;
    size_t n = var_shape(ncid, v, &ndims, lens, what);
    void *buf;

    NC_CHECK(nc_inq_vartype(ncid, v, &type), what);
    buf = malloc(n * type_size(ncid, type, what) + 1);
    if (buf == NULL)
        bench_die(prog, 0, "%s: out of memory", what);
    if (n > 0)
        NC_CHECK(nc_get_vara(ncid, v, start, lens, buf), what);
    *nvalues = n;
    return buf;
}

static void write_var(int ncid, int v, const size_t *lens, const void *buf, const char *what)
{
    int ndims;
    size_t start[NC_MAX_VAR_DIMS] = {0};

    NC_CHECK(nc_inq_varndims(ncid, v, &ndims), what);
    for (int d = 0; d < ndims; d++)
        if (lens[d] == 0)
            return;
    NC_CHECK(nc_put_vara(ncid, v, start, lens, buf), what);
}

static void copy_atts(int in, int vin, int out, int vout, const char *what)
{
    int natts;

    NC_CHECK(nc_inq_varnatts(in, vin, &natts), what);
    for (int a = 0; a < natts; a++) {
        char name[NC_MAX_NAME + 1];

        NC_CHECK(nc_inq_attname(in, vin, a, name), what);
        NC_CHECK(nc_copy_att(in, vin, name, out, vout), what);
    }
}

/* Variable v of `in` uses dimension d? */
static int uses_dim(int in, int v, int d, const char *what)
{
    int ndims, dimids[NC_MAX_VAR_DIMS];

    NC_CHECK(nc_inq_varndims(in, v, &ndims), what);
    NC_CHECK(nc_inq_vardimid(in, v, dimids), what);
    for (int i = 0; i < ndims; i++)
        if (dimids[i] == d)
            return 1;
    return 0;
}

/*
 * Define in `out` the dimensions of `in` that the variables keep[v] says
 * use, and those variables, with their attributes, and the global
 * attributes. Variable ids are the same in both files when every variable
 * is kept.
 */
static void copy_defs(int in, int out, const int *keep, const char *what)
{
    int ndims, nvars, unlim;
    int *dimmap;

    NC_CHECK(nc_inq(in, &ndims, &nvars, NULL, &unlim), what);
    dimmap = calloc((size_t)ndims + 1, sizeof *dimmap);
    if (dimmap == NULL)
        bench_die(prog, 0, "out of memory");
    for (int d = 0; d < ndims; d++) {
        char name[NC_MAX_NAME + 1];
        size_t len;
        int used = 0;

        for (int v = 0; v < nvars && !used; v++)
            used = keep[v] && uses_dim(in, v, d, what);
        dimmap[d] = -1;
        if (!used)
            continue;
        NC_CHECK(nc_inq_dim(in, d, name, &len), what);
        NC_CHECK(nc_def_dim(out, name, d == unlim ? NC_UNLIMITED : len, &dimmap[d]), what);
    }
    for (int v = 0; v < nvars; v++) {
        char name[NC_MAX_NAME + 1];
        nc_type type;
        int nd, dimids[NC_MAX_VAR_DIMS], vout;

        if (!keep[v])
            continue;
        NC_CHECK(nc_inq_var(in, v, name, &type, &nd, dimids, NULL), what);
        for (int i = 0; i < nd; i++)
            dimids[i] = dimmap[dimids[i]];
        NC_CHECK(nc_def_var(out, name, type, nd, dimids, &vout), what);
        copy_atts(in, v, out, vout, what);
    }
    copy_atts(in, NC_GLOBAL, out, NC_GLOBAL, what);
    free(dimmap);
}

/* The NCO way of writing OUT: a temporary file next to it, then /bin/mv. */
static void tmp_name(char *tmp, size_t n, const char *out, const char *op)
{
    snprintf(tmp, n, "%s.pid%ld.%s.tmp", out, (long)getpid(), op);
}

static void check_output_names(const char *tmp, const char *out)
{
    struct stat st;

    /* as NCO: is a temporary file of that name there, does OUT exist */
    if (stat(tmp, &st) == 0)
        bench_die(prog, 0, "temporary file %s exists", tmp);
    (void)stat(out, &st);
}

static void move_into_place(const char *tmp, const char *out)
{
    char cmd[2 * PATH_MAX + 32];
    int rc;

    /* NCO's nco_fl_mv: system("/bin/mv -f TMP OUT") */
    if (strchr(tmp, '\'') || strchr(out, '\''))
        bench_die(prog, 0, "a file name with a quote: %s", out);
    snprintf(cmd, sizeof cmd, "/bin/mv -f '%s' '%s'", tmp, out);
    rc = system(cmd);
    if (rc == -1)
        bench_die(prog, 1, "system(%s)", cmd);
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        bench_die(prog, 0, "%s failed (status %d)", cmd, rc);
}

static int open_input(const char *path)
{
    struct stat st;
    int ncid;

    if (stat(path, &st) != 0)
        bench_die(prog, 1, "%s", path);
    NC_CHECK(nc_open(path, NC_NOWRITE, &ncid), path);
    return ncid;
}

/* ------------------------------------------------------------------------ */
/* timmean (CDO: the output created in place) */

static void timmean(const char *in_path, const char *out_path)
{
    int in = open_input(in_path), out, nvars, unlim, bvar, bdim, tvar;
    int keep[NC_MAX_VARS];
    char tname[NC_MAX_NAME + 1];
    struct stat st;

    NC_CHECK(nc_inq(in, NULL, &nvars, NULL, &unlim), in_path);
    if (unlim < 0)
        bench_die(prog, 0, "%s: no time (unlimited) dimension", in_path);
    NC_CHECK(nc_inq_dimname(in, unlim, tname), in_path);
    NC_CHECK(nc_inq_varid(in, tname, &tvar), in_path);
    if (nvars > NC_MAX_VARS)
        bench_die(prog, 0, "%s: too many variables", in_path);
    for (int v = 0; v < nvars; v++)
        keep[v] = 1;
    (void)stat(out_path, &st);
    NC_CHECK(nc_create(out_path, NC_NETCDF4 | NC_CLOBBER, &out), out_path);
    copy_defs(in, out, keep, out_path);
    NC_CHECK(nc_def_dim(out, "bnds", 2, &bdim), out_path);
    {
        int tdim;
        int dims[2];

        NC_CHECK(nc_inq_unlimdim(out, &tdim), out_path);
        dims[0] = tdim;
        dims[1] = bdim;
        NC_CHECK(nc_def_var(out, "time_bnds", NC_DOUBLE, 2, dims, &bvar), out_path);
    }
    for (int v = 0; v < nvars; v++)
        if (v != tvar && uses_dim(in, v, unlim, in_path))
            NC_CHECK(put_text(out, v, "cell_methods", "time: mean"), out_path);
    NC_CHECK(put_text(out, tvar, "bounds", "time_bnds"), out_path);
    NC_CHECK(nc_enddef(out), out_path);

    for (int v = 0; v < nvars; v++) {
        int ndims;
        size_t lens[NC_MAX_VAR_DIMS], n;
        nc_type type;
        void *buf = read_var(in, v, &n, in_path);

        var_shape(in, v, &ndims, lens, in_path);
        NC_CHECK(nc_inq_vartype(in, v, &type), in_path);
        if (ndims > 0 && uses_dim(in, v, unlim, in_path)) {
            size_t steps = lens[0], per = steps ? n / steps : 0;

            if (steps == 0)
                bench_die(prog, 0, "%s: no time steps", in_path);
            if (type == NC_FLOAT) {
                float *f = buf;
                for (size_t i = 0; i < per; i++) {
                    double s = 0;
                    for (size_t t = 0; t < steps; t++)
                        s += f[t * per + i];
                    f[i] = (float)(s / (double)steps);
                }
            } else if (type == NC_DOUBLE) {
                double *f = buf;
                double b[2] = {f[0], f[(steps - 1) * per]};
                size_t bl[2] = {1, 2};

                for (size_t i = 0; i < per; i++) {
                    double s = 0;
                    for (size_t t = 0; t < steps; t++)
                        s += f[t * per + i];
                    f[i] = s / (double)steps;
                }
                if (v == tvar)
                    write_var(out, bvar, bl, b, out_path);
            } else {
                bench_die(prog, 0, "%s: a time-varying variable of type %d", in_path, (int)type);
            }
            lens[0] = 1;
        }
        write_var(out, v, lens, buf, out_path);
        free(buf);
    }
    NC_CHECK(nc_close(out), out_path);
    NC_CHECK(nc_close(in), in_path);
}

/* ------------------------------------------------------------------------ */
/* ncap2 -s 'tas_c=tas-273.15f' (NCO: a temporary file, then /bin/mv) */

static void ncap2(const char *in_path, const char *out_path)
{
    char tmp[PATH_MAX];
    int in = open_input(in_path), out, nvars, tas, tas_c, keep[NC_MAX_VARS];

    NC_CHECK(nc_inq_nvars(in, &nvars), in_path);
    if (nvars > NC_MAX_VARS)
        bench_die(prog, 0, "%s: too many variables", in_path);
    for (int v = 0; v < nvars; v++)
        keep[v] = 1;
    NC_CHECK(nc_inq_varid(in, "tas", &tas), in_path);
    tmp_name(tmp, sizeof tmp, out_path, "ncap2");
    check_output_names(tmp, out_path);
    NC_CHECK(nc_create(tmp, NC_NETCDF4 | NC_NOCLOBBER, &out), tmp);
    copy_defs(in, out, keep, tmp);
    {
        int nd, dimids[NC_MAX_VAR_DIMS];

        NC_CHECK(nc_inq_var(in, tas, NULL, NULL, &nd, dimids, NULL), in_path);
        NC_CHECK(nc_def_var(out, "tas_c", NC_FLOAT, nd, dimids, &tas_c), tmp);
        NC_CHECK(put_text(out, tas_c, "units", "degC"), tmp);
    }
    NC_CHECK(nc_enddef(out), tmp);
    for (int v = 0; v < nvars; v++) {
        int ndims;
        size_t lens[NC_MAX_VAR_DIMS], n;
        void *buf = read_var(in, v, &n, in_path);

        var_shape(in, v, &ndims, lens, in_path);
        write_var(out, v, lens, buf, tmp);
        if (v == tas) {
            float *f = buf;
            for (size_t i = 0; i < n; i++)
                f[i] = f[i] - 273.15f;
            write_var(out, tas_c, lens, f, tmp);
        }
        free(buf);
    }
    NC_CHECK(nc_close(out), tmp);
    NC_CHECK(nc_close(in), in_path);
    move_into_place(tmp, out_path);
}

/* ------------------------------------------------------------------------ */
/* ensmean (CDO, in place, all inputs open) and nces (NCO, one at a time, tmp) */

static void ensemble_mean(int nin, char **inputs, const char *out_path, int nco)
{
    char tmp[PATH_MAX];
    const char *dest = out_path;
    int first, out, nvars, keep[NC_MAX_VARS];
    int *ids = calloc((size_t)nin, sizeof *ids);
    double **sums;
    size_t *counts;

    if (ids == NULL)
        bench_die(prog, 0, "out of memory");
    first = ids[0] = open_input(inputs[0]);
    if (!nco)  /* cdo ensmean opens every input before it reads */
        for (int k = 1; k < nin; k++)
            ids[k] = open_input(inputs[k]);
    NC_CHECK(nc_inq_nvars(first, &nvars), inputs[0]);
    if (nvars > NC_MAX_VARS)
        bench_die(prog, 0, "%s: too many variables", inputs[0]);
    sums = calloc((size_t)nvars, sizeof *sums);
    counts = calloc((size_t)nvars, sizeof *counts);
    if (sums == NULL || counts == NULL)
        bench_die(prog, 0, "out of memory");
    for (int k = 0; k < nin; k++) {
        int ncid = ids[k];

        if (nco && k > 0)
            ncid = open_input(inputs[k]);
        for (int v = 0; v < nvars; v++) {
            nc_type type;
            size_t n;
            float *f;

            NC_CHECK(nc_inq_vartype(ncid, v, &type), inputs[k]);
            if (type != NC_FLOAT)
                continue;
            f = read_var(ncid, v, &n, inputs[k]);
            if (k == 0) {
                counts[v] = n;
                sums[v] = calloc(n + 1, sizeof **sums);
                if (sums[v] == NULL)
                    bench_die(prog, 0, "out of memory");
            } else if (n != counts[v]) {
                bench_die(prog, 0, "%s: variable %d has %zu values, %s %zu", inputs[k], v, n, inputs[0],
                          counts[v]);
            }
            for (size_t i = 0; i < n; i++)
                sums[v][i] += f[i];
            free(f);
        }
        if (k > 0)
            NC_CHECK(nc_close(ncid), inputs[k]);
    }
    if (nco) {
        tmp_name(tmp, sizeof tmp, out_path, "nces");
        check_output_names(tmp, out_path);
        dest = tmp;
        NC_CHECK(nc_create(tmp, NC_NETCDF4 | NC_NOCLOBBER, &out), tmp);
    } else {
        struct stat st;

        (void)stat(out_path, &st);
        NC_CHECK(nc_create(out_path, NC_NETCDF4 | NC_CLOBBER, &out), out_path);
    }
    for (int v = 0; v < nvars; v++)
        keep[v] = 1;
    copy_defs(first, out, keep, dest);
    NC_CHECK(nc_enddef(out), dest);
    for (int v = 0; v < nvars; v++) {
        int ndims;
        size_t lens[NC_MAX_VAR_DIMS], n;
        void *buf = read_var(first, v, &n, inputs[0]);

        var_shape(first, v, &ndims, lens, inputs[0]);
        if (sums[v] != NULL) {
            float *f = buf;
            for (size_t i = 0; i < n; i++)
                f[i] = (float)(sums[v][i] / (double)nin);
        }
        write_var(out, v, lens, buf, dest);
        free(buf);
        free(sums[v]);
    }
    NC_CHECK(nc_close(out), dest);
    NC_CHECK(nc_close(first), inputs[0]);
    if (nco)
        move_into_place(tmp, out_path);
    free(sums);
    free(counts);
    free(ids);
}

/* ------------------------------------------------------------------------ */
/* ncks -v VAR (NCO: a temporary file, then /bin/mv) */

static void ncks(const char *var, const char *in_path, const char *out_path)
{
    char tmp[PATH_MAX];
    int in = open_input(in_path), out, nvars, want, keep[NC_MAX_VARS];
    int nd, dimids[NC_MAX_VAR_DIMS];

    NC_CHECK(nc_inq_nvars(in, &nvars), in_path);
    if (nvars > NC_MAX_VARS)
        bench_die(prog, 0, "%s: too many variables", in_path);
    NC_CHECK(nc_inq_varid(in, var, &want), in_path);
    NC_CHECK(nc_inq_var(in, want, NULL, NULL, &nd, dimids, NULL), in_path);
    for (int v = 0; v < nvars; v++) {
        char name[NC_MAX_NAME + 1];

        /* VAR and the coordinate variables of its dimensions */
        NC_CHECK(nc_inq_varname(in, v, name), in_path);
        keep[v] = v == want;
        for (int i = 0; i < nd && !keep[v]; i++) {
            char dname[NC_MAX_NAME + 1];

            NC_CHECK(nc_inq_dimname(in, dimids[i], dname), in_path);
            keep[v] = strcmp(dname, name) == 0;
        }
    }
    tmp_name(tmp, sizeof tmp, out_path, "ncks");
    check_output_names(tmp, out_path);
    NC_CHECK(nc_create(tmp, NC_NETCDF4 | NC_NOCLOBBER, &out), tmp);
    copy_defs(in, out, keep, tmp);
    NC_CHECK(nc_enddef(out), tmp);
    for (int v = 0, vout = 0; v < nvars; v++) {
        int ndims;
        size_t lens[NC_MAX_VAR_DIMS], n;
        void *buf;

        if (!keep[v])
            continue;
        buf = read_var(in, v, &n, in_path);
        var_shape(in, v, &ndims, lens, in_path);
        write_var(out, vout++, lens, buf, tmp);
        free(buf);
    }
    NC_CHECK(nc_close(out), tmp);
    NC_CHECK(nc_close(in), in_path);
    move_into_place(tmp, out_path);
}

/* ------------------------------------------------------------------------ */
/* digest: FNV-1a over the content, without the global history attribute */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    return fnv(h, s, strlen(s) + 1);
}

static uint64_t digest_atts(uint64_t h, int ncid, int v, const char *what)
{
    int natts;

    NC_CHECK(nc_inq_varnatts(ncid, v, &natts), what);
    for (int a = 0; a < natts; a++) {
        char name[NC_MAX_NAME + 1];
        nc_type type;
        size_t len;
        void *buf;

        NC_CHECK(nc_inq_attname(ncid, v, a, name), what);
        if (v == NC_GLOBAL && strcmp(name, "history") == 0)
            continue;
        NC_CHECK(nc_inq_att(ncid, v, name, &type, &len), what);
        if (type == NC_STRING)
            bench_die(prog, 0, "%s: attribute %s is of type string (not handled)", what, name);
        buf = malloc(len * type_size(ncid, type, what) + 1);
        if (buf == NULL)
            bench_die(prog, 0, "out of memory");
        NC_CHECK(nc_get_att(ncid, v, name, buf), what);
        h = fnv_str(h, name);
        h = fnv(h, &type, sizeof type);
        h = fnv(h, &len, sizeof len);
        h = fnv(h, buf, len * type_size(ncid, type, what));
        free(buf);
    }
    return h;
}

static uint64_t digest_file(const char *path)
{
    uint64_t h = 0xcbf29ce484222325ull;
    int ncid, ndims, nvars, unlim, format;

    NC_CHECK(nc_open(path, NC_NOWRITE, &ncid), path);
    NC_CHECK(nc_inq(ncid, &ndims, &nvars, NULL, &unlim), path);
    NC_CHECK(nc_inq_format(ncid, &format), path);
    h = fnv(h, &format, sizeof format);
    h = fnv(h, &unlim, sizeof unlim);
    for (int d = 0; d < ndims; d++) {
        char name[NC_MAX_NAME + 1];
        size_t len;

        NC_CHECK(nc_inq_dim(ncid, d, name, &len), path);
        h = fnv_str(h, name);
        h = fnv(h, &len, sizeof len);
    }
    for (int v = 0; v < nvars; v++) {
        char name[NC_MAX_NAME + 1];
        nc_type type;
        int nd, dimids[NC_MAX_VAR_DIMS];
        size_t n;
        void *buf;

        NC_CHECK(nc_inq_var(ncid, v, name, &type, &nd, dimids, NULL), path);
        if (type == NC_STRING)
            bench_die(prog, 0, "%s: variable %s is of type string (not handled)", path, name);
        h = fnv_str(h, name);
        h = fnv(h, &type, sizeof type);
        h = fnv(h, dimids, (size_t)nd * sizeof *dimids);
        h = digest_atts(h, ncid, v, path);
        buf = read_var(ncid, v, &n, path);
        h = fnv(h, buf, n * type_size(ncid, type, path));
        free(buf);
    }
    h = digest_atts(h, ncid, NC_GLOBAL, path);
    NC_CHECK(nc_close(ncid), path);
    return h;
}

static void digest(int n, char **files)
{
    uint64_t *hashes = calloc((size_t)n, sizeof *hashes);

    if (hashes == NULL)
        bench_die(prog, 0, "out of memory");
    for (int i = 0; i < n; i++)  /* every file first: no half a JSON line on an error */
        hashes[i] = digest_file(files[i]);
    printf("{\"workload\":\"cdo-nco\",\"phase\":\"digest\",\"files\":[");
    for (int i = 0; i < n; i++) {
        struct stat st;

        if (stat(files[i], &st) != 0)
            bench_die(prog, 1, "%s", files[i]);
        printf("%s{\"path\":", i ? "," : "");
        bench_json_str(files[i]);
        printf(",\"bytes\":%lld,\"content\":\"%016" PRIx64 "\"}", (long long)st.st_size, hashes[i]);
    }
    printf("]}\n");
    free(hashes);
    exit(bench_exit_status(1));
}

/* ------------------------------------------------------------------------ */

static void need(int have, int want, int exact)
{
    if (have < want || (exact && have != want)) {
        usage(stderr);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    const char *mode;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    mode = argv[1];
    if (strcmp(mode, "-h") == 0 || strcmp(mode, "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(mode, "setup") == 0)
        setup(argc - 1, argv + 1);
    argc -= 2;
    argv += 2;
    if (strcmp(mode, "timmean") == 0) {
        need(argc, 2, 1);
        timmean(argv[0], argv[1]);
    } else if (strcmp(mode, "ncap2") == 0) {
        need(argc, 4, 1);
        if (strcmp(argv[0], "-s") != 0 || strcmp(argv[1], NCAP2_EXPR) != 0)
            bench_die(prog, 0, "ncap2: the one script known is -s '%s'", NCAP2_EXPR);
        ncap2(argv[2], argv[3]);
    } else if (strcmp(mode, "ensmean") == 0 || strcmp(mode, "nces") == 0) {
        need(argc, 2, 0);
        ensemble_mean(argc - 1, argv, argv[argc - 1], strcmp(mode, "nces") == 0);
    } else if (strcmp(mode, "ncks") == 0) {
        need(argc, 4, 1);
        if (strcmp(argv[0], "-v") != 0)
            bench_die(prog, 0, "ncks: usage: ncks -v VAR IN OUT");
        ncks(argv[1], argv[2], argv[3]);
    } else if (strcmp(mode, "digest") == 0) {
        need(argc, 1, 0);
        digest(argc, argv);
    } else {
        bench_error(prog, 0, "unknown mode '%s'", mode);
        usage(stderr);
        return 2;
    }
    return 0;
}
