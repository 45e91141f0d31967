/*
 * Split collective MPI-IO (tests/python/test_mpiio.py). Every rank r of N:
 *   write_ordered_begin/end of 100 B (rank order, after the data below);
 *   PIECES times write_at_all_begin/end of 3000 B at (i*N + r)*3000;
 *   write_all_begin/end of 500 B at its individual pointer, seeked to
 *   N*PIECES*3000 + r*500;
 *   read_at_all_begin/end of the next rank's pieces and read_all_begin/end of
 *   its 500 B, checked byte for byte, and read_ordered_begin/end of 100 B.
 * Each end's status must count the bytes of its begin.
 *   mpirun -np N mpiio_split FILE
 * Exits 1 if a byte or a count is wrong.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define PIECES 4
#define PIECE 3000
#define TAIL 500

static unsigned char byte_of(int rank, int i)
{
    return (unsigned char)(rank * 29 + i * 7 + (i >> 8));
}

static int counted(MPI_Status *st, int want)
{
    int n = -1;

    MPI_Get_count(st, MPI_BYTE, &n);
    return n == want ? 0 : 1;
}

int main(int argc, char **argv)
{
    static unsigned char mine[PIECES * PIECE + TAIL], got[PIECES * PIECE + TAIL], ord[100];
    int rank, size, bad = 0, any;
    MPI_File fh;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < (int)sizeof mine; i++)
        mine[i] = byte_of(rank, i);
    memset(ord, 'a' + rank, sizeof ord);
    MPI_Offset tail = (MPI_Offset)size * PIECES * PIECE;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_seek_shared(fh, tail + (MPI_Offset)size * TAIL, MPI_SEEK_SET);
    MPI_File_write_ordered_begin(fh, ord, (int)sizeof ord, MPI_BYTE);
    MPI_File_write_ordered_end(fh, ord, &st);
    bad += counted(&st, (int)sizeof ord);
    for (int i = 0; i < PIECES; i++) {
        MPI_File_write_at_all_begin(fh, ((MPI_Offset)i * size + rank) * PIECE, mine + i * PIECE, PIECE, MPI_BYTE);
        MPI_File_write_at_all_end(fh, mine + i * PIECE, &st);
        bad += counted(&st, PIECE);
    }
    MPI_File_seek(fh, tail + (MPI_Offset)rank * TAIL, MPI_SEEK_SET);
    MPI_File_write_all_begin(fh, mine + PIECES * PIECE, TAIL, MPI_BYTE);
    MPI_File_write_all_end(fh, mine + PIECES * PIECE, &st);
    bad += counted(&st, TAIL);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);

    int next = (rank + 1) % size;
    for (int i = 0; i < PIECES; i++) {
        MPI_File_read_at_all_begin(fh, ((MPI_Offset)i * size + next) * PIECE, got + i * PIECE, PIECE, MPI_BYTE);
        MPI_File_read_at_all_end(fh, got + i * PIECE, &st);
        bad += counted(&st, PIECE);
    }
    MPI_File_seek(fh, tail + (MPI_Offset)next * TAIL, MPI_SEEK_SET);
    MPI_File_read_all_begin(fh, got + PIECES * PIECE, TAIL, MPI_BYTE);
    MPI_File_read_all_end(fh, got + PIECES * PIECE, &st);
    bad += counted(&st, TAIL);
    for (int i = 0; i < (int)sizeof got; i++)
        bad += got[i] != byte_of(next, i);
    MPI_File_seek_shared(fh, tail + (MPI_Offset)size * TAIL, MPI_SEEK_SET);
    MPI_File_read_ordered_begin(fh, got, (int)sizeof ord, MPI_BYTE);
    MPI_File_read_ordered_end(fh, got, &st);
    bad += counted(&st, (int)sizeof ord);
    for (int i = 0; i < (int)sizeof ord; i++)
        bad += got[i] != 'a' + rank;
    MPI_File_close(&fh);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && any)
        fprintf(stderr, "mpiio_split: %d wrong bytes or counts\n", any);
    MPI_Finalize();
    return any != 0;
}
