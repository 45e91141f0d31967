/*
 * The library's settings, read once from the environment at load (see
 * config.def for every setting). A malformed value is reported once on
 * stderr and the default is used: a bad setting must never stop the
 * application.
 */
#ifndef SLUICE_CORE_CONFIG_H
#define SLUICE_CORE_CONFIG_H

#include <stdint.h>

#define SLUICE_CONFIG_STR_MAX 4096

struct sluice_config {
#define SLUICE_CONFIG(field, env, type, def, toml, flag, help) SLUICE_CONFIG_FIELD_##type(field)
#define SLUICE_CONFIG_FIELD_STR(f)  char f[SLUICE_CONFIG_STR_MAX];
#define SLUICE_CONFIG_FIELD_INT(f)  int64_t f;
#define SLUICE_CONFIG_FIELD_BOOL(f) int f;
#include "core/config.def"
#undef SLUICE_CONFIG
};

extern struct sluice_config sluice_cfg;

/* Fill sluice_cfg from defaults and the environment. Returns the number of
 * malformed settings (each reported once). Allocates nothing. */
int sluice_config_load(void);

/* Parse one value; 0 on success, -EINVAL if malformed. Exposed for the unit
 * test and the fuzz target. */
int sluice_config_parse_int(const char *s, int64_t *out);
int sluice_config_parse_bool(const char *s, int *out);

#endif
