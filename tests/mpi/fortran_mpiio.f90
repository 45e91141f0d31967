! MPI-IO from Fortran (`use mpi`): every rank writes 40 records of 250
! integers into one shared file, interleaved by rank, with
! MPI_File_write_at, then one more with MPI_File_write_at_all, one with
! MPI_File_iwrite_at (waited for) and one with the split collective
! MPI_File_write_at_all_begin/end (its status must count the record); the
! file is reopened and each rank reads its first record back and checks it.
!   mpirun -np N fortran_mpiio FILE
program fortran_mpiio
  use mpi
  implicit none
  integer, parameter :: n = 250
  integer :: ierr, rank, nprocs, fh, i, j, req, rec(n), back(n), status(MPI_STATUS_SIZE)
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
  rec = 7 * rank
  off = (41_MPI_OFFSET_KIND * nprocs + rank) * n * 4
  call MPI_File_iwrite_at(fh, off, rec, n, MPI_INTEGER, req, ierr)
  call MPI_Wait(req, status, ierr)
  rec = 11 * rank
  off = (42_MPI_OFFSET_KIND * nprocs + rank) * n * 4
  call MPI_File_write_at_all_begin(fh, off, rec, n, MPI_INTEGER, ierr)
  call MPI_File_write_at_all_end(fh, rec, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, i, ierr)
  if (i /= n) then
    print '(a,i0)', 'split write counted ', i
    call MPI_Abort(MPI_COMM_WORLD, 4, ierr)
  end if
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
end program fortran_mpiio
