/*
 * Every rank writes its own file (4 writes of 1 KiB) and a block of a shared
 * file with pwrite, then rank 0 reads the shared file back.
 *   mpirun -np N mpi_write DIR
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char path[4096], buf[1024];
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(buf, 'A' + rank % 26, sizeof buf);
    snprintf(path, sizeof path, "%s/rank_%d.dat", argv[1], rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 4; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            MPI_Abort(MPI_COMM_WORLD, 1);
    close(fd);
    snprintf(path, sizeof path, "%s/shared.dat", argv[1]);
    fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (pwrite(fd, buf, sizeof buf, (off_t)rank * (off_t)sizeof buf) != (ssize_t)sizeof buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        fd = open(path, O_RDONLY);
        for (int i = 0; i < size; i++)
            if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
                MPI_Abort(MPI_COMM_WORLD, 1);
        close(fd);
    }
    MPI_Finalize();
    return 0;
}
