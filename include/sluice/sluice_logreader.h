/*
 * Reading sluice logs (format: sluice_logfmt.h, docs/logformat.md).
 *
 * Pure C11 with no dependency but libc. A log is read whole into memory and
 * checked before anything is returned: magic, major version, the header's
 * CRC (bytes 0..59 and the region table), the file size, every region's
 * bounds and CRC, and every count and length against the bytes that remain.
 * Region types and modules this reader does not know are skipped; counter
 * names come from the log's SCHEMA region, so counters are looked up by name
 * (sluice_log_counter_index), never by position.
 *
 * A log that cannot be read gives -1 and one line "NAME: problem" in err
 * (control characters of NAME shown as '?'). The reader never aborts, never
 * reads outside the file and never trusts a size it has not checked; the
 * Python reader (sluice.logfmt) accepts and rejects exactly the same files.
 *
 * Everything returned points into the struct sluice_log and lives until
 * sluice_logreader_close(). Strings are NUL-terminated and also carry their
 * length (they may contain NUL bytes and are not necessarily UTF-8: paths
 * are stored as the bytes the application used).
 */
#ifndef SLUICE_LOGREADER_H
#define SLUICE_LOGREADER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sluice_log;

struct sluice_log_string {
    const char *ptr;  /* NUL-terminated */
    size_t len;       /* bytes, not counting the terminator */
};

struct sluice_log_kv {
    struct sluice_log_string key, value;
};

/* Header and PROCESS region. */
struct sluice_log_process {
    uint16_t version_major, version_minor;
    uint32_t flags;              /* SLUICE_LOG_F_* */
    uint64_t pid, ppid;
    int64_t rank, nprocs;        /* -1: not an MPI process */
    uint64_t start_ns, end_ns;   /* CLOCK_REALTIME, ns since the epoch */
    uint64_t start_mono_ns;
    uint32_t end_reason;         /* enum sluice_log_end_reason */
};

/* One module as described by the log's SCHEMA region. */
struct sluice_log_module {
    uint16_t id, version;
    uint16_t ni, nf;             /* integer and float counters per side */
    struct sluice_log_string name;
    const struct sluice_log_string *int_names;    /* ni of them */
    const struct sluice_log_string *float_names;  /* nf of them */
};

/* One record: a (module, path) with both sides' counters. */
struct sluice_log_record {
    const struct sluice_log_module *module;
    uint64_t id;
    uint32_t flags;              /* 1: the "<other files>" aggregate */
    struct sluice_log_string path;
    const int64_t *app_int, *fs_int;       /* module->ni each */
    const double *app_float, *fs_float;    /* module->nf each */
};

/* One read or write of the per-call trace (TRACE regions, 3.1). */
struct sluice_log_segment {
    struct sluice_log_string path;  /* its file */
    uint8_t module;                 /* the record's module id (1 POSIX, 3 MPIIO) */
    uint8_t op;                     /* 0 read, 1 write */
    int64_t offset, length;         /* offset -1: not known */
    int64_t start_ns, end_ns;       /* since the process started */
};

/* The trace's segments in file order, and the calls traced but not kept
 * (beyond SLUICE_TRACE). 0 and 0 for a log without a trace. */
size_t sluice_log_nsegments(const struct sluice_log *log);
const struct sluice_log_segment *sluice_log_segment_at(const struct sluice_log *log, size_t i);
uint64_t sluice_log_trace_dropped(const struct sluice_log *log);
int sluice_log_has_trace(const struct sluice_log *log);

/* Read the log at `path`. 0 and *out set, or -1 with a message in err
 * (err may be NULL; a message longer than errlen is cut). */
int sluice_logreader_open(const char *path, struct sluice_log **out, char *err, size_t errlen);

/* The same from memory: `name` is used in messages only. The bytes are
 * copied; buf may be freed once this returns. */
int sluice_logreader_parse(const void *buf, size_t len, const char *name,
                           struct sluice_log **out, char *err, size_t errlen);

/* Free everything the log holds. NULL is allowed. */
void sluice_logreader_close(struct sluice_log *log);

const struct sluice_log_process *sluice_log_process(const struct sluice_log *log);

/* "exit", "SIGTERM", "_exit", "exec", or NULL for a value this reader does
 * not know (show it as "unknown(N)"). */
const char *sluice_log_end_reason_name(uint32_t end_reason);

/* PROCESS key/value strings (job_id, host, exe, cmdline, mode, paths,
 * version, and any a newer writer adds), in file order, duplicates kept. */
size_t sluice_log_ninfo(const struct sluice_log *log);
const struct sluice_log_kv *sluice_log_info_at(const struct sluice_log *log, size_t i);
/* The value of the last entry named `key`, or NULL. */
const struct sluice_log_string *sluice_log_info_get(const struct sluice_log *log, const char *key);

/* Modules of the SCHEMA region, in order of first appearance; a module id
 * described twice keeps its first place and its last description. */
size_t sluice_log_nmodules(const struct sluice_log *log);
const struct sluice_log_module *sluice_log_module_at(const struct sluice_log *log, size_t i);
const struct sluice_log_module *sluice_log_module_by_name(const struct sluice_log *log, const char *name);

/* Index of a counter by name: 0..ni-1 for an integer counter (*is_float set
 * to 0), 0..nf-1 for a float counter (*is_float set to 1), -1 if the module
 * has no such counter. A name listed twice gives its last position. */
int sluice_log_counter_index(const struct sluice_log_module *mod, const char *name, int *is_float);

/* Records in file order: MODULE regions in table order, records in region
 * order. Records of modules missing from the SCHEMA are skipped. */
size_t sluice_log_nrecords(const struct sluice_log *log);
const struct sluice_log_record *sluice_log_record_at(const struct sluice_log *log, size_t i);

#ifdef __cplusplus
}
#endif

#endif
