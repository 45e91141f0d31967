/*
 * Replay inputs through the fuzz target without libFuzzer:
 *
 *   fuzz_logfmt_replay FILE|DIR...
 *
 * A directory is replayed file by file (not recursively). Exit status 0
 * when every input ran, 1 when one could not be read, 2 on a usage error;
 * a bug found by an input aborts (or is reported by the sanitizers).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;

    if (!f) {
        fprintf(stderr, "fuzz_logfmt_replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                fprintf(stderr, "fuzz_logfmt_replay: %s: out of memory\n", path);
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "fuzz_logfmt_replay: %s: read error\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int status = 0;
    unsigned long n = 0;

    if (argc < 2) {
        fputs("usage: fuzz_logfmt_replay FILE|DIR...\n", stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "fuzz_logfmt_replay: %s: %s\n", argv[i], strerror(errno));
            status = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]) < 0)
                status = 1;
            else
                n++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "fuzz_logfmt_replay: %s: %s\n", argv[i], strerror(errno));
            status = 1;
            continue;
        }
        char **names = NULL;
        size_t nn = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            size_t need = strlen(argv[i]) + strlen(e->d_name) + 2;
            char *p = malloc(need);
            if (!p || (nn == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names)))) {
                fputs("fuzz_logfmt_replay: out of memory\n", stderr);
                return 1;
            }
            snprintf(p, need, "%s/%s", argv[i], e->d_name);
            names[nn++] = p;
        }
        closedir(d);
        if (nn)
            qsort(names, nn, sizeof *names, cmp);
        for (size_t k = 0; k < nn; k++) {
            struct stat fst;
            if (stat(names[k], &fst) == 0 && S_ISREG(fst.st_mode)) {
                if (replay_file(names[k]) < 0)
                    status = 1;
                else
                    n++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("fuzz_logfmt_replay: %lu inputs replayed\n", n);
    return status;
}
