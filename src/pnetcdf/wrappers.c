/*
 * PnetCDF's API as libsluice defines it (see pnetcdf.h): each function calls
 * the next definition (the program's libpnetcdf), then counts the call.
 *
 * The 550 data functions are generated: put and get of a whole variable,
 * one element, a subarray, a strided and a mapped one (var, var1, vara,
 * vars, varm), each typed (text ... ulonglong) or flexible (a buffer count
 * and MPI datatype), independent or collective (_all); varn (several
 * subarrays) and vard (an MPI file type); and the non-blocking iput, iget
 * and bput of var..varn, which add a request id. The prototypes are those
 * of pnetcdf.h (PnetCDF 1.12).
 */
#include <errno.h>
#include <stdint.h>

#include "common/clock.h"
#include "interpose/interpose.h"
#include "pnetcdf/pnetcdf.h"

#include <sluice/sluice_counters.h>

#define PNC_STRIP(...) __VA_ARGS__

/* A wrapper: its name, parameters and the arguments it passes on (both in
 * parentheses), and the statement that counts it (rc, t0, t1 in scope). */
#define PNC_WRAP(fname, params, args, count)                                  \
    SLUICE_EXPORT int fname params;                                            \
    SLUICE_EXPORT int fname params                                             \
    {                                                                          \
        static int(*next) params;                                              \
        int(*fn) params = __atomic_load_n(&next, __ATOMIC_ACQUIRE);            \
        if (!fn) {                                                             \
            fn = (int(*) params)sluice_pnc_next(#fname);                       \
            if (!fn)                                                           \
                return SLUICE_NC_ENOTSUPPORTED;                                \
            __atomic_store_n(&next, fn, __ATOMIC_RELEASE);                     \
        }                                                                      \
        uint64_t t0 = sluice_now();                                            \
        int rc = fn args;                                                      \
        uint64_t t1 = sluice_now();                                            \
        int saved = errno;                                                     \
        count;                                                                 \
        errno = saved;                                                         \
        return rc;                                                             \
    }

/* ---- files and variables ---- */

PNC_WRAP(ncmpi_create, (MPI_Comm comm, const char *path, int cmode, MPI_Info info, int *ncidp),
         (comm, path, cmode, info, ncidp), sluice_pnc_opened(path, 1, rc, ncidp, t0, t1))
PNC_WRAP(ncmpi_open, (MPI_Comm comm, const char *path, int omode, MPI_Info info, int *ncidp),
         (comm, path, omode, info, ncidp), sluice_pnc_opened(path, 0, rc, ncidp, t0, t1))
PNC_WRAP(ncmpi_redef, (int ncid), (ncid), sluice_pnc_file_call(ncid, rc, PNETCDF_FILE_REDEFS, t0, t1))
PNC_WRAP(ncmpi_sync, (int ncid), (ncid), sluice_pnc_file_call(ncid, rc, PNETCDF_FILE_SYNCS, t0, t1))
PNC_WRAP(ncmpi_wait, (int ncid, int count, int *reqs, int *statuses), (ncid, count, reqs, statuses),
         sluice_pnc_waited(ncid, rc, 0, t0, t1))
PNC_WRAP(ncmpi_wait_all, (int ncid, int count, int *reqs, int *statuses), (ncid, count, reqs, statuses),
         sluice_pnc_waited(ncid, rc, 1, t0, t1))
PNC_WRAP(ncmpi_def_var, (int ncid, const char *name, int xtype, int ndims, const int *dimidsp, int *varidp),
         (ncid, name, xtype, ndims, dimidsp, varidp),
         sluice_pnc_var_defined(ncid, name, xtype, ndims, dimidsp, rc, varidp, t0, t1))
PNC_WRAP(ncmpi_inq_varid, (int ncid, const char *name, int *varidp), (ncid, name, varidp),
         sluice_pnc_var_found(ncid, name, rc, varidp, t0, t1))

/* The bytes PnetCDF moved are asked before the file is closed. */
SLUICE_EXPORT int ncmpi_close(int ncid);
SLUICE_EXPORT int ncmpi_close(int ncid)
{
    static int (*next)(int);
    int (*fn)(int) = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
    int64_t put = -1, get = -1;

    if (!fn) {
        fn = (int (*)(int))sluice_pnc_next("ncmpi_close");
        if (!fn)
            return SLUICE_NC_ENOTSUPPORTED;
        __atomic_store_n(&next, fn, __ATOMIC_RELEASE);
    }
    int saved = errno;
    sluice_pnc_closing(ncid, &put, &get);
    errno = saved;
    uint64_t t0 = sluice_now();
    int rc = fn(ncid);
    uint64_t t1 = sluice_now();
    saved = errno;
    sluice_pnc_closed(ncid, rc, put, get, t0, t1);
    errno = saved;
    return rc;
}

/* ---- data: what comes before the buffer, per kind ---- */

#define P_var int ncid, int varid
#define A_var ncid, varid
#define P_var1 int ncid, int varid, const MPI_Offset *start
#define A_var1 ncid, varid, start
#define P_vara int ncid, int varid, const MPI_Offset *start, const MPI_Offset *count
#define A_vara ncid, varid, start, count
#define P_vars int ncid, int varid, const MPI_Offset *start, const MPI_Offset *count, const MPI_Offset *stride
#define A_vars ncid, varid, start, count, stride
#define P_varm                                                                                             \
    int ncid, int varid, const MPI_Offset *start, const MPI_Offset *count, const MPI_Offset *stride,       \
        const MPI_Offset *imap
#define A_varm ncid, varid, start, count, stride, imap
#define P_varn int ncid, int varid, int num, MPI_Offset *const *starts, MPI_Offset *const *counts
#define A_varn ncid, varid, num, starts, counts
#define P_vard int ncid, int varid, MPI_Datatype filetype
#define A_vard ncid, varid, filetype

/* what the counting needs of each kind's arguments */
#define C_var(fam, coll) {.family = fam, .kind = SLUICE_PNC_VAR, .collective = coll}
#define C_var1(fam, coll) {.family = fam, .kind = SLUICE_PNC_VAR1, .collective = coll}
#define C_vara(fam, coll) {.family = fam, .kind = SLUICE_PNC_VARA, .collective = coll, .count = count}
#define C_vars(fam, coll) \
    {.family = fam, .kind = SLUICE_PNC_VARS, .collective = coll, .count = count, .stride = stride}
#define C_varm(fam, coll) \
    {.family = fam, .kind = SLUICE_PNC_VARM, .collective = coll, .count = count, .stride = stride}
#define C_varn(fam, coll) {.family = fam, .kind = SLUICE_PNC_VARN, .collective = coll, .num = num, .counts = counts}
#define C_vard(fam, coll) {.family = fam, .kind = SLUICE_PNC_VARD, .collective = coll, .filetype = filetype}

/* One data function: name, kind, buffer parameters and arguments, family,
 * collective or not, request parameter and argument (non-blocking). */
#define PNC_DATA(fname, K, BUFP, BUFA, fam, coll, REQP, REQA)                                        \
    PNC_WRAP(fname, (P_##K, PNC_STRIP BUFP PNC_STRIP REQP), (A_##K, PNC_STRIP BUFA PNC_STRIP REQA), { \
        struct sluice_pnc_call c_ = C_##K(fam, coll);                                                \
        sluice_pnc_data(ncid, varid, rc, &c_, t0, t1);                                               \
    })

#define PNC_TYPES(X, ...)                                                                          \
    X(text, char, __VA_ARGS__)                                                                     \
    X(schar, signed char, __VA_ARGS__)                                                             \
    X(uchar, unsigned char, __VA_ARGS__)                                                           \
    X(short, short, __VA_ARGS__)                                                                   \
    X(ushort, unsigned short, __VA_ARGS__)                                                         \
    X(int, int, __VA_ARGS__)                                                                       \
    X(uint, unsigned int, __VA_ARGS__)                                                             \
    X(long, long, __VA_ARGS__)                                                                     \
    X(float, float, __VA_ARGS__)                                                                   \
    X(double, double, __VA_ARGS__)                                                                 \
    X(longlong, long long, __VA_ARGS__)                                                            \
    X(ulonglong, unsigned long long, __VA_ARGS__)

#define PNC_FLEX_BUF(CONST) (CONST void *buf, MPI_Offset bufcount, MPI_Datatype buftype)
#define PNC_FLEX_ARGS (buf, bufcount, buftype)

/* Blocking: ncmpi_OP_K_T, ncmpi_OP_K_T_all, ncmpi_OP_K, ncmpi_OP_K_all. */
#define PNC_BLOCKING_TYPED(T, CT, OP, K, CONST, FAM)                                        \
    PNC_DATA(ncmpi_##OP##_##K##_##T, K, (CONST CT *buf), (buf), FAM, 0, (), ())             \
    PNC_DATA(ncmpi_##OP##_##K##_##T##_all, K, (CONST CT *buf), (buf), FAM, 1, (), ())
#define PNC_BLOCKING_FLEX(OP, K, CONST, FAM)                                                  \
    PNC_DATA(ncmpi_##OP##_##K, K, PNC_FLEX_BUF(CONST), PNC_FLEX_ARGS, FAM, 0, (), ())         \
    PNC_DATA(ncmpi_##OP##_##K##_all, K, PNC_FLEX_BUF(CONST), PNC_FLEX_ARGS, FAM, 1, (), ())
#define PNC_BLOCKING(OP, K, CONST, FAM) \
    PNC_TYPES(PNC_BLOCKING_TYPED, OP, K, CONST, FAM) PNC_BLOCKING_FLEX(OP, K, CONST, FAM)

/* Non-blocking: ncmpi_OP_K_T and ncmpi_OP_K, with a request id. */
#define PNC_NB_TYPED(T, CT, OP, K, CONST, FAM) \
    PNC_DATA(ncmpi_##OP##_##K##_##T, K, (CONST CT *buf), (buf), FAM, 0, (, int *req), (, req))
#define PNC_NB(OP, K, CONST, FAM)                   \
    PNC_TYPES(PNC_NB_TYPED, OP, K, CONST, FAM)      \
    PNC_DATA(ncmpi_##OP##_##K, K, PNC_FLEX_BUF(CONST), PNC_FLEX_ARGS, FAM, 0, (, int *req), (, req))

#define PNC_CONST const

PNC_BLOCKING(put, var, PNC_CONST, SLUICE_PNC_PUT)
PNC_BLOCKING(put, var1, PNC_CONST, SLUICE_PNC_PUT)
PNC_BLOCKING(put, vara, PNC_CONST, SLUICE_PNC_PUT)
PNC_BLOCKING(put, vars, PNC_CONST, SLUICE_PNC_PUT)
PNC_BLOCKING(put, varm, PNC_CONST, SLUICE_PNC_PUT)
PNC_BLOCKING(put, varn, PNC_CONST, SLUICE_PNC_PUT)
PNC_BLOCKING(get, var, , SLUICE_PNC_GET)
PNC_BLOCKING(get, var1, , SLUICE_PNC_GET)
PNC_BLOCKING(get, vara, , SLUICE_PNC_GET)
PNC_BLOCKING(get, vars, , SLUICE_PNC_GET)
PNC_BLOCKING(get, varm, , SLUICE_PNC_GET)
PNC_BLOCKING(get, varn, , SLUICE_PNC_GET)
PNC_BLOCKING_FLEX(put, vard, PNC_CONST, SLUICE_PNC_PUT)
PNC_BLOCKING_FLEX(get, vard, , SLUICE_PNC_GET)

PNC_NB(iput, var, PNC_CONST, SLUICE_PNC_IPUT)
PNC_NB(iput, var1, PNC_CONST, SLUICE_PNC_IPUT)
PNC_NB(iput, vara, PNC_CONST, SLUICE_PNC_IPUT)
PNC_NB(iput, vars, PNC_CONST, SLUICE_PNC_IPUT)
PNC_NB(iput, varm, PNC_CONST, SLUICE_PNC_IPUT)
PNC_NB(iput, varn, PNC_CONST, SLUICE_PNC_IPUT)
PNC_NB(iget, var, , SLUICE_PNC_IGET)
PNC_NB(iget, var1, , SLUICE_PNC_IGET)
PNC_NB(iget, vara, , SLUICE_PNC_IGET)
PNC_NB(iget, vars, , SLUICE_PNC_IGET)
PNC_NB(iget, varm, , SLUICE_PNC_IGET)
PNC_NB(iget, varn, , SLUICE_PNC_IGET)
PNC_NB(bput, var, PNC_CONST, SLUICE_PNC_BPUT)
PNC_NB(bput, var1, PNC_CONST, SLUICE_PNC_BPUT)
PNC_NB(bput, vara, PNC_CONST, SLUICE_PNC_BPUT)
PNC_NB(bput, vars, PNC_CONST, SLUICE_PNC_BPUT)
PNC_NB(bput, varm, PNC_CONST, SLUICE_PNC_BPUT)
PNC_NB(bput, varn, PNC_CONST, SLUICE_PNC_BPUT)
