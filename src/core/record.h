/*
 * Records: one per (module, path), holding both sides' counters. Records
 * live in an append-only arena for the life of the process (the log writer,
 * possibly running from a signal handler, walks them without locks), are
 * found by a hash of their path, and are bounded by SLUICE_MAX_RECORDS per
 * module: past it, I/O on new files goes to the module's "<other files>"
 * record, so job totals stay exact, and the log is marked partial.
 *
 * Locking: the registry lock guards the hash table and creation; each
 * record's own lock guards its counters and access state.
 */
#ifndef SLUICE_CORE_RECORD_H
#define SLUICE_CORE_RECORD_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "common/clock.h"
#include "sluice/sluice_counters.h"

#define SLUICE_OTHER_FILES "<other files>"

/* The distinct values of one kind (access sizes, strides) a record has seen
 * and how often: the first SLUICE_CVAL_SLOTS of them, as Darshan tracks
 * them, in a fixed table (no allocation on the I/O path). Their four most
 * frequent non-zero values are kept in the record's *1..4 counters as they
 * change. */
#define SLUICE_CVAL_SLOTS 32
struct sluice_cvals {
    uint32_t n;                        /* values in the table */
    uint32_t freq[SLUICE_CVAL_SLOTS];
    int64_t val[SLUICE_CVAL_SLOTS];
};

/* The common-value tables a record keeps per side: POSIX access sizes and
 * strides, MPI-IO access sizes. */
enum sluice_cval_kind { SLUICE_CV_ACCESS = 0, SLUICE_CV_STRIDE = 1, SLUICE_CV_KINDS = 2 };

/* Memory alignment that POSIX_MEM_NOT_ALIGNED tests (Darshan's default). */
#define SLUICE_MEM_ALIGNMENT 8

enum sluice_record_flags {
    SLUICE_REC_OVERFLOW = 1u << 0, /* the "<other files>" aggregate */
};

struct sluice_record {
    uint64_t id;                     /* hash of module and path; unique within a log */
    struct sluice_record *hnext;     /* hash chain */
    struct sluice_record *next;      /* all records, newest first; published with release */
    atomic_int lock;                 /* spin lock: counters and the access state below */
    int fs_mirror;                   /* 1: the fs side equals the app side and is not stored
                                        separately (only pass-through stacks have seen it) */
    uint16_t module;                 /* enum sluice_module_id */
    uint16_t ni, nf;                 /* integer and float counters per side */
    uint32_t flags;                  /* enum sluice_record_flags */
    uint32_t log_gen;                /* log writer's mark: in the log being written */
    uint32_t log_index;              /* its entry in that log's NAMES region */
    int64_t last_end[SLUICE_NUM_SIDES][2]; /* end of the previous read [0] / write [1]; -1: none */
    int last_kind[SLUICE_NUM_SIDES]; /* 0 none, 1 read, 2 write: for RW_SWITCHES */
    const char *path;                /* absolute, normalised */
    int mount;                       /* index in the mount table (core/mounts.h); -1: unknown */
    int64_t file_align;              /* the mount's block size: POSIX_FILE_ALIGNMENT; 0: unknown */
    int64_t layout[4];               /* POSIX_STRIPE_SIZE, _STRIPE_COUNT, POSIX_OBJECT_SIZE,
                                        POSIX_LAYOUT_COMPONENTS as read (src/layout); 0: not read */
    atomic_int layout_seen;          /* 1: the layout was read, or will not be */
    struct sluice_cvals *cv;         /* cv[side * SLUICE_CV_KINDS + kind]; NULL: the module keeps none */
    atomic_int open_files;           /* open descriptions of this path in this process, opened through
                                        the tier stacks (stage mode does not stage a truncating
                                        open of a file the process has open otherwise) */
    int64_t *ic;                     /* ic[side * ni + counter] */
    double *fc;                      /* fc[side * nf + counter], in clock ticks (seconds in the log) */
};

struct sluice_module_info {
    const char *name;
    uint16_t id, version, ni, nf;
    const char *const *inames;       /* counter names, ni of them */
    const char *const *fnames;       /* nf of them */
};

/* Module descriptions, indexed by enum sluice_module_id (NULL for gaps). */
const struct sluice_module_info *sluice_module(unsigned id);

/* Set up the registry (from the constructor). 0 or -errno. */
int sluice_records_init(int64_t max_records);

/* The record of (module, absolute normalised path), created on first use.
 * NULL only when the library is out of memory (then nothing is recorded). */
struct sluice_record *sluice_record_get(unsigned module, const char *path);

/* The file's layout as read (src/layout), kept in the POSIX record's
 * POSIX_STRIPE_SIZE, POSIX_STRIPE_COUNT, POSIX_OBJECT_SIZE and
 * POSIX_LAYOUT_COMPONENTS on both sides, across a reset. */
void sluice_record_set_layout(struct sluice_record *r, const int64_t layout[4]);

/* The record's lock: held for a few dozen instructions at a time, so a
 * spin lock (yielding if the holder was preempted) costs less than a mutex
 * on every counted call; taking it needs no memory and no system call, so
 * it is usable from the signal-safe log writer (with trylock). */
static inline int sluice_record_trylock(struct sluice_record *r)
{
    return !atomic_exchange_explicit(&r->lock, 1, memory_order_acquire);
}

static inline void sluice_record_lock(struct sluice_record *r)
{
    for (int spins = 0; !sluice_record_trylock(r); spins++) {
        while (atomic_load_explicit(&r->lock, memory_order_relaxed)) {
            if (++spins > 100)
                sched_yield();
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
    }
}

static inline void sluice_record_unlock(struct sluice_record *r)
{
    atomic_store_explicit(&r->lock, 0, memory_order_release);
}

/* Where side `side` of r's integer / float counters live (the fs side of
 * a mirrored record is its app side). */
static inline const int64_t *sluice_record_ints(const struct sluice_record *r, int side)
{
    return r->ic + ((side == SLUICE_SIDE_FS && !r->fs_mirror) ? r->ni : 0);
}

static inline const double *sluice_record_floats(const struct sluice_record *r, int side)
{
    return r->fc + ((side == SLUICE_SIDE_FS && !r->fs_mirror) ? r->nf : 0);
}

/* From now on the two sides of r differ (a stack that changes I/O opened
 * it): give the fs side its own copy of what it has counted so far. */
void sluice_record_split_sides(struct sluice_record *r);

/* Walk every record (no locks taken: safe from a signal handler). */
struct sluice_record *sluice_records_first(void);

/* Number of records created, per module; and whether any file was folded
 * into "<other files>". */
int sluice_records_partial(void);

/* In a forked child: the parent's counts belong to the parent's log. Zero
 * every record and re-initialise locks a parent thread may have held. */
void sluice_records_after_fork_child(void);

#endif
