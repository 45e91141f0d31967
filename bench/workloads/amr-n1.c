/*
 * sluice-bench-amr-n1: an AMR checkpoint written N-to-1 (the Chombo/BISICLES
 * report): --procs processes (fork) each write their share of --procs x
 * --boxes boxes of about --box-size bytes into one shared file, one
 * independent pwrite() per box, at offsets scattered over the whole file.
 *
 * The file is the boxes laid end to end in global box order (as in the
 * checkpoint's dataset); box sizes vary by up to +-jitter around --box-size
 * (multiples of 8 bytes); boxes are dealt to processes by a seeded random
 * permutation, so each process's writes land all over the file. The file's
 * content is the verification pattern of common.h, so --verify can check it.
 *
 * This is the POSIX stand-in for the MPI-IO/HDF5 version that will come
 * with sluice's MPI aggregation library.
 * Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *prog = "sluice-bench-amr-n1";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --file PATH [options]\n"
        "\n"
        "AMR checkpoint, N processes to 1 shared file (Chombo/BISICLES): every\n"
        "process writes many ~1 MiB boxes at scattered offsets with one independent\n"
        "pwrite() each. Prints one JSON line: bytes, writes and seconds.\n"
        "\n"
        "This is a POSIX placeholder: the MPI-IO/HDF5 version (independent vs\n"
        "collective vs aggregated collective buffering) comes with sluice's MPI\n"
        "aggregation library.\n"
        "\n"
        "  --file PATH        the shared checkpoint file (required; truncated first)\n"
        "  --procs N          writer processes (default 4)\n"
        "  --boxes N          boxes per process (default 64)\n"
        "  --box-size BYTES   mean box size (default 1M)\n"
        "  --jitter PERCENT   box sizes vary uniformly by +- this much (default 25)\n"
        "  --seed S           seed for sizes and the box-to-process deal (default 1)\n"
        "  --no-fsync         do not fsync before each process closes the file\n"
        "  --verify           read the file back and check every byte (exit 1 on a mismatch)\n"
        "  -h, --help         this text\n"
        "\n"
        "The byte at offset p is " BENCH_PATTERN_HELP ";\n"
        "the file size is the sum of the box sizes.\n",
        prog);
}

struct opts {
    const char *file;
    uint64_t procs, boxes, box_size, jitter, seed;
    int fsync, verify;
};

struct ctx {
    const struct opts *o;
    const uint64_t *offset;  /* offset[i] of box i; offset[nbox] = file size */
    const uint64_t *deal;    /* deal[r * boxes + k] = k-th box of process r */
    struct bench_writer_counts *counts;  /* per process, in shared memory */
};

/* Piece j of process rank: the j-th box dealt to it. */
static int dealt_box(const void *arg, int rank, uint64_t j, uint64_t *off, uint64_t *len)
{
    const struct ctx *c = arg;
    uint64_t b;

    if (j >= c->o->boxes)
        return 0;
    b = c->deal[(uint64_t)rank * c->o->boxes + j];
    *off = c->offset[b];
    *len = c->offset[b + 1] - c->offset[b];
    return 1;
}

static int writer(int rank, void *arg)
{
    struct ctx *c = arg;

    return bench_pwrite_pattern_pieces(prog, "rank", rank, c->o->file, c->o->fsync, dealt_box, c,
                                       &c->counts[rank]);
}

int main(int argc, char **argv)
{
    struct opts o = {
        .procs = 4, .boxes = 64, .box_size = 1u << 20, .jitter = 25, .seed = 1, .fsync = 1,
    };
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("file", &o.file),
        BENCH_OPT_COUNT("procs", &o.procs),
        BENCH_OPT_COUNT("boxes", &o.boxes),
        BENCH_OPT_SIZE("box-size", &o.box_size),
        BENCH_OPT_COUNT("jitter", &o.jitter),
        BENCH_OPT_COUNT("seed", &o.seed),
        BENCH_OPT_FLAG("no-fsync", &o.fsync, 0),
        BENCH_OPT_FLAG("verify", &o.verify, 1),
        BENCH_OPT_END,
    };
    uint64_t nbox, *offset, *deal, mismatches = 0;
    struct bench_writer_counts tot;
    struct ctx cx;
    double seconds;

    bench_parse_options(prog, argc, argv, options, usage);
    if (o.procs == 0 || o.procs > BENCH_MAX_PROCS || o.boxes == 0 || o.boxes > (1u << 20))
        bench_die(prog, 0, "--procs must be 1..4096 and --boxes 1..1048576");
    if (o.box_size < 8 || o.box_size > (1ull << 30) || o.jitter > 90)
        bench_die(prog, 0, "--box-size must be 8 B..1 GiB and --jitter 0..90");

    /* Box sizes (multiples of 8) and their offsets, in global order. */
    nbox = o.procs * o.boxes;
    offset = malloc((nbox + 1) * sizeof *offset);
    deal = malloc(nbox * sizeof *deal);
    if (offset == NULL || deal == NULL)
        bench_die(prog, 1, "malloc");
    offset[0] = 0;
    for (uint64_t i = 0; i < nbox; i++) {
        uint64_t spread = o.box_size * o.jitter / 100;
        uint64_t n = o.box_size - spread + bench_mix64(o.seed * 0x100000001b3ull + i) % (2 * spread + 1);
        n = n < 8 ? 8 : n & ~(uint64_t)7;
        offset[i + 1] = offset[i] + n;
    }
    /* Fisher-Yates deal of boxes to processes. */
    for (uint64_t i = 0; i < nbox; i++)
        deal[i] = i;
    for (uint64_t i = nbox - 1; i > 0; i--) {
        uint64_t j = bench_mix64(o.seed ^ (i * 0x9e3779b97f4a7c15ull)) % (i + 1);
        uint64_t t = deal[i];
        deal[i] = deal[j];
        deal[j] = t;
    }

    cx.o = &o;
    cx.offset = offset;
    cx.deal = deal;
    cx.counts = bench_shared_alloc(sizeof *cx.counts * o.procs, prog);

    seconds = bench_run_shared_file_writers(prog, o.file, (int)o.procs, writer, &cx);
    tot = bench_writer_totals(cx.counts, o.procs);
    if (o.verify) {
        uint64_t size;

        /* A file of the wrong size counts each byte too many or missing. */
        mismatches = bench_pattern_check_file(prog, o.file, offset[nbox], &size);
        mismatches += size > offset[nbox] ? size - offset[nbox] : offset[nbox] - size;
    }

    bench_json_begin("amr-n1", NULL, "file", o.file);
    printf(",\"procs\":%" PRIu64 ",\"boxes_per_proc\":%" PRIu64 ",\"boxes\":%" PRIu64
           ",\"box_size\":%" PRIu64
           ",\"jitter_percent\":%" PRIu64 ",\"file_bytes\":%" PRIu64 ",\"bytes_written\":%" PRIu64
           ",\"writes\":%" PRIu64 ",\"fsyncs\":%" PRIu64 ",\"seconds\":%.9f"
           ",\"slowest_proc_seconds\":%.9f,\"verified\":%s,\"mismatches\":%" PRIu64 "}\n",
           o.procs, o.boxes, nbox, o.box_size, o.jitter, offset[nbox], tot.bytes, tot.writes,
           o.fsync ? o.procs : 0, seconds, tot.seconds, o.verify ? "true" : "false", mismatches);
    free(offset);
    free(deal);
    return bench_exit_status(mismatches == 0);
}
