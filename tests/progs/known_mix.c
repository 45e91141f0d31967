/*
 * A known mix of POSIX and stdio calls, written with the ordinary API
 * names. Built twice: plain, and with -O2 -D_FORTIFY_SOURCE=2, where glibc's
 * headers turn open/read/fprintf/fgets/fread into __open_2, __read_chk,
 * __fprintf_chk, __fgets_chk, __fread_chk. The counts it must produce are in
 * tests/python/test_programs.py.
 *
 *   known_mix DIR
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Not constants, so that fortified builds must check at run time and call
 * __open_2, __read_chk, __fgets_chk and __fread_chk. */
static volatile int rdonly = O_RDONLY;
static volatile size_t k512 = 512, k1024 = 1024, line_len = 256, buf_len = 4096;

int main(int argc, char **argv)
{
    char path[4096], path2[4096], buf[4096], line[256];
    struct stat st;

    if (argc != 2)
        return 2;
    memset(buf, 'k', sizeof buf);

    /* data.bin: 16 writes of 256 B, fsync, 4 reads of 1 KiB, 2 seeks, 1 stat */
    snprintf(path, sizeof path, "%s/data.bin", argv[1]);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    for (int i = 0; i < 16; i++)
        if (write(fd, buf, 256) != 256)
            return 1;
    fsync(fd);
    lseek(fd, 0, SEEK_SET);
    for (int i = 0; i < 4; i++)
        if (read(fd, buf, k1024) != 1024)
            return 1;
    lseek(fd, 0, SEEK_END);
    fstat(fd, &st);
    close(fd);

    /* reopen read-only through a non-constant flag, read it all in 512 B */
    fd = open(path, rdonly);
    if (fd < 0)
        return 1;
    while (read(fd, buf, k512) > 0)
        ;
    close(fd);
    if (stat(path, &st) != 0 || st.st_size != 4096)
        return 1;

    /* text.txt via stdio: 10 fprintf, 1 fputs, fflush, rewind, fgets until EOF, fread */
    snprintf(path2, sizeof path2, "%s/text.txt", argv[1]);
    FILE *f = fopen(path2, "w+");
    if (!f)
        return 1;
    for (int i = 0; i < 10; i++)
        fprintf(f, "line %02d\n", i);
    fputs("last\n", f);
    fflush(f);
    rewind(f);
    while (fgets(line, (int)line_len, f))
        ;
    rewind(f);
    if (fread(buf, 1, buf_len, f) != 85)
        return 1;
    fclose(f);

    /* namespace: mkdir, rename, unlink, rmdir */
    snprintf(path, sizeof path, "%s/sub", argv[1]);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/sub/tmp", argv[1]);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    close(fd);
    snprintf(path2, sizeof path2, "%s/sub/tmp2", argv[1]);
    rename(path, path2);
    unlink(path2);
    snprintf(path, sizeof path, "%s/sub", argv[1]);
    rmdir(path);
    return 0;
}
