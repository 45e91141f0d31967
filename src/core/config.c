/* Settings from the environment; see config.h and config.def. */
#include "core/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"

struct sluice_config sluice_cfg;

int sluice_config_parse_int(const char *s, int64_t *out)
{
    int64_t v = 0;
    const char *p = s;

    if (!*p)
        return -EINVAL;
    while (*p >= '0' && *p <= '9') {
        if (v > (INT64_MAX - 9) / 10)
            return -EINVAL;
        v = v * 10 + (*p++ - '0');
    }
    if (p == s)
        return -EINVAL;
    int shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    default: break;
    }
    if (*p)
        return -EINVAL;
    if (shift && v > (INT64_MAX >> shift))
        return -EINVAL;
    *out = v << shift;
    return 0;
}

int sluice_config_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off", ""};

    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (strcasecmp(s, yes[i]) == 0)
            return *out = 1, 0;
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (strcasecmp(s, no[i]) == 0)
            return *out = 0, 0;
    return -EINVAL;
}

static int config_set_STR(char *dst, const char *env, const char *val)
{
    size_t n = strlen(val);
    if (n >= SLUICE_CONFIG_STR_MAX) {
        sluice_diag("%s is longer than %d bytes; ignored", env, SLUICE_CONFIG_STR_MAX - 1);
        return -1;
    }
    memcpy(dst, val, n + 1);
    return 0;
}

static int config_set_INT(int64_t *dst, const char *env, const char *val)
{
    if (sluice_config_parse_int(val, dst) == 0)
        return 0;
    sluice_diag("%s='%.64s' is not a non-negative integer; using the default", env, val);
    return -1;
}

static int config_set_BOOL(int *dst, const char *env, const char *val)
{
    if (sluice_config_parse_bool(val, dst) == 0)
        return 0;
    sluice_diag("%s='%.64s' is not 0/1/yes/no; using the default", env, val);
    return -1;
}

int sluice_config_load(void)
{
    int bad = 0;
    const char *v;

#define SLUICE_CONFIG(field, env, type, def, toml, flag, help)                       \
    (void)config_set_##type(&sluice_cfg.field SLUICE_CONFIG_ADDR_##type, \
                            env, def);                                   \
    if ((v = getenv(env)) != NULL &&                                     \
        config_set_##type(&sluice_cfg.field SLUICE_CONFIG_ADDR_##type, env, v) != 0) { \
        (void)config_set_##type(&sluice_cfg.field SLUICE_CONFIG_ADDR_##type, env, def); \
        bad++;                                                           \
    }
#define SLUICE_CONFIG_ADDR_STR [0]
#define SLUICE_CONFIG_ADDR_INT
#define SLUICE_CONFIG_ADDR_BOOL
#include "core/config.def"
#undef SLUICE_CONFIG
    return bad;
}
