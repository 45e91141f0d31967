/*
 * sluice-bench-limits: the physical limits of a file system as one process
 * sees them, one phase per invocation, so that the caller can drop the page
 * cache between phases:
 *   write      large sequential write() requests to a new file, fsync, close
 *   read       large sequential read() requests of the whole file
 *   create     N files in one directory (O_CREAT|O_EXCL, optional data, close)
 *   stat       stat() each of them
 *   openclose  open(O_RDONLY) + close() each of them
 *   unlink     unlink() each of them
 * Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "sluice-bench-limits";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s PHASE [options]\n"
        "\n"
        "One phase of the physical-limit measurement, timed, printing one JSON line.\n"
        "\n"
        "Data phases (need --file):\n"
        "  write      write --size bytes in --request-size write() calls to a new file,\n"
        "             then fsync (unless --no-fsync) and close\n"
        "  read       read the whole file in --request-size read() calls\n"
        "Metadata phases (need --dir; files are DIR/f.NNNNNNN):\n"
        "  create     create --files files (O_CREAT|O_EXCL), write --file-size bytes each, close\n"
        "  stat       stat() each file\n"
        "  openclose  open(O_RDONLY) and close() each file\n"
        "  unlink     unlink() each file\n"
        "\n"
        "  --file PATH            data file\n"
        "  --dir DIR              directory for the metadata phases (created if missing)\n"
        "  --size BYTES           bytes to write (default 1G; suffixes K, M, G = 2^10, 2^20, 2^30)\n"
        "  --request-size BYTES   bytes per write()/read() (default 4M)\n"
        "  --no-fsync             do not fsync at the end of the write phase\n"
        "  --files N              files in the metadata phases (default 2000)\n"
        "  --file-size BYTES      bytes written into each created file (default 0)\n"
        "  -h, --help             this text\n",
        prog);
}

enum phase { P_WRITE, P_READ, P_CREATE, P_STAT, P_OPENCLOSE, P_UNLINK };
static const char *phase_names[] = {"write", "read", "create", "stat", "openclose", "unlink"};

struct opts {
    const char *file, *dir;
    uint64_t size, request, files, file_size;
    int fsync;
};

static void *alloc_aligned(size_t n)
{
    void *p = NULL;

    if (posix_memalign(&p, 4096, n ? n : 1) != 0)
        bench_die(prog, 0, "cannot allocate %zu bytes", n);
    return p;
}

static void out_data(const char *phase, uint64_t bytes, uint64_t ops, uint64_t fsyncs,
                     uint64_t request, double secs)
{
    printf("{\"workload\":\"limits\",\"phase\":\"%s\",\"bytes\":%" PRIu64 ",\"ops\":%" PRIu64
           ",\"fsyncs\":%" PRIu64 ",\"request_size\":%" PRIu64 ",\"seconds\":%.9f}\n",
           phase, bytes, ops, fsyncs, request, secs);
}

static void do_write(const struct opts *o)
{
    unsigned char *buf = alloc_aligned(o->request);
    uint64_t done = 0, ops = 0;
    double t0, t1;
    int fd;

    bench_pattern_fill(buf, o->request, 0);
    t0 = bench_now();
    fd = open(o->file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        bench_die(prog, 1, "open %s", o->file);
    while (done < o->size) {
        uint64_t left = o->size - done;
        size_t n = left < o->request ? (size_t)left : (size_t)o->request;

        if (bench_write_full(fd, buf, n) != 0)
            bench_die(prog, 1, "write %s", o->file);
        done += n;
        ops++;
    }
    if (o->fsync && fsync(fd) != 0)
        bench_die(prog, 1, "fsync %s", o->file);
    if (close(fd) != 0)
        bench_die(prog, 1, "close %s", o->file);
    t1 = bench_now();
    out_data("write", done, ops, o->fsync ? 1 : 0, o->request, t1 - t0);
    free(buf);
}

static void do_read(const struct opts *o)
{
    unsigned char *buf = alloc_aligned(o->request);
    uint64_t done = 0, ops = 0;
    double t0, t1;
    int fd;

    t0 = bench_now();
    fd = open(o->file, O_RDONLY);
    if (fd < 0)
        bench_die(prog, 1, "open %s", o->file);
    for (;;) {
        ssize_t got = bench_read_full(fd, buf, o->request);

        if (got < 0)
            bench_die(prog, 1, "read %s", o->file);
        if (got == 0)
            break;
        done += (uint64_t)got;
        ops++;
        if ((uint64_t)got < o->request)
            break;
    }
    if (close(fd) != 0)
        bench_die(prog, 1, "close %s", o->file);
    t1 = bench_now();
    out_data("read", done, ops, 0, o->request, t1 - t0);
    free(buf);
}

static void do_meta(const struct opts *o, enum phase ph)
{
    char path[PATH_MAX];
    unsigned char *buf = NULL;
    double t0, t1;
    uint64_t bytes = 0;

    if (ph == P_CREATE) {
        if (bench_mkdir(o->dir) != 0)
            bench_die(prog, 1, "mkdir %s", o->dir);
        buf = alloc_aligned(o->file_size);
        bench_pattern_fill(buf, o->file_size, 0);
    }
    t0 = bench_now();
    for (uint64_t i = 0; i < o->files; i++) {
        struct stat st;
        int fd;

        snprintf(path, sizeof path, "%s/f.%07" PRIu64, o->dir, i);
        switch (ph) {
        case P_CREATE:
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (fd < 0)
                bench_die(prog, 1, "create %s", path);
            if (o->file_size && bench_write_full(fd, buf, o->file_size) != 0)
                bench_die(prog, 1, "write %s", path);
            if (close(fd) != 0)
                bench_die(prog, 1, "close %s", path);
            bytes += o->file_size;
            break;
        case P_STAT:
            if (stat(path, &st) != 0)
                bench_die(prog, 1, "stat %s", path);
            break;
        case P_OPENCLOSE:
            fd = open(path, O_RDONLY);
            if (fd < 0)
                bench_die(prog, 1, "open %s", path);
            if (close(fd) != 0)
                bench_die(prog, 1, "close %s", path);
            break;
        case P_UNLINK:
            if (unlink(path) != 0)
                bench_die(prog, 1, "unlink %s", path);
            break;
        default:
            break;
        }
    }
    t1 = bench_now();
    printf("{\"workload\":\"limits\",\"phase\":\"%s\",\"files\":%" PRIu64 ",\"ops\":%" PRIu64
           ",\"file_size\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"seconds\":%.9f}\n",
           phase_names[ph], o->files, o->files, o->file_size, bytes, t1 - t0);
    free(buf);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"file", required_argument, NULL, 'f'},
        {"dir", required_argument, NULL, 'd'},
        {"size", required_argument, NULL, 's'},
        {"request-size", required_argument, NULL, 'r'},
        {"no-fsync", no_argument, NULL, 'F'},
        {"files", required_argument, NULL, 'n'},
        {"file-size", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {
        .size = 1ull << 30, .request = 4u << 20, .files = 2000, .file_size = 0, .fsync = 1,
    };
    int c, li = 0, ph = -1;

    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        switch (c) {
        case 'f': o.file = optarg; break;
        case 'd': o.dir = optarg; break;
        case 's':
            if (bench_parse_size(optarg, &o.size) != 0)
                bench_die(prog, 0, "bad --size '%s'", optarg);
            break;
        case 'r':
            if (bench_parse_size(optarg, &o.request) != 0 || o.request == 0 ||
                o.request > (1ull << 31))
                bench_die(prog, 0, "bad --request-size '%s' (1 B..2 GiB)", optarg);
            break;
        case 'F': o.fsync = 0; break;
        case 'n':
            if (bench_parse_u64(optarg, &o.files) != 0 || o.files > 9999999)
                bench_die(prog, 0, "bad --files '%s' (0..9999999)", optarg);
            break;
        case 'z':
            if (bench_parse_size(optarg, &o.file_size) != 0 || o.file_size > (1ull << 30))
                bench_die(prog, 0, "bad --file-size '%s' (0..1 GiB)", optarg);
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    for (int i = 0; i < (int)(sizeof phase_names / sizeof *phase_names); i++)
        if (strcmp(argv[optind], phase_names[i]) == 0)
            ph = i;
    if (ph < 0)
        bench_die(prog, 0, "unknown phase '%s' (see --help)", argv[optind]);
    if (ph <= P_READ && o.file == NULL)
        bench_die(prog, 0, "phase %s needs --file", argv[optind]);
    if (ph > P_READ && o.dir == NULL)
        bench_die(prog, 0, "phase %s needs --dir", argv[optind]);

    if (ph == P_WRITE)
        do_write(&o);
    else if (ph == P_READ)
        do_read(&o);
    else
        do_meta(&o, (enum phase)ph);
    return bench_exit_status(1);
}
