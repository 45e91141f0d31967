/*
 * sluice-bench-create-once: the metadata-bound output of many small files,
 * mdtest-style. --procs processes (fork) start together; each makes its own
 * directory DIR/proc.NNNN, then creates --files files in it, each with one
 * open(O_CREAT | O_EXCL), one write() of --file-size bytes and one close();
 * with --stat it then stat()s each of its files. `seconds` runs from the
 * start to the last process's exit, so under stage mode it includes
 * publishing the files to the shared file system (a process waits for its
 * drains at exit); `io_seconds` is the slowest process's time from its
 * mkdir to its last close or stat.
 *
 * File i of process r holds bytes [(r*files + i)*1M, ... + file-size) of the
 * verification pattern (common.h). --phase verify checks that every
 * directory holds exactly its files, each of the right size and content.
 * Output: one JSON line.
 */
#define _GNU_SOURCE
#include "common.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "sluice-bench-create-once";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: %s --dir DIR [options]\n"
        "\n"
        "Metadata-bound small-file output (mdtest-like): N processes each create M\n"
        "files in a directory of their own, writing each once. Prints one JSON line:\n"
        "files, bytes, metadata calls and seconds.\n"
        "\n"
        "  --dir DIR          working directory (created if missing; required)\n"
        "  --procs N          processes (default 2)\n"
        "  --files N          files per process (default 1000)\n"
        "  --file-size BYTES  bytes written into each file with one write() (default 4K)\n"
        "  --stat             then stat() each file (checking its size)\n"
        "  --phase P          run (default) or verify: check that each directory holds\n"
        "                     exactly its files, of the right size and content\n"
        "                     (exit 1 on a mismatch)\n"
        "  -h, --help         this text\n"
        "\n"
        "Layout: DIR/proc.NNNN/f.NNNNN. File i of process r holds the pattern of\n"
        "common.h from offset (r*files + i)*2^20.\n",
        prog);
}

struct opts {
    const char *dir;
    uint64_t procs, files, file_size;
    int stat, verify;
};

/* Per-process counters, in shared memory so the parent can add them up. */
struct counts {
    uint64_t creates, writes, bytes_written, closes, stats, mkdirs, wrong_sizes;
    double io_seconds;
    int failed;
};

struct ctx {
    const struct opts *o;
    struct counts *counts;
};

static uint64_t file_base(const struct opts *o, uint64_t r, uint64_t i)
{
    return (r * o->files + i) << 20;
}

static void path_of(const struct opts *o, uint64_t r, int64_t i, char *path, size_t cap)
{
    if (i < 0)
        snprintf(path, cap, "%s/proc.%04" PRIu64, o->dir, r);
    else
        snprintf(path, cap, "%s/proc.%04" PRIu64 "/f.%05" PRId64, o->dir, r, i);
}

static int creator(int rank, void *arg)
{
    struct ctx *c = arg;
    const struct opts *o = c->o;
    struct counts *k = &c->counts[rank];
    unsigned char *buf = malloc(o->file_size ? o->file_size : 1);
    uint64_t r = (uint64_t)rank;
    char path[PATH_MAX];
    double t0 = bench_now();

    path_of(o, r, -1, path, sizeof path);
    if (buf == NULL)
        goto fail;
    if (mkdir(path, 0755) != 0)
        goto fail_errno;
    k->mkdirs++;
    for (uint64_t i = 0; i < o->files; i++) {
        int fd;

        path_of(o, r, (int64_t)i, path, sizeof path);
        bench_pattern_fill(buf, o->file_size, file_base(o, r, i));
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0)
            goto fail_errno;
        k->creates++;
        if (o->file_size != 0) {
            if (bench_write_full(fd, buf, o->file_size) != 0)
                goto fail_errno;
            k->writes++;
            k->bytes_written += o->file_size;
        }
        if (close(fd) != 0)
            goto fail_errno;
        k->closes++;
    }
    if (o->stat) {
        for (uint64_t i = 0; i < o->files; i++) {
            struct stat st;

            path_of(o, r, (int64_t)i, path, sizeof path);
            if (stat(path, &st) != 0)
                goto fail_errno;
            k->stats++;
            k->wrong_sizes += (uint64_t)st.st_size != o->file_size;
        }
    }
    k->io_seconds = bench_now() - t0;
    free(buf);
    return 0;
fail_errno:
    bench_error(prog, 1, "process %d: %s", rank, path);
fail:
    k->failed = 1;
    free(buf);
    return 1;
}

/* Check one process's directory; returns the number of problems found. */
static uint64_t verify_proc(const struct opts *o, uint64_t r, uint64_t *found, uint64_t *bytes)
{
    unsigned char *buf = malloc(o->file_size + 1);
    char path[PATH_MAX];
    uint64_t bad = 0, entries = 0;
    struct dirent *e;
    DIR *d;

    path_of(o, r, -1, path, sizeof path);
    if (buf == NULL)
        bench_die(prog, 1, "malloc");
    d = opendir(path);
    if (d == NULL)
        bench_die(prog, 1, "opendir %s", path);
    while ((e = readdir(d)) != NULL)
        entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    if (entries != o->files) {
        bench_error(prog, 0, "%s holds %" PRIu64 " entries, expected %" PRIu64, path, entries,
                    o->files);
        bad++;
    }
    for (uint64_t i = 0; i < o->files; i++) {
        ssize_t got;
        int fd;

        path_of(o, r, (int64_t)i, path, sizeof path);
        fd = open(path, O_RDONLY);
        if (fd < 0) {
            bench_error(prog, 1, "open %s", path);
            bad++;
            continue;
        }
        got = bench_read_full(fd, buf, o->file_size + 1);
        close(fd);
        if (got < 0)
            bench_die(prog, 1, "read %s", path);
        (*found)++;
        *bytes += (uint64_t)got;
        if ((uint64_t)got != o->file_size) {
            bench_error(prog, 0, "%s has %zd bytes, expected %" PRIu64, path, got, o->file_size);
            bad++;
            continue;
        }
        bad += bench_pattern_check(buf, o->file_size, file_base(o, r, i)) != 0;
    }
    free(buf);
    return bad;
}

int main(int argc, char **argv)
{
    static const char *const phases[] = {"run", "verify", NULL};
    struct opts o = {.procs = 2, .files = 1000, .file_size = 4096};
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("dir", &o.dir),
        BENCH_OPT_COUNT("procs", &o.procs),
        BENCH_OPT_COUNT("files", &o.files),
        BENCH_OPT_SIZE("file-size", &o.file_size),
        BENCH_OPT_FLAG("stat", &o.stat, 1),
        BENCH_OPT_CHOICE("phase", &o.verify, phases),
        BENCH_OPT_END,
    };
    struct counts *counts, tot;
    struct bench_group g;
    struct ctx cx;
    double t0, seconds, slowest = 0;

    bench_parse_options(prog, argc, argv, options, usage);
    bench_check_procs(prog, o.procs);
    if (o.files > 99999 || o.file_size > (1u << 20))
        bench_die(prog, 0, "--files must be at most 99999 and --file-size at most 1M");

    if (o.verify) {
        uint64_t bad = 0, found = 0, bytes = 0;

        for (uint64_t r = 0; r < o.procs; r++)
            bad += verify_proc(&o, r, &found, &bytes);
        printf("{\"workload\":\"create-once\",\"phase\":\"verify\",\"procs\":%" PRIu64
               ",\"files\":%" PRIu64 ",\"files_found\":%" PRIu64 ",\"bytes_found\":%" PRIu64
               ",\"mismatches\":%" PRIu64 "}\n",
               o.procs, o.procs * o.files, found, bytes, bad);
        return bench_exit_status(bad == 0);
    }

    counts = bench_shared_alloc(sizeof *counts * o.procs, prog);
    cx.o = &o;
    cx.counts = counts;
    bench_spawn(&g, (int)o.procs, creator, &cx, prog);
    t0 = bench_now();
    if (mkdir(o.dir, 0755) != 0)
        bench_abandon_group(&g, prog, "mkdir %s", o.dir);
    seconds = bench_finish_group(&g, prog, "processes", t0);

    memset(&tot, 0, sizeof tot);
    tot.mkdirs = 1;  /* the parent's DIR */
    for (uint64_t p = 0; p < o.procs; p++) {
        tot.creates += counts[p].creates;
        tot.writes += counts[p].writes;
        tot.bytes_written += counts[p].bytes_written;
        tot.closes += counts[p].closes;
        tot.stats += counts[p].stats;
        tot.mkdirs += counts[p].mkdirs;
        tot.wrong_sizes += counts[p].wrong_sizes;
        if (counts[p].io_seconds > slowest)
            slowest = counts[p].io_seconds;
    }
    printf("{\"workload\":\"create-once\",\"phase\":\"run\",\"procs\":%" PRIu64
           ",\"files_per_proc\":%" PRIu64 ",\"files\":%" PRIu64 ",\"file_size\":%" PRIu64
           ",\"creates\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"bytes_written\":%" PRIu64
           ",\"closes\":%" PRIu64 ",\"stats\":%" PRIu64 ",\"mkdirs\":%" PRIu64
           ",\"meta_ops\":%" PRIu64 ",\"wrong_sizes\":%" PRIu64
           ",\"io_seconds\":%.9f,\"seconds\":%.9f}\n",
           o.procs, o.files, o.procs * o.files, o.file_size, tot.creates, tot.writes,
           tot.bytes_written, tot.closes, tot.stats, tot.mkdirs,
           tot.creates + tot.stats + tot.mkdirs, tot.wrong_sizes, slowest, seconds);
    return bench_exit_status(tot.wrong_sizes == 0);
}
