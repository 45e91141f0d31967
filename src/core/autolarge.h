/*
 * The first-write size from which a staged file goes straight through, by
 * path (SLUICE_DIRECT_FROM, "PREFIX=SIZE[,PREFIX=SIZE...]"): a staged file
 * under PREFIX goes to the shared file system at a first write of at least
 * SIZE, in stage and in auto mode; elsewhere auto's SLUICE_AUTO_LARGE
 * decides, and stage mode keeps every file on the tier. The longest matching prefix wins. `sluice run
 * --fs FS.json` writes one rule for the calibrated file system's mount
 * point: the size from which calibrate found a staged write no cheaper
 * than a direct one there (python/sluice/predict.py, auto_large_of), so
 * auto decides by what that file system was measured to charge.
 */
#ifndef SLUICE_CORE_AUTOLARGE_H
#define SLUICE_CORE_AUTOLARGE_H

#include <stddef.h>
#include <stdint.h>

#define AUTO_LARGE_RULES_MAX 16

struct auto_large_rule {
    const char *prefix;   /* absolute, normalised, in the table's buffer */
    size_t len;
    int64_t large;        /* bytes; 0: staged whatever the size */
};

struct auto_large_table {
    char buf[4096];
    struct auto_large_rule rule[AUTO_LARGE_RULES_MAX];
    int n;
};

/* Parse spec into t (nothing allocated). An item that is not
 * /ABSOLUTE/PREFIX=SIZE (SIZE an integer with an optional K, M or G) is
 * left out; how many were is returned. */
int auto_large_parse(const char *spec, struct auto_large_table *t);

/* The size for an absolute normalised path: its longest matching rule's,
 * else dflt. */
int64_t auto_large_of(const struct auto_large_table *t, const char *abs_path, int64_t dflt);

/* The process's table, from sluice_cfg.direct_from (constructor; a bad
 * item is said once on stderr), and the size for a path by it: a rule's,
 * else SLUICE_AUTO_LARGE for auto mode's file, 0 (never) for stage's. */
void sluice_auto_large_init(void);
int64_t sluice_auto_large(const char *abs_path, int auto_mode);

#endif
