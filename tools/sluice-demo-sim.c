/*
 * sluice-demo-sim: the built-in default workload. It behaves like a small
 * legacy simulation on a parallel file system: it reads a few small input
 * files with tiny reads, then for every time step writes one small file per
 * output variable in small writes (POSIX) and appends a line to a run log
 * (stdio), re-reads the previous step's restart file, and finally removes
 * the scratch files of old steps. A few hundred files, all small I/O: the
 * pattern that swamps a metadata server.
 *
 *   sluice-demo-sim [-d DIR] [-s STEPS] [-v VARS] [-n BYTES] [-w WRITE_SIZE]
 *
 * It prints one JSON line with what it did.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what, const char *path)
{
    fprintf(stderr, "sluice-demo-sim: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static void write_all(int fd, const char *buf, size_t n, const char *path)
{
    while (n) {
        ssize_t k = write(fd, buf, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            die("cannot write", path);
        }
        buf += k;
        n -= (size_t)k;
    }
}

int main(int argc, char **argv)
{
    const char *dir = "sluice-demo";
    int steps = 20, vars = 12, opt;
    long bytes = 16384, wsize = 512;

    while ((opt = getopt(argc, argv, "d:s:v:n:w:h")) != -1) {
        switch (opt) {
        case 'd': dir = optarg; break;
        case 's': steps = atoi(optarg); break;
        case 'v': vars = atoi(optarg); break;
        case 'n': bytes = atol(optarg); break;
        case 'w': wsize = atol(optarg); break;
        default:
            fprintf(stderr, "usage: sluice-demo-sim [-d DIR] [-s STEPS] [-v VARS] [-n BYTES] [-w WRITE_SIZE]\n");
            return opt == 'h' ? 0 : 2;
        }
    }
    if (steps < 1 || vars < 1 || bytes < 1 || wsize < 1 || wsize > 1 << 20) {
        fprintf(stderr, "sluice-demo-sim: steps, vars, bytes and write size must be positive\n");
        return 2;
    }

    char path[4096], *buf = malloc((size_t)wsize);
    long files = 0, writes = 0, reads = 0, written = 0, nread = 0;
    if (!buf)
        return 1;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        die("cannot create", dir);
    snprintf(path, sizeof path, "%s/input", dir);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        die("cannot create", path);

    /* Input deck: a few namelist-like files, read back 64 bytes at a time. */
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/input/params_%d.nml", dir, i);
        FILE *f = fopen(path, "w");
        if (!f)
            die("cannot create", path);
        for (int k = 0; k < 50; k++)
            fprintf(f, "&param%d value=%d.%03d /\n", k, i, k);
        fclose(f);
        files++;
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            die("cannot open", path);
        ssize_t k;
        while ((k = read(fd, buf, 64)) > 0) {
            reads++;
            nread += k;
        }
        close(fd);
    }

    snprintf(path, sizeof path, "%s/run.log", dir);
    FILE *logf = fopen(path, "w");
    if (!logf)
        die("cannot create", path);
    files++;

    for (int s = 0; s < steps; s++) {
        snprintf(path, sizeof path, "%s/step_%04d", dir, s);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            die("cannot create", path);
        for (int v = 0; v < vars; v++) {
            snprintf(path, sizeof path, "%s/step_%04d/var_%02d.dat", dir, s, v);
            int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
            if (fd < 0)
                die("cannot create", path);
            for (long off = 0; off < bytes; off += wsize) {
                long n = bytes - off < wsize ? bytes - off : wsize;
                memset(buf, 'a' + (s + v) % 26, (size_t)n);
                write_all(fd, buf, (size_t)n, path);
                writes++;
                written += n;
            }
            close(fd);
            files++;
        }
        /* Restart: read the previous step's first variable back in small reads. */
        if (s > 0) {
            struct stat st;
            snprintf(path, sizeof path, "%s/step_%04d/var_00.dat", dir, s - 1);
            if (stat(path, &st) < 0)
                die("cannot stat", path);
            int fd = open(path, O_RDONLY);
            if (fd < 0)
                die("cannot open", path);
            ssize_t k;
            while ((k = read(fd, buf, (size_t)wsize)) > 0) {
                reads++;
                nread += k;
            }
            close(fd);
        }
        fprintf(logf, "step %d done: %d variables of %ld bytes\n", s, vars, bytes);
        fflush(logf);
    }
    fclose(logf);

    /* Clean up scratch output of all but the last two steps. */
    long removed = 0;
    for (int s = 0; s + 2 < steps; s++) {
        for (int v = 1; v < vars; v++) {
            snprintf(path, sizeof path, "%s/step_%04d/var_%02d.dat", dir, s, v);
            if (unlink(path) == 0)
                removed++;
        }
    }
    printf("{\"files\": %ld, \"writes\": %ld, \"bytes_written\": %ld, \"reads\": %ld, "
           "\"bytes_read\": %ld, \"unlinked\": %ld}\n", files, writes, written, reads, nread, removed);
    free(buf);
    return 0;
}
