/*
 * Accesses of known sizes, strides and alignments on one file, all
 * positional (pread/pwrite), so that every profiler agrees on the offsets.
 * tests/python/test_logfmt.py and test_darshan.py check the counters:
 *
 *   writes  10 x 1000 B at i*1500       strides: (none), 9 x 500
 *            6 x  300 B at 20000+i*400  from a buffer 1 byte off alignment;
 *                                       strides: 5500, 5 x 100
 *            3 x 4096 B at 40000+i*4096 strides: 17700, 2 x 0 (consecutive)
 *   reads    2 x 1000 B at 0 and 1500   strides: (none), 500
 *
 *   access_pattern DIR
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char buf[8192] __attribute__((aligned(64)));

static int put(int fd, const char *p, size_t n, off_t off)
{
    return pwrite(fd, p, n, off) == (ssize_t)n ? 0 : -1;
}

int main(int argc, char **argv)
{
    char path[4096];

    if (argc != 2)
        return 2;
    memset(buf, 'a', sizeof buf);
    snprintf(path, sizeof path, "%s/pattern.bin", argv[1]);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    for (int i = 0; i < 10; i++)
        if (put(fd, buf, 1000, (off_t)i * 1500) < 0)
            return 1;
    for (int i = 0; i < 6; i++)
        if (put(fd, buf + 1, 300, 20000 + (off_t)i * 400) < 0)
            return 1;
    for (int i = 0; i < 3; i++)
        if (put(fd, buf, 4096, 40000 + (off_t)i * 4096) < 0)
            return 1;
    if (pread(fd, buf, 1000, 0) != 1000 || pread(fd, buf, 1000, 1500) != 1000)
        return 1;
    return close(fd) == 0 ? 0 : 1;
}
