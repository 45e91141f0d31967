/*
 * sluice-difftest: the randomized differential tester of the modes that
 * change I/O. One seeded random sequence of operations (writes of random
 * size and offset, vectored writes, reads, seeks, truncates, fsync, stats,
 * close/reopen with random flags, dup, O_APPEND, a second independent
 * description, fork with a child writing through an inherited descriptor)
 * is applied to a managed file (under SLUICE_PATHS, so sluice changes its
 * I/O) and to a reference file sluice does not touch; every result (return
 * value, errno, bytes read, sizes) must be the same after every step, and
 * the whole contents are compared every few steps and at the end.
 *
 *   sluice-difftest SEED NOPS MANAGED_DIR REFERENCE_DIR [MAX_WRITE [MAX_FILE]]
 *
 * Prints "ok SEED NOPS" and exits 0, or prints the first difference (seed,
 * step, operation) and exits 1. The test driver then compares the two
 * files byte for byte on disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS 3

static uint64_t rng;
static long step;
static uint64_t seed;
static char mpath[4096], rpath[4096];
static int mfd[SLOTS] = {-1, -1, -1}, rfd[SLOTS] = {-1, -1, -1};
static int64_t max_write = 20000, max_file = 262144;
static unsigned char *wbuf, *mbuf, *rbuf;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t below(int64_t n)
{
    return n > 0 ? (int64_t)(next() % (uint64_t)n) : 0;
}

static void fail(const char *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(const char *op, const char *fmt, ...)
{
    va_list ap;
    printf("DIFF seed %" PRIu64 " step %ld op %s: ", seed, step, op);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    exit(1);
}

static int trace;   /* DIFFTEST_TRACE=1: print every step (to find a failing seed's cause) */

/* Same return and errno on both sides. */
static void same(const char *op, long long m, int merr, long long r, int rerr)
{
    if (trace)
        printf("  %ld %s -> %lld / %lld\n", step, op, m, r);
    if (m != r || (m < 0 && merr != rerr))
        fail(op, "managed %lld (errno %d) reference %lld (errno %d)", m, m < 0 ? merr : 0, r, r < 0 ? rerr : 0);
}

/* Random size: mostly small, sometimes up to max_write. */
static int64_t rand_size(void)
{
    uint64_t k = next() % 100;
    if (k < 60)
        return 1 + below(64);
    if (k < 85)
        return 1 + below(4096 < max_write ? 4096 : max_write);
    return 1 + below(max_write);
}

static int64_t rand_offset(void)
{
    return below(max_file);
}

static void fill(int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        wbuf[i] = (unsigned char)(step * 31 + i * 7 + 1);
}

/* An open slot: index of a slot with an open descriptor, or -1. */
static int open_slot(void)
{
    int s = (int)below(SLOTS);
    for (int i = 0; i < SLOTS; i++, s = (s + 1) % SLOTS)
        if (mfd[s] >= 0)
            return s;
    return -1;
}

static void do_open(int s, int flags)
{
    int m, r, me, re;
    if (mfd[s] >= 0) {
        m = close(mfd[s]);
        me = errno;
        r = close(rfd[s]);
        re = errno;
        same("close", m, me, r, re);
    }
    if (trace)
        printf("  open slot %d flags %#o\n", s, flags);
    m = open(mpath, flags, 0644);
    me = errno;
    r = open(rpath, flags, 0644);
    re = errno;
    same("open", m >= 0 ? 0 : -1, me, r >= 0 ? 0 : -1, re);
    mfd[s] = m;
    rfd[s] = r;
}

/* DIFFTEST_NO_APPEND=1: no O_APPEND opens. For MooseFS, whose client
 * places an O_APPEND write at the size the master knows, not after the
 * same client's unsynced writes through another descriptor (a plain
 * program sees the same; see docs/buffer.md). */
static int no_append;
static int with_locks;   /* DIFFTEST_LOCKS=1: lock and unlock calls among the operations */

static int rand_flags(void)
{
    static const int acc[] = {O_RDWR, O_RDWR, O_RDWR, O_WRONLY, O_RDONLY};
    int f = acc[below(5)] | O_CREAT;
    int append = below(4) == 0;
    if (append && !no_append)
        f |= O_APPEND;
    if (below(30) == 0 && (f & O_ACCMODE) != O_RDONLY)
        f |= O_TRUNC;
    return f;
}

static void compare_contents(const char *why)
{
    /* Through fresh descriptors: what another open of the file sees here. */
    int m = open(mpath, O_RDONLY), r = open(rpath, O_RDONLY);
    if (m < 0 || r < 0)
        fail(why, "cannot open for comparison");
    int64_t off = 0;
    for (;;) {
        ssize_t a = pread(m, mbuf, 65536, off), b = pread(r, rbuf, 65536, off);
        same(why, a, errno, b, errno);
        if (a <= 0)
            break;
        if (memcmp(mbuf, rbuf, (size_t)a) != 0) {
            int64_t i = 0;
            while (mbuf[i] == rbuf[i])
                i++;
            fail(why, "contents differ at byte %" PRId64 ": managed %d reference %d", off + i, mbuf[i], rbuf[i]);
        }
        off += a;
    }
    close(m);
    close(r);
}

static void op_write(int s, int kind)
{
    int64_t n = rand_size(), off = rand_offset();
    long long m, r;
    int me, re;
    if (trace)
        printf("  write kind %d slot %d n %lld off %lld\n", kind, s, (long long)n, (long long)off);
    fill(n);
    switch (kind) {
    case 0:
        m = write(mfd[s], wbuf, (size_t)n); me = errno;
        r = write(rfd[s], wbuf, (size_t)n); re = errno;
        same("write", m, me, r, re);
        break;
    case 1:
        m = pwrite(mfd[s], wbuf, (size_t)n, off); me = errno;
        r = pwrite(rfd[s], wbuf, (size_t)n, off); re = errno;
        same("pwrite", m, me, r, re);
        break;
    default: {
        struct iovec iov[3];
        int64_t a = n / 3, b = n / 2;
        iov[0] = (struct iovec){wbuf, (size_t)a};
        iov[1] = (struct iovec){wbuf + a, (size_t)(b - a)};
        iov[2] = (struct iovec){wbuf + b, (size_t)(n - b)};
        if (kind == 2) {
            m = writev(mfd[s], iov, 3); me = errno;
            r = writev(rfd[s], iov, 3); re = errno;
            same("writev", m, me, r, re);
        } else {
            m = pwritev(mfd[s], iov, 3, off); me = errno;
            r = pwritev(rfd[s], iov, 3, off); re = errno;
            same("pwritev", m, me, r, re);
        }
    }
    }
}

static void op_read(int s, int kind)
{
    int64_t n = rand_size(), off = below(max_file + max_write);
    long long m, r;
    int me, re;
    const char *name = kind == 0 ? "read" : kind == 1 ? "pread" : "readv";
    if (trace)
        printf("  read kind %d slot %d n %lld off %lld\n", kind, s, (long long)n, (long long)off);
    memset(mbuf, 0xAA, (size_t)n);
    memset(rbuf, 0x55, (size_t)n);
    if (kind == 0) {
        m = read(mfd[s], mbuf, (size_t)n); me = errno;
        r = read(rfd[s], rbuf, (size_t)n); re = errno;
    } else if (kind == 1) {
        m = pread(mfd[s], mbuf, (size_t)n, off); me = errno;
        r = pread(rfd[s], rbuf, (size_t)n, off); re = errno;
    } else {
        struct iovec mi[2] = {{mbuf, (size_t)(n / 2)}, {mbuf + n / 2, (size_t)(n - n / 2)}};
        struct iovec ri[2] = {{rbuf, (size_t)(n / 2)}, {rbuf + n / 2, (size_t)(n - n / 2)}};
        m = readv(mfd[s], mi, 2); me = errno;
        r = readv(rfd[s], ri, 2); re = errno;
    }
    same(name, m, me, r, re);
    if (m > 0 && memcmp(mbuf, rbuf, (size_t)m) != 0) {
        int64_t i = 0;
        while (mbuf[i] == rbuf[i])
            i++;
        fail(name, "byte %" PRId64 " of %lld read differs: managed %d reference %d", i, m, mbuf[i], rbuf[i]);
    }
}

static void op_seek(int s)
{
    static const int wh[] = {SEEK_SET, SEEK_CUR, SEEK_END};
    int w = wh[below(3)];
    int64_t off = w == SEEK_SET ? rand_offset() : below(2 * max_write) - max_write;
    if (trace)
        printf("  lseek slot %d off %lld whence %d\n", s, (long long)off, w);
    long long m = lseek(mfd[s], off, w);
    int me = errno;
    long long r = lseek(rfd[s], off, w);
    same("lseek", m, me, r, errno);
}

static void op_stat(int s, int by_path)
{
    struct stat a, b;
    int m, r, me, re;
    if (by_path) {
        m = stat(mpath, &a); me = errno;
        r = stat(rpath, &b); re = errno;
    } else {
        m = fstat(mfd[s], &a); me = errno;
        r = fstat(rfd[s], &b); re = errno;
    }
    same(by_path ? "stat" : "fstat", m, me, r, re);
    if (m == 0 && a.st_size != b.st_size)
        fail(by_path ? "stat" : "fstat", "size managed %lld reference %lld", (long long)a.st_size, (long long)b.st_size);
}

static void op_truncate(int s, int by_path)
{
    int64_t len = below(max_file + max_write);
    int m, r, me, re;
    if (trace)
        printf("  truncate slot %d len %lld by_path %d\n", s, (long long)len, by_path);
    if (by_path) {
        m = truncate(mpath, len); me = errno;
        r = truncate(rpath, len); re = errno;
    } else {
        m = ftruncate(mfd[s], len); me = errno;
        r = ftruncate(rfd[s], len); re = errno;
    }
    same(by_path ? "truncate" : "ftruncate", m, me, r, re);
}

/* A lock or unlock call: flock (never waiting: two descriptions of one
 * file conflict even in one process) or an fcntl record lock over the
 * whole file or a random range (a process never conflicts with itself). */
static void op_lock(int s)
{
    int kind = (int)below(6), m, r, me, re;
    if (kind < 3) {
        static const int ops[] = {LOCK_EX | LOCK_NB, LOCK_SH | LOCK_NB, LOCK_UN};
        if (trace)
            printf("  flock slot %d op %d\n", s, ops[kind]);
        m = flock(mfd[s], ops[kind]); me = errno;
        r = flock(rfd[s], ops[kind]); re = errno;
        same("flock", m, me, r, re);
        return;
    }
    static const short types[] = {F_WRLCK, F_RDLCK, F_UNLCK};
    struct flock lk = {.l_type = types[kind - 3], .l_whence = SEEK_SET};
    if (below(2)) {
        lk.l_start = below(max_file);
        lk.l_len = below(max_write) + 1;
    }
    if (trace)
        printf("  fcntl lock slot %d type %d start %lld len %lld\n", s, lk.l_type, (long long)lk.l_start,
               (long long)lk.l_len);
    struct flock lr = lk;
    m = fcntl(mfd[s], F_SETLK, &lk); me = errno;
    r = fcntl(rfd[s], F_SETLK, &lr); re = errno;
    same("fcntl lock", m, me, r, re);
}

static void op_sync(int s)
{
    int data = (int)below(2);
    int m = data ? fdatasync(mfd[s]) : fsync(mfd[s]);
    int me = errno;
    int r = data ? fdatasync(rfd[s]) : fsync(rfd[s]);
    same("fsync", m, me, r, errno);
}

static void op_dup(int s)
{
    int t = (s + 1 + (int)below(SLOTS - 1)) % SLOTS;
    if (mfd[t] >= 0) {
        close(mfd[t]);
        close(rfd[t]);
    }
    if (trace)
        printf("  dup slot %d -> %d\n", s, t);
    mfd[t] = dup(mfd[s]);
    rfd[t] = dup(rfd[s]);
    same("dup", mfd[t] >= 0 ? 0 : -1, errno, rfd[t] >= 0 ? 0 : -1, errno);
}

/* A forked child writes through the inherited descriptors (shared
 * position) and exits: the parent's buffered bytes must not be written
 * twice, and the parent sees the child's position move. */
static void op_fork(int s)
{
    int64_t n = rand_size();
    fill(n);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        fail("fork", "fork failed: %s", strerror(errno));
    if (pid == 0) {
        ssize_t a = write(mfd[s], wbuf, (size_t)n), b = write(rfd[s], wbuf, (size_t)n);
        _exit(a == b ? 0 : 3);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("fork", "child status %d", st);
}

int main(int argc, char **argv)
{
    long nops;

    if (argc < 5) {
        fprintf(stderr, "usage: sluice-difftest SEED NOPS MANAGED_DIR REFERENCE_DIR [MAX_WRITE [MAX_FILE]]\n");
        return 2;
    }
    seed = strtoull(argv[1], NULL, 10);
    trace = getenv("DIFFTEST_TRACE") != NULL;
    no_append = getenv("DIFFTEST_NO_APPEND") != NULL;
    with_locks = getenv("DIFFTEST_LOCKS") != NULL;
    nops = strtol(argv[2], NULL, 10);
    snprintf(mpath, sizeof mpath, "%s/difftest.dat", argv[3]);
    snprintf(rpath, sizeof rpath, "%s/difftest.dat", argv[4]);
    if (argc > 5)
        max_write = strtoll(argv[5], NULL, 10);
    if (argc > 6)
        max_file = strtoll(argv[6], NULL, 10);
    rng = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (!rng)
        rng = 1;
    wbuf = malloc((size_t)max_write + 1);
    mbuf = malloc((size_t)(max_write > 65536 ? max_write : 65536) + 1);
    rbuf = malloc((size_t)(max_write > 65536 ? max_write : 65536) + 1);
    unlink(mpath);
    unlink(rpath);
    do_open(0, O_RDWR | O_CREAT | O_TRUNC);

    for (step = 0; step < nops; step++) {
        int s = open_slot();
        if (s < 0) {
            do_open(0, O_RDWR | O_CREAT);
            continue;
        }
        uint64_t k = next() % 1000;
        if (k < 300) op_write(s, (int)below(4));
        else if (k < 550) op_read(s, (int)below(3));
        else if (k < 650) op_seek(s);
        else if (k < 700) op_stat(s, (int)below(2));
        else if (k < 730) op_truncate(s, below(4) == 0);
        else if (k < 760) op_sync(s);
        else if (k < 800) do_open((int)below(SLOTS), rand_flags());
        else if (k < 830) op_dup(s);
        else if (k < 835) op_fork(s);
        else if (k < 850) {
            int m = close(mfd[s]), me = errno, r = close(rfd[s]);
            same("close", m, me, r, errno);
            mfd[s] = rfd[s] = -1;
        } else if (k < 860) compare_contents("contents");
        else if (with_locks && k < 900) op_lock(s);
        else op_write(s, (int)below(4));
    }
    compare_contents("final contents");
    for (int i = 0; i < SLOTS; i++)
        if (mfd[i] >= 0) {
            int m = close(mfd[i]), me = errno, r = close(rfd[i]);
            same("close", m, me, r, errno);
        }
    printf("ok %" PRIu64 " %ld\n", seed, nops);
    return 0;
}
