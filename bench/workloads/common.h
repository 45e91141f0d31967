/*
 * Shared helpers for the benchmark workload programs in bench/workloads/.
 *
 * Each workload is a small standalone program: it takes --help-documented
 * options, does its I/O, and prints exactly one JSON line on stdout that
 * says what it did (bytes, operations, seconds). Errors go to stderr as one
 * line and the program exits 1. The harness (`sluice bench`) runs these
 * programs, possibly under `sluice run`, and reads the JSON line.
 *
 * Everything here is plain POSIX with full loops over short I/O and EINTR,
 * so that a buffering layer underneath is free to return short counts.
 */
#ifndef SLUICE_BENCH_COMMON_H
#define SLUICE_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Seconds from a monotonic clock. */
double bench_now(void);

/* Print "PROG: error: MESSAGE" (with strerror(errno) when with_errno) and exit 1. */
_Noreturn void bench_die(const char *prog, int with_errno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same line as bench_die, without exiting: for a child process that
 * reports what failed and returns 1, and for a check that counts a problem
 * and goes on. */
void bench_error(const char *prog, int with_errno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The exit status once the JSON line is printed: 1 if stdout cannot be
 * flushed (a result line that never arrives is a failed run) or !ok, else 0. */
int bench_exit_status(int ok);

/*
 * Parse a byte count: a decimal integer with an optional binary suffix
 * k/K, m/M, g/G, t/T (optionally followed by "iB" or "B"). Returns 0 on
 * success, -1 on a malformed or overflowing value.
 */
int bench_parse_size(const char *s, uint64_t *out);

/* Parse a non-negative decimal integer; -1 on error. */
int bench_parse_u64(const char *s, uint64_t *out);

/*
 * Command-line options. The programs take long options only (plus -h), read
 * with getopt_long, so unambiguous abbreviations work. A program describes
 * its options in a table of the BENCH_OPT_* entries below, ended by
 * BENCH_OPT_END and in the order of its --help text; bench_parse_options
 * adds --help, stores each value as it comes, and on a problem prints:
 *   a malformed number        "bad value 'ARG' for --NAME"        exit 1
 *   a word not in the choices "bad --NAME 'ARG' (a, b or c)"      exit 1
 *   a required one missing    "--NAME is required (see --help)"   exit 1
 *   an unknown option or an operand: usage(stderr), exit 2; --help: usage(stdout), exit 0.
 */
enum bench_option_kind {
    BENCH_KIND_STRING,  /* const char **: the argument as given */
    BENCH_KIND_COUNT,   /* uint64_t *: a decimal integer (bench_parse_u64) */
    BENCH_KIND_SIZE,    /* uint64_t *: a byte count with a suffix (bench_parse_size) */
    BENCH_KIND_FLAG,    /* int *: set to flag_value; takes no argument */
    BENCH_KIND_CHOICE,  /* int *: the index of the argument in choices */
};

struct bench_option {
    const char *name;            /* without the "--"; NULL ends the table */
    enum bench_option_kind kind;
    void *value;                 /* where the value goes; its type goes with kind */
    const char *const *choices;  /* BENCH_KIND_CHOICE: the words, NULL-terminated */
    int flag_value;              /* BENCH_KIND_FLAG */
    int required;                /* BENCH_KIND_STRING: die when not given */
};

/* Table entries. The conditional in each makes the compiler check that the
 * pointer has the type the kind stores through. */
#define BENCH_OPT_REQUIRED(name_, ptr_)                                                         \
    {.name = (name_), .kind = BENCH_KIND_STRING, .value = (1 ? (ptr_) : (const char **)NULL), \
     .required = 1}
#define BENCH_OPT_COUNT(name_, ptr_) \
    {.name = (name_), .kind = BENCH_KIND_COUNT, .value = (1 ? (ptr_) : (uint64_t *)NULL)}
#define BENCH_OPT_SIZE(name_, ptr_) \
    {.name = (name_), .kind = BENCH_KIND_SIZE, .value = (1 ? (ptr_) : (uint64_t *)NULL)}
#define BENCH_OPT_FLAG(name_, ptr_, set_to_)                                           \
    {.name = (name_), .kind = BENCH_KIND_FLAG, .value = (1 ? (ptr_) : (int *)NULL), \
     .flag_value = (set_to_)}
#define BENCH_OPT_CHOICE(name_, ptr_, words_)                                            \
    {.name = (name_), .kind = BENCH_KIND_CHOICE, .value = (1 ? (ptr_) : (int *)NULL), \
     .choices = (words_)}
#define BENCH_OPT_END {.name = NULL}

void bench_parse_options(const char *prog, int argc, char **argv, const struct bench_option *opts,
                         void (*usage)(FILE *out));

/* The index of arg in the NULL-terminated choices, or die with
 * "bad --OPTION 'ARG' (a, b or c)". */
int bench_parse_choice(const char *prog, const char *option, const char *arg,
                       const char *const *choices);

/* The --phase words of the programs with an untimed setup phase, in the
 * order of the enum: setup only, the timed run only, or both. */
extern const char *const bench_setup_run_phases[];
enum { BENCH_PHASE_SETUP, BENCH_PHASE_RUN, BENCH_PHASE_ALL };

/* write/pwrite/read/pread the whole buffer, retrying on EINTR and short counts.
 * Return 0, or -1 with errno set. bench_read_full returns the bytes read
 * (less than n only at end of file), or -1. */
int bench_write_full(int fd, const void *buf, size_t n);
int bench_pwrite_full(int fd, const void *buf, size_t n, off_t off);
ssize_t bench_read_full(int fd, void *buf, size_t n);
ssize_t bench_pread_full(int fd, void *buf, size_t n, off_t off);

/*
 * The verification pattern: the byte at file offset p is
 *   (p mod 251) XOR (uint8_t)(b * 157 + (b >> 8)),  where b = p >> 16.
 * It repeats neither every 251 bytes nor every 64 KiB, so a block written at
 * the wrong offset is detected. bench_pattern_fill writes the pattern of
 * [off, off + n) into buf; bench_pattern_check returns how many bytes of buf
 * differ from it.
 */
void bench_pattern_fill(unsigned char *buf, size_t n, uint64_t off);
uint64_t bench_pattern_check(const unsigned char *buf, size_t n, uint64_t off);

/* The pattern as the programs' --help texts put it; a text adds its own
 * full stop. */
#define BENCH_PATTERN_HELP "(p mod 251) XOR (uint8)(b*157 + (b>>8)), b = p>>16"

/* bench_pattern_check, adding the time it took to *seconds: a reader that
 * verifies as it goes leaves the checking out of its I/O time. */
uint64_t bench_pattern_check_timed(const unsigned char *buf, size_t n, uint64_t off,
                                   double *seconds);

/*
 * Read the file at path whole and count the bytes that differ from the
 * pattern (from offset 0); *size gets how many bytes it holds. A size other
 * than expected_size is reported on stderr but not counted: the callers
 * judge it differently. Dies if the file cannot be opened or read.
 */
uint64_t bench_pattern_check_file(const char *prog, const char *path, uint64_t expected_size,
                                  uint64_t *size);

/* splitmix64: a tiny deterministic generator for sizes and permutations. */
uint64_t bench_mix64(uint64_t x);

/* The most processes a program forks (--procs). */
#define BENCH_MAX_PROCS 4096
/* Die with "--procs must be 1..4096" unless 1 <= procs <= BENCH_MAX_PROCS. */
void bench_check_procs(const char *prog, uint64_t procs);

/*
 * Fork-based process groups. bench_spawn forks n children; each child waits
 * until bench_release is called (so that all start together), runs
 * fn(rank, arg) and exits with its return value (0 = success).
 */
struct bench_group {
    pid_t *pids;      /* child process ids, n of them */
    int n;            /* number of children */
    int gate[2];      /* start gate: children block reading gate[0] */
};
void bench_spawn(struct bench_group *g, int n, int (*fn)(int rank, void *arg), void *arg,
                 const char *prog);
void bench_release(struct bench_group *g);
/* Wait for all children; returns the number that failed. */
int bench_wait(struct bench_group *g);

/* Release the children, wait for them all, and die with "N of M WHAT failed"
 * if any failed. Returns the seconds from t0 to the last exit. */
double bench_finish_group(struct bench_group *g, const char *prog, const char *what, double t0);

/* For the parent that could not make what its spawned children need (the
 * shared file, the top directory): let them go to fail on their own, reap
 * them, and die with the message and errno as they were. */
_Noreturn void bench_abandon_group(struct bench_group *g, const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * One writer process of a file written N-to-1 (strided-shared, amr-n1):
 * open the file the parent created, write with one pwrite each the pieces
 * that piece(arg, rank, 0), piece(arg, rank, 1), ... name (it sets the
 * offset and length and returns 1, or returns 0 after the last), each
 * holding the pattern at its offset; fsync if asked; close. Counts go to k,
 * seconds from the open to the close. A failing call is reported as
 * "PROG: error: WHO RANK: CALL PATH: reason" and returns 1; 0 on success.
 */
struct bench_writer_counts {
    uint64_t bytes, writes;
    double seconds;  /* open to close */
};
typedef int (*bench_piece_fn)(const void *arg, int rank, uint64_t j, uint64_t *off, uint64_t *len);
int bench_pwrite_pattern_pieces(const char *prog, const char *who, int rank, const char *path,
                                int do_fsync, bench_piece_fn piece, const void *arg,
                                struct bench_writer_counts *k);

/* The run of an N-to-1 write: fork the n writers, start the clock, create
 * (or truncate) the shared file they open, release them and wait, dying if
 * the create or any writer fails. The create is timed with the writes: it
 * is part of writing the file. Returns the seconds to the last exit. */
double bench_run_shared_file_writers(const char *prog, const char *path, int n,
                                     int (*writer)(int rank, void *arg), void *arg);

/* The writers' counts added up; seconds is the slowest writer's. */
struct bench_writer_counts bench_writer_totals(const struct bench_writer_counts *each, uint64_t n);

/* A zeroed MAP_SHARED anonymous mapping of n bytes (for per-child results). */
void *bench_shared_alloc(size_t n, const char *prog);

/* mkdir -p for one level: succeeds if the directory already exists. */
int bench_mkdir(const char *path);

/* Print a JSON string literal (with quotes and escapes) on stdout. */
void bench_json_str(const char *s);

/* Start the JSON line of a program that works on one file or directory:
 * {"workload":"W","phase":"P","KEY":"PATH" (without the phase when phase is
 * NULL), the path escaped. The caller prints the rest, from a comma on. */
void bench_json_begin(const char *workload, const char *phase, const char *key, const char *path);

#endif
