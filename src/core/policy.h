/*
 * Which paths sluice records, and in which mode it handles each. Profile mode
 * records every path except system prefixes and the interpreter's own files
 * (a Python, R or Julia job's installation, virtualenv and libraries), as
 * Darshan leaves out system paths; SLUICE_PATHS restricts recording to the
 * prefixes it lists.
 */
#ifndef SLUICE_CORE_POLICY_H
#define SLUICE_CORE_POLICY_H

/* Parse SLUICE_PATHS and the log directory (never recorded); unless
 * runtime_files, the MPI runtime's session directory (from the environment
 * its launcher gives the ranks) is not recorded either, and unless
 * sluice_cfg.runtime_files (SLUICE_RUNTIME_FILES), the interpreter's own
 * files are not (policy.c says which). Called once, from the constructor,
 * after sluice_config_load. 0 or -errno. */
int sluice_policy_init(const char *paths, const char *log_dir, int runtime_files);

/* 1 if I/O on this absolute normalised path is recorded. */
int sluice_policy_records(const char *abs_path);

/* How many times sluice_policy_records left a path out because it is the
 * interpreter's own (a call on it the profile does not show). */
long sluice_policy_runtime_left_out(void);

/* Quick test on the path exactly as the program passed it: 1 when it is
 * certainly not recorded (an absolute path under a system prefix), so the
 * common case costs no getcwd and no normalisation. */
int sluice_policy_skip_fast(const char *path);

/* I/O modes (core/modes.def): what the tier stack of a recorded file holds. */
enum sluice_mode {
#define SLUICE_MODE(id, name, tiers, help) SLUICE_MODE_##id,
#include "core/modes.def"
#undef SLUICE_MODE
    SLUICE_MODE_COUNT
};

/* The mode named `name` (profile, buffer), or -1. */
int sluice_mode_from_name(const char *name);
const char *sluice_mode_name(enum sluice_mode m);

/* Parse SLUICE_MODE and SLUICE_POLICY (PREFIX=MODE[,PREFIX=MODE...]).
 * A malformed item is reported once and ignored. Returns the number of
 * malformed items. */
int sluice_policy_init_modes(const char *default_mode, const char *policy);

/* The modes some path may get, as bits (1u << mode). */
unsigned sluice_policy_modes_used(void);

/* The mode for an absolute normalised path: the longest matching prefix of
 * SLUICE_POLICY, else SLUICE_MODE. */
enum sluice_mode sluice_policy_mode(const char *abs_path);

#endif
