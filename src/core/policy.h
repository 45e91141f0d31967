/*
 * Which paths sluice records (and, in later modes, changes). Profile mode
 * records every path except system prefixes, as Darshan does; SLUICE_PATHS
 * restricts recording to the prefixes it lists.
 */
#ifndef SLUICE_CORE_POLICY_H
#define SLUICE_CORE_POLICY_H

/* Parse SLUICE_PATHS and the log directory (never recorded). 0 or -errno. */
int sluice_policy_init(const char *paths, const char *log_dir);

/* 1 if I/O on this absolute normalised path is recorded. */
int sluice_policy_records(const char *abs_path);

/* Quick test on the path exactly as the program passed it: 1 when it is
 * certainly not recorded (an absolute path under a system prefix), so the
 * common case costs no getcwd and no normalisation. */
int sluice_policy_skip_fast(const char *path);

#endif
