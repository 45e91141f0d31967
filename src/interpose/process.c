/*
 * Process lifecycle: exec replaces the image without running destructors,
 * and _exit skips them, so both write the log first. A vfork child shares
 * its parent's memory and writes nothing: the log stays the parent's.
 * If exec fails, the log written for it is removed and recording resumes.
 * Children started without fork() (vfork, posix_spawn, system, popen) get
 * what fork's handlers give a forked one, before they exist.
 */
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "interpose/interpose.h"
#include "sys/umask.h"
#include "sluice/sluice_logfmt.h"

/* Write the log before an exec; `path` receives its name (or ""). */
static int exec_prepare(char *path, size_t len)
{
    path[0] = '\0';
    if (__atomic_load_n(&sluice__state, __ATOMIC_ACQUIRE) != SLUICE_STATE_ACTIVE || sluice_in_vfork_child())
        return 0;
    /* Descriptors the next image inherits (`cmd > file` in a shell) must
     * name files it can write without us, before the end publishes them. */
    sluice__guard++;
    sluice_files_before_exec();
    sluice__guard--;
    return sluice_finish(SLUICE_END_EXEC, 0, path, len) == 0;
}

static int exec_failed(int wrote, const char *path)
{
    int saved = errno;
    if (wrote)
        sluice_resume_after_exec_failure(path);
    errno = saved;
    return -1;
}

SLUICE_EXPORT int execve(const char *file, char *const argv[], char *const envp[])
{
    char log[PATH_MAX];
    int wrote = exec_prepare(log, sizeof log);
    SLUICE_REAL(execve)(file, argv, envp);
    return exec_failed(wrote, log);
}

SLUICE_EXPORT int execv(const char *file, char *const argv[])
{
    char log[PATH_MAX];
    int wrote = exec_prepare(log, sizeof log);
    SLUICE_REAL(execv)(file, argv);
    return exec_failed(wrote, log);
}

SLUICE_EXPORT int execvp(const char *file, char *const argv[])
{
    char log[PATH_MAX];
    int wrote = exec_prepare(log, sizeof log);
    SLUICE_REAL(execvp)(file, argv);
    return exec_failed(wrote, log);
}

SLUICE_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    char log[PATH_MAX];
    int wrote = exec_prepare(log, sizeof log);
    SLUICE_REAL(execvpe)(file, argv, envp);
    return exec_failed(wrote, log);
}

SLUICE_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    char log[PATH_MAX];
    int wrote = exec_prepare(log, sizeof log);
    SLUICE_REAL(fexecve)(fd, argv, envp);
    return exec_failed(wrote, log);
}

/* The execl family gathers its arguments into an argv array on the stack
 * (no malloc: it may run in a vfork child) and calls the v* form. */
#define EXECL_ARGV(arg, ap, argv, with_env, envp)                 \
    size_t n_ = 1;                                                \
    va_start(ap, arg);                                            \
    while (va_arg(ap, const char *) != NULL)                      \
        n_++;                                                     \
    va_end(ap);                                                   \
    if (n_ > 65536) {                                             \
        errno = E2BIG;                                            \
        return -1;                                                \
    }                                                             \
    const char *argv[n_ + 1];                                     \
    argv[0] = arg;                                                \
    va_start(ap, arg);                                            \
    for (size_t i_ = 1; i_ <= n_; i_++)                           \
        argv[i_] = va_arg(ap, const char *);                      \
    if (with_env)                                                 \
        envp = va_arg(ap, char *const *);                         \
    va_end(ap)

SLUICE_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    char *const *envp = NULL;
    EXECL_ARGV(arg, ap, argv, 0, envp);
    (void)envp;
    return execv(path, (char *const *)argv);
}

SLUICE_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    char *const *envp = NULL;
    EXECL_ARGV(arg, ap, argv, 0, envp);
    (void)envp;
    return execvp(file, (char *const *)argv);
}

SLUICE_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    char *const *envp = NULL;
    EXECL_ARGV(arg, ap, argv, 1, envp);
    return execve(path, (char *const *)argv, envp);
}

SLUICE_EXPORT void _exit(int status)
{
    if (__atomic_load_n(&sluice__state, __ATOMIC_ACQUIRE) == SLUICE_STATE_ACTIVE && !sluice_in_vfork_child())
        sluice_finish(SLUICE_END_EXIT_NOW, 0, NULL, 0);
    SLUICE_REAL(_exit)(status);
    __builtin_unreachable();
}

SLUICE_EXPORT void _Exit(int status)
{
    if (__atomic_load_n(&sluice__state, __ATOMIC_ACQUIRE) == SLUICE_STATE_ACTIVE && !sluice_in_vfork_child())
        sluice_finish(SLUICE_END_EXIT_NOW, 0, NULL, 0);
    SLUICE_REAL(_Exit)(status);
    __builtin_unreachable();
}

/* The umask as the program sets it: modes sluice gives files later (stage
 * mode's publish) follow it. */
SLUICE_EXPORT mode_t umask(mode_t mask)
{
    mode_t old = SLUICE_REAL(umask)(mask);
    if (!sluice_in_vfork_child())   /* (a vfork child shares our memory) */
        sluice_umask_note(mask);
    return old;
}

/* ---- children started without fork() ---- */

/* glibc's posix_spawn, posix_spawnp, system and popen start their child
 * with clone(CLONE_VM | CLONE_VFORK) and exec in it through internal
 * calls: no fork handler runs, and system and popen call the internal
 * posix_spawn, not this one, so each is wrapped (popen in fdlife.c).
 * Without file actions the child only execs. */
SLUICE_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                              const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    sluice_before_spawn(fa == NULL);
    return SLUICE_REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
}

SLUICE_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                               const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    sluice_before_spawn(fa == NULL);
    return SLUICE_REAL(posix_spawnp)(pid, file, fa, attr, argv, envp);
}

SLUICE_EXPORT int system(const char *cmd)
{
    if (cmd)   /* (NULL only asks whether there is a shell) */
        sluice_before_spawn(1);
    return SLUICE_REAL(system)(cmd);
}

/* ---- vfork ---- */

#if defined(__x86_64__)
int sluice__vforks;

/* The error return of vfork (the system call's -errno in rc). */
long sluice__vfork_failed(long rc);
__attribute__((used)) long sluice__vfork_failed(long rc)
{
    errno = (int)-rc;
    return -1;
}

/* vfork itself, counted: sluice_in_vfork_child() asks the kernel only
 * while one is under way. First, as an ordinary call that has returned
 * before the child exists, sluice_before_spawn(0) (the stack is as at
 * entry again when the system call is made; the 8 bytes below the return
 * address only align the call). Then, as glibc's, it keeps its return
 * address in a register across the system call, since the child runs on
 * (and may overwrite) the parent's stack; the parent, resumed once the
 * child has exec'd or exited, takes its count back. */
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        "vfork:\n"
        "    .cfi_startproc\n"
        "    endbr64\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    xorl %edi, %edi\n"
        "    call sluice_before_spawn\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    lock incl sluice__vforks(%rip)\n"
        "    popq %rdi\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_register %rip, %rdi\n"
        "    movl $58, %eax\n" /* __NR_vfork */
        "    syscall\n"
        "    pushq %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    testq %rax, %rax\n"
        "    jz 1f\n"
        "    lock decl sluice__vforks(%rip)\n"
        "    cmpq $-4095, %rax\n"
        "    jae 2f\n"
        "1:  ret\n"
        "2:  movq %rax, %rdi\n"
        "    jmp sluice__vfork_failed\n"
        "    .cfi_endproc\n"
        ".size vfork, .-vfork\n");
#endif
