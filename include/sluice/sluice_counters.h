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

#define SLUICE_SEL_POSIX_POSIX(x) x,
#define SLUICE_SEL_POSIX_STDIO(x)
#define SLUICE_SEL_STDIO_POSIX(x)
#define SLUICE_SEL_STDIO_STDIO(x) x,
#define SLUICE_SEL_POSIX_MPIIO(x)
#define SLUICE_SEL_STDIO_MPIIO(x)
#define SLUICE_SEL_MPIIO_POSIX(x)
#define SLUICE_SEL_MPIIO_STDIO(x)
#define SLUICE_SEL_MPIIO_MPIIO(x) x,

enum sluice_posix_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_POSIX_##mod(name)
#include "sluice/sluice_counters.def"
    POSIX_NUM_ICOUNTERS
};
enum sluice_posix_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_POSIX_##mod(name)
#include "sluice/sluice_counters.def"
    POSIX_NUM_FCOUNTERS
};
enum sluice_stdio_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_STDIO_##mod(name)
#include "sluice/sluice_counters.def"
    STDIO_NUM_ICOUNTERS
};
enum sluice_stdio_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_STDIO_##mod(name)
#include "sluice/sluice_counters.def"
    STDIO_NUM_FCOUNTERS
};

enum sluice_mpiio_icounter {
#define SLUICE_ICOUNTER(mod, name, help) SLUICE_SEL_MPIIO_##mod(name)
#include "sluice/sluice_counters.def"
    MPIIO_NUM_ICOUNTERS
};
enum sluice_mpiio_fcounter {
#define SLUICE_FCOUNTER(mod, name, help) SLUICE_SEL_MPIIO_##mod(name)
#include "sluice/sluice_counters.def"
    MPIIO_NUM_FCOUNTERS
};

/* The two sides every record keeps. */
enum sluice_side {
    SLUICE_SIDE_APP = 0,  /* what the application asked */
    SLUICE_SIDE_FS = 1,   /* what reached the file system */
    SLUICE_NUM_SIDES = 2
};

#endif
