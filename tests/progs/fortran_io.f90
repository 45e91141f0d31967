! Fortran I/O through gfortran's runtime: unformatted sequential and direct
! access, and formatted output, on files in the directory given as the first
! argument. The counts it produces are checked in test_programs.py.
program fortran_io
  implicit none
  character(len=4096) :: dir
  integer :: i, u
  real(8) :: a(1024), b(1024)
  call get_command_argument(1, dir)
  do i = 1, 1024
    a(i) = real(i, 8) * 0.5d0
  end do
  open(newunit=u, file=trim(dir)//'/unformatted.dat', form='unformatted', access='sequential', status='replace')
  do i = 1, 8
    write(u) a
  end do
  close(u)
  open(newunit=u, file=trim(dir)//'/unformatted.dat', form='unformatted', access='sequential', status='old')
  do i = 1, 8
    read(u) b
  end do
  close(u)
  if (any(a /= b)) stop 1
  open(newunit=u, file=trim(dir)//'/direct.dat', form='unformatted', access='direct', recl=8192, status='replace')
  do i = 4, 1, -1
    write(u, rec=i) a
  end do
  close(u)
  open(newunit=u, file=trim(dir)//'/formatted.txt', form='formatted', status='replace')
  do i = 1, 100
    write(u, '(I6,1X,F12.4)') i, a(i)
  end do
  close(u)
end program fortran_io
