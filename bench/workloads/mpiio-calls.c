/*
 * sluice-bench-mpiio-calls: the per-call cost of MPI-IO's data calls and of
 * opening a file, with every rank writing its own 8-byte slots of one
 * shared file (MPI_COMM_WORLD). Four timed loops:
 *   write:      --ops MPI_File_write_at (independent, explicit offset);
 *   write_all:  --ops MPI_File_write_at_all (collective);
 *   read:       --ops MPI_File_read_at of the slots written;
 *   open_close: --opens MPI_File_open + MPI_File_close of the file.
 * Each loop's time is the slowest rank's. Rank 0 prints {"ops", "opens",
 * "ranks", "write_seconds", "write_all_seconds", "read_seconds",
 * "open_close_seconds"}.
 */
#include <mpi.h>
#include <stdlib.h>

#include "common.h"

static const char *prog = "sluice-bench-mpiio-calls";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s --file PATH [--ops N] [--opens N]\n"
            "  --file PATH  the shared file to create\n"
            "  --ops N      calls per data loop and rank (default 100000)\n"
            "  --opens N    open+close pairs (default 2000)\n",
            prog);
}

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS)
        bench_die(prog, 0, "%s failed (MPI error %d)", what, rc);
}

/* The slowest rank's time since t0, after a barrier that starts the next loop together. */
static double slowest(double t0)
{
    double mine = bench_now() - t0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    uint64_t ops = 100000, opens = 2000;
    const struct bench_option options[] = {
        BENCH_OPT_REQUIRED("file", &path),
        BENCH_OPT_COUNT("ops", &ops),
        BENCH_OPT_COUNT("opens", &opens),
        BENCH_OPT_END,
    };
    int rank, ranks;
    MPI_File fh;
    char slot[8] = "sluice!";
    double t, tw, twa, tr, toc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    bench_parse_options(prog, argc, argv, options, usage);
    if (ops == 0 || ops > (uint64_t)1 << 40)
        bench_die(prog, 0, "--ops must be between 1 and 2^40");
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "MPI_File_open");
    MPI_Barrier(MPI_COMM_WORLD);

    t = bench_now();
    for (uint64_t i = 0; i < ops; i++)
        check(MPI_File_write_at(fh, (MPI_Offset)((i * (uint64_t)ranks + (uint64_t)rank) * 8), slot, 8, MPI_BYTE,
                                MPI_STATUS_IGNORE), "MPI_File_write_at");
    tw = slowest(t);
    t = bench_now();
    for (uint64_t i = 0; i < ops; i++)
        check(MPI_File_write_at_all(fh, (MPI_Offset)((i * (uint64_t)ranks + (uint64_t)rank) * 8), slot, 8, MPI_BYTE,
                                    MPI_STATUS_IGNORE), "MPI_File_write_at_all");
    twa = slowest(t);
    t = bench_now();
    for (uint64_t i = 0; i < ops; i++)
        check(MPI_File_read_at(fh, (MPI_Offset)((i * (uint64_t)ranks + (uint64_t)rank) * 8), slot, 8, MPI_BYTE,
                               MPI_STATUS_IGNORE), "MPI_File_read_at");
    tr = slowest(t);
    check(MPI_File_close(&fh), "MPI_File_close");
    t = bench_now();
    for (uint64_t i = 0; i < opens; i++) {
        check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh), "MPI_File_open");
        check(MPI_File_close(&fh), "MPI_File_close");
    }
    toc = slowest(t);
    if (rank == 0)
        printf("{\"ops\": %llu, \"opens\": %llu, \"ranks\": %d, \"write_seconds\": %.9f, \"write_all_seconds\": %.9f, "
               "\"read_seconds\": %.9f, \"open_close_seconds\": %.9f}\n",
               (unsigned long long)ops, (unsigned long long)opens, ranks, tw, twa, tr, toc);
    MPI_Finalize();
    return 0;
}
