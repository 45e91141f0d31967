/*
 * LAMMPS's `write_restart *.mpiio` pattern: rank 0 writes a header with
 * stdio and closes it, then every rank opens the file with MPI-IO (with
 * MPI_MODE_CREATE or without, argv[2]) and writes its block after the
 * header. Plain, the file holds the header then every rank's block.
 *
 *   mpirun -np N header_then_mpiio FILE create|nocreate
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define HEADER "HEADER\n"
#define BLOCK 8

int main(int argc, char **argv)
{
    int rank, rc;
    MPI_File fh;
    char block[BLOCK];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: header_then_mpiio FILE create|nocreate\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        FILE *f = fopen(argv[1], "w");
        if (!f || fputs(HEADER, f) < 0 || fclose(f) != 0) {
            perror(argv[1]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    int amode = MPI_MODE_WRONLY | (strcmp(argv[2], "create") == 0 ? MPI_MODE_CREATE : 0);
    rc = MPI_File_open(MPI_COMM_WORLD, argv[1], amode, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "rank %d: MPI_File_open: %s\n", rank, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(block, 'a' + rank, BLOCK - 1);
    block[BLOCK - 1] = '\n';
    MPI_File_write_at(fh, (MPI_Offset)strlen(HEADER) + (MPI_Offset)rank * BLOCK, block, BLOCK, MPI_BYTE,
                      MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
