/*
 * sluice-bench-randread: small reads at random offsets of one large file
 * (a model reading scattered records of a big input, a database-like
 * lookup). --phase setup writes --size bytes of the verification pattern
 * (common.h) in 4 MiB writes and fsyncs; --phase run opens the file, makes
 * --reads pread() calls of --read-size bytes at offsets that are seeded
 * random multiples of --read-size, and closes it.
 *
 * With --verify every read is checked against the pattern; the time spent
 * checking is measured and left out of read_seconds, so the figure is the
 * same with and without it.
 * Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "sluice-bench-randread";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --file PATH [options]\n"
        "\n"
        "Small reads at random offsets of one large file. Prints one JSON line:\n"
        "bytes, reads and seconds.\n"
        "\n"
        "  --file PATH        the file (required)\n"
        "  --phase P          setup (write the file), run (the random reads) or all\n"
        "                     (default all)\n"
        "  --size BYTES       file size written by setup (default 256M)\n"
        "  --read-size BYTES  bytes per pread() (default 4K); offsets are multiples of it\n"
        "  --reads N          pread() calls (default 16384)\n"
        "  --seed S           seed of the offsets (default 1)\n"
        "  --verify           check every byte read against the pattern (exit 1 on a\n"
        "                     mismatch); checking time is not counted in read_seconds\n"
        "  -h, --help         this text\n"
        "\n"
        "The byte at offset p is " BENCH_PATTERN_HELP ".\n",
        prog);
}

struct opts {
    const char *file;
    uint64_t size, read_size, reads, seed;
    int do_setup, do_run, verify;
};

struct result {
    uint64_t setup_bytes, file_bytes, bytes_read, read_ops, short_reads, mismatches;
    double read_seconds, verify_seconds;
};

static void setup(const struct opts *o, struct result *r)
{
    size_t chunk = 4u << 20;
    unsigned char *buf = malloc(chunk);
    int fd = open(o->file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    if (fd < 0)
        bench_die(prog, 1, "open %s", o->file);
    for (uint64_t off = 0; off < o->size; off += chunk) {
        size_t n = o->size - off < chunk ? (size_t)(o->size - off) : chunk;

        bench_pattern_fill(buf, n, off);
        if (bench_write_full(fd, buf, n) != 0)
            bench_die(prog, 1, "write %s", o->file);
        r->setup_bytes += n;
    }
    if (fsync(fd) != 0 || close(fd) != 0)
        bench_die(prog, 1, "fsync/close %s", o->file);
    free(buf);
}

static void run(const struct opts *o, struct result *r)
{
    unsigned char *buf = malloc(o->read_size);
    struct stat st;
    uint64_t slots;
    double t0;
    int fd;

    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    t0 = bench_now();
    fd = open(o->file, O_RDONLY);
    if (fd < 0)
        bench_die(prog, 1, "open %s", o->file);
    if (fstat(fd, &st) != 0)
        bench_die(prog, 1, "fstat %s", o->file);
    r->file_bytes = (uint64_t)st.st_size;
    slots = r->file_bytes / o->read_size;
    if (slots == 0)
        bench_die(prog, 0, "%s is smaller than one read (%" PRIu64 " bytes)", o->file, o->read_size);
    for (uint64_t i = 0; i < o->reads; i++) {
        uint64_t off = bench_mix64(o->seed * 0x100000001b3ull ^ bench_mix64(i)) % slots * o->read_size;
        ssize_t got;

        do
            got = pread(fd, buf, o->read_size, (off_t)off);
        while (got < 0 && errno == EINTR);
        if (got < 0)
            bench_die(prog, 1, "pread %s at %" PRIu64, o->file, off);
        r->read_ops++;
        r->bytes_read += (uint64_t)got;
        r->short_reads += (uint64_t)got != o->read_size;
        if (o->verify)
            r->mismatches += bench_pattern_check_timed(buf, (size_t)got, off, &r->verify_seconds);
    }
    if (close(fd) != 0)
        bench_die(prog, 1, "close %s", o->file);
    r->read_seconds = bench_now() - t0 - r->verify_seconds;
    free(buf);
}

int main(int argc, char **argv)
{
    struct opts o = {.size = 256u << 20, .read_size = 4096, .reads = 16384, .seed = 1};
    int phase = BENCH_PHASE_ALL;
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("file", &o.file),
        BENCH_OPT_CHOICE("phase", &phase, bench_setup_run_phases),
        BENCH_OPT_SIZE("size", &o.size),
        BENCH_OPT_SIZE("read-size", &o.read_size),
        BENCH_OPT_COUNT("reads", &o.reads),
        BENCH_OPT_COUNT("seed", &o.seed),
        BENCH_OPT_FLAG("verify", &o.verify, 1),
        BENCH_OPT_END,
    };
    struct result r;

    bench_parse_options(prog, argc, argv, options, usage);
    o.do_setup = phase != BENCH_PHASE_RUN;
    o.do_run = phase != BENCH_PHASE_SETUP;
    if (o.read_size == 0 || o.read_size > (64u << 20))
        bench_die(prog, 0, "--read-size must be 1 B..64 MiB");

    memset(&r, 0, sizeof r);
    if (o.do_setup)
        setup(&o, &r);
    if (o.do_run)
        run(&o, &r);

    bench_json_begin("randread", bench_setup_run_phases[phase], "file", o.file);
    printf(",\"size\":%" PRIu64 ",\"setup_bytes\":%" PRIu64 ",\"file_bytes\":%" PRIu64
           ",\"read_size\":%" PRIu64 ",\"read_ops\":%" PRIu64 ",\"bytes_read\":%" PRIu64
           ",\"short_reads\":%" PRIu64 ",\"read_seconds\":%.9f,\"verified\":%s"
           ",\"mismatches\":%" PRIu64 ",\"verify_seconds\":%.9f}\n",
           o.size, r.setup_bytes, r.file_bytes, o.read_size, r.read_ops, r.bytes_read,
           r.short_reads, r.read_seconds, o.verify && o.do_run ? "true" : "false", r.mismatches,
           r.verify_seconds);
    return bench_exit_status(r.mismatches == 0);
}
