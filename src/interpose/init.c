/*
 * Load and unload: the constructor resolves the real functions, reads the
 * settings and sets up every table before recording starts; the destructor
 * (and exec, _exit, SIGTERM) writes the log. fork() gives the child a fresh
 * profile of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/clock.h"
#include "common/crc32.h"
#include "common/diag.h"
#include "common/pathnorm.h"
#include "core/autolarge.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/file.h"
#include "core/policy.h"
#include "core/record.h"
#include "core/trace.h"
#include "core/stack.h"
#include "core/stream.h"
#include "hdf5/h5api.h"
#include "interpose/interpose.h"
#include "interpose/stdio_kernel.h"
#include "logfmt/writer.h"
#include "sluice/sluice_logfmt.h"
#include "sys/umask.h"

int sluice__state = SLUICE_STATE_LOADING;
__thread int sluice__guard __attribute__((tls_model("initial-exec")));

static char log_dir_abs[PATH_MAX];

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t env_int(const char *const names[], int64_t dflt)
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        int64_t x;
        if (v && sluice_config_parse_int(v, &x) == 0)
            return x;
    }
    return dflt;
}

static void copy_str(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);
    if (n >= len)
        n = len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* The job a process belongs to: ours if `sluice run` set it, else the
 * launcher's or the batch system's, so that all ranks of one mpirun share it. */
static void proc_job_id(void)
{
    static const char *const names[] = {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PBS_JOBID", "LSB_JOBID", NULL};
    const char *v;

    if (sluice_cfg.job_id[0]) {
        copy_str(sluice_proc.job_id, sizeof sluice_proc.job_id, sluice_cfg.job_id);
        return;
    }
    if ((v = getenv("SLURM_JOB_ID")) != NULL) {
        const char *step = getenv("SLURM_STEP_ID");
        size_t n = strlen(v);
        copy_str(sluice_proc.job_id, sizeof sluice_proc.job_id, v);
        if (step && n + 1 + strlen(step) < sizeof sluice_proc.job_id) {
            sluice_proc.job_id[n] = '.';
            strcpy(sluice_proc.job_id + n + 1, step);
        }
        return;
    }
    for (int i = 0; names[i]; i++) {
        if ((v = getenv(names[i])) != NULL && *v) {
            copy_str(sluice_proc.job_id, sizeof sluice_proc.job_id, v);
            return;
        }
    }
    /* A lone process: its own pid names the job. */
    char *p = sluice_proc.job_id;
    long long pid = (long long)getpid();
    char digits[24];
    int k = 0;
    do { digits[k++] = (char)('0' + pid % 10); pid /= 10; } while (pid && k < 23);
    memcpy(p, "pid", 3);
    p += 3;
    while (k)
        *p++ = digits[--k];
    *p = '\0';
}

static void proc_cmdline(void)
{
    int fd = SLUICE_REAL(openat)(AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC, 0);
    ssize_t n = 0;

    if (fd >= 0) {
        n = SLUICE_REAL(read)(fd, sluice_proc.cmdline, sizeof sluice_proc.cmdline - 1);
        SLUICE_REAL(close)(fd);
    }
    if (n < 0)
        n = 0;
    for (ssize_t i = 0; i < n; i++)
        if (sluice_proc.cmdline[i] == '\0')
            sluice_proc.cmdline[i] = ' ';
    while (n > 0 && sluice_proc.cmdline[n - 1] == ' ')
        n--;
    sluice_proc.cmdline[n] = '\0';
}

static void proc_start_times(void)
{
    sluice_proc.pid = getpid();
    sluice_proc.ppid = getppid();
    sluice_proc.start_unix_ns = clock_ns(CLOCK_REALTIME);
    sluice_proc.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
    sluice_start_ticks = sluice_now();
}

static void proc_info(void)
{
    static const char *const rank_env[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
    static const char *const size_env[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};
    ssize_t n;

    proc_start_times();
    sluice_proc.rank = env_int(rank_env, -1);
    sluice_proc.nprocs = env_int(size_env, -1);
    if (gethostname(sluice_proc.host, sizeof sluice_proc.host - 1) != 0)
        strcpy(sluice_proc.host, "unknown");
    n = readlink("/proc/self/exe", sluice_proc.exe, sizeof sluice_proc.exe - 1);
    sluice_proc.exe[n > 0 ? n : 0] = '\0';
    proc_cmdline();
    proc_job_id();
}

/* ---- fork ---- */

/* Buffered bytes reach the file system before the fork, so that neither
 * process writes them twice and both see the kernel's position right. */
static void atfork_prepare(void)
{
    if (sluice_active()) {
        sluice__guard++;
        (void)sluice_stack_quiesce(SLUICE_QUIESCE_FORK);
        sluice__guard--;
    }
}

static void atfork_parent(void)
{
    __atomic_add_fetch(&sluice_fork_gen, 1, __ATOMIC_RELAXED);
}

static void atfork_child(void)
{
    /* Locks a parent thread held at the fork would never be released here. */
    sluice_arena_after_fork_child();
    sluice_records_after_fork_child();
    sluice_files_after_fork_child();
    sluice_streams_after_fork_child();
    sluice_stack_after_fork_child();
    sluice_fork_gen++;
    proc_start_times();
}

/* 1 when a description recorded here reaches a child that only execs:
 * a descriptor naming it is not close-on-exec. (Asked of the kernel:
 * F_SETFD, dup and dup2 change it behind the description's back. F_GETFD
 * reaches no file system.) */
static int recorded_fd_inherited(void)
{
    int high = sluice_fd_high();

    for (int fd = 0; fd <= high; fd++) {
        if (!sluice_fd_known(fd))
            continue;
        int fl = SLUICE_REAL(fcntl)(fd, F_GETFD);
        if (fl >= 0 && !(fl & FD_CLOEXEC))
            return 1;
    }
    return 0;
}

/* A child that runs in our memory until it execs (vfork; glibc's
 * posix_spawn, system and popen use clone(CLONE_VM | CLONE_VFORK)) runs
 * no fork handler, and what it execs writes through the descriptions it
 * inherits or was given (a shell's `>&3`, a file action's dup2 onto its
 * stdout, Python's subprocess with stdout=fd). So before it exists, in
 * the parent, the same as before a fork: every buffered byte reaches the
 * file system and the kernel's positions are the application's. Then
 * every description open now counts as shared with another process from
 * then on (the fork generation moves on, as after a fork), unless the
 * child only execs (exec_only: system, popen, posix_spawn without file
 * actions) and every recorded descriptor is close-on-exec: then none
 * reaches it. (A vfork child runs the program's own code first, and a
 * file action may dup2 any descriptor.) */
void sluice_before_spawn(int exec_only)
{
    int saved = errno;

    if (sluice_active() && !sluice_in_vfork_child()) {
        sluice__guard++;
        (void)sluice_stack_quiesce(SLUICE_QUIESCE_FORK);
        if (!exec_only || recorded_fd_inherited())
            __atomic_add_fetch(&sluice_fork_gen, 1, __ATOMIC_RELAXED);
        sluice__guard--;
    }
    errno = saved;
}

int sluice_in_vfork_child(void)
{
#if defined(__x86_64__)
    /* Our vfork() counts itself: with none under way, no thread can be a
     * vfork child, and the getpid() system call (about as dear as the rest
     * of an open+close's bookkeeping) is skipped. */
    if (__atomic_load_n(&sluice__vforks, __ATOMIC_ACQUIRE) == 0)
        return 0;
#endif
    return getpid() != sluice_proc.pid;
}

/* ---- the end ---- */

int sluice_finish(unsigned end_reason, unsigned flags, char *path, unsigned long path_len)
{
    int expected = SLUICE_STATE_ACTIVE;

    if (__atomic_load_n(&sluice__state, __ATOMIC_ACQUIRE) != SLUICE_STATE_ACTIVE)
        return -EALREADY;
    /* Every buffered byte reaches the file system while its counters can
     * still be recorded, and descriptors the next program image (or a late
     * destructor) inherits point where the application left them. */
    sluice__guard++;
    if (end_reason == SLUICE_END_EXIT)
        stream_flush_all_at_exit();
    (void)sluice_stack_quiesce(SLUICE_QUIESCE_END |
                               (end_reason == SLUICE_END_SIGNAL || end_reason == SLUICE_END_FATAL ? SLUICE_QUIESCE_SIGNAL
                                                                                                  : 0));
    sluice__guard--;
    if (!__atomic_compare_exchange_n(&sluice__state, &expected, SLUICE_STATE_FINISHED, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return -EALREADY;
    return sluice_log_write(log_dir_abs, end_reason, flags, path, path_len);
}

void sluice_resume_after_exec_failure(const char *log_path)
{
    if (log_path[0])
        SLUICE_REAL(unlink)(log_path);
    __atomic_store_n(&sluice__state, SLUICE_STATE_ACTIVE, __ATOMIC_RELEASE);
}

static void on_sigterm(int sig)
{
    int saved = errno;
    struct sigaction dfl = {0};

    sluice_finish(SLUICE_END_SIGNAL, SLUICE_LOG_F_SIGNAL, NULL, 0);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    errno = saved;
    raise(sig);
}

/* A crash (SIGSEGV, SIGABRT, ...): the log is written from the handler and
 * the signal raised again with its default action, so the process still
 * dies of it (core dump and wait status as plain). A crash inside sluice's
 * own code (the guard is up) writes nothing: its state may be what broke. */
static void on_fatal_signal(int sig)
{
    int saved = errno;
    struct sigaction dfl = {0};

    if (sluice__guard == 0) {
        sluice_proc.fatal_signal = sig;
        sluice_finish(SLUICE_END_FATAL, SLUICE_LOG_F_SIGNAL, NULL, 0);
    }
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    errno = saved;
    raise(sig);   /* blocked until the handler returns; a fault re-runs its instruction and faults again */
}

/* Catch sig with handler unless the program (or its launcher) has its own
 * plan for it. */
static void install_end_handler(int sig, void (*handler)(int), int flags)
{
    struct sigaction old, sa = {0};

    if (sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
        return;
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

static void install_end_handlers(void)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

    install_end_handler(SIGTERM, on_sigterm, SA_RESTART);
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        install_end_handler(fatal[i], on_fatal_signal, SA_RESTART);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static int is_launcher_name(const char *base)
{
    /* the launchers and their daemons, and the agents that carry them to
     * other nodes (ssh, rsh; the testbed's node-rsh.sh) */
    static const char *const launchers[] = {"mpirun", "mpiexec", "orterun", "orted", "prterun", "prte", "prted",
                                            "mpiexec.hydra", "hydra_pmi_proxy", "ssh", "rsh", "node-rsh.sh", NULL};
    for (int i = 0; launchers[i]; i++) {
        size_t k = strlen(launchers[i]);
        /* (Debian's mpirun.openmpi, mpiexec.mpich: the name, then a dot) */
        if (strncmp(base, launchers[i], k) == 0 && (base[k] == '\0' || base[k] == '.'))
            return 1;
    }
    return 0;
}

/* The script a shell runs: its first argument unless that is an option. */
static int shell_script_is_launcher(void)
{
    char cmd[4096];
    int fd = SLUICE_REAL(openat)(AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC, 0);
    ssize_t n;

    if (fd < 0)
        return 0;
    n = SLUICE_REAL(read)(fd, cmd, sizeof cmd - 1);
    SLUICE_REAL(close)(fd);
    if (n <= 0)
        return 0;
    cmd[n] = '\0';
    size_t first = strlen(cmd) + 1;
    /* (a script matches by its whole name: ssh.sh or mpirun.py is a program's own) */
    const char *script = base_name(cmd + first);
    return first < (size_t)n && cmd[first] != '-' && is_launcher_name(script) &&
           (strchr(script, '.') == NULL || strcmp(script, "node-rsh.sh") == 0);
}

/* `sluice run -- mpirun ...`: the launcher and its daemons carry the
 * preload to the ranks but are not the program; their own files (help
 * texts, configuration, sockets) are not the job's I/O. */
static int is_mpi_launcher(void)
{
    static const char *const shells[] = {"sh", "dash", "bash", NULL};
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *base;

    if (n <= 0)
        return 0;
    exe[n] = '\0';
    base = base_name(exe);
    if (is_launcher_name(base))
        return 1;
    for (int i = 0; shells[i]; i++)
        if (strcmp(base, shells[i]) == 0)
            return shell_script_is_launcher();
    return 0;
}

__attribute__((constructor(101))) static void sluice_load(void)
{
    sluice_real_init();
    sluice_h5_api_init();
    sluice_diag_init();
    sluice_umask_init();
    sluice_crc32_init();
    sluice_clock_init();
    (void)sluice_config_load();
    if (sluice_cfg.disable || is_mpi_launcher()) {
        sluice__state = SLUICE_STATE_FINISHED;
        return;
    }
    if (sluice_path_absolute(AT_FDCWD, sluice_cfg.log_dir, log_dir_abs, sizeof log_dir_abs) != 0)
        copy_str(log_dir_abs, sizeof log_dir_abs, sluice_cfg.log_dir);
    proc_info();
    if (sluice_trace_init(sluice_cfg.trace) != 0)   /* the counters go on without it */
        sluice_diag("SLUICE_TRACE=%lld: no memory for that many calls; no trace is kept", (long long)sluice_cfg.trace);
    if (sluice_records_init(sluice_cfg.max_records) != 0 || sluice_files_init() != 0) {
        sluice_diag("out of memory at start-up; this process is not profiled");
        sluice__state = SLUICE_STATE_FINISHED;
        return;
    }
    sluice_policy_init(sluice_cfg.paths, log_dir_abs, sluice_cfg.mpi_runtime_files);
    (void)sluice_policy_init_modes(sluice_cfg.mode, sluice_cfg.policy);
    sluice_auto_large_init();
    sluice_stack_init(sluice_cfg.tiers, sluice_cfg.allow_test_tiers);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    install_end_handlers();
    __atomic_store_n(&sluice__state, SLUICE_STATE_ACTIVE, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void sluice_unload(void)
{
    sluice_finish(SLUICE_END_EXIT, 0, NULL, 0);
}
