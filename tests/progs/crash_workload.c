/*
 * The mixed workload of the crash campaign (bench/crash_campaign.py,
 * tests/python/test_crash_campaign.py): three lanes, each a process, each
 * running its own list of operations, all of them chosen from a seed:
 *
 *   lane 0 (the driver): stdio files (fopen "w", fprintf/fputs/fwrite/
 *     putc, fclose), a file written by the driver and by a forked child
 *     through the descriptor it inherits, renames, unlinks, and the rename
 *     of a directory holding its files; one line per finished operation on
 *     stdout (the shell sends it to a file);
 *   lane 1: POSIX files (write; pwrite in shuffled blocks with holes;
 *     sometimes fsync, sometimes one of 5 MiB), the temporary-name-then-
 *     rename pattern, renames over existing files, unlinks;
 *   lane 2: HDF5 and netCDF-4 files (written again under the same name),
 *     renames, unlinks.
 *
 *   crash_workload plan SEED OPS MAXSIZE
 *       prints every lane's operations, one a line (tab-separated):
 *       LANE IDX KIND CID PATH PATH2 SIZE  (paths relative to OUT, "-"
 *       when none); a write's CID names the content it leaves
 *   crash_workload lane L SEED OPS MAXSIZE OUT LOG
 *       runs lane L in OUT. LOG (outside OUT, made before) gets, with
 *       O_APPEND and an fsync after each line:
 *         S L PID                      the lane started
 *         B L IDX KIND PID             operation IDX begins
 *         D L IDX KIND CID CRC SIZE    it ended (for a file: its close
 *                                      returned; CRC-32 and size of the
 *                                      file as read back after the close)
 *         E L PID                      every operation ended
 *         X L IDX MESSAGE              an operation failed (the lane stops)
 *       With CRASH_REF=DIR each content read back is also copied to
 *       DIR/CID (the reference run: no sluice, no kill).
 *
 * The bytes depend on the seed and the content id only (HDF5 objects do not
 * record times), so a plain run produces the same files as one under sluice.
 * A forked child killed by a signal takes the driver down with SIGKILL (a
 * job whose step died), so no file is closed with a child's part missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <netcdf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum kind { K_MKDIR, K_STDIO, K_POSIX, K_PWRITE, K_INHERIT, K_H5, K_NC, K_RENAME, K_UNLINK, K_DIRRENAME };
static const char *const KIND[] = {"mkdir", "stdio", "posix", "pwrite", "inherit", "h5", "nc", "rename", "unlink",
                                   "dirrename"};

#define LANES 3
#define MAXOPS 200
#define MAXLIVE 64
#define BIG (5L << 20)

struct op {
    int lane, idx;
    enum kind kind;
    char cid[24];
    char path[128], path2[128];
    long size;
    int fsync;
};

static struct op plan[LANES][MAXOPS];
static int nplan[LANES];

/* ------------------------------------------------------------ randomness */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static long below(uint64_t *s, long n)
{
    return n > 0 ? (long)(splitmix(s) % (uint64_t)n) : 0;
}

static uint64_t content_key(uint64_t seed, const char *cid)
{
    uint64_t h = 1469598103934665603ULL ^ seed;
    for (const char *c = cid; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return h;
}

/* ------------------------------------------------------------ the plan */

struct live {
    char path[MAXLIVE][128];
    int n;
};

static void live_add(struct live *l, const char *p)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->path[i], p) == 0)
            return;
    if (l->n < MAXLIVE)
        snprintf(l->path[l->n++], sizeof l->path[0], "%s", p);
}

static void live_del(struct live *l, const char *p)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->path[i], p) == 0) {
            memmove(l->path[i], l->path[i + 1], (size_t)(l->n - i - 1) * sizeof l->path[0]);
            l->n--;
            return;
        }
}

static struct op *add(int lane, enum kind k, const char *path, const char *path2, long size)
{
    struct op *o = &plan[lane][nplan[lane]];
    o->lane = lane;
    o->idx = nplan[lane]++;
    o->kind = k;
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->path2, sizeof o->path2, "%s", path2 ? path2 : "-");
    o->size = size;
    o->fsync = 0;
    if (k == K_STDIO || k == K_POSIX || k == K_PWRITE || k == K_INHERIT || k == K_H5 || k == K_NC)
        snprintf(o->cid, sizeof o->cid, "l%d-%03d", lane, o->idx);
    else
        snprintf(o->cid, sizeof o->cid, "-");
    return o;
}

/* A new name in dir, or (one time in three, when there is one) a file the
 * lane has under that dir already: written again. */
static void pick_target(uint64_t *r, struct live *l, const char *dir, const char *ext, int *counter, char *out)
{
    int same[MAXLIVE], n = 0;
    size_t dl = strlen(dir);
    for (int i = 0; i < l->n; i++)
        if (strncmp(l->path[i], dir, dl) == 0 && l->path[i][dl] == '/' && !strchr(l->path[i] + dl + 1, '/') &&
            strcmp(l->path[i] + strlen(l->path[i]) - strlen(ext), ext) == 0)
            same[n++] = i;
    if (n && below(r, 3) == 0) {
        strcpy(out, l->path[same[below(r, n)]]);
        return;
    }
    snprintf(out, 128, "%s/f%02d%s", dir, (*counter)++, ext);
}

static long size_in(uint64_t *r, long maxsize)
{
    long lo = maxsize / 16 > 0 ? maxsize / 16 : 1;
    return lo + below(r, maxsize - lo + 1);
}

static void make_plan(uint64_t seed, int ops, long maxsize)
{
    char p[128], q[128];
    for (int lane = 0; lane < LANES; lane++) {
        uint64_t r = seed * 1000003ULL + (uint64_t)lane * 7919ULL + 1;
        struct live l = {.n = 0};
        int counter = 0;
        char dir[8];
        snprintf(dir, sizeof dir, "l%d", lane);
        nplan[lane] = 0;
        add(lane, K_MKDIR, dir, NULL, 0);
        if (lane == 0) {
            char sub[32] = "l0/d";
            int renamed = 0, at = ops * 2 / 3;
            add(0, K_MKDIR, sub, NULL, 0);
            for (int i = 0; i < ops; i++) {
                long c = below(&r, 100);
                const char *where = below(&r, 2) ? dir : sub;
                if (i == at && !renamed) {
                    add(0, K_DIRRENAME, "l0/d", "l0/d2", 0);
                    struct live m = {.n = 0};
                    for (int j = 0; j < l.n; j++) {
                        if (strncmp(l.path[j], "l0/d/", 5) == 0)
                            snprintf(p, sizeof p, "l0/d2/%s", l.path[j] + 5);
                        else
                            strcpy(p, l.path[j]);
                        live_add(&m, p);
                    }
                    l = m;
                    strcpy(sub, "l0/d2");
                    renamed = 1;
                } else if (c < 45 || l.n == 0) {
                    pick_target(&r, &l, where, ".txt", &counter, p);
                    add(0, K_STDIO, p, NULL, size_in(&r, maxsize));
                    live_add(&l, p);
                } else if (c < 65) {
                    pick_target(&r, &l, where, ".dat", &counter, p);
                    add(0, K_INHERIT, p, NULL, size_in(&r, maxsize));
                    live_add(&l, p);
                } else if (c < 82) {
                    strcpy(p, l.path[below(&r, l.n)]);
                    const char *ext = strrchr(p, '.');
                    if (l.n > 1 && below(&r, 2)) {   /* over another of its files */
                        do
                            strcpy(q, l.path[below(&r, l.n)]);
                        while (strcmp(q, p) == 0);
                    } else {
                        snprintf(q, sizeof q, "%s/r%02d%s", where, counter++, ext);
                    }
                    add(0, K_RENAME, p, q, 0);
                    live_del(&l, p);
                    live_add(&l, q);
                } else {
                    strcpy(p, l.path[below(&r, l.n)]);
                    add(0, K_UNLINK, p, NULL, 0);
                    live_del(&l, p);
                }
            }
        } else if (lane == 1) {
            int big = below(&r, 2) == 0 ? (int)below(&r, ops) : -1;
            for (int i = 0; i < ops; i++) {
                long c = below(&r, 100);
                if (i == big) {
                    pick_target(&r, &l, dir, ".bin", &counter, p);
                    add(1, K_PWRITE, p, NULL, BIG + below(&r, 1 << 20));
                    live_add(&l, p);
                } else if (c < 35 || l.n == 0) {
                    pick_target(&r, &l, dir, ".bin", &counter, p);
                    add(1, K_POSIX, p, NULL, size_in(&r, maxsize))->fsync = below(&r, 4) == 0;
                    live_add(&l, p);
                } else if (c < 55) {
                    pick_target(&r, &l, dir, ".bin", &counter, p);
                    add(1, K_PWRITE, p, NULL, size_in(&r, maxsize));
                    live_add(&l, p);
                } else if (c < 72) {   /* written under a temporary name, renamed over the final one */
                    pick_target(&r, &l, dir, ".bin", &counter, q);
                    snprintf(p, sizeof p, "%.100s.tmp", q);
                    add(1, K_POSIX, p, NULL, size_in(&r, maxsize))->fsync = below(&r, 2) == 0;
                    add(1, K_RENAME, p, q, 0);
                    live_add(&l, q);
                } else if (c < 86) {
                    strcpy(p, l.path[below(&r, l.n)]);
                    snprintf(q, sizeof q, "%s/r%02d.bin", dir, counter++);
                    add(1, K_RENAME, p, q, 0);
                    live_del(&l, p);
                    live_add(&l, q);
                } else {
                    strcpy(p, l.path[below(&r, l.n)]);
                    add(1, K_UNLINK, p, NULL, 0);
                    live_del(&l, p);
                }
            }
        } else {
            for (int i = 0; i < ops; i++) {
                long c = below(&r, 100);
                if (c < 40 || l.n == 0) {
                    pick_target(&r, &l, dir, ".h5", &counter, p);
                    add(2, K_H5, p, NULL, size_in(&r, maxsize));
                    live_add(&l, p);
                } else if (c < 75) {
                    pick_target(&r, &l, dir, ".nc", &counter, p);
                    add(2, K_NC, p, NULL, size_in(&r, maxsize));
                    live_add(&l, p);
                } else if (c < 90) {
                    strcpy(p, l.path[below(&r, l.n)]);
                    snprintf(q, sizeof q, "%s/r%02d%s", dir, counter++, strrchr(p, '.'));
                    add(2, K_RENAME, p, q, 0);
                    live_del(&l, p);
                    live_add(&l, q);
                } else {
                    strcpy(p, l.path[below(&r, l.n)]);
                    add(2, K_UNLINK, p, NULL, 0);
                    live_del(&l, p);
                }
            }
        }
    }
}

/* ------------------------------------------------------------ the side log */

static int logfd = -1;

static void logline(const char *fmt, ...)
{
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof b)
        n = (int)sizeof b - 1, b[n - 1] = '\n';
    for (int off = 0; off < n;) {
        ssize_t w = write(logfd, b + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(4);
        off += (int)w;
    }
    if (fsync(logfd) != 0)
        _exit(4);
}

static const struct op *cur;

static void fail(const char *what)
{
    logline("X %d %d %s: %s\n", cur->lane, cur->idx, what, strerror(errno));
    fprintf(stderr, "crash_workload: lane %d op %d (%s %s): %s: %s\n", cur->lane, cur->idx, KIND[cur->kind],
            cur->path, what, strerror(errno));
    exit(3);
}

/* ------------------------------------------------------------ CRC-32 */

static uint32_t crc_table[256];

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
    if (!crc_table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
            crc_table[i] = c;
        }
    crc = ~crc;
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ------------------------------------------------------------ operations */

static void fill(uint64_t key, unsigned char *buf, long n)
{
    uint64_t s = key;
    for (long i = 0; i < n; i += 8) {
        uint64_t v = splitmix(&s);
        memcpy(buf + i, &v, (size_t)(n - i < 8 ? n - i : 8));
    }
}

static void write_all(int fd, const unsigned char *b, long n)
{
    while (n > 0) {
        ssize_t w = write(fd, b, (size_t)n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            fail("write");
        b += w;
        n -= w;
    }
}

static void pwrite_all(int fd, const unsigned char *b, long n, long off)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, b, (size_t)n, off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            fail("pwrite");
        b += w;
        n -= w;
        off += w;
    }
}

static void op_stdio(const char *path, uint64_t key, long size)
{
    uint64_t s = key;
    FILE *f = fopen(path, "w");
    if (!f)
        fail("fopen");
    long written = 0, line = 0;
    while (written < size) {
        char b[96];
        int n;
        switch (below(&s, 4)) {
        case 0:
            n = fprintf(f, "%s %06ld %016llx\n", cur->cid, line, (unsigned long long)splitmix(&s));
            break;
        case 1:
            n = snprintf(b, sizeof b, "line %ld of %s: %llu\n", line, cur->cid, (unsigned long long)splitmix(&s));
            n = fputs(b, f) < 0 ? -1 : n;
            break;
        case 2:
            n = snprintf(b, sizeof b, "%016llx%016llx\n", (unsigned long long)splitmix(&s),
                         (unsigned long long)splitmix(&s));
            n = fwrite(b, 1, (size_t)n, f) == (size_t)n ? n : -1;
            break;
        default:
            n = putc('a' + (int)below(&s, 26), f) == EOF ? -1 : 1;
            break;
        }
        if (n < 0)
            fail("stdio write");
        written += n;
        line++;
    }
    if (fclose(f) != 0)
        fail("fclose");
}

static void op_posix(const char *path, uint64_t key, long size, int do_fsync)
{
    unsigned char *buf = malloc((size_t)size + 8);
    if (!buf)
        fail("malloc");
    fill(key, buf, size);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        fail("open");
    uint64_t s = key ^ 0x5555;
    for (long off = 0; off < size;) {
        long n = 1 + below(&s, 65536);
        if (n > size - off)
            n = size - off;
        write_all(fd, buf + off, n);
        off += n;
    }
    if (do_fsync && fsync(fd) != 0)
        fail("fsync");
    if (close(fd) != 0)
        fail("close");
    free(buf);
}

/* Blocks written in a shuffled order with pwrite; about one in eight is
 * left out (a hole, zeros), never the last. */
static void op_pwrite(const char *path, uint64_t key, long size)
{
    unsigned char *buf = malloc((size_t)size + 8);
    if (!buf)
        fail("malloc");
    fill(key, buf, size);
    uint64_t s = key ^ 0xaaaa;
    long bs = size > (1L << 20) ? (1L << 20) : 4096L << below(&s, 4);
    long nb = (size + bs - 1) / bs;
    long *order = malloc((size_t)nb * sizeof *order);
    if (!order)
        fail("malloc");
    for (long i = 0; i < nb; i++)
        order[i] = i;
    for (long i = nb - 1; i > 0; i--) {
        long j = below(&s, i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
    if (fd < 0)
        fail("open");
    for (long i = 0; i < nb; i++) {
        long b = order[i], off = b * bs, n = off + bs > size ? size - off : bs;
        if (b != nb - 1 && below(&s, 8) == 0)
            continue;
        pwrite_all(fd, buf + off, n, off);
    }
    if (close(fd) != 0)
        fail("close");
    free(order);
    free(buf);
}

/* The driver writes a third, a forked child the second third through the
 * descriptor it inherits (sharing its offset), the driver the rest. */
static void op_inherit(const char *path, uint64_t key, long size)
{
    unsigned char *buf = malloc((size_t)size + 8);
    if (!buf)
        fail("malloc");
    fill(key, buf, size);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        fail("open");
    long a = size / 3, b = 2 * size / 3;
    write_all(fd, buf, a);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        fail("fork");
    if (pid == 0) {
        write_all(fd, buf + a, b - a);
        exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            fail("waitpid");
    if (WIFSIGNALED(st))
        raise(SIGKILL);   /* the step died: so does the job */
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        errno = EIO;
        fail("child");
    }
    write_all(fd, buf + b, size - b);
    if (close(fd) != 0)
        fail("close");
    free(buf);
}

static void h5check(herr_t rc, const char *what)
{
    if (rc < 0) {
        errno = EIO;
        fail(what);
    }
}

static void op_h5(const char *path, uint64_t key, long size)
{
    uint64_t s = key;
    hsize_t n = (hsize_t)(size / 8 > 16 ? size / 8 : 16);
    double *d = malloc(n * sizeof *d);
    int *ix = malloc(n / 4 * sizeof *ix + sizeof *ix);
    if (!d || !ix)
        fail("malloc");
    for (hsize_t i = 0; i < n; i++)
        d[i] = (double)(splitmix(&s) >> 11) / 9007199254740992.0;
    for (hsize_t i = 0; i < n / 4; i++)
        ix[i] = (int)(splitmix(&s) & 0x7fffffff);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), gcpl = H5Pcreate(H5P_GROUP_CREATE),
          dcpl = H5Pcreate(H5P_DATASET_CREATE), dcpl2 = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(fcpl, 0);
    H5Pset_obj_track_times(gcpl, 0);
    H5Pset_obj_track_times(dcpl, 0);
    H5Pset_obj_track_times(dcpl2, 0);
    hsize_t chunk = n < 1024 ? n : 1024;
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    if (f < 0)
        h5check(-1, "H5Fcreate");
    hid_t g = H5Gcreate2(f, "fields", H5P_DEFAULT, gcpl, H5P_DEFAULT);
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t ds = H5Dcreate2(g, "temperature", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (g < 0 || sp < 0 || ds < 0)
        h5check(-1, "H5Dcreate");
    /* in slabs, as a model writes its fields */
    for (hsize_t off = 0; off < n;) {
        hsize_t cnt = 1 + (hsize_t)below(&s, 4096);
        if (cnt > n - off)
            cnt = n - off;
        hid_t ms = H5Screate_simple(1, &cnt, NULL);
        h5check(H5Sselect_hyperslab(sp, H5S_SELECT_SET, &off, NULL, &cnt, NULL), "H5Sselect_hyperslab");
        h5check(H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, d + off), "H5Dwrite");
        H5Sclose(ms);
        off += cnt;
    }
    hsize_t m = n / 4 > 0 ? n / 4 : 1;
    hid_t sp2 = H5Screate_simple(1, &m, NULL);
    hid_t ds2 = H5Dcreate2(f, "index", H5T_STD_I32LE, sp2, H5P_DEFAULT, dcpl2, H5P_DEFAULT);
    if (ds2 < 0)
        h5check(-1, "H5Dcreate");
    h5check(H5Dwrite(ds2, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, ix), "H5Dwrite");
    hid_t as = H5Screate(H5S_SCALAR), at = H5Tcopy(H5T_C_S1);
    H5Tset_size(at, strlen(cur->cid) + 1);
    hid_t a = H5Acreate2(ds, "content", at, as, H5P_DEFAULT, H5P_DEFAULT);
    h5check(H5Awrite(a, at, cur->cid), "H5Awrite");
    H5Aclose(a);
    H5Tclose(at);
    H5Sclose(as);
    H5Dclose(ds2);
    H5Sclose(sp2);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Gclose(g);
    H5Pclose(fcpl);
    H5Pclose(gcpl);
    H5Pclose(dcpl);
    H5Pclose(dcpl2);
    h5check(H5Fclose(f), "H5Fclose");
    free(d);
    free(ix);
}

static void nccheck(int rc, const char *what)
{
    if (rc != NC_NOERR) {
        fprintf(stderr, "crash_workload: %s: %s\n", what, nc_strerror(rc));
        errno = EIO;
        fail(what);
    }
}

static void op_nc(const char *path, uint64_t key, long size)
{
    uint64_t s = key;
    size_t x = 64 + (size_t)below(&s, 192), recs = (size_t)(size / 4 / (long)x) + 1;
    float *row = malloc(x * sizeof *row);
    if (!row)
        fail("malloc");
    int nc, dt, dx, vt, vtime;
    nccheck(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &nc), "nc_create");
    nccheck(nc_def_dim(nc, "time", NC_UNLIMITED, &dt), "nc_def_dim");
    nccheck(nc_def_dim(nc, "x", x, &dx), "nc_def_dim");
    int dims[2] = {dt, dx};
    nccheck(nc_def_var(nc, "temp", NC_FLOAT, 2, dims, &vt), "nc_def_var");
    nccheck(nc_def_var(nc, "time", NC_DOUBLE, 1, &dt, &vtime), "nc_def_var");
    nccheck(nc_put_att_text(nc, NC_GLOBAL, "content", strlen(cur->cid), cur->cid), "nc_put_att_text");
    nccheck(nc_enddef(nc), "nc_enddef");
    for (size_t r = 0; r < recs; r++) {
        for (size_t i = 0; i < x; i++)
            row[i] = (float)(splitmix(&s) >> 40) / 1000.0f;
        size_t start[2] = {r, 0}, count[2] = {1, x};
        double t = (double)r * 3600.0;
        nccheck(nc_put_vara_float(nc, vt, start, count, row), "nc_put_vara_float");
        nccheck(nc_put_var1_double(nc, vtime, &r, &t), "nc_put_var1_double");
    }
    nccheck(nc_close(nc), "nc_close");
    free(row);
}

/* Reads the file back (the bytes under its name now), CRC and size; with a
 * reference directory, keeps a copy as REF/CID. */
static void readback(const char *path, const char *cid, uint32_t *crc, long *size)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        fail("open to read back");
    const char *ref = getenv("CRASH_REF");
    int out = -1;
    if (ref && *ref) {
        char rp[512];
        snprintf(rp, sizeof rp, "%s/%s", ref, cid);
        out = open(rp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0)
            fail("open reference");
    }
    unsigned char b[65536];
    *crc = 0;
    *size = 0;
    for (;;) {
        ssize_t n = read(fd, b, sizeof b);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fail("read back");
        if (n == 0)
            break;
        *crc = crc32_update(*crc, b, (size_t)n);
        *size += n;
        if (out >= 0)
            write_all(out, b, n);
    }
    close(fd);
    if (out >= 0 && close(out) != 0)
        fail("close reference");
}

static void run_op(uint64_t seed, const struct op *o)
{
    uint64_t key = content_key(seed, o->cid);
    switch (o->kind) {
    case K_MKDIR:
        if (mkdir(o->path, 0755) != 0)
            fail("mkdir");
        break;
    case K_STDIO:
        op_stdio(o->path, key, o->size);
        break;
    case K_POSIX:
        op_posix(o->path, key, o->size, o->fsync);
        break;
    case K_PWRITE:
        op_pwrite(o->path, key, o->size);
        break;
    case K_INHERIT:
        op_inherit(o->path, key, o->size);
        break;
    case K_H5:
        op_h5(o->path, key, o->size);
        break;
    case K_NC:
        op_nc(o->path, key, o->size);
        break;
    case K_RENAME:
    case K_DIRRENAME:
        if (rename(o->path, o->path2) != 0)
            fail("rename");
        break;
    case K_UNLINK:
        if (unlink(o->path) != 0)
            fail("unlink");
        break;
    }
}

static int run_lane(int lane, uint64_t seed, const char *outdir, const char *log)
{
    logfd = open(log, O_WRONLY | O_APPEND);
    if (logfd < 0) {
        perror(log);
        return 2;
    }
    if (chdir(outdir) != 0) {
        perror(outdir);
        return 2;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    logline("S %d %d\n", lane, (int)getpid());
    for (int i = 0; i < nplan[lane]; i++) {
        const struct op *o = cur = &plan[lane][i];
        logline("B %d %d %s %d\n", lane, i, KIND[o->kind], (int)getpid());
        run_op(seed, o);
        uint32_t crc = 0;
        long size = 0;
        if (strcmp(o->cid, "-") != 0)
            readback(o->path, o->cid, &crc, &size);
        logline("D %d %d %s %s %08x %ld\n", lane, i, KIND[o->kind], o->cid, crc, size);
        if (lane == 0) {
            printf("l0 %d %s %s %s\n", i, KIND[o->kind], o->cid, o->path);
            fflush(stdout);
        }
    }
    logline("E %d %d\n", lane, (int)getpid());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "plan") == 0) {
        int ops = atoi(argv[3]);
        if (ops < 1 || ops > MAXOPS / 2 - 4)
            return 2;
        make_plan(strtoull(argv[2], NULL, 10), ops, atol(argv[4]));
        for (int lane = 0; lane < LANES; lane++)
            for (int i = 0; i < nplan[lane]; i++) {
                const struct op *o = &plan[lane][i];
                printf("%d\t%d\t%s\t%s\t%s\t%s\t%ld\n", lane, i, KIND[o->kind], o->cid, o->path, o->path2, o->size);
            }
        return 0;
    }
    if (argc == 8 && strcmp(argv[1], "lane") == 0) {
        int lane = atoi(argv[2]), ops = atoi(argv[4]);
        if (lane < 0 || lane >= LANES || ops < 1 || ops > MAXOPS / 2 - 4)
            return 2;
        uint64_t seed = strtoull(argv[3], NULL, 10);
        make_plan(seed, ops, atol(argv[5]));
        return run_lane(lane, seed, argv[6], argv[7]);
    }
    fprintf(stderr, "usage: crash_workload plan SEED OPS MAXSIZE\n"
                    "       crash_workload lane L SEED OPS MAXSIZE OUT LOG\n");
    return 2;
}
