/*
 * Shared helpers for the benchmark workload programs (see common.h).
 * Not thread-safe where noted; the workloads are single-threaded processes.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
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

void bench_die(const char *prog, int with_errno, const char *fmt, ...)
{
    int saved = errno;
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "%s: error: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (with_errno)
        fprintf(stderr, ": %s", strerror(saved));
    fputc('\n', stderr);
    exit(1);
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

uint64_t bench_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
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
