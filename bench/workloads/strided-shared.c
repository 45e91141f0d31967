/*
 * sluice-bench-strided-shared: N processes writing one shared file in
 * interleaved small pieces through POSIX pwrite (N-to-1 strided, the
 * pattern of a code that writes a distributed array row by row without
 * MPI-IO). The parent creates (truncates) the file; --procs processes (fork)
 * start together; process r writes pieces r, r+N, r+2N, ... of --piece
 * bytes each (piece k covers [k*piece, (k+1)*piece), the last one cut at
 * --size), optionally fsyncs, and closes. `seconds` runs from the create to
 * the last process's exit.
 *
 * The file's content is the verification pattern of common.h, so a piece
 * written at the wrong offset, or lost, is detected: --phase verify reads
 * the file back and checks its size and every byte.
 * Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *prog = "sluice-bench-strided-shared";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --file PATH [options]\n"
        "\n"
        "N processes write interleaved small pieces of one shared file with pwrite():\n"
        "process r writes pieces r, r+N, r+2N, ... Prints one JSON line: bytes,\n"
        "writes and seconds.\n"
        "\n"
        "  --file PATH        the shared file (required; truncated first)\n"
        "  --procs N          writer processes (default 4)\n"
        "  --piece BYTES      bytes per piece, one pwrite() each (default 4K)\n"
        "  --size BYTES       file size (default 64M)\n"
        "  --fsync            each process fsyncs before closing\n"
        "  --phase P          run (default) or verify: read the file back and check its\n"
        "                     size and every byte (exit 1 on a mismatch)\n"
        "  -h, --help         this text\n"
        "\n"
        "The byte at offset p is " BENCH_PATTERN_HELP ".\n",
        prog);
}

struct opts {
    const char *file;
    uint64_t procs, piece, size;
    int fsync, verify;
};

struct ctx {
    const struct opts *o;
    struct bench_writer_counts *counts;  /* per process, in shared memory */
};

/* Piece j of process rank: pieces rank, rank + N, rank + 2N, ..., the last
 * one cut at --size. */
static int strided_piece(const void *arg, int rank, uint64_t j, uint64_t *off, uint64_t *len)
{
    const struct opts *o = arg;
    uint64_t at = ((uint64_t)rank + j * o->procs) * o->piece;

    if (at >= o->size)
        return 0;
    *off = at;
    *len = o->size - at < o->piece ? o->size - at : o->piece;
    return 1;
}

static int writer(int rank, void *arg)
{
    struct ctx *c = arg;

    return bench_pwrite_pattern_pieces(prog, "process", rank, c->o->file, c->o->fsync,
                                       strided_piece, c->o, &c->counts[rank]);
}

static int verify(const struct opts *o)
{
    double t0 = bench_now();
    uint64_t size, bad = bench_pattern_check_file(prog, o->file, o->size, &size);

    bench_json_begin("strided-shared", "verify", "file", o->file);
    printf(",\"size\":%" PRIu64 ",\"file_bytes\":%" PRIu64 ",\"mismatches\":%" PRIu64
           ",\"seconds\":%.9f}\n",
           o->size, size, bad, bench_now() - t0);
    return bench_exit_status(bad == 0 && size == o->size);
}

int main(int argc, char **argv)
{
    static const char *const phases[] = {"run", "verify", NULL};
    struct opts o = {.procs = 4, .piece = 4096, .size = 64u << 20};
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("file", &o.file),
        BENCH_OPT_COUNT("procs", &o.procs),
        BENCH_OPT_SIZE("piece", &o.piece),
        BENCH_OPT_SIZE("size", &o.size),
        BENCH_OPT_FLAG("fsync", &o.fsync, 1),
        BENCH_OPT_CHOICE("phase", &o.verify, phases),
        BENCH_OPT_END,
    };
    struct bench_writer_counts tot;
    struct ctx cx;
    double seconds;

    bench_parse_options(prog, argc, argv, options, usage);
    bench_check_procs(prog, o.procs);
    if (o.piece == 0 || o.piece > (64u << 20))
        bench_die(prog, 0, "--piece must be 1 B..64 MiB");
    if (o.verify)
        return verify(&o);

    cx.o = &o;
    cx.counts = bench_shared_alloc(sizeof *cx.counts * o.procs, prog);
    seconds = bench_run_shared_file_writers(prog, o.file, (int)o.procs, writer, &cx);
    tot = bench_writer_totals(cx.counts, o.procs);

    bench_json_begin("strided-shared", "run", "file", o.file);
    printf(",\"procs\":%" PRIu64 ",\"piece\":%" PRIu64 ",\"size\":%" PRIu64
           ",\"bytes_written\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"fsyncs\":%" PRIu64
           ",\"slowest_proc_seconds\":%.9f,\"seconds\":%.9f}\n",
           o.procs, o.piece, o.size, tot.bytes, tot.writes, o.fsync ? o.procs : 0, tot.seconds,
           seconds);
    return bench_exit_status(1);
}
