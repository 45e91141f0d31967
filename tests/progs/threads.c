/*
 * N threads, each writing its own file with W writes of S bytes, all at once.
 *   threads DIR [N=8] [W=1000] [S=100]
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static int writes = 1000, size = 100;
static pthread_barrier_t start;

static void *worker(void *arg)
{
    char path[4096], buf[65536];
    long id = (long)arg;

    memset(buf, 'a' + (int)(id % 26), sizeof buf);
    snprintf(path, sizeof path, "%s/thread_%ld.dat", dir, id);
    pthread_barrier_wait(&start);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        return (void *)1;
    for (int i = 0; i < writes; i++)
        if (write(fd, buf, (size_t)size) != size)
            return (void *)1;
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = 8;
    if (argc < 2)
        return 2;
    dir = argv[1];
    if (argc > 2) n = atoi(argv[2]);
    if (argc > 3) writes = atoi(argv[3]);
    if (argc > 4) size = atoi(argv[4]);
    if (n < 1 || n > 256 || size < 1 || size > 65536)
        return 2;
    pthread_t t[256];
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (long i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    return bad;
}
