/*
 * sluice-bench-ior-shared: what IOR does for a shared file with strided
 * segments (`ior -a MPIIO -t P -b P -s K`), and for file per process
 * (`-F`), through MPI-IO.
 *
 * Each rank writes --per-rank bytes in pieces of --piece bytes. Shared
 * layout: one file opened on MPI_COMM_WORLD, piece i of rank r at offset
 * (i * nranks + r) * piece (IOR's segments of one piece). Blocked layout:
 * rank r's pieces fill [r * per_rank, (r + 1) * per_rank) in order (IOR's
 * one segment of per_rank bytes). File-per-process layout: PATH.RANK opened
 * on MPI_COMM_SELF, piece i at offset i * piece. Pieces go out one
 * MPI_File_write_at (--api indep) or MPI_File_write_at_all (--api coll)
 * each, from a buffer filled before the clock starts.
 *
 * --node-dirs D1,...,DN runs as on N nodes of a cluster: rank r reaches the
 * file through D[r * N / ranks] (ranks are placed node by node, as mpirun
 * places them), each the same file system mounted by another client; --file
 * is then the file's path inside those directories.
 *
 * The files are removed first. The timed part, as IOR times a write: barrier, open, the writes, close,
 * barrier. --check then reads every file back with POSIX, verifies every
 * byte against the pattern of common.h and prints the files' FNV-1a hash,
 * so that runs of different MPI-IO components and hints can be compared
 * byte for byte. Rank 0 prints one JSON line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "sluice-bench-ior-shared";

static void usage(FILE *out)
{
    fprintf(out,
        "usage: mpirun -np N %s --file PATH [options]\n"
        "\n"
        "IOR's strided shared-file write (or file per process) through MPI-IO. Rank 0\n"
        "prints one JSON line: bytes, writes and seconds (barrier, open, writes, close,\n"
        "barrier).\n"
        "\n"
        "  --file PATH        the shared file, or the prefix PATH.RANK (required)\n"
        "  --piece BYTES      bytes per write (default 64K)\n"
        "  --per-rank BYTES   bytes each rank writes (default 16M; a multiple of --piece)\n"
        "  --api A            indep (MPI_File_write_at, default) or coll (write_at_all)\n"
        "  --layout L         shared (default: piece i of rank r at (i*N+r)*piece),\n"
        "                     blocked (at r*per_rank + i*piece) or fpp (PATH.RANK on\n"
        "                     MPI_COMM_SELF, piece i at i*piece)\n"
        "  --hints K=V,...    MPI_Info hints for MPI_File_open\n"
        "  --node-dirs D,...  as on N nodes: rank r opens D[r*N/ranks]/PATH, where each D\n"
        "                     is one file system through another client (PATH relative)\n"
        "  --check            read the files back, verify every byte, print their hash\n"
        "  -h, --help         this text\n"
        "\n"
        "The byte at offset p of a file is " BENCH_PATTERN_HELP ".\n",
        prog);
}

struct opts {
    const char *file, *hints, *node_dirs;
    uint64_t piece, per_rank;
    int coll, layout, check;
};

enum { LAYOUT_SHARED, LAYOUT_BLOCKED, LAYOUT_FPP };

static int rank, nranks;

static _Noreturn void fail(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    MPI_Error_string(rc, msg, &len);
    bench_error(prog, 0, "rank %d: %s: %s", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static MPI_Info make_info(const char *hints)
{
    MPI_Info info = MPI_INFO_NULL;
    char *copy, *save = NULL;

    if (!hints || !*hints)
        return info;
    MPI_Info_create(&info);
    copy = strdup(hints);
    for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            bench_die(prog, 0, "bad --hints entry '%s' (want KEY=VALUE)", kv);
        *eq = '\0';
        MPI_Info_set(info, kv, eq + 1);
    }
    free(copy);
    return info;
}

/* The directory of rank r's node in --node-dirs, "" without it. */
static void node_dir(const struct opts *o, int r, char *out, size_t n)
{
    int ndirs = 1, k;
    const char *d = o->node_dirs, *end;

    out[0] = '\0';
    if (!d || !*d)
        return;
    for (const char *c = d; *c; c++)
        ndirs += *c == ',';
    k = (int)((int64_t)r * ndirs / nranks);
    while (k-- > 0)
        d = strchr(d, ',') + 1;
    end = strchr(d, ',');
    snprintf(out, n, "%.*s/", (int)(end ? end - d : (ptrdiff_t)strlen(d)), d);
}

static void file_name(const struct opts *o, int r, char *out, size_t n)
{
    char dir[4096];

    node_dir(o, r, dir, sizeof dir);
    if (o->layout == LAYOUT_FPP)
        snprintf(out, n, "%s%s.%d", dir, o->file, r);
    else
        snprintf(out, n, "%s%s", dir, o->file);
}

static uint64_t piece_offset(const struct opts *o, uint64_t i)
{
    switch (o->layout) {
    case LAYOUT_FPP:
        return i * o->piece;
    case LAYOUT_BLOCKED:
        return (uint64_t)rank * o->per_rank + i * o->piece;
    default:
        return (i * (uint64_t)nranks + (uint64_t)rank) * o->piece;
    }
}

/* The timed write; returns the seconds of this rank's writes (open to the
 * last write). */
static double write_file(const struct opts *o, const unsigned char *buf, MPI_Info info)
{
    char path[4096];
    MPI_File fh;
    uint64_t pieces = o->per_rank / o->piece;
    double t0;
    int rc;

    file_name(o, rank, path, sizeof path);
    rc = MPI_File_open(o->layout == LAYOUT_FPP ? MPI_COMM_SELF : MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh);
    if (rc != MPI_SUCCESS)
        fail("MPI_File_open", rc);
    t0 = MPI_Wtime();
    for (uint64_t i = 0; i < pieces; i++) {
        MPI_Offset off = (MPI_Offset)piece_offset(o, i);
        const void *src = buf + i * o->piece;
        rc = o->coll ? MPI_File_write_at_all(fh, off, src, (int)o->piece, MPI_BYTE, MPI_STATUS_IGNORE)
                     : MPI_File_write_at(fh, off, src, (int)o->piece, MPI_BYTE, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            fail(o->coll ? "MPI_File_write_at_all" : "MPI_File_write_at", rc);
    }
    t0 = MPI_Wtime() - t0;
    rc = MPI_File_close(&fh);
    if (rc != MPI_SUCCESS)
        fail("MPI_File_close", rc);
    return t0;
}

/* FNV-1a over the file's bytes, and how many differ from the pattern. */
static void check_file(const char *path, uint64_t expect_size, uint64_t *hash, uint64_t *bad, uint64_t *size)
{
    static unsigned char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    ssize_t n;

    *hash = 1469598103934665603ull;
    *size = 0;
    if (fd < 0)
        bench_die(prog, 1, "open %s", path);
    while ((n = bench_read_full(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++)
            *hash = (*hash ^ buf[i]) * 1099511628211ull;
        *bad += bench_pattern_check(buf, (size_t)n, *size);
        *size += (uint64_t)n;
        if ((size_t)n < sizeof buf)
            break;
    }
    if (n < 0)
        bench_die(prog, 1, "read %s", path);
    close(fd);
    if (*size != expect_size)
        bench_error(prog, 0, "%s holds %" PRIu64 " bytes, not %" PRIu64, path, *size, expect_size);
}

int main(int argc, char **argv)
{
    static const char *const apis[] = {"indep", "coll", NULL};
    static const char *const layouts[] = {"shared", "blocked", "fpp", NULL};
    struct opts o = {.piece = 64u << 10, .per_rank = 16u << 20};
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("file", &o.file),
        BENCH_OPT_SIZE("piece", &o.piece),
        BENCH_OPT_SIZE("per-rank", &o.per_rank),
        BENCH_OPT_CHOICE("api", &o.coll, apis),
        BENCH_OPT_CHOICE("layout", &o.layout, layouts),
        {.name = "hints", .kind = BENCH_KIND_STRING, .value = &o.hints},
        {.name = "node-dirs", .kind = BENCH_KIND_STRING, .value = &o.node_dirs},
        BENCH_OPT_FLAG("check", &o.check, 1),
        BENCH_OPT_END,
    };
    unsigned char *buf;
    uint64_t pieces, file_size, hash = 0, bad = 0, size = 0, total_bad = 0;
    double t0, seconds, write_s, slowest_write_s;
    MPI_Info info;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    bench_parse_options(prog, argc, argv, options, usage);
    if (o.piece == 0 || o.piece > (1u << 30) || o.per_rank % o.piece != 0)
        bench_die(prog, 0, "--piece must be 1 B..1 GiB and divide --per-rank");
    if (o.node_dirs && *o.node_dirs && o.file[0] == '/')
        bench_die(prog, 0, "with --node-dirs, --file is a path inside those directories, not %s", o.file);
    pieces = o.per_rank / o.piece;
    file_size = o.layout == LAYOUT_FPP ? o.per_rank : o.per_rank * (uint64_t)nranks;
    if ((buf = malloc(o.per_rank ? o.per_rank : 1)) == NULL)
        bench_die(prog, 1, "malloc");
    for (uint64_t i = 0; i < pieces; i++)
        bench_pattern_fill(buf + i * o.piece, o.piece, piece_offset(&o, i));
    info = make_info(o.hints);
    if (o.layout == LAYOUT_FPP || rank == 0) {
        /* A new file each run, as IOR makes it: an overwrite costs differently. */
        char path[4096];
        file_name(&o, rank, path, sizeof path);
        unlink(path);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    write_s = write_file(&o, buf, info);
    MPI_Barrier(MPI_COMM_WORLD);
    seconds = MPI_Wtime() - t0;
    MPI_Reduce(&write_s, &slowest_write_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    free(buf);

    if (o.check && (o.layout == LAYOUT_FPP || rank == 0)) {
        char path[4096];
        file_name(&o, rank, path, sizeof path);
        check_file(path, file_size, &hash, &bad, &size);
        if (size != file_size)
            bad++;
    }
    if (o.check)
        MPI_Reduce(&bad, &total_bad, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        bench_json_begin("ior-shared", NULL, "file", o.file);
        printf(",\"layout\":\"%s\",\"api\":\"%s\",\"ranks\":%d,\"piece\":%" PRIu64 ",\"per_rank\":%" PRIu64
               ",\"bytes_written\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"slowest_write_seconds\":%.9f"
               ",\"seconds\":%.9f",
               layouts[o.layout], apis[o.coll], nranks, o.piece, o.per_rank, o.per_rank * (uint64_t)nranks,
               pieces * (uint64_t)nranks, slowest_write_s, seconds);
        if (o.check)
            printf(",\"checked\":true,\"mismatches\":%" PRIu64 ",\"fnv1a64\":\"%016" PRIx64 "\"", total_bad, hash);
        printf("}\n");
    }
    MPI_Finalize();
    return rank == 0 ? bench_exit_status(!o.check || total_bad == 0) : 0;
}
