! Fortran binding of libsluice-mpi's Aggregated Collective Buffering API
! (include/sluice/sluice_acb.h; docs/acb.md). Handles are the integer
! handles of `use mpi`; offsets and lengths are bytes, integer(8).
! Every routine returns an MPI error code in ierr (MPI_SUCCESS = 0).
module sluice_acb
  use iso_c_binding
  implicit none
  private
  public :: sluice_acb_open, sluice_acb_put, sluice_acb_flush, sluice_acb_close

  interface
    integer(c_int) function c_open(comm, path, info, file) bind(C, name="sluice_acb_open_f")
      import :: c_int, c_char, c_ptr
      integer(c_int), value :: comm, info
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), intent(out) :: file
    end function
    integer(c_int) function c_put(file, offset, buf, len) bind(C, name="sluice_acb_put")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: file
      integer(c_int64_t), value :: offset, len
      type(*), dimension(*), intent(in) :: buf
    end function
    integer(c_int) function c_flush(file) bind(C, name="sluice_acb_flush")
      import :: c_int, c_ptr
      type(c_ptr), value :: file
    end function
    integer(c_int) function c_close(file) bind(C, name="sluice_acb_close")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: file
    end function
  end interface

contains

  ! Collective: open (creating if needed) path for writing; info may be MPI_INFO_NULL.
  subroutine sluice_acb_open(comm, path, info, file, ierr)
    integer, intent(in) :: comm, info
    character(len=*), intent(in) :: path
    type(c_ptr), intent(out) :: file
    integer, intent(out) :: ierr
    ierr = c_open(int(comm, c_int), trim(path) // c_null_char, int(info, c_int), file)
  end subroutine

  ! Local: keep a copy of len bytes of buf for byte offset `offset`.
  subroutine sluice_acb_put(file, offset, buf, len, ierr)
    type(c_ptr), intent(in) :: file
    integer(8), intent(in) :: offset, len
    type(*), dimension(*), intent(in) :: buf
    integer, intent(out) :: ierr
    ierr = c_put(file, int(offset, c_int64_t), buf, int(len, c_int64_t))
  end subroutine

  ! Collective: write everything put so far.
  subroutine sluice_acb_flush(file, ierr)
    type(c_ptr), intent(in) :: file
    integer, intent(out) :: ierr
    ierr = c_flush(file)
  end subroutine

  ! Collective: flush, close and free; file becomes c_null_ptr.
  subroutine sluice_acb_close(file, ierr)
    type(c_ptr), intent(inout) :: file
    integer, intent(out) :: ierr
    ierr = c_close(file)
  end subroutine
end module sluice_acb
