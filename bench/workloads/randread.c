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
#include <getopt.h>
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
        "The byte at offset p is (p mod 251) XOR (uint8)(b*157 + (b>>8)), b = p>>16.\n",
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
        if (o->verify) {
            double c0 = bench_now();

            r->mismatches += bench_pattern_check(buf, (size_t)got, off);
            r->verify_seconds += bench_now() - c0;
        }
    }
    if (close(fd) != 0)
        bench_die(prog, 1, "close %s", o->file);
    r->read_seconds = bench_now() - t0 - r->verify_seconds;
    free(buf);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"file", required_argument, NULL, 'f'},
        {"phase", required_argument, NULL, 'p'},
        {"size", required_argument, NULL, 's'},
        {"read-size", required_argument, NULL, 'r'},
        {"reads", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 'x'},
        {"verify", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {
        .size = 256u << 20, .read_size = 4096, .reads = 16384, .seed = 1, .do_setup = 1, .do_run = 1,
    };
    const char *phase = "all";
    struct result r;
    int c, li = 0;

    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        uint64_t *num = NULL;
        int is_size = 0;

        switch (c) {
        case 'f': o.file = optarg; continue;
        case 's': num = &o.size; is_size = 1; break;
        case 'r': num = &o.read_size; is_size = 1; break;
        case 'n': num = &o.reads; break;
        case 'x': num = &o.seed; break;
        case 'V': o.verify = 1; continue;
        case 'p':
            phase = optarg;
            if (strcmp(optarg, "setup") == 0)
                o.do_setup = 1, o.do_run = 0;
            else if (strcmp(optarg, "run") == 0)
                o.do_setup = 0, o.do_run = 1;
            else if (strcmp(optarg, "all") == 0)
                o.do_setup = 1, o.do_run = 1;
            else
                bench_die(prog, 0, "bad --phase '%s' (setup, run or all)", optarg);
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
    if (o.read_size == 0 || o.read_size > (64u << 20))
        bench_die(prog, 0, "--read-size must be 1 B..64 MiB");

    memset(&r, 0, sizeof r);
    if (o.do_setup)
        setup(&o, &r);
    if (o.do_run)
        run(&o, &r);

    printf("{\"workload\":\"randread\",\"phase\":\"%s\",\"file\":", phase);
    bench_json_str(o.file);
    printf(",\"size\":%" PRIu64 ",\"setup_bytes\":%" PRIu64 ",\"file_bytes\":%" PRIu64
           ",\"read_size\":%" PRIu64 ",\"read_ops\":%" PRIu64 ",\"bytes_read\":%" PRIu64
           ",\"short_reads\":%" PRIu64 ",\"read_seconds\":%.9f,\"verified\":%s"
           ",\"mismatches\":%" PRIu64 ",\"verify_seconds\":%.9f}\n",
           o.size, r.setup_bytes, r.file_bytes, o.read_size, r.read_ops, r.bytes_read,
           r.short_reads, r.read_seconds, o.verify && o.do_run ? "true" : "false", r.mismatches,
           r.verify_seconds);
    if (fflush(stdout) != 0)
        return 1;
    return r.mismatches == 0 ? 0 : 1;
}
