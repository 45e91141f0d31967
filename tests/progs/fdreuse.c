/*
 * fdreuse DIR SCENARIO: descriptors closed or handed out behind the public
 * close()/open() (closedir, close_range, closefrom, fclose of an fdopen'd
 * stream, syscall(SYS_close), posix_spawn file actions, exec with
 * O_CLOEXEC), then their numbers reused by new files and pipes. Each
 * scenario checks what a program relies on (bytes reach the file they were
 * written to, a pipe carries its own bytes, a close closes only what it
 * names) and prints "ok SCENARIO"; any failure prints one line and exits 1.
 * Run plain and under every mode: the results must be the same.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *dir;
static const char *scenario;

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL %s line %d: %s (errno %d)\n", scenario, __LINE__, #cond, errno);    \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static char *path(const char *name)
{
    static char buf[8][4096];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

static int create(const char *name)
{
    int fd = open(path(name), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(fd >= 0);
    return fd;
}

static void put(int fd, const char *s)
{
    CHECK(write(fd, s, strlen(s)) == (ssize_t)strlen(s));
}

/* The file's whole contents equal s (read with plain open/read). */
static void expect_file(const char *name, const char *s)
{
    char got[4096];
    int fd = open(path(name), O_RDONLY);
    CHECK(fd >= 0);
    ssize_t n = read(fd, got, sizeof got - 1);
    CHECK(n >= 0);
    got[n] = '\0';
    close(fd);
    if (strcmp(got, s) != 0) {
        printf("FAIL %s: %s holds \"%s\", expected \"%s\"\n", scenario, name, got, s);
        exit(1);
    }
}

/* A new pipe (expected on number `want`) carries its own byte. */
static void pipe_carries(int want)
{
    int p[2];
    char c = 0;
    CHECK(pipe(p) == 0);
    CHECK(p[0] == want || p[1] == want);
    CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
    CHECK(write(p[1], "P", 1) == 1);
    CHECK(read(p[0], &c, 1) == 1 && c == 'P');
    close(p[0]);
    close(p[1]);
}

/* fts's pattern (rm -rf, find): a directory descriptor and its dup; the
 * directory stream closes the original; a new file takes its number; the
 * dup's close must not close the new file. */
static void s_fdopendir(void)
{
    CHECK(mkdir(path("d"), 0755) == 0);
    int fd = open(path("d"), O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0);
    int d2 = dup(fd);
    CHECK(d2 >= 0);
    DIR *d = fdopendir(fd);
    CHECK(d != NULL);
    while (readdir(d))
        ;
    CHECK(closedir(d) == 0);
    int nf = create("after");
    CHECK(nf == fd);
    CHECK(close(d2) == 0);
    put(nf, "abc");
    CHECK(close(nf) == 0);
    expect_file("after", "abc");
}

static void s_close_range(void)
{
    int fd = create("a");
    put(fd, "before");
    CHECK(close_range((unsigned)fd, (unsigned)fd, 0) == 0);
    pipe_carries(fd);
    expect_file("a", "before");
}

static void s_closefrom(void)
{
    int fd = create("a");
    put(fd, "before");
    closefrom(fd);
    pipe_carries(fd);
    expect_file("a", "before");
}

static void s_syscall_close(void)
{
    int fd = create("a");
    put(fd, "hello");
    CHECK(syscall(SYS_close, fd) == 0);
    pipe_carries(fd);
    expect_file("a", "hello");
    /* The number again, as a file this time. */
    int nf = create("b");
    CHECK(nf == fd);
    put(nf, "world");
    CHECK(close(nf) == 0);
    expect_file("b", "world");
    expect_file("a", "hello");
}

/* dup2 over the only descriptor of a file just written closes it: every
 * byte written before is in the file. */
static void s_dup2_over(void)
{
    int fd = create("a");
    put(fd, "written before dup2");
    int null = open("/dev/null", O_WRONLY);
    CHECK(null >= 0);
    CHECK(dup2(null, fd) == fd);
    CHECK(close(null) == 0);
    put(fd, "to /dev/null");
    CHECK(close(fd) == 0);
    expect_file("a", "written before dup2");
}

/* A dup keeps the file open after the stream closed the original. */
static void s_fclose_fdopen(void)
{
    int fd = create("a");
    put(fd, "12345");
    int d = dup(fd);
    FILE *fp = fdopen(fd, "w");
    CHECK(fp != NULL);
    CHECK(fclose(fp) == 0);
    put(d, "67");
    pipe_carries(fd);
    CHECK(close(d) == 0);
    expect_file("a", "1234567");
}

/* opendir takes a number closed unseen; the directory lists; a file then. */
static void s_opendir_reuse(void)
{
    int fd = create("a");
    put(fd, "x");
    CHECK(syscall(SYS_close, fd) == 0);
    DIR *d = opendir(dir);
    CHECK(d != NULL && dirfd(d) == fd);
    int dots = 0;
    for (struct dirent *de; (de = readdir(d));)
        dots += !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
    CHECK(dots == 2);
    CHECK(closedir(d) == 0);
    int nf = create("b");
    put(nf, "y");
    CHECK(close(nf) == 0);
    expect_file("a", "x");
    expect_file("b", "y");
}

/* posix_spawn's file actions open and close in the child only. */
static void s_spawn(void)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status;
    int fd = create("a");
    put(fd, "parent");
    CHECK(posix_spawn_file_actions_init(&fa) == 0);
    CHECK(posix_spawn_file_actions_addclose(&fa, fd) == 0);
    CHECK(posix_spawn_file_actions_addopen(&fa, fd, path("child"), O_CREAT | O_WRONLY | O_TRUNC, 0644) == 0);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "printf spawned >&%d", fd);
    char *argv[] = {"sh", "-c", cmd, NULL};
    CHECK(posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ) == 0);
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    put(fd, "+more");
    CHECK(close(fd) == 0);
    expect_file("a", "parent+more");
    expect_file("child", "spawned");
}

/* Across exec, an O_CLOEXEC descriptor is gone: the new image reuses the
 * number for a pipe and a file (second stage: "cloexec2"). */
static void s_cloexec(char *self)
{
    int fd = open(path("a"), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    put(fd, "image1");
    char num[16];
    snprintf(num, sizeof num, "%d", fd);
    char *argv[] = {self, (char *)dir, "cloexec2", num, NULL};
    execv(self, argv);
    CHECK(0);
}

static void s_cloexec2(int fd)
{
    CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
    pipe_carries(fd);
    int nf = create("b");
    CHECK(nf == fd);
    put(nf, "image2");
    CHECK(close(nf) == 0);
    expect_file("a", "image1");
    expect_file("b", "image2");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fdreuse DIR SCENARIO\n");
        return 2;
    }
    dir = argv[1];
    scenario = argv[2];
    /* Keep the low numbers predictable: nothing above stderr is open. */
    if (!strcmp(scenario, "fdopendir")) s_fdopendir();
    else if (!strcmp(scenario, "close_range")) s_close_range();
    else if (!strcmp(scenario, "closefrom")) s_closefrom();
    else if (!strcmp(scenario, "syscall_close")) s_syscall_close();
    else if (!strcmp(scenario, "fclose_fdopen")) s_fclose_fdopen();
    else if (!strcmp(scenario, "dup2_over")) s_dup2_over();
    else if (!strcmp(scenario, "opendir_reuse")) s_opendir_reuse();
    else if (!strcmp(scenario, "spawn")) s_spawn();
    else if (!strcmp(scenario, "cloexec")) s_cloexec(argv[0]);
    else if (!strcmp(scenario, "cloexec2") && argc > 3) { scenario = "cloexec"; s_cloexec2(atoi(argv[3])); }
    else {
        fprintf(stderr, "fdreuse: unknown scenario %s\n", scenario);
        return 2;
    }
    printf("ok %s\n", scenario);
    return 0;
}
