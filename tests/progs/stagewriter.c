/*
 * stagewriter: writes FILE in RECORDS records of SIZE bytes (record r is
 * the byte r % 251 repeated), printing "wrote N" on stdout, flushed, after
 * each record: a side channel telling a test what the program had written
 * before it was killed. Sleeps PAUSE_US microseconds between records, then
 * closes and prints "closed".
 *
 *   stagewriter FILE RECORDS SIZE PAUSE_US
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: stagewriter FILE RECORDS SIZE PAUSE_US\n");
        return 2;
    }
    long records = atol(argv[2]), size = atol(argv[3]), pause = atol(argv[4]);
    char *buf = malloc((size_t)size);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0640);
    if (fd < 0 || !buf) {
        perror(argv[1]);
        return 1;
    }
    for (long r = 0; r < records; r++) {
        memset(buf, (int)(r % 251), (size_t)size);
        if (write(fd, buf, (size_t)size) != size) {
            perror("write");
            return 1;
        }
        printf("wrote %ld\n", (r + 1) * size);
        fflush(stdout);
        if (pause)
            usleep((useconds_t)pause);
    }
    if (close(fd) != 0) {
        perror("close");
        return 1;
    }
    printf("closed\n");
    return 0;
}
