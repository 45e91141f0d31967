/*
 * sluice-bench-smallio: small sequential writes, then small sequential reads,
 * of one file, the way a code that does its own unbuffered I/O hits the file
 * system (the Agro-IBIS report: 8 KiB writes, 4 KiB reads).
 *
 * The write phase writes --size bytes of the verification pattern (common.h)
 * in --write-size write() calls, optionally fsyncs, and closes. The read
 * phase reads the whole file back in --read-size read() calls, optionally
 * checking every byte. Each phase times open through close.
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
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "sluice-bench-smallio";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --file PATH [options]\n"
        "\n"
        "Small sequential writes, then small sequential reads, of one file.\n"
        "Prints one JSON line: bytes, operations and seconds of each phase.\n"
        "\n"
        "  --file PATH         the file to write and read (required)\n"
        "  --size BYTES        bytes to write (default 64M; suffixes K, M, G = 2^10, 2^20, 2^30)\n"
        "  --write-size BYTES  bytes per write() call (default 8K)\n"
        "  --read-size BYTES   bytes per read() call (default 4K)\n"
        "  --phase P           write, read or both (default both); read reads the\n"
        "                      whole existing file\n"
        "  --wrap BYTES        seek back to offset 0 after every BYTES written, so that a\n"
        "                      long run of writes needs only BYTES of space (default: never;\n"
        "                      must be a multiple of --write-size)\n"
        "  --fsync             fsync before closing the written file\n"
        "  --verify            check every byte read against the pattern written\n"
        "  --meta N            then N stat() calls of the file and N open+close pairs,\n"
        "                      each timed (the cost of path calls)\n"
        "                      (exit 1 on a mismatch)\n"
        "  -h, --help          this text\n"
        "\n"
        "The byte at offset p is " BENCH_PATTERN_HELP ".\n",
        prog);
}

struct opts {
    const char *file;
    uint64_t size, write_size, read_size, wrap, meta;
    int do_write, do_read, do_fsync, verify;
};

struct result {
    uint64_t bytes_written, write_ops, bytes_read, read_ops, mismatches;
    uint64_t opens, closes, fsyncs, seeks;
    double stat_seconds, openclose_seconds;
    double write_seconds, read_seconds;
};

static void phase_write(const struct opts *o, struct result *r)
{
    unsigned char *buf = malloc(o->write_size);
    uint64_t off = 0, done = 0;
    double t0, t1;
    int fd;

    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    t0 = bench_now();
    fd = open(o->file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        bench_die(prog, 1, "open %s", o->file);
    r->opens++;
    while (done < o->size) {
        uint64_t left = o->size - done;
        size_t n = left < o->write_size ? (size_t)left : (size_t)o->write_size;

        if (o->wrap != 0 && off == o->wrap) {
            if (lseek(fd, 0, SEEK_SET) != 0)
                bench_die(prog, 1, "lseek %s", o->file);
            r->seeks++;
            off = 0;
        }
        bench_pattern_fill(buf, n, off);
        if (bench_write_full(fd, buf, n) != 0)
            bench_die(prog, 1, "write %s at %" PRIu64, o->file, off);
        r->write_ops++;
        off += n;
        done += n;
    }
    if (o->do_fsync) {
        if (fsync(fd) != 0)
            bench_die(prog, 1, "fsync %s", o->file);
        r->fsyncs++;
    }
    if (close(fd) != 0)
        bench_die(prog, 1, "close %s", o->file);
    r->closes++;
    t1 = bench_now();
    r->bytes_written = done;
    r->write_seconds = t1 - t0;
    free(buf);
}

static void phase_read(const struct opts *o, struct result *r)
{
    unsigned char *buf = malloc(o->read_size);
    uint64_t off = 0;
    double t0, t1;
    int fd;

    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    t0 = bench_now();
    fd = open(o->file, O_RDONLY);
    if (fd < 0)
        bench_die(prog, 1, "open %s", o->file);
    r->opens++;
    for (;;) {
        ssize_t got = bench_read_full(fd, buf, o->read_size);

        if (got < 0)
            bench_die(prog, 1, "read %s at %" PRIu64, o->file, off);
        if (got == 0)
            break;
        r->read_ops++;
        if (o->verify)
            r->mismatches += bench_pattern_check(buf, (size_t)got, off);
        off += (uint64_t)got;
        if ((size_t)got < o->read_size)
            break;
    }
    if (close(fd) != 0)
        bench_die(prog, 1, "close %s", o->file);
    r->closes++;
    t1 = bench_now();
    r->bytes_read = off;
    r->read_seconds = t1 - t0;
    free(buf);
}

/* N stats of the file, then N open+close pairs. */
static void phase_meta(const struct opts *o, struct result *r)
{
    struct stat st;
    double t0 = bench_now();
    for (uint64_t i = 0; i < o->meta; i++)
        if (stat(o->file, &st) != 0)
            bench_die(prog, errno, "stat");
    double t1 = bench_now();
    for (uint64_t i = 0; i < o->meta; i++) {
        int fd = open(o->file, O_RDONLY);
        if (fd < 0 || close(fd) != 0)
            bench_die(prog, errno, "open/close");
    }
    r->stat_seconds = t1 - t0;
    r->openclose_seconds = bench_now() - t1;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"file", required_argument, NULL, 'f'},
        {"size", required_argument, NULL, 's'},
        {"write-size", required_argument, NULL, 'w'},
        {"read-size", required_argument, NULL, 'r'},
        {"phase", required_argument, NULL, 'p'},
        {"wrap", required_argument, NULL, 'W'},
        {"fsync", no_argument, NULL, 'F'},
        {"verify", no_argument, NULL, 'v'},
        {"meta", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {
        .size = 64ull << 20, .write_size = 8192, .read_size = 4096,
        .do_write = 1, .do_read = 1,
    };
    static const char *const phases[] = {"write", "read", "both", NULL};
    enum { PHASE_WRITE, PHASE_READ, PHASE_BOTH };
    struct result r;
    int c, phase = PHASE_BOTH;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': o.file = optarg; break;
        case 's':
            if (bench_parse_size(optarg, &o.size) != 0)
                bench_die(prog, 0, "bad --size '%s'", optarg);
            break;
        case 'w':
            if (bench_parse_size(optarg, &o.write_size) != 0 || o.write_size == 0)
                bench_die(prog, 0, "bad --write-size '%s'", optarg);
            break;
        case 'r':
            if (bench_parse_size(optarg, &o.read_size) != 0 || o.read_size == 0)
                bench_die(prog, 0, "bad --read-size '%s'", optarg);
            break;
        case 'W':
            if (bench_parse_size(optarg, &o.wrap) != 0)
                bench_die(prog, 0, "bad --wrap '%s'", optarg);
            break;
        case 'p':
            phase = bench_parse_choice(prog, "phase", optarg, phases);
            o.do_write = phase != PHASE_READ;
            o.do_read = phase != PHASE_WRITE;
            break;
        case 'F': o.do_fsync = 1; break;
        case 'v': o.verify = 1; break;
        case 'm':
            if (bench_parse_size(optarg, &o.meta) != 0)
                bench_die(prog, 0, "bad --meta '%s'", optarg);
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (o.file == NULL)
        bench_die(prog, 0, "--file is required (see --help)");
    if (o.wrap != 0 && o.wrap % o.write_size != 0)
        bench_die(prog, 0, "--wrap must be a multiple of --write-size");

    memset(&r, 0, sizeof r);
    if (o.do_write)
        phase_write(&o, &r);
    if (o.do_read)
        phase_read(&o, &r);
    if (o.meta)
        phase_meta(&o, &r);

    bench_json_begin("smallio", phases[phase], "file", o.file);
    printf(",\"write_size\":%" PRIu64 ",\"read_size\":%" PRIu64 ",\"wrap\":%" PRIu64
           ",\"bytes_written\":%" PRIu64 ",\"write_ops\":%" PRIu64
           ",\"write_seconds\":%.9f,\"bytes_read\":%" PRIu64 ",\"read_ops\":%" PRIu64
           ",\"read_seconds\":%.9f,\"opens\":%" PRIu64 ",\"closes\":%" PRIu64
           ",\"fsyncs\":%" PRIu64 ",\"seeks\":%" PRIu64 ",\"verified\":%s,\"mismatches\":%" PRIu64
           ",\"seconds\":%.9f,\"meta_ops\":%" PRIu64 ",\"stat_seconds\":%.9f,\"openclose_seconds\":%.9f}\n",
           o.write_size, o.read_size, o.wrap, r.bytes_written, r.write_ops, r.write_seconds,
           r.bytes_read, r.read_ops, r.read_seconds, r.opens, r.closes, r.fsyncs, r.seeks,
           o.verify ? "true" : "false", r.mismatches, r.write_seconds + r.read_seconds, o.meta, r.stat_seconds,
           r.openclose_seconds);
    return bench_exit_status(r.mismatches == 0);
}
