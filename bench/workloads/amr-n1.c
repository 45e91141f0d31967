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

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        "The byte at offset p is (p mod 251) XOR (uint8)(b*157 + (b>>8)), b = p>>16;\n"
        "the file size is the sum of the box sizes.\n",
        prog);
}

struct opts {
    const char *file;
    uint64_t procs, boxes, box_size, jitter, seed;
    int fsync, verify;
};

struct counts {
    uint64_t bytes, writes, max_box;
    double seconds;  /* this process, open to close */
    int failed;
};

struct ctx {
    const struct opts *o;
    const uint64_t *offset;  /* offset[i] of box i; offset[nbox] = file size */
    const uint64_t *deal;    /* deal[r * boxes + k] = k-th box of process r */
    struct counts *counts;
};

static int writer(int rank, void *arg)
{
    struct ctx *c = arg;
    const struct opts *o = c->o;
    struct counts *k = &c->counts[rank];
    unsigned char *buf = NULL;
    uint64_t cap = 0;
    double t0 = bench_now();
    int fd = open(o->file, O_WRONLY);

    if (fd < 0) {
        fprintf(stderr, "%s: error: rank %d: open %s: %s\n", prog, rank, o->file, strerror(errno));
        goto fail;
    }
    for (uint64_t j = 0; j < o->boxes; j++) {
        uint64_t b = c->deal[(uint64_t)rank * o->boxes + j];
        uint64_t off = c->offset[b], n = c->offset[b + 1] - off;

        if (n > cap) {
            free(buf);
            buf = malloc(n);
            if (buf == NULL)
                goto fail;
            cap = n;
        }
        bench_pattern_fill(buf, n, off);
        if (bench_pwrite_full(fd, buf, n, (off_t)off) != 0) {
            fprintf(stderr, "%s: error: rank %d: pwrite %s at %" PRIu64 ": %s\n", prog, rank,
                    o->file, off, strerror(errno));
            goto fail;
        }
        k->writes++;
        k->bytes += n;
    }
    if (o->fsync && fsync(fd) != 0) {
        fprintf(stderr, "%s: error: rank %d: fsync %s: %s\n", prog, rank, o->file, strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        fprintf(stderr, "%s: error: rank %d: close %s: %s\n", prog, rank, o->file, strerror(errno));
        goto fail;
    }
    k->seconds = bench_now() - t0;
    free(buf);
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    k->failed = 1;
    free(buf);
    return 1;
}

static uint64_t verify(const struct opts *o, uint64_t size)
{
    size_t chunk = 4u << 20;
    unsigned char *buf = malloc(chunk);
    uint64_t off = 0, bad = 0;
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
    if (off != size) {
        fprintf(stderr, "%s: error: %s has %" PRIu64 " bytes, expected %" PRIu64 "\n", prog,
                o->file, off, size);
        bad += off > size ? off - size : size - off;
    }
    return bad;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"file", required_argument, NULL, 'f'},
        {"procs", required_argument, NULL, 'P'},
        {"boxes", required_argument, NULL, 'b'},
        {"box-size", required_argument, NULL, 's'},
        {"jitter", required_argument, NULL, 'j'},
        {"seed", required_argument, NULL, 'x'},
        {"no-fsync", no_argument, NULL, 'F'},
        {"verify", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {
        .procs = 4, .boxes = 64, .box_size = 1u << 20, .jitter = 25, .seed = 1, .fsync = 1,
    };
    uint64_t nbox, *offset, *deal, bytes = 0, writes = 0, mismatches = 0;
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
        case 'b': num = &o.boxes; break;
        case 's': num = &o.box_size; is_size = 1; break;
        case 'j': num = &o.jitter; break;
        case 'x': num = &o.seed; break;
        case 'F': o.fsync = 0; continue;
        case 'V': o.verify = 1; continue;
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
    if (o.procs == 0 || o.procs > 4096 || o.boxes == 0 || o.boxes > (1u << 20))
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

    counts = bench_shared_alloc(sizeof *counts * o.procs, prog);
    cx.o = &o;
    cx.offset = offset;
    cx.deal = deal;
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
        if (counts[p].seconds > slowest)
            slowest = counts[p].seconds;
    }
    if (o.verify)
        mismatches = verify(&o, offset[nbox]);

    printf("{\"workload\":\"amr-n1\",\"file\":");
    bench_json_str(o.file);
    printf(",\"procs\":%" PRIu64 ",\"boxes_per_proc\":%" PRIu64 ",\"boxes\":%" PRIu64
           ",\"box_size\":%" PRIu64
           ",\"jitter_percent\":%" PRIu64 ",\"file_bytes\":%" PRIu64 ",\"bytes_written\":%" PRIu64
           ",\"writes\":%" PRIu64 ",\"fsyncs\":%" PRIu64 ",\"seconds\":%.9f"
           ",\"slowest_proc_seconds\":%.9f,\"verified\":%s,\"mismatches\":%" PRIu64 "}\n",
           o.procs, o.boxes, nbox, o.box_size, o.jitter, offset[nbox], bytes, writes,
           o.fsync ? o.procs : 0, t1 - t0, slowest, o.verify ? "true" : "false", mismatches);
    free(offset);
    free(deal);
    if (fflush(stdout) != 0)
        return 1;
    return mismatches == 0 ? 0 : 1;
}
