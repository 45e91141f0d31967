/*
 * sluice-bench-smallread: many small files each read whole (a model reading
 * its many small input, restart or parameter files). --phase setup creates
 * --files files of --min-size..--max-size bytes (seeded) in one directory;
 * --phase run opens each in turn, read()s it in --read-size calls until
 * read() returns 0, and closes it.
 *
 * File i holds bytes [i*1M, i*1M + size) of the verification pattern
 * (common.h), so a file read in place of another is detected. With --verify
 * every read is checked; the time spent checking is measured and left out
 * of read_seconds.
 * Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "sluice-bench-smallread";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --dir DIR [options]\n"
        "\n"
        "Many small files, each opened, read whole in small read() calls and closed.\n"
        "Prints one JSON line: files, bytes, calls and seconds.\n"
        "\n"
        "  --dir DIR          directory of the files (created by setup; required)\n"
        "  --phase P          setup (create the files), run (read them) or all (default all)\n"
        "  --files N          files (default 2000)\n"
        "  --min-size BYTES   smallest file (default 1K)\n"
        "  --max-size BYTES   largest file (default 20K)\n"
        "  --read-size BYTES  bytes per read() (default 4K)\n"
        "  --seed S           seed of the file sizes (default 1)\n"
        "  --verify           check every byte read (exit 1 on a mismatch); checking\n"
        "                     time is not counted in read_seconds\n"
        "  -h, --help         this text\n"
        "\n"
        "Files are DIR/f.NNNNN; file i holds the pattern of common.h from offset i*2^20:\n"
        "the byte at p is " BENCH_PATTERN_HELP ".\n",
        prog);
}

struct opts {
    const char *dir;
    uint64_t files, min_size, max_size, read_size, seed;
    int do_setup, do_run, verify;
};

struct result {
    uint64_t setup_bytes, expected_bytes, bytes_read, read_ops, opens, closes, wrong_sizes, mismatches;
    double read_seconds, verify_seconds;
};

static uint64_t file_size(const struct opts *o, uint64_t i)
{
    uint64_t span = o->max_size - o->min_size + 1;
    return o->min_size + bench_mix64(o->seed * 0x100000001b3ull ^ bench_mix64(i)) % span;
}

static uint64_t file_base(uint64_t i)
{
    return i << 20;
}

static void path_of(const struct opts *o, uint64_t i, char *path, size_t cap)
{
    snprintf(path, cap, "%s/f.%05" PRIu64, o->dir, i);
}

static void setup(const struct opts *o, struct result *r)
{
    unsigned char *buf = malloc(o->max_size ? o->max_size : 1);
    char path[PATH_MAX];

    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    if (bench_mkdir(o->dir) != 0)
        bench_die(prog, 1, "mkdir %s", o->dir);
    for (uint64_t i = 0; i < o->files; i++) {
        uint64_t n = file_size(o, i);
        int fd;

        path_of(o, i, path, sizeof path);
        bench_pattern_fill(buf, n, file_base(i));
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            bench_die(prog, 1, "open %s", path);
        if (bench_write_full(fd, buf, n) != 0 || close(fd) != 0)
            bench_die(prog, 1, "write/close %s", path);
        r->setup_bytes += n;
    }
    free(buf);
}

static void run(const struct opts *o, struct result *r)
{
    unsigned char *buf = malloc(o->read_size);
    char path[PATH_MAX];
    double t0;

    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    t0 = bench_now();
    for (uint64_t i = 0; i < o->files; i++) {
        uint64_t got_file = 0;
        int fd;

        path_of(o, i, path, sizeof path);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            bench_die(prog, 1, "open %s", path);
        r->opens++;
        for (;;) {
            ssize_t got = read(fd, buf, o->read_size);

            if (got < 0) {
                if (errno == EINTR)
                    continue;
                bench_die(prog, 1, "read %s", path);
            }
            r->read_ops++;
            if (got == 0)
                break;
            if (o->verify)
                r->mismatches += bench_pattern_check_timed(buf, (size_t)got,
                                                           file_base(i) + got_file,
                                                           &r->verify_seconds);
            got_file += (uint64_t)got;
        }
        if (close(fd) != 0)
            bench_die(prog, 1, "close %s", path);
        r->closes++;
        r->bytes_read += got_file;
        r->expected_bytes += file_size(o, i);
        r->wrong_sizes += got_file != file_size(o, i);
    }
    r->read_seconds = bench_now() - t0 - r->verify_seconds;
    free(buf);
}

int main(int argc, char **argv)
{
    struct opts o = {
        .files = 2000, .min_size = 1024, .max_size = 20 << 10, .read_size = 4096, .seed = 1,
    };
    int phase = BENCH_PHASE_ALL;
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("dir", &o.dir),
        BENCH_OPT_CHOICE("phase", &phase, bench_setup_run_phases),
        BENCH_OPT_COUNT("files", &o.files),
        BENCH_OPT_SIZE("min-size", &o.min_size),
        BENCH_OPT_SIZE("max-size", &o.max_size),
        BENCH_OPT_SIZE("read-size", &o.read_size),
        BENCH_OPT_COUNT("seed", &o.seed),
        BENCH_OPT_FLAG("verify", &o.verify, 1),
        BENCH_OPT_END,
    };
    struct result r;

    bench_parse_options(prog, argc, argv, options, usage);
    o.do_setup = phase != BENCH_PHASE_RUN;
    o.do_run = phase != BENCH_PHASE_SETUP;
    if (o.files > 99999)
        bench_die(prog, 0, "--files must be at most 99999");
    if (o.min_size > o.max_size || o.max_size > (1u << 20))
        bench_die(prog, 0, "need --min-size <= --max-size <= 1M");
    if (o.read_size == 0 || o.read_size > (64u << 20))
        bench_die(prog, 0, "--read-size must be 1 B..64 MiB");

    memset(&r, 0, sizeof r);
    if (o.do_setup)
        setup(&o, &r);
    if (o.do_run)
        run(&o, &r);

    bench_json_begin("smallread", bench_setup_run_phases[phase], "dir", o.dir);
    printf(",\"files\":%" PRIu64 ",\"min_size\":%" PRIu64 ",\"max_size\":%" PRIu64
           ",\"read_size\":%" PRIu64 ",\"setup_bytes\":%" PRIu64 ",\"expected_bytes\":%" PRIu64
           ",\"bytes_read\":%" PRIu64 ",\"read_ops\":%" PRIu64 ",\"opens\":%" PRIu64
           ",\"closes\":%" PRIu64 ",\"wrong_sizes\":%" PRIu64 ",\"read_seconds\":%.9f"
           ",\"verified\":%s,\"mismatches\":%" PRIu64 ",\"verify_seconds\":%.9f}\n",
           o.files, o.min_size, o.max_size, o.read_size, r.setup_bytes, r.expected_bytes,
           r.bytes_read, r.read_ops, r.opens, r.closes, r.wrong_sizes, r.read_seconds,
           o.verify && o.do_run ? "true" : "false", r.mismatches, r.verify_seconds);
    return bench_exit_status(r.mismatches == 0 && r.wrong_sizes == 0);
}
