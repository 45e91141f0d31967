/*
 * File per process through MPI-IO: every rank opens DIR/rank_N.dat on
 * MPI_COMM_SELF and writes 200 records of 1000 bytes with MPI_File_write,
 * one 2 MiB block with MPI_File_write_at after them, then 100 more records,
 * and closes (with "noclose": ends MPI with the file still open, an
 * error Open MPI lets by). Each byte says which rank and record wrote it.
 *   mpirun -np N mpiio_fpp DIR [noclose]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC 1000
#define BLOCK (2 << 20)

int main(int argc, char **argv)
{
    char path[4096];
    int rank;
    MPI_File fh;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 2 && !(argc == 3 && strcmp(argv[2], "noclose") == 0))
        MPI_Abort(MPI_COMM_WORLD, 2);
    snprintf(path, sizeof path, "%s/rank_%d.dat", argv[1], rank);
    if (MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    char rec[REC];
    char *block = malloc(BLOCK);
    for (int i = 0; i < 300; i++) {
        memset(rec, 'a' + (rank * 7 + i) % 26, REC);
        if (i == 200) {
            for (int k = 0; k < BLOCK; k++)
                block[k] = (char)('A' + (rank + k / 4096) % 26);
            MPI_File_write_at(fh, (MPI_Offset)200 * REC, block, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE);
            MPI_File_seek(fh, (MPI_Offset)200 * REC + BLOCK, MPI_SEEK_SET);
        }
        if (MPI_File_write(fh, rec, REC, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (argc == 2)
        MPI_File_close(&fh);
    free(block);
    MPI_Finalize();
    return 0;
}
