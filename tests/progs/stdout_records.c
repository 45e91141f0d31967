/*
 * Writes N records of 8 KiB to standard output with write(1), as a
 * program run as `prog > file` does, for buffer mode's handling of
 * descriptors the process did not open (tests/python/test_buffer.py).
 * Each record starts "TAG NNNNNNNN " and ends with a newline, so a file
 * whose records were split, overlapped or lost shows it.
 *
 *   stdout_records N [OPTION...]
 *     printf       a line with printf() first, every 1000 records and last:
 *                  the C library writes stdout's buffer at the kernel's
 *                  position through calls no wrapper sees
 *     stderr       a line with write(2) every 1000 records (`2>&1`)
 *     fork         after the first half, a child writes the second half's
 *                  odd records while this process writes the even ones, at
 *                  once, through the shared description
 *     system       system("echo ...") every 1000 records (a child writes
 *                  through the inherited descriptor while this process
 *                  holds records)
 *     read         then reads the file back through its own descriptor 1
 *                  from the start (lseek, read: an `1<>file` descriptor)
 *                  and says on stderr whether it found every record
 *     end=return|exit|_exit|segv|abort|exec   how the process ends
 *                  (exec: /bin/echo writes one more line)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define REC 8192

static void record(char *buf, const char *tag, int i)
{
    int n = snprintf(buf, REC, "%s %08d ", tag, i);
    memset(buf + n, 'a' + i % 26, REC - n - 1);
    buf[REC - 1] = '\n';
}

static void put(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w <= 0) {
            perror("write");
            exit(3);
        }
        buf += w;
        n -= (size_t)w;
    }
}

int main(int argc, char **argv)
{
    static char buf[REC];
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    int use_printf = 0, use_stderr = 0, use_fork = 0, use_system = 0, use_read = 0;
    const char *end = "return";
    pid_t child = -1;

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "printf") == 0)
            use_printf = 1;
        else if (strcmp(argv[i], "stderr") == 0)
            use_stderr = 1;
        else if (strcmp(argv[i], "fork") == 0)
            use_fork = 1;
        else if (strcmp(argv[i], "system") == 0)
            use_system = 1;
        else if (strcmp(argv[i], "read") == 0)
            use_read = 1;
        else if (strncmp(argv[i], "end=", 4) == 0)
            end = argv[i] + 4;
        else
            return 2;
    }
    if (use_printf)
        printf("first line, from stdio\n");
    for (int i = 0; i < n; i++) {
        if (use_fork && i == n / 2) {
            fflush(stdout);
            if ((child = fork()) < 0)
                return 4;
        }
        if (use_fork && i >= n / 2 && (i % 2 == 1) != (child == 0))
            continue;
        record(buf, child == 0 ? "child" : "rec", i);
        put(1, buf, REC);
        if (i % 1000 == 999) {
            if (use_printf)
                printf("after record %d, from stdio\n", i);
            if (use_stderr) {
                char line[64];
                int k = snprintf(line, sizeof line, "after record %d, on stderr\n", i);
                put(2, line, (size_t)k);
            }
            if (use_system && child != 0) {
                char cmd[64];
                snprintf(cmd, sizeof cmd, "echo after record %d, from a child", i);
                if (system(cmd) != 0)
                    return 5;
            }
        }
    }
    if (child == 0)
        _exit(0);
    if (child > 0) {
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 6;
    }
    if (use_printf)
        printf("last line, from stdio\n");
    if (use_read) {
        static char got[REC];
        int found = 0;
        fflush(stdout);
        if (lseek(1, 0, SEEK_SET) != 0)
            return 7;
        for (int i = 0; i < n; i++) {
            ssize_t r = read(1, got, REC);
            record(buf, "rec", i);
            found += r == REC && memcmp(got, buf, REC) == 0;
        }
        fprintf(stderr, "read back %d of %d records\n", found, n);
        lseek(1, 0, SEEK_END);
    }
    if (strcmp(end, "exit") == 0)
        exit(0);
    if (strcmp(end, "_exit") == 0) {
        fflush(stdout);
        _exit(0);
    }
    if (strcmp(end, "segv") == 0) {
        fflush(stdout);
        volatile int *volatile p = NULL;
        *p = 1;
    }
    if (strcmp(end, "abort") == 0) {
        fflush(stdout);
        abort();
    }
    if (strcmp(end, "exec") == 0) {
        fflush(stdout);
        execl("/bin/echo", "echo", "from the next program image", (char *)NULL);
        return 8;
    }
    return 0;
}
