/*
 * sluice-bench-nc-append: small-record append to one netCDF file, as FMS
 * diagnostics and Agro-IBIS write their history files. The file is created
 * with an unlimited `time` dimension, a `time` coordinate (one double per
 * record) and --vars 2-D float fields (time, y, x); then --records records
 * are appended one at a time, each with one nc_put_vara per variable,
 * optionally with nc_sync every --sync-every records; then nc_close.
 *
 * The format is netCDF-4 (HDF5 underneath, file locking left at HDF5's
 * default) unless --format says otherwise. The read and write syscalls the
 * process made during the timed phase, and the bytes it read, come from
 * /proc/self/io (the program cannot count the library's own calls
 * otherwise). --phase verify reopens the file and checks every value.
 * Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <fcntl.h>
#include <inttypes.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "sluice-bench-nc-append";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --file PATH [options]\n"
        "\n"
        "Small-record append to one netCDF file (FMS diagnostics, Agro-IBIS history):\n"
        "create it with an unlimited time dimension, append records one at a time\n"
        "with nc_put_vara, close. Prints one JSON line: bytes, calls and seconds.\n"
        "\n"
        "  --file PATH        the netCDF file (required; overwritten)\n"
        "  --records N        records appended (default 500)\n"
        "  --nx N             x size of each 2-D field (default 64)\n"
        "  --ny N             y size of each 2-D field (default 64)\n"
        "  --vars N           2-D float fields per record (default 2), besides `time`\n"
        "  --sync-every N     nc_sync after every N records (default 0: never)\n"
        "  --format F         netcdf4 (default, HDF5 underneath), 64bit or classic\n"
        "  --phase P          write (default) or verify: reopen the file and check\n"
        "                     every value (exit 1 on a mismatch)\n"
        "  -h, --help         this text\n"
        "\n"
        "Record t holds time = t/2 and v<k>[j][i] = (t*31 + k*1009 + j*nx + i) mod 100000.\n"
        "write_syscalls, read_syscalls and read_bytes are the rises of syscw, syscr and\n"
        "rchar in /proc/self/io over the timed phase (not counting its own reading).\n",
        prog);
}

struct opts {
    const char *file;
    uint64_t records, nx, ny, vars, sync_every;
    int cmode, verify;
    const char *format;
};

struct result {
    uint64_t data_bytes, puts, syncs, file_bytes, records_found, mismatches;
    uint64_t write_syscalls, read_syscalls, read_bytes;
    int io_known;  /* /proc/self/io could be read */
    double seconds;
};

static float value(uint64_t t, uint64_t v, uint64_t idx)
{
    return (float)((t * 31u + v * 1009u + idx) % 100000u);
}

/* The process's I/O so far (all threads), from /proc/self/io, read with
 * exactly one read() whose size is kept: that read is itself counted in the
 * next snapshot, and is taken off there. */
struct proc_io {
    uint64_t rchar, syscr, syscw;
    uint64_t own_bytes;  /* what the read of this snapshot returned */
};

static int proc_io(struct proc_io *p)
{
    char buf[1024];
    const char *rc, *sr, *sw;
    ssize_t n;
    int fd = open("/proc/self/io", O_RDONLY);

    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    rc = strstr(buf, "rchar:");
    sr = strstr(buf, "syscr:");
    sw = strstr(buf, "syscw:");
    if (rc == NULL || sr == NULL || sw == NULL || sscanf(rc, "rchar: %" SCNu64, &p->rchar) != 1 ||
        sscanf(sr, "syscr: %" SCNu64, &p->syscr) != 1 || sscanf(sw, "syscw: %" SCNu64, &p->syscw) != 1)
        return -1;
    p->own_bytes = (uint64_t)n;
    return 0;
}

#define NC_TRY(call)                                                                        \
    do {                                                                                    \
        int nc_rc_ = (call);                                                                \
        if (nc_rc_ != NC_NOERR)                                                             \
            bench_die(prog, 0, "%s: %s: %s", o->file, #call, nc_strerror(nc_rc_));          \
    } while (0)

static void phase_write(const struct opts *o, struct result *r)
{
    size_t slab = (size_t)(o->ny * o->nx);
    float *buf = malloc(slab * sizeof *buf);
    int *varids = calloc((size_t)o->vars, sizeof *varids);
    int ncid, dims[3], tvar;
    const char *units = "days since 2000-01-01 00:00:00";
    struct proc_io io0, io1;
    struct stat st;
    double t0;

    if (buf == NULL || varids == NULL)
        bench_die(prog, 1, "malloc");
    r->io_known = proc_io(&io0) == 0;
    t0 = bench_now();
    NC_TRY(nc_create(o->file, o->cmode | NC_CLOBBER, &ncid));
    NC_TRY(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]));
    NC_TRY(nc_def_dim(ncid, "y", (size_t)o->ny, &dims[1]));
    NC_TRY(nc_def_dim(ncid, "x", (size_t)o->nx, &dims[2]));
    NC_TRY(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dims[0], &tvar));
    NC_TRY(nc_put_att_text(ncid, tvar, "units", strlen(units), units));
    for (uint64_t v = 0; v < o->vars; v++) {
        char name[32];

        snprintf(name, sizeof name, "v%" PRIu64, v);
        NC_TRY(nc_def_var(ncid, name, NC_FLOAT, 3, dims, &varids[v]));
    }
    NC_TRY(nc_enddef(ncid));

    for (uint64_t t = 0; t < o->records; t++) {
        size_t start1 = (size_t)t, count1 = 1;
        size_t start[3] = {(size_t)t, 0, 0};
        size_t count[3] = {1, (size_t)o->ny, (size_t)o->nx};
        double when = (double)t * 0.5;

        NC_TRY(nc_put_vara_double(ncid, tvar, &start1, &count1, &when));
        r->puts++;
        r->data_bytes += sizeof(double);
        for (uint64_t v = 0; v < o->vars; v++) {
            for (size_t i = 0; i < slab; i++)
                buf[i] = value(t, v, i);
            NC_TRY(nc_put_vara_float(ncid, varids[v], start, count, buf));
            r->puts++;
            r->data_bytes += slab * sizeof(float);
        }
        if (o->sync_every != 0 && (t + 1) % o->sync_every == 0) {
            NC_TRY(nc_sync(ncid));
            r->syncs++;
        }
    }
    NC_TRY(nc_close(ncid));
    r->seconds = bench_now() - t0;
    if (r->io_known && proc_io(&io1) == 0) {
        r->write_syscalls = io1.syscw - io0.syscw;
        r->read_syscalls = io1.syscr - io0.syscr - 1;
        r->read_bytes = io1.rchar - io0.rchar - io0.own_bytes;
    } else {
        r->io_known = 0;
    }
    if (stat(o->file, &st) != 0)
        bench_die(prog, 1, "stat %s", o->file);
    r->file_bytes = (uint64_t)st.st_size;
    r->records_found = o->records;
    free(buf);
    free(varids);
}

static void phase_verify(const struct opts *o, struct result *r)
{
    size_t slab = (size_t)(o->ny * o->nx);
    float *buf = malloc(slab * sizeof *buf);
    int ncid, dimid, varid, tvar;
    size_t nrec;
    struct stat st;
    double t0 = bench_now();

    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    NC_TRY(nc_open(o->file, NC_NOWRITE, &ncid));
    NC_TRY(nc_inq_dimid(ncid, "time", &dimid));
    NC_TRY(nc_inq_dimlen(ncid, dimid, &nrec));
    NC_TRY(nc_inq_varid(ncid, "time", &tvar));
    r->records_found = nrec;
    if (nrec != o->records) {
        bench_error(prog, 0, "%s has %zu records, expected %" PRIu64, o->file, nrec, o->records);
        r->mismatches++;
    }
    for (uint64_t t = 0; t < nrec && t < o->records; t++) {
        size_t start1 = (size_t)t, count1 = 1;
        double when;

        NC_TRY(nc_get_vara_double(ncid, tvar, &start1, &count1, &when));
        r->mismatches += when != (double)t * 0.5;
        r->data_bytes += sizeof(double);
    }
    for (uint64_t v = 0; v < o->vars; v++) {
        char name[32];

        snprintf(name, sizeof name, "v%" PRIu64, v);
        NC_TRY(nc_inq_varid(ncid, name, &varid));
        for (uint64_t t = 0; t < nrec && t < o->records; t++) {
            size_t start[3] = {(size_t)t, 0, 0};
            size_t count[3] = {1, (size_t)o->ny, (size_t)o->nx};

            NC_TRY(nc_get_vara_float(ncid, varid, start, count, buf));
            for (size_t i = 0; i < slab; i++)
                r->mismatches += buf[i] != value(t, v, i);
            r->data_bytes += slab * sizeof(float);
        }
    }
    NC_TRY(nc_close(ncid));
    r->seconds = bench_now() - t0;
    if (stat(o->file, &st) != 0)
        bench_die(prog, 1, "stat %s", o->file);
    r->file_bytes = (uint64_t)st.st_size;
    free(buf);
}

int main(int argc, char **argv)
{
    static const char *const formats[] = {"netcdf4", "64bit", "classic", NULL};
    static const int format_cmodes[] = {NC_NETCDF4, NC_64BIT_OFFSET, 0};
    static const char *const phases[] = {"write", "verify", NULL};
    struct opts o = {.records = 500, .nx = 64, .ny = 64, .vars = 2};
    int format = 0;  /* netcdf4 */
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("file", &o.file),
        BENCH_OPT_COUNT("records", &o.records),
        BENCH_OPT_COUNT("nx", &o.nx),
        BENCH_OPT_COUNT("ny", &o.ny),
        BENCH_OPT_COUNT("vars", &o.vars),
        BENCH_OPT_COUNT("sync-every", &o.sync_every),
        BENCH_OPT_CHOICE("format", &format, formats),
        BENCH_OPT_CHOICE("phase", &o.verify, phases),
        BENCH_OPT_END,
    };
    struct result r;

    bench_parse_options(prog, argc, argv, options, usage);
    o.format = formats[format];
    o.cmode = format_cmodes[format];
    if (o.records == 0 || o.nx == 0 || o.ny == 0 || o.vars == 0 || o.vars > 1000)
        bench_die(prog, 0, "--records, --nx, --ny must be positive and --vars 1..1000");
    if (o.nx * o.ny > (64u << 20) / sizeof(float))
        bench_die(prog, 0, "a field record (nx*ny floats) must fit in 64 MiB");

    memset(&r, 0, sizeof r);
    if (o.verify)
        phase_verify(&o, &r);
    else
        phase_write(&o, &r);

    printf("{\"workload\":\"nc-append\",\"phase\":\"%s\",\"format\":\"%s\",\"file\":",
           o.verify ? "verify" : "write", o.format);
    bench_json_str(o.file);
    printf(",\"records\":%" PRIu64 ",\"nx\":%" PRIu64 ",\"ny\":%" PRIu64 ",\"vars\":%" PRIu64
           ",\"sync_every\":%" PRIu64 ",\"data_bytes\":%" PRIu64 ",\"file_bytes\":%" PRIu64
           ",\"nc_puts\":%" PRIu64 ",\"nc_syncs\":%" PRIu64 ",\"proc_io\":%s"
           ",\"write_syscalls\":%" PRIu64 ",\"read_syscalls\":%" PRIu64 ",\"read_bytes\":%" PRIu64
           ",\"records_found\":%" PRIu64 ",\"mismatches\":%" PRIu64 ",\"seconds\":%.9f}\n",
           o.records, o.nx, o.ny, o.vars, o.sync_every, r.data_bytes, r.file_bytes, r.puts,
           r.syncs, r.io_known ? "true" : "false", r.write_syscalls, r.read_syscalls, r.read_bytes,
           r.records_found, r.mismatches, r.seconds);
    return bench_exit_status(r.mismatches == 0);
}
