/*
 * Shared helpers for the benchmark workload programs (see common.h).
 * Not thread-safe where noted; the workloads are single-threaded processes.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The one error line of bench_die and bench_error, errno as the caller
 * found it. It is formatted first and printed with one fprintf, so that
 * stderr (unbuffered) gets it in one write: the lines of processes failing
 * together do not interleave. */
static void report(const char *prog, int with_errno, int saved_errno, const char *fmt, va_list ap)
{
    char msg[8192];

    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "%s: error: %s%s%s\n", prog, msg, with_errno ? ": " : "",
            with_errno ? strerror(saved_errno) : "");
}

void bench_die(const char *prog, int with_errno, const char *fmt, ...)
{
    int saved = errno;
    va_list ap;

    fflush(stdout);
    va_start(ap, fmt);
    report(prog, with_errno, saved, fmt, ap);
    va_end(ap);
    exit(1);
}

void bench_error(const char *prog, int with_errno, const char *fmt, ...)
{
    int saved = errno;
    va_list ap;

    va_start(ap, fmt);
    report(prog, with_errno, saved, fmt, ap);
    va_end(ap);
    errno = saved;
}

int bench_exit_status(int ok)
{
    if (fflush(stdout) != 0)
        return 1;
    return ok ? 0 : 1;
}

int bench_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int bench_parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return -1;
    }
    if (shift != 0 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    if (*end != '\0')
        return -1;
    if (shift != 0 && v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int bench_parse_choice(const char *prog, const char *option, const char *arg,
                       const char *const *choices)
{
    char list[256];
    size_t used = 0;
    int n = 0;

    for (; choices[n] != NULL; n++)
        if (strcmp(arg, choices[n]) == 0)
            return n;
    /* The words as a sentence: "setup, run or all". */
    list[0] = '\0';
    for (int i = 0; i < n && used < sizeof list; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s",
                         i == 0 ? "" : i == n - 1 ? " or " : ", ", choices[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    bench_die(prog, 0, "bad --%s '%s' (%s)", option, arg, list);
}

const char *const bench_setup_run_phases[] = {"setup", "run", "all", NULL};

/* getopt_long returns this plus the table index for a table option (above
 * any character, so that it cannot be taken for 'h' or '?'). */
#define OPTION_VAL_BASE 0x100

void bench_parse_options(const char *prog, int argc, char **argv, const struct bench_option *opts,
                         void (*usage)(FILE *out))
{
    struct option *longopts;
    size_t n = 0;
    int c;

    while (opts[n].name != NULL)
        n++;
    longopts = calloc(n + 2, sizeof *longopts);  /* the table, --help, the zero end */
    if (longopts == NULL)
        bench_die(prog, 1, "calloc");
    for (size_t i = 0; i < n; i++) {
        longopts[i].name = opts[i].name;
        longopts[i].has_arg = opts[i].kind == BENCH_KIND_FLAG ? no_argument : required_argument;
        longopts[i].val = OPTION_VAL_BASE + (int)i;
    }
    longopts[n].name = "help";
    longopts[n].has_arg = no_argument;
    longopts[n].val = 'h';

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const struct bench_option *opt;

        if (c == 'h') {
            usage(stdout);
            exit(0);
        }
        if (c < OPTION_VAL_BASE) {
            usage(stderr);
            exit(2);
        }
        opt = &opts[c - OPTION_VAL_BASE];
        switch (opt->kind) {
        case BENCH_KIND_STRING:
            *(const char **)opt->value = optarg;
            break;
        case BENCH_KIND_COUNT:
        case BENCH_KIND_SIZE:
            if ((opt->kind == BENCH_KIND_SIZE ? bench_parse_size(optarg, opt->value)
                                              : bench_parse_u64(optarg, opt->value)) != 0)
                bench_die(prog, 0, "bad value '%s' for --%s", optarg, opt->name);
            break;
        case BENCH_KIND_FLAG:
            *(int *)opt->value = opt->flag_value;
            break;
        case BENCH_KIND_CHOICE:
            *(int *)opt->value = bench_parse_choice(prog, opt->name, optarg, opt->choices);
            break;
        }
    }
    free(longopts);
    if (optind != argc) {
        usage(stderr);
        exit(2);
    }
    for (size_t i = 0; i < n; i++)
        if (opts[i].required && *(const char **)opts[i].value == NULL)
            bench_die(prog, 0, "--%s is required (see --help)", opts[i].name);
}

/* Write all n bytes, looping over short writes and EINTR; off < 0 writes
 * at the descriptor's position, otherwise at off. */
static int write_full_at(int fd, const void *buf, size_t n, off_t off)
{
    const char *p = buf;

    while (n > 0) {
        ssize_t w = off < 0 ? write(fd, p, n) : pwrite(fd, p, n, off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        if (off >= 0)
            off += w;
    }
    return 0;
}

int bench_write_full(int fd, const void *buf, size_t n)
{
    return write_full_at(fd, buf, n, -1);
}

int bench_pwrite_full(int fd, const void *buf, size_t n, off_t off)
{
    if (off < 0) {
        errno = EINVAL;
        return -1;
    }
    return write_full_at(fd, buf, n, off);
}

/* Read up to n bytes, looping over short reads and EINTR, stopping at end
 * of file; off < 0 reads at the descriptor's position, otherwise at off. */
static ssize_t read_full_at(int fd, void *buf, size_t n, off_t off)
{
    char *p = buf;
    size_t got = 0;

    while (got < n) {
        ssize_t r = off < 0 ? read(fd, p + got, n - got) : pread(fd, p + got, n - got, off + (off_t)got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

ssize_t bench_read_full(int fd, void *buf, size_t n)
{
    return read_full_at(fd, buf, n, -1);
}

ssize_t bench_pread_full(int fd, void *buf, size_t n, off_t off)
{
    if (off < 0) {
        errno = EINVAL;
        return -1;
    }
    return read_full_at(fd, buf, n, off);
}

#define PATTERN_BLOCK 65536u
#define PATTERN_CYCLE 251u

/* cycle[i] = i mod 251, long enough to serve any run inside one 64 KiB block. */
static unsigned char pattern_cycle[PATTERN_CYCLE + PATTERN_BLOCK];
static int pattern_ready;

static void pattern_init(void)
{
    if (pattern_ready)
        return;
    for (size_t i = 0; i < sizeof pattern_cycle; i++)
        pattern_cycle[i] = (unsigned char)(i % PATTERN_CYCLE);
    pattern_ready = 1;
}

static unsigned char pattern_key(uint64_t block)
{
    return (unsigned char)(block * 157u + (block >> 8));
}

void bench_pattern_fill(unsigned char *buf, size_t n, uint64_t off)
{
    pattern_init();
    while (n > 0) {
        size_t in_block = PATTERN_BLOCK - (size_t)(off % PATTERN_BLOCK);
        size_t k = n < in_block ? n : in_block;
        const unsigned char *src = pattern_cycle + off % PATTERN_CYCLE;
        unsigned char x = pattern_key(off / PATTERN_BLOCK);

        for (size_t i = 0; i < k; i++)
            buf[i] = src[i] ^ x;
        buf += k;
        off += k;
        n -= k;
    }
}

uint64_t bench_pattern_check(const unsigned char *buf, size_t n, uint64_t off)
{
    uint64_t bad = 0;

    pattern_init();
    while (n > 0) {
        size_t in_block = PATTERN_BLOCK - (size_t)(off % PATTERN_BLOCK);
        size_t k = n < in_block ? n : in_block;
        const unsigned char *src = pattern_cycle + off % PATTERN_CYCLE;
        unsigned char x = pattern_key(off / PATTERN_BLOCK);

        for (size_t i = 0; i < k; i++)
            bad += (buf[i] != (unsigned char)(src[i] ^ x));
        buf += k;
        off += k;
        n -= k;
    }
    return bad;
}

uint64_t bench_pattern_check_timed(const unsigned char *buf, size_t n, uint64_t off,
                                   double *seconds)
{
    double t0 = bench_now();
    uint64_t bad = bench_pattern_check(buf, n, off);

    *seconds += bench_now() - t0;
    return bad;
}

uint64_t bench_pattern_check_file(const char *prog, const char *path, uint64_t expected_size,
                                  uint64_t *size)
{
    size_t chunk = 4u << 20;
    unsigned char *buf = malloc(chunk);
    uint64_t off = 0, bad = 0;
    int fd = open(path, O_RDONLY);

    if (buf == NULL || fd < 0)
        bench_die(prog, 1, "verify: open %s", path);
    for (;;) {
        ssize_t got = bench_read_full(fd, buf, chunk);

        if (got < 0)
            bench_die(prog, 1, "verify: read %s", path);
        if (got == 0)
            break;
        bad += bench_pattern_check(buf, (size_t)got, off);
        off += (uint64_t)got;
    }
    close(fd);
    free(buf);
    if (off != expected_size)
        bench_error(prog, 0, "%s has %" PRIu64 " bytes, expected %" PRIu64, path, off,
                    expected_size);
    *size = off;
    return bad;
}

uint64_t bench_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void bench_check_procs(const char *prog, uint64_t procs)
{
    if (procs == 0 || procs > BENCH_MAX_PROCS)
        bench_die(prog, 0, "--procs must be 1..%d", BENCH_MAX_PROCS);
}

void bench_spawn(struct bench_group *g, int n, int (*fn)(int rank, void *arg), void *arg,
                 const char *prog)
{
    g->n = 0;
    g->pids = calloc((size_t)n, sizeof *g->pids);
    if (g->pids == NULL)
        bench_die(prog, 1, "calloc");
    if (pipe(g->gate) != 0)
        bench_die(prog, 1, "pipe");
    fflush(NULL);
    for (int r = 0; r < n; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            int saved = errno;
            close(g->gate[1]);  /* let the children already forked go, then fail */
            bench_wait(g);
            errno = saved;
            bench_die(prog, 1, "fork");
        }
        if (pid == 0) {
            char c;
            ssize_t rd;

            close(g->gate[1]);
            do
                rd = read(g->gate[0], &c, 1);
            while (rd < 0 && errno == EINTR);
            close(g->gate[0]);
            _exit(fn(r, arg) == 0 ? 0 : 1);
        }
        g->pids[r] = pid;
        g->n = r + 1;
    }
    close(g->gate[0]);
}

void bench_release(struct bench_group *g)
{
    close(g->gate[1]);
}

int bench_wait(struct bench_group *g)
{
    int failed = 0;

    for (int r = 0; r < g->n; r++) {
        int status;
        pid_t p;

        do
            p = waitpid(g->pids[r], &status, 0);
        while (p < 0 && errno == EINTR);
        if (p < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    free(g->pids);
    g->pids = NULL;
    return failed;
}

double bench_finish_group(struct bench_group *g, const char *prog, const char *what, double t0)
{
    int n = g->n, failed;
    double seconds;

    bench_release(g);
    failed = bench_wait(g);
    seconds = bench_now() - t0;
    if (failed)
        bench_die(prog, 0, "%d of %d %s failed", failed, n, what);
    return seconds;
}

void bench_abandon_group(struct bench_group *g, const char *prog, const char *fmt, ...)
{
    int saved = errno;
    va_list ap;

    bench_release(g);  /* the children fail on what is missing; reap them */
    bench_wait(g);
    fflush(stdout);
    va_start(ap, fmt);
    report(prog, 1, saved, fmt, ap);
    va_end(ap);
    exit(1);
}

int bench_pwrite_pattern_pieces(const char *prog, const char *who, int rank, const char *path,
                                int do_fsync, bench_piece_fn piece, const void *arg,
                                struct bench_writer_counts *k)
{
    unsigned char *buf = NULL;
    uint64_t cap = 0, off, len;
    double t0 = bench_now();
    int fd = open(path, O_WRONLY);

    if (fd < 0) {
        bench_error(prog, 1, "%s %d: open %s", who, rank, path);
        return 1;
    }
    for (uint64_t j = 0; piece(arg, rank, j, &off, &len); j++) {
        if (len > cap) {  /* pieces may differ in size: grow the buffer */
            free(buf);
            buf = malloc((size_t)len);
            if (buf == NULL)
                goto fail;
            cap = len;
        }
        bench_pattern_fill(buf, (size_t)len, off);
        if (bench_pwrite_full(fd, buf, (size_t)len, (off_t)off) != 0) {
            bench_error(prog, 1, "%s %d: pwrite %s at %" PRIu64, who, rank, path, off);
            goto fail;
        }
        k->writes++;
        k->bytes += len;
    }
    if (do_fsync && fsync(fd) != 0) {
        bench_error(prog, 1, "%s %d: fsync %s", who, rank, path);
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        bench_error(prog, 1, "%s %d: close %s", who, rank, path);
        goto fail;
    }
    k->seconds = bench_now() - t0;
    free(buf);
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    free(buf);
    return 1;
}

double bench_run_shared_file_writers(const char *prog, const char *path, int n,
                                     int (*writer)(int rank, void *arg), void *arg)
{
    struct bench_group g;
    double t0;
    int fd;

    bench_spawn(&g, n, writer, arg, prog);
    t0 = bench_now();
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || close(fd) != 0)
        bench_abandon_group(&g, prog, "create %s", path);  /* the writers fail on open */
    return bench_finish_group(&g, prog, "writers", t0);
}

struct bench_writer_counts bench_writer_totals(const struct bench_writer_counts *each, uint64_t n)
{
    struct bench_writer_counts tot = {0, 0, 0};

    for (uint64_t i = 0; i < n; i++) {
        tot.bytes += each[i].bytes;
        tot.writes += each[i].writes;
        if (each[i].seconds > tot.seconds)
            tot.seconds = each[i].seconds;
    }
    return tot;
}

void *bench_shared_alloc(size_t n, const char *prog)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        bench_die(prog, 1, "mmap of %zu bytes", n);
    memset(p, 0, n);
    return p;
}

int bench_mkdir(const char *path)
{
    struct stat st;

    if (mkdir(path, 0755) == 0)
        return 0;
    if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    return -1;
}

void bench_json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

void bench_json_begin(const char *workload, const char *phase, const char *key, const char *path)
{
    printf("{\"workload\":\"%s\"", workload);
    if (phase != NULL)
        printf(",\"phase\":\"%s\"", phase);
    printf(",\"%s\":", key);
    bench_json_str(path);
}
