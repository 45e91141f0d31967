/*
 * A known MPI-IO pattern whose MPIIO counters the tests assert exactly
 * (tests/python/test_mpiio.py). Every rank r owns bytes [r*10000, r*10000+6106):
 *   write_at 1000 B, write_at 1000 B, read_at 100 B of its own data (read
 *   before any sync: the rank must see its own writes), [set_atomicity(1)
 *   with "atomic"], write_at_all 4096 B, seek + write 10 B, sync, then
 *   read_at_all of the next rank's 6106 bytes (visible after the sync), close.
 *   mpirun -np N mpiio_known DIR [atomic]
 * Exits 1 if any byte read back is wrong.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define SPAN 6106

static unsigned char byte_of(int rank, int i)
{
    return (unsigned char)(rank * 37 + i * 11 + (i >> 7));
}

int main(int argc, char **argv)
{
    static unsigned char mine[SPAN], got[SPAN];
    char path[4096];
    int rank, size, bad = 0, any;
    MPI_File fh;
    MPI_Offset base;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < SPAN; i++)
        mine[i] = byte_of(rank, i);
    base = (MPI_Offset)rank * 10000;
    snprintf(path, sizeof path, "%s/known.dat", argv[1]);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, base, mine, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_write_at(fh, base + 1000, mine + 1000, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_read_at(fh, base, got, 100, MPI_BYTE, MPI_STATUS_IGNORE);
    bad += memcmp(got, mine, 100) != 0;
    if (argc > 2 && strcmp(argv[2], "atomic") == 0)
        MPI_File_set_atomicity(fh, 1);
    MPI_File_write_at_all(fh, base + 2000, mine + 2000, 4096, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, base + 6096, MPI_SEEK_SET);
    MPI_File_write(fh, mine + 6096, 10, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int next = (rank + 1) % size;
    MPI_File_read_at_all(fh, (MPI_Offset)next * 10000, got, SPAN, MPI_BYTE, MPI_STATUS_IGNORE);
    for (int i = 0; i < SPAN; i++)
        bad += got[i] != byte_of(next, i);
    MPI_File_close(&fh);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && any)
        fprintf(stderr, "mpiio_known: %d wrong reads\n", any);
    MPI_Finalize();
    return any != 0;
}
