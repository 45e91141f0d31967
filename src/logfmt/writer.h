/*
 * Writing this process's log (format: sluice_logfmt.h). Async-signal-safe:
 * no malloc, no stdio, no locks it could wait on; it streams records from
 * the registry through a static buffer with the real write(2), into a
 * temporary name that is renamed into place when complete, so a reader
 * never sees a half-written log under a final name.
 */
#ifndef SLUICE_LOGFMT_WRITER_H
#define SLUICE_LOGFMT_WRITER_H

#include <stdint.h>

#define SLUICE_PROC_STR 4096

/* What the PROCESS region says; filled by the constructor. */
struct sluice_proc_info {
    int64_t pid, ppid, rank, nprocs;
    uint64_t start_unix_ns;   /* CLOCK_REALTIME at load */
    uint64_t start_mono_ns;   /* CLOCK_MONOTONIC at load */
    char job_id[256];
    char host[256];
    char exe[SLUICE_PROC_STR];
    char cmdline[SLUICE_PROC_STR];
    int fatal_signal;         /* set by the crash handler before the log is written */
};

extern struct sluice_proc_info sluice_proc;

/* Write the log into dir (nothing, and final_path "", when no record saw
 * any activity). end_reason: enum sluice_log_end_reason; flags:
 * extra SLUICE_LOG_F_* bits. Returns 0 or -errno (and says why, once, on
 * stderr). `final_path` receives the log's name when non-NULL. */
int sluice_log_write(const char *dir, unsigned end_reason, unsigned flags,
                     char *final_path, unsigned long final_path_len);

#endif
