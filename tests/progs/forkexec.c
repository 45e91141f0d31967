/*
 * Process lifecycle cases, one per invocation:
 *   forkexec fork DIR     parent writes parent.dat (3 writes), a forked child
 *                         writes child.dat (5 writes) and exits; parent waits
 *   forkexec exec DIR [VARIANT]
 *                         writes before_exec.dat (2 writes), then execs itself
 *                         as `forkexec after DIR` (after_exec.dat, 4 writes)
 *                         through VARIANT: execl (default), execlp, execle,
 *                         execv, execvp, execve, execvpe, fexecve
 *   forkexec _Exit DIR    like _exit, through _Exit
 *   forkexec _exit DIR    writes exit_now.dat (6 writes) and leaves with _exit(0)
 *   forkexec vfork DIR    writes vfork.dat (1 write), vforks a child that
 *                         dup2s, closes and execs /bin/true; then writes 1 more
 *   forkexec sigterm DIR  writes term.dat (7 writes) then waits for SIGTERM
 *   forkexec dupclose DIR opens dup.dat, dup2s it onto 10, closes the
 *                         original, writes 3 times through 10, closes
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_file(const char *dir, const char *name, int n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        exit(1);
    for (int i = 0; i < n; i++)
        if (write(fd, "0123456789", 10) != 10)
            exit(1);
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc != 3 && !(argc == 4 && !strcmp(argv[1], "exec")))
        return 2;
    const char *what = argv[1], *dir = argv[2];
    if (!strcmp(what, "fork")) {
        write_file(dir, "parent.dat", 3);
        pid_t p = fork();
        if (p == 0) {
            write_file(dir, "child.dat", 5);
            exit(0);
        }
        int st;
        waitpid(p, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (!strcmp(what, "exec")) {
        const char *v = argc == 4 ? argv[3] : "execl";
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return 1;
        self[n] = '\0';
        char *args[] = {argv[0], "after", (char *)dir, NULL};
        extern char **environ;
        write_file(dir, "before_exec.dat", 2);
        if (!strcmp(v, "execl")) execl(self, argv[0], "after", dir, (char *)NULL);
        else if (!strcmp(v, "execlp")) execlp(self, argv[0], "after", dir, (char *)NULL);
        else if (!strcmp(v, "execle")) execle(self, argv[0], "after", dir, (char *)NULL, environ);
        else if (!strcmp(v, "execv")) execv(self, args);
        else if (!strcmp(v, "execvp")) execvp(self, args);
        else if (!strcmp(v, "execve")) execve(self, args, environ);
        else if (!strcmp(v, "execvpe")) execvpe(self, args, environ);
        else if (!strcmp(v, "fexecve")) {
            int fd = open(self, O_RDONLY | O_CLOEXEC);
            fexecve(fd, args, environ);
        }
        return 1;
    }
    if (!strcmp(what, "after")) {
        write_file(dir, "after_exec.dat", 4);
        return 0;
    }
    if (!strcmp(what, "_exit")) {
        write_file(dir, "exit_now.dat", 6);
        _exit(0);
    }
    if (!strcmp(what, "_Exit")) {
        write_file(dir, "exit_now.dat", 6);
        _Exit(0);
    }
    if (!strcmp(what, "vfork")) {
        char path[4096];
        snprintf(path, sizeof path, "%s/vfork.dat", dir);
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (write(fd, "v", 1) != 1)
            return 1;
        pid_t p = vfork();
        if (p == 0) {
            dup2(fd, 1);
            close(fd);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st;
        waitpid(p, &st, 0);
        if (write(fd, "w", 1) != 1)
            return 1;
        close(fd);
        return 0;
    }
    if (!strcmp(what, "sigterm")) {
        write_file(dir, "term.dat", 7);
        printf("ready\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    if (!strcmp(what, "dupclose")) {
        char path[4096];
        snprintf(path, sizeof path, "%s/dup.dat", dir);
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (dup2(fd, 10) != 10)
            return 1;
        close(fd);
        for (int i = 0; i < 3; i++)
            if (write(10, "abcd", 4) != 4)
                return 1;
        return close(10) != 0;
    }
    return 2;
}
