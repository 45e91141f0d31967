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
#include <sys/types.h>

/* Seconds from a monotonic clock. */
double bench_now(void);

/* Print "PROG: error: MESSAGE" (with strerror(errno) when with_errno) and exit 1. */
_Noreturn void bench_die(const char *prog, int with_errno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Parse a byte count: a decimal integer with an optional binary suffix
 * k/K, m/M, g/G, t/T (optionally followed by "iB" or "B"). Returns 0 on
 * success, -1 on a malformed or overflowing value.
 */
int bench_parse_size(const char *s, uint64_t *out);

/* Parse a non-negative decimal integer; -1 on error. */
int bench_parse_u64(const char *s, uint64_t *out);

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

/* splitmix64: a tiny deterministic generator for sizes and permutations. */
uint64_t bench_mix64(uint64_t x);

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

/* A zeroed MAP_SHARED anonymous mapping of n bytes (for per-child results). */
void *bench_shared_alloc(size_t n, const char *prog);

/* mkdir -p for one level: succeeds if the directory already exists. */
int bench_mkdir(const char *path);

/* Print a JSON string literal (with quotes and escapes) on stdout. */
void bench_json_str(const char *s);

#endif
