/*
 * stdio patterns whose system calls the profile's fs side must match
 * (tests/python/test_profile_truth.py compares it with strace): many small
 * fprintf, fwrite below, across and above the buffer size, fflush, fputc,
 * fread small and large, a seek into the middle of a block, ftell, fgets to
 * the end, append, and a read-then-write stream; then printf, vprintf, puts
 * and putchar on stdout (built fortified too: __printf_chk, __vprintf_chk).
 *
 *   stdio_mix DIR
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* vprintf (__vprintf_chk when fortified) */
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    char path[4096], line[256];
    static char big[20000];
    memset(big, 'x', sizeof big);
    for (int k = 0; k < 10; k++) {               /* 10 files x 100 fprintf */
        snprintf(path, sizeof path, "%s/text%d.txt", dir, k);
        FILE *f = fopen(path, "w");
        for (int i = 0; i < 100; i++) fprintf(f, "record %d of file %d\n", i, k);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/big.bin", dir);
    FILE *f = fopen(path, "w");
    fwrite(big, 1, 100, f); fwrite(big, 1, 10000, f); fputs("tail\n", f); fflush(f);
    for (int i = 0; i < 300; i++) fputc('c', f);
    fwrite(big, 1, 5000, f);
    fclose(f);
    f = fopen(path, "r");                         /* reads: small, large, to the end */
    size_t got = fread(big, 1, 100, f) + fread(big, 1, 10000, f);
    fseek(f, 7000, SEEK_SET); got += fread(big, 1, 10, f);
    if (got != 10110 || ftell(f) != 7010)
        return 1;
    while (fread(big, 1, 3000, f) > 0) ;
    fclose(f);
    snprintf(path, sizeof path, "%s/text3.txt", dir);
    f = fopen(path, "r");                         /* a line at a time */
    while (fgets(line, sizeof line, f)) ;
    fclose(f);
    f = fopen(path, "a");                         /* append */
    fprintf(f, "appended\n");
    fclose(f);
    f = fopen(path, "r+");                        /* read, then write */
    if (!fgets(line, sizeof line, f))
        return 1;
    fseek(f, 0, SEEK_CUR); fputs("XX", f); rewind(f);
    if (!fgets(line, sizeof line, f))
        return 1;
    fclose(f);
    for (int i = 0; i < 300; i++)                 /* stdout: a file when the shell redirects it */
        printf("summary %d\n", i);
    say("%s %d\n", "files", 11);
    puts("done");
    putchar('\n');
    return 0;
}
