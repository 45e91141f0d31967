/*
 * sluice-bench-ckpt-burst: a checkpoint burst. --procs processes start
 * together; each writes --size bytes (the verification pattern) to its own
 * file DIR/ckpt.NNNN in --write-size write() calls, closes it, then
 * "computes" for --compute seconds and exits. What a simulation loses to a
 * checkpoint is the time each process is blocked between its open and its
 * close: io_seconds is the slowest process's. The process exit is not
 * timed here (the driver's wall clock covers it: under stage mode that is
 * where the publishing to the shared file system is waited for).
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

static const char *prog = "sluice-bench-ckpt-burst";

struct opts {
    const char *dir;
    uint64_t procs, size, write_size;
    double compute;
};

struct result {
    double io_seconds;
    uint64_t bytes, writes;
    int failed;
};

static struct opts o = {NULL, 4, 64 << 20, 1 << 20, 0};
static struct result *results;

static int writer(int rank, void *arg)
{
    char path[4096];
    unsigned char *buf = malloc(o.write_size);
    struct result *r = &results[rank];
    (void)arg;
    snprintf(path, sizeof path, "%s/ckpt.%04d", o.dir, rank);
    double t0 = bench_now();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || !buf) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
        return 1;
    }
    for (uint64_t off = 0; off < o.size; off += o.write_size) {
        size_t n = o.size - off < o.write_size ? (size_t)(o.size - off) : (size_t)o.write_size;
        bench_pattern_fill(buf, n, off);
        if (bench_write_full(fd, buf, n) != 0) {
            fprintf(stderr, "%s: write %s: %s\n", prog, path, strerror(errno));
            return 1;
        }
        r->bytes += n;
        r->writes++;
    }
    if (close(fd) != 0) {
        fprintf(stderr, "%s: close %s: %s\n", prog, path, strerror(errno));
        return 1;
    }
    r->io_seconds = bench_now() - t0;
    if (o.compute > 0)
        usleep((useconds_t)(o.compute * 1e6));
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"dir", required_argument, 0, 'd'}, {"procs", required_argument, 0, 'p'},
        {"size", required_argument, 0, 's'}, {"write-size", required_argument, 0, 'w'},
        {"compute", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': o.dir = optarg; break;
        case 'p': if (bench_parse_u64(optarg, &o.procs) != 0 || !o.procs) goto usage; break;
        case 's': if (bench_parse_size(optarg, &o.size) != 0) goto usage; break;
        case 'w': if (bench_parse_size(optarg, &o.write_size) != 0 || !o.write_size) goto usage; break;
        case 'c': o.compute = atof(optarg); break;
        case 'h':
        default: goto usage;
        }
    }
    if (!o.dir)
        goto usage;
    if (bench_mkdir(o.dir) != 0) {
        fprintf(stderr, "%s: cannot create %s: %s\n", prog, o.dir, strerror(errno));
        return 1;
    }
    results = bench_shared_alloc(o.procs * sizeof *results, prog);
    struct bench_group g;
    double t0 = bench_now();
    bench_spawn(&g, (int)o.procs, writer, NULL, prog);
    bench_release(&g);
    int failed = bench_wait(&g);
    double wall = bench_now() - t0;
    double io = 0;
    uint64_t bytes = 0, writes = 0;
    for (uint64_t i = 0; i < o.procs; i++) {
        if (results[i].io_seconds > io)
            io = results[i].io_seconds;
        bytes += results[i].bytes;
        writes += results[i].writes;
    }
    printf("{\"workload\":\"ckpt-burst\",\"procs\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"writes\":%" PRIu64
           ",\"io_seconds\":%.9f,\"seconds\":%.9f,\"failed\":%d}\n",
           o.procs, bytes, writes, io, wall, failed);
    return failed ? 1 : 0;
usage:
    fprintf(stderr, "usage: %s --dir DIR [--procs N] [--size BYTES] [--write-size BYTES] [--compute SECONDS]\n", prog);
    return 2;
}
