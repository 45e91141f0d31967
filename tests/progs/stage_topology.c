/*
 * Process topologies in which a descriptor of a file outlives the process
 * that opened it (tests/python/test_stage_job.py): the file's last writer
 * is another process, and stage mode must publish the file only after it.
 *
 *   stage_topology fork FILE        parent writes "parent\n", forks, closes
 *                                   and exits; the child writes "child\n"
 *                                   0.3 s later through the inherited descriptor
 *   stage_topology fork-close FILE  parent writes "parent\n", forks; the
 *                                   child writes "child\n", closes its
 *                                   inherited descriptor and exits; then the
 *                                   parent writes "parent again\n" and closes
 *                                   (strace -o FILE's test children close the
 *                                   output file)
 *   stage_topology vfork FILE       the same with vfork + exec of /bin/sh,
 *                                   which writes "child\n" to the descriptor
 *   stage_topology spawn FILE       the same with posix_spawn (the file on
 *                                   the child's stdout)
 *   stage_topology exec FILE        writes "parent\n", then execs /bin/sh with
 *                                   no LD_PRELOAD (a program not under
 *                                   sluice) writing "child\n" to its stdout
 *   stage_topology system TMP FILE  writes TMP with stdio, moves it with
 *                                   system("mv TMP FILE") and reads FILE back
 *                                   (NCO's pattern); prints what it read
 */

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void write_str(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s)) {
        perror("write");
        exit(1);
    }
}

static int open_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    return fd;
}

/* The environment without LD_PRELOAD: the next image is not under sluice. */
static char **without_preload(void)
{
    static char *env[256];
    int n = 0;
    for (char **e = environ; *e && n < 255; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
            env[n++] = *e;
    env[n] = NULL;
    return env;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: stage_topology fork|fork-close|vfork|spawn|exec FILE | system TMP FILE\n");
        return 2;
    }
    const char *how = argv[1];
    if (strcmp(how, "system") == 0 && argc == 4) {
        FILE *f = fopen(argv[2], "w");
        char cmd[8192], buf[256];
        if (!f || fputs("moved\n", f) < 0 || fclose(f) != 0)
            return 1;
        snprintf(cmd, sizeof cmd, "/bin/mv %s %s", argv[2], argv[3]);
        if (system(cmd) != 0)
            return 1;
        f = fopen(argv[3], "r");
        if (!f || !fgets(buf, sizeof buf, f))
            return 1;
        fclose(f);
        fputs(buf, stdout);
        return 0;
    }
    int fd = open_file(argv[2]);
    write_str(fd, "parent\n");
    if (strcmp(how, "fork") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            usleep(300000);
            write_str(fd, "child\n");
            _exit(0);
        }
        close(fd);
        return pid < 0;
    }
    if (strcmp(how, "fork-close") == 0) {
        pid_t pid = fork();
        int status;
        if (pid == 0) {
            write_str(fd, "child\n");
            _exit(close(fd) != 0);
        }
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "stage_topology: the child ended with status %#x\n", (unsigned)status);
            return 1;
        }
        write_str(fd, "parent again\n");
        return close(fd) != 0;
    }
    if (strcmp(how, "vfork") == 0) {
        if (fd != 3 && (dup2(fd, 3) != 3 || close(fd) != 0))
            return 1;
        pid_t pid = vfork();
        if (pid == 0) {
            execl("/bin/sh", "sh", "-c", "sleep 0.3; echo child >&3", (char *)NULL);
            _exit(127);
        }
        close(3);
        return pid < 0;
    }
    if (strcmp(how, "spawn") == 0) {
        posix_spawn_file_actions_t fa;
        char *args[] = {"sh", "-c", "sleep 0.3; echo child", NULL};
        pid_t pid;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fd, 1);
        int rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, args, environ);
        close(fd);
        return rc != 0;
    }
    if (strcmp(how, "exec") == 0) {
        char *args[] = {"sh", "-c", "sleep 0.3; echo child", NULL};
        if (dup2(fd, 1) != 1)
            return 1;
        close(fd);
        execve("/bin/sh", args, without_preload());
        perror("execve");
        return 127;
    }
    fprintf(stderr, "stage_topology: unknown topology %s\n", how);
    return 2;
}
