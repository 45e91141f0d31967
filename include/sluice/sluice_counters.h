/*
 * Counter indices, expanded from sluice_counters.def: one enum of integer
 * counters and one of floating-point counters per module, named exactly as
 * in the .def (POSIX_OPENS, STDIO_F_META_TIME, ...).
 */
#ifndef SLUICE_COUNTERS_H
#define SLUICE_COUNTERS_H

enum sluice_module_id {
#define SLUICE_MODULE(name, id, ver) SLUICE_MOD_##name = id,
#include "sluice/sluice_modules.def"
#undef SLUICE_MODULE
    SLUICE_MOD_END
};

/* SLUICE_SEL(mod, want, x): "x," when module mod is module want, nothing
 * otherwise (SLUICE_SAME_<mod>_<want> exists only for equal names). */
#define SLUICE_SAME_POSIX_POSIX ~, SLUICE_SEL_KEEP_
#define SLUICE_SAME_STDIO_STDIO ~, SLUICE_SEL_KEEP_
#define SLUICE_SAME_MPIIO_MPIIO ~, SLUICE_SEL_KEEP_
#define SLUICE_SAME_H5F_H5F ~, SLUICE_SEL_KEEP_
#define SLUICE_SAME_H5D_H5D ~, SLUICE_SEL_KEEP_
#define SLUICE_SAME_PNETCDF_FILE_PNETCDF_FILE ~, SLUICE_SEL_KEEP_
#define SLUICE_SAME_PNETCDF_VAR_PNETCDF_VAR ~, SLUICE_SEL_KEEP_
#define SLUICE_SEL_KEEP_(x) x,
#define SLUICE_SEL_DROP_(x)
#define SLUICE_SEL_2ND_(a, b, ...) b
#define SLUICE_SEL_PICK_(...) SLUICE_SEL_2ND_(__VA_ARGS__, SLUICE_SEL_DROP_, ~)
#define SLUICE_SEL(mod, want, x) SLUICE_SEL_PICK_(SLUICE_SAME_##mod##_##want)(x)

enum sluice_posix_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL(mod, POSIX, name)
#include "sluice/sluice_counters.def"
    POSIX_NUM_ICOUNTERS
};
enum sluice_posix_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL(mod, POSIX, name)
#include "sluice/sluice_counters.def"
    POSIX_NUM_FCOUNTERS
};
enum sluice_stdio_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL(mod, STDIO, name)
#include "sluice/sluice_counters.def"
    STDIO_NUM_ICOUNTERS
};
enum sluice_stdio_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL(mod, STDIO, name)
#include "sluice/sluice_counters.def"
    STDIO_NUM_FCOUNTERS
};

enum sluice_mpiio_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL(mod, MPIIO, name)
#include "sluice/sluice_counters.def"
    MPIIO_NUM_ICOUNTERS
};
enum sluice_mpiio_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL(mod, MPIIO, name)
#include "sluice/sluice_counters.def"
    MPIIO_NUM_FCOUNTERS
};

enum sluice_h5f_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL(mod, H5F, name)
#include "sluice/sluice_counters.def"
    H5F_NUM_ICOUNTERS
};
enum sluice_h5f_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL(mod, H5F, name)
#include "sluice/sluice_counters.def"
    H5F_NUM_FCOUNTERS
};
enum sluice_h5d_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL(mod, H5D, name)
#include "sluice/sluice_counters.def"
    H5D_NUM_ICOUNTERS
};
enum sluice_h5d_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL(mod, H5D, name)
#include "sluice/sluice_counters.def"
    H5D_NUM_FCOUNTERS
};

/* The two sides every record keeps. */
enum sluice_side {
    SLUICE_SIDE_APP = 0,  /* what the application asked */
    SLUICE_SIDE_FS = 1,   /* what reached the file system */
    SLUICE_NUM_SIDES = 2
};

enum sluice_pnetcdf_file_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL(mod, PNETCDF_FILE, name)
#include "sluice/sluice_counters.def"
    PNETCDF_FILE_NUM_ICOUNTERS
};
enum sluice_pnetcdf_file_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL(mod, PNETCDF_FILE, name)
#include "sluice/sluice_counters.def"
    PNETCDF_FILE_NUM_FCOUNTERS
};
enum sluice_pnetcdf_var_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL(mod, PNETCDF_VAR, name)
#include "sluice/sluice_counters.def"
    PNETCDF_VAR_NUM_ICOUNTERS
};
enum sluice_pnetcdf_var_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL(mod, PNETCDF_VAR, name)
#include "sluice/sluice_counters.def"
    PNETCDF_VAR_NUM_FCOUNTERS
};

#endif
