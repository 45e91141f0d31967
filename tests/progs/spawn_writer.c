/*
 * A child started without fork() writes through the program's own
 * descriptor:
 *   spawn_writer HOW FILE [HOW FILE ...]
 * for each pair in turn, opens FILE (write-only, created, truncated) and,
 * twice, writes a line, starts a child that writes "child N" through the
 * same open file description, waits for it, and writes another line;
 * then closes FILE. HOW:
 *   system        system("echo child N >&FD")
 *   popen         popen("cat >&FD", "w"), "child N" written into the pipe
 *   posix_spawn   posix_spawn of /bin/sh -c 'echo child N', a file action
 *                 dup2ing FD onto its stdout
 *   posix_spawnp  the same through posix_spawnp and "sh"
 *   vfork         vfork; the child dup2s FD onto its stdout and execs
 *                 /bin/sh -c 'echo child N'
 * The file must read "parent 1, child 1, after 1, parent 2, child 2,
 * after 2", a line each. And:
 *   cloexec       FILE opened close-on-exec: 10 records of 100 bytes, then
 *                 system("true"), 10 more, popen("true", "r") and pclose,
 *                 10 more, posix_spawn of /bin/true (no file actions), 10
 *                 more; no child can write through it
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void put(int fd, const char *s)
{
    size_t n = strlen(s);
    if (write(fd, s, n) != (ssize_t)n) {
        perror("write");
        exit(1);
    }
}

static int wait_child(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int child(const char *how, int fd, int round)
{
    char cmd[128], line[32];
    snprintf(line, sizeof line, "echo child %d", round);
    if (!strcmp(how, "system")) {
        snprintf(cmd, sizeof cmd, "%s >&%d", line, fd);
        return system(cmd);
    }
    if (!strcmp(how, "popen")) {
        snprintf(cmd, sizeof cmd, "cat >&%d", fd);
        FILE *p = popen(cmd, "w");
        if (!p)
            return -1;
        fprintf(p, "child %d\n", round);
        return pclose(p);
    }
    char *argv[] = {"sh", "-c", line, NULL};
    pid_t pid;
    if (!strcmp(how, "posix_spawn") || !strcmp(how, "posix_spawnp")) {
        posix_spawn_file_actions_t fa;
        int rc;
        if (posix_spawn_file_actions_init(&fa) != 0 || posix_spawn_file_actions_adddup2(&fa, fd, 1) != 0)
            return -1;
        rc = how[11] == 'p' ? posix_spawnp(&pid, "sh", &fa, NULL, argv, environ)
                            : posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        return rc == 0 ? wait_child(pid) : -1;
    }
    if (!strcmp(how, "vfork")) {
        pid = vfork();
        if (pid == 0) {
            if (dup2(fd, 1) == 1)
                execv("/bin/sh", argv);
            _exit(127);
        }
        return pid > 0 ? wait_child(pid) : -1;
    }
    fprintf(stderr, "spawn_writer: unknown way %s\n", how);
    exit(2);
}

static void records(int fd, int from)
{
    for (int i = from; i < from + 10; i++) {
        char r[101];
        snprintf(r, sizeof r, "%-99d\n", i);
        put(fd, r);
    }
}

static int cloexec_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char *argv[] = {"true", NULL};
    pid_t pid;
    FILE *p;

    if (fd < 0) {
        perror(path);
        return 1;
    }
    records(fd, 0);
    if (system("true") != 0)
        return 1;
    records(fd, 10);
    if (!(p = popen("true", "r")) || pclose(p) != 0)
        return 1;
    records(fd, 20);
    if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) != 0 || wait_child(pid) != 0)
        return 1;
    records(fd, 30);
    return close(fd) == 0 ? 0 : 1;
}

static int write_file(const char *how, const char *path)
{
    if (!strcmp(how, "cloexec"))
        return cloexec_file(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    for (int round = 1; round <= 2; round++) {
        char s[32];
        snprintf(s, sizeof s, "parent %d\n", round);
        put(fd, s);
        if (child(how, fd, round) != 0) {
            fprintf(stderr, "spawn_writer: the child (%s) failed\n", how);
            return 1;
        }
        snprintf(s, sizeof s, "after %d\n", round);
        put(fd, s);
    }
    return close(fd) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: spawn_writer system|popen|posix_spawn|posix_spawnp|vfork|cloexec FILE [...]\n");
        return 2;
    }
    for (int i = 1; i < argc; i += 2)
        if (write_file(argv[i], argv[i + 1]) != 0)
            return 1;
    return 0;
}
