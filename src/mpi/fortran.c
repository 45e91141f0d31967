/*
 * MPI-IO called from Fortran (`include 'mpif.h'`, `use mpi`). Open MPI's
 * Fortran bindings call PMPI_File_* directly, so a C wrapper never sees a
 * Fortran program's I/O: these wrappers take the Fortran entry points
 * (every name mangling Open MPI exports: mpi_file_write_at_, ...__, plain
 * and upper case), convert the handles, strings and status, and call the C
 * wrappers of mpiio.c, which count, aggregate (--mode acb) and go on to
 * the MPI library. `use mpi_f08` reaches the library by other names
 * (ompi_file_write_at_f, ...), which are the same functions' aliases here
 * (FORTRAN_NAMES). With another MPI than Open MPI every call goes
 * on to that library's own entry point, untouched.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "interpose/interpose.h"
#include "mpi/pmpi.h"

/* Every spelling of one Fortran entry point, defined once as NAME_; ompi
 * is the name Open MPI's `use mpi_f08` bindings (libmpi_usempif08) call
 * for it, with the same arguments (handles as their integer values). */
#define FORTRAN_NAMES(lower, upper, ompi)                                                        \
    SLUICE_EXPORT __typeof__(lower##_) lower __attribute__((alias(#lower "_")));                \
    SLUICE_EXPORT __typeof__(lower##_) lower##__ __attribute__((alias(#lower "_")));            \
    SLUICE_EXPORT __typeof__(lower##_) upper __attribute__((alias(#lower "_")));                \
    SLUICE_EXPORT __typeof__(lower##_) ompi __attribute__((alias(#lower "_")));

/* Without Open MPI's library (another MPI: its handles are not ours to
 * convert), a call goes on to the MPI library's own entry point. */
#define FORTRAN_NEXT(name, ...)                                                                  \
    do {                                                                                         \
        static void *next_;                                                                      \
        void *p_ = __atomic_load_n(&next_, __ATOMIC_ACQUIRE);                                    \
        if (!p_) {                                                                               \
            p_ = dlsym(RTLD_NEXT, #name);                                                        \
            __atomic_store_n(&next_, p_, __ATOMIC_RELEASE);                                      \
        }                                                                                        \
        if (p_)                                                                                  \
            ((__typeof__(&name))p_)(__VA_ARGS__);                                                \
        else                                                                                     \
            *ierr = MPI_ERR_OTHER;                                                               \
        return;                                                                                  \
    } while (0)

/* A Fortran string (blank-padded, len bytes, no NUL) as a C string, or NULL
 * without memory. The caller frees it. */
static char *fortran_string(const char *s, size_t len)
{
    char *c;

    while (len > 0 && s[len - 1] == ' ')
        len--;
    while (len > 0 && *s == ' ') {
        s++;
        len--;
    }
    if ((c = malloc(len + 1)) != NULL) {
        memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

static MPI_Status *c_status(MPI_Fint *f, MPI_Status *c)
{
    return (void *)f == sluice__pmpi.f_status_ignore ? MPI_STATUS_IGNORE : c;
}

static void status_back(MPI_Fint *f, const MPI_Status *c)
{
    if ((void *)f != sluice__pmpi.f_status_ignore)
        SLUICE_PMPI(Status_c2f)(c, f);
}

static void *c_buffer(void *buf)
{
    return buf == sluice__pmpi.f_bottom ? MPI_BOTTOM : buf;
}

/* ---- open, close, sync, view, size ---- */

SLUICE_EXPORT void mpi_file_open_(MPI_Fint *comm, char *filename, MPI_Fint *amode, MPI_Fint *info, MPI_Fint *fh,
                                  MPI_Fint *ierr, size_t filename_len);
void mpi_file_open_(MPI_Fint *comm, char *filename, MPI_Fint *amode, MPI_Fint *info, MPI_Fint *fh, MPI_Fint *ierr,
                    size_t filename_len)
{
    MPI_File c_fh;
    char *name;

    if (sluice_pmpi_load() != 0)
        FORTRAN_NEXT(mpi_file_open_, comm, filename, amode, info, fh, ierr, filename_len);
    if (!(name = fortran_string(filename, filename_len))) {
        *ierr = MPI_ERR_OTHER;
        return;
    }
    *ierr = MPI_File_open(SLUICE_PMPI(Comm_f2c)(*comm), name, (int)*amode, SLUICE_PMPI(Info_f2c)(*info), &c_fh);
    if (*ierr == MPI_SUCCESS)
        *fh = SLUICE_PMPI(File_c2f)(c_fh);
    free(name);
}
FORTRAN_NAMES(mpi_file_open, MPI_FILE_OPEN, ompi_file_open_f)

SLUICE_EXPORT void mpi_file_close_(MPI_Fint *fh, MPI_Fint *ierr);
void mpi_file_close_(MPI_Fint *fh, MPI_Fint *ierr)
{
    MPI_File c_fh;

    if (sluice_pmpi_load() != 0)
        FORTRAN_NEXT(mpi_file_close_, fh, ierr);
    c_fh = SLUICE_PMPI(File_f2c)(*fh);
    *ierr = MPI_File_close(&c_fh);
    if (*ierr == MPI_SUCCESS)
        *fh = SLUICE_PMPI(File_c2f)(c_fh);
}
FORTRAN_NAMES(mpi_file_close, MPI_FILE_CLOSE, ompi_file_close_f)

SLUICE_EXPORT void mpi_file_sync_(MPI_Fint *fh, MPI_Fint *ierr);
void mpi_file_sync_(MPI_Fint *fh, MPI_Fint *ierr)
{
    if (sluice_pmpi_load() != 0)
        FORTRAN_NEXT(mpi_file_sync_, fh, ierr);
    *ierr = MPI_File_sync(SLUICE_PMPI(File_f2c)(*fh));
}
FORTRAN_NAMES(mpi_file_sync, MPI_FILE_SYNC, ompi_file_sync_f)

SLUICE_EXPORT void mpi_file_set_view_(MPI_Fint *fh, MPI_Offset *disp, MPI_Fint *etype, MPI_Fint *filetype,
                                      char *datarep, MPI_Fint *info, MPI_Fint *ierr, size_t datarep_len);
void mpi_file_set_view_(MPI_Fint *fh, MPI_Offset *disp, MPI_Fint *etype, MPI_Fint *filetype, char *datarep,
                        MPI_Fint *info, MPI_Fint *ierr, size_t datarep_len)
{
    char *rep;

    if (sluice_pmpi_load() != 0)
        FORTRAN_NEXT(mpi_file_set_view_, fh, disp, etype, filetype, datarep, info, ierr, datarep_len);
    if (!(rep = fortran_string(datarep, datarep_len))) {
        *ierr = MPI_ERR_OTHER;
        return;
    }
    *ierr = MPI_File_set_view(SLUICE_PMPI(File_f2c)(*fh), *disp, SLUICE_PMPI(Type_f2c)(*etype),
                              SLUICE_PMPI(Type_f2c)(*filetype), rep, SLUICE_PMPI(Info_f2c)(*info));
    free(rep);
}
FORTRAN_NAMES(mpi_file_set_view, MPI_FILE_SET_VIEW, ompi_file_set_view_f)

SLUICE_EXPORT void mpi_file_set_size_(MPI_Fint *fh, MPI_Offset *size, MPI_Fint *ierr);
void mpi_file_set_size_(MPI_Fint *fh, MPI_Offset *size, MPI_Fint *ierr)
{
    if (sluice_pmpi_load() != 0)
        FORTRAN_NEXT(mpi_file_set_size_, fh, size, ierr);
    *ierr = MPI_File_set_size(SLUICE_PMPI(File_f2c)(*fh), *size);
}
FORTRAN_NAMES(mpi_file_set_size, MPI_FILE_SET_SIZE, ompi_file_set_size_f)

SLUICE_EXPORT void mpi_file_get_size_(MPI_Fint *fh, MPI_Offset *size, MPI_Fint *ierr);
void mpi_file_get_size_(MPI_Fint *fh, MPI_Offset *size, MPI_Fint *ierr)
{
    if (sluice_pmpi_load() != 0)
        FORTRAN_NEXT(mpi_file_get_size_, fh, size, ierr);
    *ierr = MPI_File_get_size(SLUICE_PMPI(File_f2c)(*fh), size);
}
FORTRAN_NAMES(mpi_file_get_size, MPI_FILE_GET_SIZE, ompi_file_get_size_f)

/* ---- data: explicit offsets and the individual file pointer ---- */

#define FORTRAN_AT(lower, upper, ompi, cfunc, constbuf)                                                      \
    SLUICE_EXPORT void lower##_(MPI_Fint *fh, MPI_Offset *off, constbuf void *buf, MPI_Fint *count,    \
                                MPI_Fint *type, MPI_Fint *status, MPI_Fint *ierr);                      \
    void lower##_(MPI_Fint *fh, MPI_Offset *off, constbuf void *buf, MPI_Fint *count, MPI_Fint *type, \
                  MPI_Fint *status, MPI_Fint *ierr)                                                     \
    {                                                                                                   \
        MPI_Status c;                                                                                   \
        if (sluice_pmpi_load() != 0)                                                                    \
            FORTRAN_NEXT(lower##_, fh, off, buf, count, type, status, ierr);                            \
        *ierr = cfunc(SLUICE_PMPI(File_f2c)(*fh), *off, c_buffer((void *)buf), (int)*count,             \
                      SLUICE_PMPI(Type_f2c)(*type), c_status(status, &c));                              \
        if (*ierr == MPI_SUCCESS)                                                                       \
            status_back(status, &c);                                                                    \
    }                                                                                                   \
    FORTRAN_NAMES(lower, upper, ompi)

#define FORTRAN_POS(lower, upper, ompi, cfunc, constbuf)                                                     \
    SLUICE_EXPORT void lower##_(MPI_Fint *fh, constbuf void *buf, MPI_Fint *count, MPI_Fint *type,     \
                                MPI_Fint *status, MPI_Fint *ierr);                                      \
    void lower##_(MPI_Fint *fh, constbuf void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *status, \
                  MPI_Fint *ierr)                                                                       \
    {                                                                                                   \
        MPI_Status c;                                                                                   \
        if (sluice_pmpi_load() != 0)                                                                    \
            FORTRAN_NEXT(lower##_, fh, buf, count, type, status, ierr);                                 \
        *ierr = cfunc(SLUICE_PMPI(File_f2c)(*fh), c_buffer((void *)buf), (int)*count,                   \
                      SLUICE_PMPI(Type_f2c)(*type), c_status(status, &c));                              \
        if (*ierr == MPI_SUCCESS)                                                                       \
            status_back(status, &c);                                                                    \
    }                                                                                                   \
    FORTRAN_NAMES(lower, upper, ompi)

FORTRAN_AT(mpi_file_write_at, MPI_FILE_WRITE_AT, ompi_file_write_at_f, MPI_File_write_at, const)
FORTRAN_AT(mpi_file_write_at_all, MPI_FILE_WRITE_AT_ALL, ompi_file_write_at_all_f, MPI_File_write_at_all, const)
FORTRAN_AT(mpi_file_read_at, MPI_FILE_READ_AT, ompi_file_read_at_f, MPI_File_read_at, )
FORTRAN_AT(mpi_file_read_at_all, MPI_FILE_READ_AT_ALL, ompi_file_read_at_all_f, MPI_File_read_at_all, )
FORTRAN_POS(mpi_file_write, MPI_FILE_WRITE, ompi_file_write_f, MPI_File_write, const)
FORTRAN_POS(mpi_file_write_all, MPI_FILE_WRITE_ALL, ompi_file_write_all_f, MPI_File_write_all, const)
FORTRAN_POS(mpi_file_read, MPI_FILE_READ, ompi_file_read_f, MPI_File_read, )
FORTRAN_POS(mpi_file_read_all, MPI_FILE_READ_ALL, ompi_file_read_all_f, MPI_File_read_all, )
FORTRAN_POS(mpi_file_write_shared, MPI_FILE_WRITE_SHARED, ompi_file_write_shared_f, MPI_File_write_shared, const)
FORTRAN_POS(mpi_file_write_ordered, MPI_FILE_WRITE_ORDERED, ompi_file_write_ordered_f, MPI_File_write_ordered, const)
FORTRAN_POS(mpi_file_read_shared, MPI_FILE_READ_SHARED, ompi_file_read_shared_f, MPI_File_read_shared, )
FORTRAN_POS(mpi_file_read_ordered, MPI_FILE_READ_ORDERED, ompi_file_read_ordered_f, MPI_File_read_ordered, )

/* ---- non-blocking: the request handle goes back to Fortran ---- */

#define FORTRAN_IAT(lower, upper, ompi, cfunc, constbuf)                                                     \
    SLUICE_EXPORT void lower##_(MPI_Fint *fh, MPI_Offset *off, constbuf void *buf, MPI_Fint *count,    \
                                MPI_Fint *type, MPI_Fint *request, MPI_Fint *ierr);                     \
    void lower##_(MPI_Fint *fh, MPI_Offset *off, constbuf void *buf, MPI_Fint *count, MPI_Fint *type, \
                  MPI_Fint *request, MPI_Fint *ierr)                                                    \
    {                                                                                                   \
        MPI_Request r;                                                                                  \
        if (sluice_pmpi_load() != 0)                                                                    \
            FORTRAN_NEXT(lower##_, fh, off, buf, count, type, request, ierr);                           \
        *ierr = cfunc(SLUICE_PMPI(File_f2c)(*fh), *off, c_buffer((void *)buf), (int)*count,             \
                      SLUICE_PMPI(Type_f2c)(*type), &r);                                                \
        if (*ierr == MPI_SUCCESS)                                                                       \
            *request = SLUICE_PMPI(Request_c2f)(r);                                                     \
    }                                                                                                   \
    FORTRAN_NAMES(lower, upper, ompi)

#define FORTRAN_IPOS(lower, upper, ompi, cfunc, constbuf)                                                    \
    SLUICE_EXPORT void lower##_(MPI_Fint *fh, constbuf void *buf, MPI_Fint *count, MPI_Fint *type,     \
                                MPI_Fint *request, MPI_Fint *ierr);                                     \
    void lower##_(MPI_Fint *fh, constbuf void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *request, \
                  MPI_Fint *ierr)                                                                       \
    {                                                                                                   \
        MPI_Request r;                                                                                  \
        if (sluice_pmpi_load() != 0)                                                                    \
            FORTRAN_NEXT(lower##_, fh, buf, count, type, request, ierr);                                \
        *ierr = cfunc(SLUICE_PMPI(File_f2c)(*fh), c_buffer((void *)buf), (int)*count,                   \
                      SLUICE_PMPI(Type_f2c)(*type), &r);                                                \
        if (*ierr == MPI_SUCCESS)                                                                       \
            *request = SLUICE_PMPI(Request_c2f)(r);                                                     \
    }                                                                                                   \
    FORTRAN_NAMES(lower, upper, ompi)

FORTRAN_IAT(mpi_file_iwrite_at, MPI_FILE_IWRITE_AT, ompi_file_iwrite_at_f, MPI_File_iwrite_at, const)
FORTRAN_IAT(mpi_file_iread_at, MPI_FILE_IREAD_AT, ompi_file_iread_at_f, MPI_File_iread_at, )
FORTRAN_IPOS(mpi_file_iwrite, MPI_FILE_IWRITE, ompi_file_iwrite_f, MPI_File_iwrite, const)
FORTRAN_IPOS(mpi_file_iread, MPI_FILE_IREAD, ompi_file_iread_f, MPI_File_iread, )

/* ---- split collectives: begin (no status), end (the status back) ---- */

#define FORTRAN_BEGIN_AT(lower, upper, ompi, cfunc, constbuf)                                                \
    SLUICE_EXPORT void lower##_(MPI_Fint *fh, MPI_Offset *off, constbuf void *buf, MPI_Fint *count,    \
                                MPI_Fint *type, MPI_Fint *ierr);                                        \
    void lower##_(MPI_Fint *fh, MPI_Offset *off, constbuf void *buf, MPI_Fint *count, MPI_Fint *type, \
                  MPI_Fint *ierr)                                                                       \
    {                                                                                                   \
        if (sluice_pmpi_load() != 0)                                                                    \
            FORTRAN_NEXT(lower##_, fh, off, buf, count, type, ierr);                                    \
        *ierr = cfunc(SLUICE_PMPI(File_f2c)(*fh), *off, c_buffer((void *)buf), (int)*count,             \
                      SLUICE_PMPI(Type_f2c)(*type));                                                    \
    }                                                                                                   \
    FORTRAN_NAMES(lower, upper, ompi)

#define FORTRAN_BEGIN_POS(lower, upper, ompi, cfunc, constbuf)                                               \
    SLUICE_EXPORT void lower##_(MPI_Fint *fh, constbuf void *buf, MPI_Fint *count, MPI_Fint *type,     \
                                MPI_Fint *ierr);                                                        \
    void lower##_(MPI_Fint *fh, constbuf void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *ierr)  \
    {                                                                                                   \
        if (sluice_pmpi_load() != 0)                                                                    \
            FORTRAN_NEXT(lower##_, fh, buf, count, type, ierr);                                         \
        *ierr = cfunc(SLUICE_PMPI(File_f2c)(*fh), c_buffer((void *)buf), (int)*count,                   \
                      SLUICE_PMPI(Type_f2c)(*type));                                                    \
    }                                                                                                   \
    FORTRAN_NAMES(lower, upper, ompi)

#define FORTRAN_END(lower, upper, ompi, cfunc, constbuf)                                                     \
    SLUICE_EXPORT void lower##_(MPI_Fint *fh, constbuf void *buf, MPI_Fint *status, MPI_Fint *ierr);   \
    void lower##_(MPI_Fint *fh, constbuf void *buf, MPI_Fint *status, MPI_Fint *ierr)                  \
    {                                                                                                   \
        MPI_Status c;                                                                                   \
        if (sluice_pmpi_load() != 0)                                                                    \
            FORTRAN_NEXT(lower##_, fh, buf, status, ierr);                                              \
        *ierr = cfunc(SLUICE_PMPI(File_f2c)(*fh), c_buffer((void *)buf), c_status(status, &c));         \
        if (*ierr == MPI_SUCCESS)                                                                       \
            status_back(status, &c);                                                                    \
    }                                                                                                   \
    FORTRAN_NAMES(lower, upper, ompi)

FORTRAN_BEGIN_AT(mpi_file_write_at_all_begin, MPI_FILE_WRITE_AT_ALL_BEGIN, ompi_file_write_at_all_begin_f, MPI_File_write_at_all_begin, const)
FORTRAN_BEGIN_AT(mpi_file_read_at_all_begin, MPI_FILE_READ_AT_ALL_BEGIN, ompi_file_read_at_all_begin_f, MPI_File_read_at_all_begin, )
FORTRAN_BEGIN_POS(mpi_file_write_all_begin, MPI_FILE_WRITE_ALL_BEGIN, ompi_file_write_all_begin_f, MPI_File_write_all_begin, const)
FORTRAN_BEGIN_POS(mpi_file_read_all_begin, MPI_FILE_READ_ALL_BEGIN, ompi_file_read_all_begin_f, MPI_File_read_all_begin, )
FORTRAN_BEGIN_POS(mpi_file_write_ordered_begin, MPI_FILE_WRITE_ORDERED_BEGIN, ompi_file_write_ordered_begin_f, MPI_File_write_ordered_begin, const)
FORTRAN_BEGIN_POS(mpi_file_read_ordered_begin, MPI_FILE_READ_ORDERED_BEGIN, ompi_file_read_ordered_begin_f, MPI_File_read_ordered_begin, )
FORTRAN_END(mpi_file_write_at_all_end, MPI_FILE_WRITE_AT_ALL_END, ompi_file_write_at_all_end_f, MPI_File_write_at_all_end, const)
FORTRAN_END(mpi_file_read_at_all_end, MPI_FILE_READ_AT_ALL_END, ompi_file_read_at_all_end_f, MPI_File_read_at_all_end, )
FORTRAN_END(mpi_file_write_all_end, MPI_FILE_WRITE_ALL_END, ompi_file_write_all_end_f, MPI_File_write_all_end, const)
FORTRAN_END(mpi_file_read_all_end, MPI_FILE_READ_ALL_END, ompi_file_read_all_end_f, MPI_File_read_all_end, )
FORTRAN_END(mpi_file_write_ordered_end, MPI_FILE_WRITE_ORDERED_END, ompi_file_write_ordered_end_f, MPI_File_write_ordered_end, const)
FORTRAN_END(mpi_file_read_ordered_end, MPI_FILE_READ_ORDERED_END, ompi_file_read_ordered_end_f, MPI_File_read_ordered_end, )
