/*
 * ensemble_member: one serial model instance of an ensemble (the Agro-IBIS
 * shape), for `sluice farm` tests and benchmarks.
 *
 *   ensemble_member CELL FILES STEPS [INPUT [SLEEP_MS]]
 *
 * Reads INPUT whole every step (a shared forcing file; its byte sum enters
 * every value), and in each of STEPS steps opens each of FILES netCDF
 * (classic format) files out_NNN.nc, writes one record of variable "value"
 * and closes it again; writes one line per step to member.log (started anew,
 * as a model's run log is, so a task run twice leaves one run's lines). Every byte
 * depends only on the arguments and INPUT's bytes. A negative CELL fails
 * (exit 3, a message on stderr) after the first step, as a model does on a
 * bad parameter. SLEEP_MS sleeps that long between steps (tasks of mixed
 * length; a window to kill one in).
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void check(int status, const char *what, const char *path)
{
    if (status != NC_NOERR) {
        fprintf(stderr, "ensemble_member: %s %s: %s\n", what, path, nc_strerror(status));
        exit(2);
    }
}

static double input_sum(const char *path)
{
    if (!path || !*path)
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    unsigned char buf[65536];
    size_t n;
    double sum = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++)
            sum += buf[i];
    fclose(f);
    return sum;
}

static void create_output(const char *path, long cell)
{
    int nc, dim, var;
    check(nc_create(path, NC_CLOBBER, &nc), "create", path);
    check(nc_def_dim(nc, "time", NC_UNLIMITED, &dim), "define time in", path);
    check(nc_def_var(nc, "value", NC_DOUBLE, 1, &dim, &var), "define value in", path);
    check(nc_put_att_long(nc, NC_GLOBAL, "cell", NC_INT, 1, &cell), "put cell in", path);
    check(nc_close(nc), "close", path);
}

static void write_record(const char *path, size_t step, double value)
{
    int nc, var;
    check(nc_open(path, NC_WRITE, &nc), "open", path);
    check(nc_inq_varid(nc, "value", &var), "find value in", path);
    check(nc_put_var1_double(nc, var, &step, &value), "write value in", path);
    check(nc_close(nc), "close", path);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: ensemble_member CELL FILES STEPS [INPUT [SLEEP_MS]]\n");
        return 2;
    }
    long cell = strtol(argv[1], NULL, 10);
    long files = strtol(argv[2], NULL, 10), steps = strtol(argv[3], NULL, 10);
    const char *input = argc > 4 ? argv[4] : NULL;
    long sleep_ms = argc > 5 ? strtol(argv[5], NULL, 10) : 0;
    char path[64];
    for (long f = 0; f < files; f++) {
        snprintf(path, sizeof path, "out_%03ld.nc", f);
        create_output(path, cell);
    }
    for (long s = 0; s < steps; s++) {
        double forcing = input_sum(input);
        for (long f = 0; f < files; f++) {
            snprintf(path, sizeof path, "out_%03ld.nc", f);
            write_record(path, (size_t)s, (double)cell * 1000 + (double)f * 10 + (double)s + forcing);
        }
        FILE *log = fopen("member.log", s == 0 ? "w" : "a");
        if (!log) {
            perror("member.log");
            return 2;
        }
        fprintf(log, "cell %ld step %ld forcing %.0f\n", cell, s, forcing);
        fclose(log);
        if (cell < 0) {
            fprintf(stderr, "ensemble_member: cell %ld is not a valid cell\n", cell);
            return 3;
        }
        if (sleep_ms > 0) {
            struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}
