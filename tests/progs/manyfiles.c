/*
 * manyfiles: opens N files in DIR and keeps them all open while writing
 * ROUNDS small records of SIZE bytes to each in turn (the pattern of an
 * ensemble member with hundreds of output files, at scale), then closes
 * them and prints its peak resident memory: "files N peak_kib K".
 * Record r of file i holds the byte (i + r) % 251 repeated.
 *
 *   manyfiles DIR N SIZE ROUNDS
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long peak_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: manyfiles DIR N SIZE ROUNDS\n");
        return 2;
    }
    int n = atoi(argv[2]), size = atoi(argv[3]), rounds = atoi(argv[4]);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int *fds = calloc((size_t)n, sizeof *fds);
    char *buf = malloc((size_t)size), path[4096];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/f%05d", argv[1], i);
        if ((fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
            perror(path);
            return 1;
        }
    }
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            memset(buf, (i + r) % 251, (size_t)size);
            if (write(fds[i], buf, (size_t)size) != size) {
                perror("write");
                return 1;
            }
        }
    for (int i = 0; i < n; i++)
        if (close(fds[i]) != 0) {
            perror("close");
            return 1;
        }
    printf("files %d peak_kib %ld\n", n, peak_kib());
    return 0;
}
