! MPI-IO from Fortran 2008 (`use mpi_f08`, whose bindings reach Open MPI's
! library by other names than `use mpi`'s): every rank writes 40 records of
! 250 integers into one shared file, interleaved by rank, with
! MPI_File_write_at, then one more with MPI_File_write_at_all; the file is
! reopened and each rank reads its first record back and checks it.
!   mpirun -np N fortran_mpiio_f08 FILE
program fortran_mpiio_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 250
  integer :: ierr, rank, nprocs, i, j, rec(n), back(n)
  type(MPI_File) :: fh
  type(MPI_Status) :: status
  integer(kind=MPI_OFFSET_KIND) :: off
  character(len=4096) :: path

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call get_command_argument(1, path)
  call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_WRONLY, MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  do i = 0, 39
    rec = (/ (rank * 100000 + i * 1000 + j, j = 1, n) /)
    off = (int(i, MPI_OFFSET_KIND) * nprocs + rank) * n * 4
    call MPI_File_write_at(fh, off, rec, n, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
    if (ierr /= MPI_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end do
  rec = -rank
  off = (40_MPI_OFFSET_KIND * nprocs + rank) * n * 4
  call MPI_File_write_at_all(fh, off, rec, n, MPI_INTEGER, status, ierr)
  call MPI_File_close(fh, ierr)

  call MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, fh, ierr)
  off = int(rank, MPI_OFFSET_KIND) * n * 4
  call MPI_File_read_at(fh, off, back, n, MPI_INTEGER, status, ierr)
  call MPI_File_close(fh, ierr)
  if (any(back /= (/ (rank * 100000 + j, j = 1, n) /))) then
    print '(a,i0)', 'bad record read back by rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  end if
  call MPI_Finalize(ierr)
end program fortran_mpiio_f08
