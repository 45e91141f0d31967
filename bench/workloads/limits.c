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
 * and, for `sluice bench calibrate` (python/sluice/bench/calibrate.py):
 *   rename     rename() each of them away and back
 *   mkdir      mkdir() N directories; rmdir: rmdir() each
 *   fsync      N small writes into one file, each followed by fsync()
 *   strided    this process's pieces of a file several processes write at
 *              once (piece i is rank i % nprocs's): one stripe's contention
 * Several processes started with the same --start-at begin together and
 * time from that moment. Output: one JSON line.
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
#include <time.h>
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
        "  rename     rename() each file to DIR/g.NNNNNNN and back (2 operations a file)\n"
        "  mkdir      mkdir() --files directories DIR/d.NNNNNNN\n"
        "  rmdir      rmdir() each of them\n"
        "Calibration phases (need --file):\n"
        "  fsync      --files times: pwrite --file-size bytes at offset 0, then fsync\n"
        "  strided    write the pieces i (of --request-size bytes, --size bytes in all)\n"
        "             with i %% --nprocs == --rank into the file (not truncated), fsync\n"
        "\n"
        "  --file PATH            data file\n"
        "  --dir DIR              directory for the metadata phases (created if missing)\n"
        "  --size BYTES           bytes to write (default 1G; suffixes K, M, G = 2^10, 2^20, 2^30)\n"
        "  --request-size BYTES   bytes per write()/read() (default 4M)\n"
        "  --no-fsync             do not fsync at the end of the write phase\n"
        "  --files N              files in the metadata phases (default 2000)\n"
        "  --file-size BYTES      bytes written into each created file (default 0)\n"
        "  --rank R, --nprocs P   this process's share in strided (default 0 of 1)\n"
        "  --start-at T           begin at wall-clock time T (seconds since the epoch) and\n"
        "                         time from then: processes started together compare\n"
        "  -h, --help             this text\n",
        prog);
}

enum phase { P_WRITE, P_READ, P_FSYNC, P_STRIDED, P_CREATE, P_STAT, P_OPENCLOSE, P_UNLINK, P_RENAME, P_MKDIR,
             P_RMDIR };
static const char *phase_names[] = {"write", "read",   "fsync", "strided", "create", "stat",
                                    "openclose", "unlink", "rename", "mkdir", "rmdir"};
#define LAST_FILE_PHASE P_STRIDED

struct opts {
    const char *file, *dir;
    uint64_t size, request, files, file_size, rank, nprocs;
    int fsync;
    double start_at;   /* wall clock; 0: now */
};

/* The phase's start: now, or (waited for) the --start-at moment, as a
 * bench_now() value. */
static double phase_start(const struct opts *o)
{
    if (o->start_at <= 0)
        return bench_now();
    struct timespec ts = {(time_t)o->start_at, (long)((o->start_at - (double)(time_t)o->start_at) * 1e9)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double late = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 - o->start_at;
    return bench_now() - (late > 0 ? late : 0);   /* (a process that started late counts from T too) */
}

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

/* The end of a written phase: fsync (unless --no-fsync), close, the JSON
 * line timed from t0. */
static void written(const struct opts *o, const char *phase, int fd, uint64_t done, uint64_t ops, double t0,
                    unsigned char *buf)
{
    if (o->fsync && fsync(fd) != 0)
        bench_die(prog, 1, "fsync %s", o->file);
    if (close(fd) != 0)
        bench_die(prog, 1, "close %s", o->file);
    out_data(phase, done, ops, o->fsync ? 1 : 0, o->request, bench_now() - t0);
    free(buf);
}

static void do_write(const struct opts *o)
{
    unsigned char *buf = alloc_aligned(o->request);
    uint64_t done = 0, ops = 0;
    double t0;
    int fd;

    bench_pattern_fill(buf, o->request, 0);
    t0 = phase_start(o);
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
    written(o, "write", fd, done, ops, t0, buf);
}

static void do_read(const struct opts *o)
{
    unsigned char *buf = alloc_aligned(o->request);
    uint64_t done = 0, ops = 0;
    double t0, t1;
    int fd;

    t0 = phase_start(o);
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

static void do_fsync(const struct opts *o)
{
    unsigned char *buf = alloc_aligned(o->file_size);
    int fd = open(o->file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    double t0, t1;

    if (fd < 0)
        bench_die(prog, 1, "open %s", o->file);
    bench_pattern_fill(buf, o->file_size, 0);
    t0 = phase_start(o);
    for (uint64_t i = 0; i < o->files; i++)
        if ((o->file_size && pwrite(fd, buf, o->file_size, 0) != (ssize_t)o->file_size) || fsync(fd) != 0)
            bench_die(prog, 1, "write and fsync %s", o->file);
    t1 = bench_now();
    if (close(fd) != 0)
        bench_die(prog, 1, "close %s", o->file);
    out_data("fsync", o->files * o->file_size, o->files, o->files, o->file_size, t1 - t0);
    free(buf);
}

static void do_strided(const struct opts *o)
{
    unsigned char *buf = alloc_aligned(o->request);
    uint64_t done = 0, ops = 0, pieces = (o->size + o->request - 1) / o->request;
    double t0;
    int fd;

    bench_pattern_fill(buf, o->request, o->rank);
    t0 = phase_start(o);
    fd = open(o->file, O_WRONLY | O_CREAT, 0644);
    if (fd < 0)
        bench_die(prog, 1, "open %s", o->file);
    for (uint64_t i = o->rank; i < pieces; i += o->nprocs) {
        uint64_t off = i * o->request, n = o->size - off < o->request ? o->size - off : o->request;
        if (pwrite(fd, buf, (size_t)n, (off_t)off) != (ssize_t)n)
            bench_die(prog, 1, "pwrite %s", o->file);
        done += n;
        ops++;
    }
    written(o, "strided", fd, done, ops, t0, buf);
}

static void do_meta(const struct opts *o, enum phase ph)
{
    char path[PATH_MAX];
    unsigned char *buf = NULL;
    double t0, t1;
    uint64_t bytes = 0;

    if (ph == P_CREATE || ph == P_MKDIR) {
        if (bench_mkdir(o->dir) != 0)
            bench_die(prog, 1, "mkdir %s", o->dir);
        buf = alloc_aligned(o->file_size);
        bench_pattern_fill(buf, o->file_size, 0);
    }
    uint64_t ops = 0;
    t0 = phase_start(o);
    for (uint64_t i = 0; i < o->files; i++) {
        struct stat st;
        char other[PATH_MAX];
        int fd;

        snprintf(path, sizeof path, "%s/%s.%07" PRIu64, o->dir, ph == P_MKDIR || ph == P_RMDIR ? "d" : "f", i);
        ops++;
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
        case P_RENAME:
            snprintf(other, sizeof other, "%s/g.%07" PRIu64, o->dir, i);
            if (rename(path, other) != 0 || rename(other, path) != 0)
                bench_die(prog, 1, "rename %s", path);
            ops++;
            break;
        case P_MKDIR:
            if (mkdir(path, 0755) != 0)
                bench_die(prog, 1, "mkdir %s", path);
            break;
        case P_RMDIR:
            if (rmdir(path) != 0)
                bench_die(prog, 1, "rmdir %s", path);
            break;
        default:
            break;
        }
    }
    t1 = bench_now();
    printf("{\"workload\":\"limits\",\"phase\":\"%s\",\"files\":%" PRIu64 ",\"ops\":%" PRIu64
           ",\"file_size\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"seconds\":%.9f}\n",
           phase_names[ph], o->files, ops, o->file_size, bytes, t1 - t0);
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
        {"rank", required_argument, NULL, 'R'},
        {"nprocs", required_argument, NULL, 'P'},
        {"start-at", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {
        .size = 1ull << 30, .request = 4u << 20, .files = 2000, .file_size = 0, .fsync = 1, .nprocs = 1,
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
        case 'R':
            if (bench_parse_u64(optarg, &o.rank) != 0)
                bench_die(prog, 0, "bad --rank '%s'", optarg);
            break;
        case 'P':
            if (bench_parse_u64(optarg, &o.nprocs) != 0 || o.nprocs == 0)
                bench_die(prog, 0, "bad --nprocs '%s'", optarg);
            break;
        case 'T': {
            char *end;
            o.start_at = strtod(optarg, &end);
            if (*end || o.start_at < 0)
                bench_die(prog, 0, "bad --start-at '%s'", optarg);
            break;
        }
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
    if (ph <= LAST_FILE_PHASE && o.file == NULL)
        bench_die(prog, 0, "phase %s needs --file", argv[optind]);
    if (ph > LAST_FILE_PHASE && o.dir == NULL)
        bench_die(prog, 0, "phase %s needs --dir", argv[optind]);
    if (o.rank >= o.nprocs)
        bench_die(prog, 0, "--rank must be below --nprocs");

    if (ph == P_WRITE)
        do_write(&o);
    else if (ph == P_READ)
        do_read(&o);
    else if (ph == P_FSYNC)
        do_fsync(&o);
    else if (ph == P_STRIDED)
        do_strided(&o);
    else
        do_meta(&o, (enum phase)ph);
    return bench_exit_status(1);
}
