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

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        "The byte at offset p is (p mod 251) XOR (uint8)(b*157 + (b>>8)), b = p>>16.\n",
        prog);
}

struct opts {
    const char *file;
    uint64_t procs, piece, size;
    int fsync, verify;
};

struct counts {
    uint64_t bytes, writes;
    double io_seconds;  /* this process, open to close */
    int failed;
};

struct ctx {
    const struct opts *o;
    struct counts *counts;
};

static int writer(int rank, void *arg)
{
    struct ctx *c = arg;
    const struct opts *o = c->o;
    struct counts *k = &c->counts[rank];
    unsigned char *buf = malloc(o->piece);
    double t0 = bench_now();
    int fd = -1;

    if (buf == NULL)
        goto fail;
    fd = open(o->file, O_WRONLY);
    if (fd < 0) {
        fprintf(stderr, "%s: error: process %d: open %s: %s\n", prog, rank, o->file, strerror(errno));
        goto fail;
    }
    for (uint64_t off = (uint64_t)rank * o->piece; off < o->size; off += o->procs * o->piece) {
        size_t n = o->size - off < o->piece ? (size_t)(o->size - off) : (size_t)o->piece;

        bench_pattern_fill(buf, n, off);
        if (bench_pwrite_full(fd, buf, n, (off_t)off) != 0) {
            fprintf(stderr, "%s: error: process %d: pwrite %s at %" PRIu64 ": %s\n", prog, rank,
                    o->file, off, strerror(errno));
            goto fail;
        }
        k->writes++;
        k->bytes += n;
    }
    if (o->fsync && fsync(fd) != 0) {
        fprintf(stderr, "%s: error: process %d: fsync %s: %s\n", prog, rank, o->file, strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        fprintf(stderr, "%s: error: process %d: close %s: %s\n", prog, rank, o->file, strerror(errno));
        goto fail;
    }
    k->io_seconds = bench_now() - t0;
    free(buf);
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    k->failed = 1;
    free(buf);
    return 1;
}

static int verify(const struct opts *o)
{
    size_t chunk = 4u << 20;
    unsigned char *buf = malloc(chunk);
    uint64_t off = 0, bad = 0;
    double t0 = bench_now();
    int fd = open(o->file, O_RDONLY);

    if (buf == NULL || fd < 0)
        bench_die(prog, 1, "verify: open %s", o->file);
    for (;;) {
        ssize_t got = bench_read_full(fd, buf, chunk);

        if (got < 0)
            bench_die(prog, 1, "verify: read %s", o->file);
        if (got == 0)
            break;
        bad += bench_pattern_check(buf, (size_t)got, off);
        off += (uint64_t)got;
    }
    close(fd);
    free(buf);
    if (off != o->size)
        fprintf(stderr, "%s: error: %s has %" PRIu64 " bytes, expected %" PRIu64 "\n", prog,
                o->file, off, o->size);
    printf("{\"workload\":\"strided-shared\",\"phase\":\"verify\",\"file\":");
    bench_json_str(o->file);
    printf(",\"size\":%" PRIu64 ",\"file_bytes\":%" PRIu64 ",\"mismatches\":%" PRIu64
           ",\"seconds\":%.9f}\n",
           o->size, off, bad, bench_now() - t0);
    if (fflush(stdout) != 0)
        return 1;
    return bad == 0 && off == o->size ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"file", required_argument, NULL, 'f'},
        {"procs", required_argument, NULL, 'P'},
        {"piece", required_argument, NULL, 'k'},
        {"size", required_argument, NULL, 's'},
        {"fsync", no_argument, NULL, 'F'},
        {"phase", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {.procs = 4, .piece = 4096, .size = 64u << 20};
    uint64_t bytes = 0, writes = 0;
    double t0, t1, slowest = 0;
    struct counts *counts;
    struct bench_group g;
    struct ctx cx;
    int c, li = 0, fd, failed;

    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        uint64_t *num = NULL;
        int is_size = 0;

        switch (c) {
        case 'f': o.file = optarg; continue;
        case 'P': num = &o.procs; break;
        case 'k': num = &o.piece; is_size = 1; break;
        case 's': num = &o.size; is_size = 1; break;
        case 'F': o.fsync = 1; continue;
        case 'p':
            if (strcmp(optarg, "run") == 0)
                o.verify = 0;
            else if (strcmp(optarg, "verify") == 0)
                o.verify = 1;
            else
                bench_die(prog, 0, "bad --phase '%s' (run or verify)", optarg);
            continue;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if ((is_size ? bench_parse_size(optarg, num) : bench_parse_u64(optarg, num)) != 0)
            bench_die(prog, 0, "bad value '%s' for --%s", optarg, longopts[li].name);
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (o.file == NULL)
        bench_die(prog, 0, "--file is required (see --help)");
    if (o.procs == 0 || o.procs > 4096)
        bench_die(prog, 0, "--procs must be 1..4096");
    if (o.piece == 0 || o.piece > (64u << 20))
        bench_die(prog, 0, "--piece must be 1 B..64 MiB");
    if (o.verify)
        return verify(&o);

    counts = bench_shared_alloc(sizeof *counts * o.procs, prog);
    cx.o = &o;
    cx.counts = counts;
    bench_spawn(&g, (int)o.procs, writer, &cx, prog);
    t0 = bench_now();
    fd = open(o.file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || close(fd) != 0) {
        int saved = errno;
        bench_release(&g);  /* the writers fail on open; reap them */
        bench_wait(&g);
        errno = saved;
        bench_die(prog, 1, "create %s", o.file);
    }
    bench_release(&g);
    failed = bench_wait(&g);
    t1 = bench_now();
    if (failed)
        bench_die(prog, 0, "%d of %" PRIu64 " writers failed", failed, o.procs);
    for (uint64_t p = 0; p < o.procs; p++) {
        bytes += counts[p].bytes;
        writes += counts[p].writes;
        if (counts[p].io_seconds > slowest)
            slowest = counts[p].io_seconds;
    }

    printf("{\"workload\":\"strided-shared\",\"phase\":\"run\",\"file\":");
    bench_json_str(o.file);
    printf(",\"procs\":%" PRIu64 ",\"piece\":%" PRIu64 ",\"size\":%" PRIu64
           ",\"bytes_written\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"fsyncs\":%" PRIu64
           ",\"slowest_proc_seconds\":%.9f,\"seconds\":%.9f}\n",
           o.procs, o.piece, o.size, bytes, writes, o.fsync ? o.procs : 0, slowest, t1 - t0);
    return fflush(stdout) == 0 ? 0 : 1;
}
