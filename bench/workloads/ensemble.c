/*
 * sluice-bench-ensemble: an ensemble of serial model instances, the Agro-IBIS
 * pattern. --procs processes (fork) run at once, each in its own directory
 * DIR/member.NNNN. In each of --steps steps an instance
 *   - opens each of the --inputs shared input files DIR/input/in.NNNN, reads
 *     --read-size bytes at a step-dependent offset, and closes it;
 *   - opens each of its --files output files with O_APPEND (created in the
 *     first step), appends one text record of --record-min..--record-max bytes
 *     and closes it.
 * Every record is one line: a letter repeated, then '\n', so each output file
 * ends with exactly --steps lines. Record lengths come from --seed.
 *
 * --phase setup creates the input files (not timed), --phase run times the
 * instances, --phase all (default) does both. Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "sluice-bench-ensemble";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --dir DIR [options]\n"
        "\n"
        "An ensemble of serial instances (Agro-IBIS on Lustre): each instance opens,\n"
        "appends one small record to, and closes each of its many small output files,\n"
        "step after step, and reads a little of each shared input file every step.\n"
        "Prints one JSON line: bytes, operations and seconds.\n"
        "\n"
        "  --dir DIR           working directory (created if missing; required)\n"
        "  --procs N           instances run at the same time, one process each (default 4)\n"
        "  --first N           number of the first instance (default 0): a node of a\n"
        "                      cluster runs instances N to N + procs - 1 of the ensemble\n"
        "  --files N           output files per instance (default 200)\n"
        "  --steps N           steps; each appends one record to every output file (default 5)\n"
        "  --record-min BYTES  smallest record (default 100)\n"
        "  --record-max BYTES  largest record (default 1K)\n"
        "  --inputs N          shared input files (default 8; 0 = no reads)\n"
        "  --input-size BYTES  size of each input file (default 64K)\n"
        "  --read-size BYTES   bytes read from each input file per step (default 1K)\n"
        "  --seed S            seed for record lengths (default 1)\n"
        "  --phase P           setup (create inputs), run, or all (default all)\n"
        "  -h, --help          this text\n"
        "\n"
        "Layout: DIR/input/in.NNNN and DIR/member.NNNN/out.NNNN. Every record is a\n"
        "letter repeated and a newline, so each output file has exactly --steps lines.\n",
        prog);
}

struct opts {
    const char *dir;
    uint64_t procs, first, files, steps, rmin, rmax, inputs, input_size, read_size, seed;
};

/* Per-instance counters, in shared memory so the parent can add them up. */
struct counts {
    uint64_t bytes_written, bytes_read, writes, reads, opens, closes, mkdirs, seeks;
    int failed;
};

struct ctx {
    const struct opts *o;
    struct counts *counts;
};

/* Length of the record appended by instance p, step s, file f. */
static size_t record_len(const struct opts *o, uint64_t p, uint64_t s, uint64_t f)
{
    uint64_t span = o->rmax - o->rmin + 1;
    uint64_t h = bench_mix64(o->seed ^ bench_mix64(p ^ bench_mix64(s ^ bench_mix64(f))));
    return (size_t)(o->rmin + h % span);
}

static void setup(const struct opts *o)
{
    char path[PATH_MAX];
    unsigned char *buf;

    if (bench_mkdir(o->dir) != 0)
        bench_die(prog, 1, "mkdir %s", o->dir);
    if (o->inputs == 0)
        return;
    snprintf(path, sizeof path, "%s/input", o->dir);
    if (bench_mkdir(path) != 0)
        bench_die(prog, 1, "mkdir %s", path);
    buf = malloc(o->input_size ? o->input_size : 1);
    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    bench_pattern_fill(buf, o->input_size, 0);
    for (uint64_t j = 0; j < o->inputs; j++) {
        int fd;

        snprintf(path, sizeof path, "%s/input/in.%04" PRIu64, o->dir, j);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            bench_die(prog, 1, "open %s", path);
        if (bench_write_full(fd, buf, o->input_size) != 0)
            bench_die(prog, 1, "write %s", path);
        if (fsync(fd) != 0 || close(fd) != 0)
            bench_die(prog, 1, "fsync/close %s", path);
    }
    free(buf);
}

static int instance(int rank, void *arg)
{
    struct ctx *c = arg;
    const struct opts *o = c->o;
    struct counts *k = &c->counts[rank];
    char path[PATH_MAX];
    char *rec = malloc(o->rmax);
    char *in = malloc(o->read_size ? o->read_size : 1);
    uint64_t p = o->first + (uint64_t)rank;

    if (rec == NULL || in == NULL)
        goto fail;
    snprintf(path, sizeof path, "%s/member.%04" PRIu64, o->dir, p);
    if (bench_mkdir(path) != 0)
        goto fail_errno;
    k->mkdirs++;
    for (uint64_t s = 0; s < o->steps; s++) {
        for (uint64_t j = 0; j < o->inputs; j++) {
            uint64_t room = o->input_size > o->read_size ? o->input_size - o->read_size : 0;
            off_t off = (off_t)(room ? ((s * o->inputs + j + p) * o->read_size) % (room + 1) : 0);
            ssize_t got;
            int fd;

            snprintf(path, sizeof path, "%s/input/in.%04" PRIu64, o->dir, j);
            fd = open(path, O_RDONLY);
            if (fd < 0)
                goto fail_errno;
            k->opens++;
            if (off != 0) {
                if (lseek(fd, off, SEEK_SET) != off)
                    goto fail_errno;
                k->seeks++;
            }
            got = bench_read_full(fd, in, o->read_size);
            if (got < 0)
                goto fail_errno;
            k->reads++;
            k->bytes_read += (uint64_t)got;
            if (close(fd) != 0)
                goto fail_errno;
            k->closes++;
        }
        for (uint64_t f = 0; f < o->files; f++) {
            size_t n = record_len(o, p, s, f);
            int fd;

            memset(rec, 'a' + (int)((p + s + f) % 26), n - 1);
            rec[n - 1] = '\n';
            snprintf(path, sizeof path, "%s/member.%04" PRIu64 "/out.%04" PRIu64, o->dir, p, f);
            fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd < 0)
                goto fail_errno;
            k->opens++;
            if (bench_write_full(fd, rec, n) != 0)
                goto fail_errno;
            k->writes++;
            k->bytes_written += n;
            if (close(fd) != 0)
                goto fail_errno;
            k->closes++;
        }
    }
    free(rec);
    free(in);
    return 0;
fail_errno:
    bench_error(prog, 1, "instance %d: %s", rank, path);
fail:
    k->failed = 1;
    free(rec);
    free(in);
    return 1;
}

int main(int argc, char **argv)
{
    struct opts o = {
        .procs = 4, .files = 200, .steps = 5, .rmin = 100, .rmax = 1024,
        .inputs = 8, .input_size = 64 << 10, .read_size = 1024, .seed = 1,
    };
    int phase = BENCH_PHASE_ALL;
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("dir", &o.dir),
        BENCH_OPT_COUNT("procs", &o.procs),
        BENCH_OPT_COUNT("first", &o.first),
        BENCH_OPT_COUNT("files", &o.files),
        BENCH_OPT_COUNT("steps", &o.steps),
        BENCH_OPT_SIZE("record-min", &o.rmin),
        BENCH_OPT_SIZE("record-max", &o.rmax),
        BENCH_OPT_COUNT("inputs", &o.inputs),
        BENCH_OPT_SIZE("input-size", &o.input_size),
        BENCH_OPT_SIZE("read-size", &o.read_size),
        BENCH_OPT_COUNT("seed", &o.seed),
        BENCH_OPT_CHOICE("phase", &phase, bench_setup_run_phases),
        BENCH_OPT_END,
    };
    struct counts *counts, tot;
    struct bench_group g;
    struct ctx cx;
    double seconds;

    bench_parse_options(prog, argc, argv, options, usage);
    bench_check_procs(prog, o.procs);
    if (o.rmin < 1 || o.rmax < o.rmin || o.rmax > (64u << 20))
        bench_die(prog, 0, "need 1 <= --record-min <= --record-max <= 64M");
    if (o.read_size > o.input_size)
        o.read_size = o.input_size;
    if (o.files > 9999 || o.inputs > 9999 || o.first + o.procs > 10000)
        bench_die(prog, 0, "--files, --inputs and --first + --procs must be at most 9999");

    if (phase != BENCH_PHASE_RUN)
        setup(&o);
    if (phase == BENCH_PHASE_SETUP) {
        printf("{\"workload\":\"ensemble\",\"phase\":\"setup\",\"inputs\":%" PRIu64
               ",\"input_size\":%" PRIu64 ",\"bytes_written\":%" PRIu64 "}\n",
               o.inputs, o.input_size, o.inputs * o.input_size);
        return bench_exit_status(1);
    }

    counts = bench_shared_alloc(sizeof *counts * o.procs, prog);
    cx.o = &o;
    cx.counts = counts;
    bench_spawn(&g, (int)o.procs, instance, &cx, prog);
    seconds = bench_finish_group(&g, prog, "instances", bench_now());

    memset(&tot, 0, sizeof tot);
    for (uint64_t p = 0; p < o.procs; p++) {
        tot.bytes_written += counts[p].bytes_written;
        tot.bytes_read += counts[p].bytes_read;
        tot.writes += counts[p].writes;
        tot.reads += counts[p].reads;
        tot.opens += counts[p].opens;
        tot.closes += counts[p].closes;
        tot.mkdirs += counts[p].mkdirs;
        tot.seeks += counts[p].seeks;
    }

    printf("{\"workload\":\"ensemble\",\"phase\":\"%s\",\"procs\":%" PRIu64
           ",\"files_per_proc\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"inputs\":%" PRIu64
           ",\"output_files\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"bytes_read\":%" PRIu64
           ",\"writes\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"opens\":%" PRIu64
           ",\"closes\":%" PRIu64 ",\"mkdirs\":%" PRIu64 ",\"seeks\":%" PRIu64
           ",\"seconds\":%.9f}\n",
           bench_setup_run_phases[phase], o.procs, o.files, o.steps, o.inputs, o.procs * o.files,
           tot.bytes_written, tot.bytes_read, tot.writes, tot.reads, tot.opens, tot.closes,
           tot.mkdirs, tot.seeks, seconds);
    return bench_exit_status(1);
}
