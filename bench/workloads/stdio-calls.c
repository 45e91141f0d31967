/*
 * sluice-bench-stdio-calls: the per-call cost of the stdio calls a code
 * writing and reading small text records makes. Timed loops, in order:
 *   open_close:        --opens fopen("r") + fclose of the file;
 *   open_write_close:  --opens fopen("r+") + fwrite of 16 bytes + fclose (the
 *                      file is not truncated: ext4 writes a truncated file's
 *                      blocks out at its close, 300 us that would hide the rest);
 *   fprintf:           --ops fprintf of a short record ("%d %.6g\n") to one stream;
 *   fwrite:            --ops fwrite of 8 bytes to one stream;
 *   fread:             --ops fread of one 8-byte record;
 *   fgets:             --ops fgets of one line (the records fprintf wrote).
 * The streams keep glibc's default buffer, so the data loops measure the
 * wrappers more than the kernel. Prints one JSON line: the counts, each
 * loop's seconds ("<loop>_seconds") and the CPU time this thread spent in
 * it, user and system ("<loop>_cpu_seconds": on a loaded machine, time the
 * process waited for a core is not in it).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

static const char *prog = "sluice-bench-stdio-calls";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s --file PATH [--ops N] [--opens N]\n"
            "  --file PATH  the file to write and read (made, then rewritten)\n"
            "  --ops N      calls per data loop (default 200000)\n"
            "  --opens N    calls per open loop (default 20000)\n",
            prog);
}

/* Wall and CPU clocks at the start of a loop. */
struct stamp {
    double wall, cpu;
};

static double thread_cpu_now(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        bench_die(prog, 1, "clock_gettime");
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct stamp stamp_now(void)
{
    struct stamp s = {.cpu = thread_cpu_now()};
    s.wall = bench_now();
    return s;
}

/* The time since `from`: stored in *wall and *cpu. */
static void stamp_since(struct stamp from, double *wall, double *cpu)
{
    *wall = bench_now() - from.wall;
    *cpu = thread_cpu_now() - from.cpu;
}

static FILE *open_or_die(const char *path, const char *mode)
{
    FILE *fp = fopen(path, mode);
    if (fp == NULL)
        bench_die(prog, 1, "fopen %s (%s)", path, mode);
    return fp;
}

static void close_or_die(FILE *fp, const char *path)
{
    if (fclose(fp) != 0)
        bench_die(prog, 1, "fclose %s", path);
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    uint64_t ops = 200000, opens = 20000;
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("file", &path),
        BENCH_OPT_COUNT("ops", &ops),
        BENCH_OPT_COUNT("opens", &opens),
        BENCH_OPT_END,
    };
    static const char record[16] = "0123456789abcde";
    char line[64];
    enum { OPEN_CLOSE, OPEN_WRITE_CLOSE, FPRINTF, FWRITE, FGETS, FREAD, LOOPS };
    static const char *const loop_names[LOOPS] = {"open_close", "open_write_close", "fprintf",
                                                  "fwrite", "fgets", "fread"};
    double wall[LOOPS], cpu[LOOPS];
    struct stamp t;
    FILE *fp;

    bench_parse_options(prog, argc, argv, options, usage);
    if (ops == 0 || opens == 0)
        bench_die(prog, 0, "--ops and --opens must be at least 1");

    close_or_die(open_or_die(path, "w"), path);
    t = stamp_now();
    for (uint64_t i = 0; i < opens; i++)
        close_or_die(open_or_die(path, "r"), path);
    stamp_since(t, &wall[OPEN_CLOSE], &cpu[OPEN_CLOSE]);

    t = stamp_now();
    for (uint64_t i = 0; i < opens; i++) {
        fp = open_or_die(path, "r+");
        if (fwrite(record, 1, sizeof record, fp) != sizeof record)
            bench_die(prog, 1, "fwrite %s", path);
        close_or_die(fp, path);
    }
    stamp_since(t, &wall[OPEN_WRITE_CLOSE], &cpu[OPEN_WRITE_CLOSE]);

    fp = open_or_die(path, "w");
    t = stamp_now();
    for (uint64_t i = 0; i < ops; i++)
        if (fprintf(fp, "%d %.6g\n", (int)(i % 100000), (double)i * 0.5) < 0)
            bench_die(prog, 1, "fprintf %s", path);
    stamp_since(t, &wall[FPRINTF], &cpu[FPRINTF]);
    t = stamp_now();
    for (uint64_t i = 0; i < ops; i++)
        if (fwrite(record, 1, 8, fp) != 8)
            bench_die(prog, 1, "fwrite %s", path);
    stamp_since(t, &wall[FWRITE], &cpu[FWRITE]);
    close_or_die(fp, path);

    /* The file now holds ops lines of at least 4 bytes, then 8 * ops
     * bytes: fgets reads the lines, fread 8-byte records from the start. */
    fp = open_or_die(path, "r");
    t = stamp_now();
    for (uint64_t i = 0; i < ops; i++)
        if (fgets(line, sizeof line, fp) == NULL)
            bench_die(prog, 1, "fgets %s: line %llu", path, (unsigned long long)i);
    stamp_since(t, &wall[FGETS], &cpu[FGETS]);
    rewind(fp);
    t = stamp_now();
    for (uint64_t i = 0; i < ops; i++) {
        char rec[8];
        if (fread(rec, sizeof rec, 1, fp) != 1)
            bench_die(prog, 1, "fread %s: record %llu", path, (unsigned long long)i);
    }
    stamp_since(t, &wall[FREAD], &cpu[FREAD]);
    close_or_die(fp, path);

    bench_json_begin("stdio-calls", NULL, "file", path);
    printf(",\"ops\":%llu,\"opens\":%llu", (unsigned long long)ops, (unsigned long long)opens);
    for (int l = 0; l < LOOPS; l++)
        printf(",\"%s_seconds\":%.9f,\"%s_cpu_seconds\":%.9f", loop_names[l], wall[l], loop_names[l], cpu[l]);
    printf("}\n");
    return bench_exit_status(1);
}
