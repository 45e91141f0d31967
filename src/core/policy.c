/* Path policy; see policy.h. The tables are filled once by the constructor. */
#include "core/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/diag.h"
#include "common/listsplit.h"
#include "common/pathnorm.h"

#define POLICY_MAX_PREFIXES 32

static const char *const system_prefixes[] = {
    "/proc", "/sys", "/dev", "/etc", "/usr", "/lib", "/lib32", "/lib64", "/libx32",
    "/bin", "/sbin", "/boot", "/run", "/var/run", "/var/lib", "/var/cache", "/var/log",
};

static char include_buf[4096];
static const char *includes[POLICY_MAX_PREFIXES];
static int ninclude;
static char log_dir_abs[PATH_MAX];

int sluice_policy_init(const char *paths, const char *log_dir)
{
    char *p = include_buf, one[PATH_MAX];
    const char *s = paths;
    int too_long;

    ninclude = 0;
    while (ninclude < POLICY_MAX_PREFIXES && list_next(&s, ':', one, sizeof one, &too_long)) {
        if (one[0] && sluice_path_absolute(AT_FDCWD, one, p, sizeof include_buf - (size_t)(p - include_buf)) == 0) {
            includes[ninclude++] = p;
            p += strlen(p) + 1;
        }
    }
    if (log_dir && *log_dir)
        (void)sluice_path_absolute(AT_FDCWD, log_dir, log_dir_abs, sizeof log_dir_abs);
    return 0;
}

int sluice_policy_skip_fast(const char *path)
{
    if (path[0] != '/' || strstr(path, "/.") != NULL)
        return 0;   /* relative, or "." / ".." to resolve first */
    if (ninclude == 0) {
        for (size_t i = 0; i < sizeof system_prefixes / sizeof *system_prefixes; i++)
            if (sluice_path_under(path, system_prefixes[i]))
                return 1;
    }
    return 0;
}

int sluice_policy_records(const char *abs_path)
{
    if (log_dir_abs[0] && sluice_path_under(abs_path, log_dir_abs))
        return 0;
    if (ninclude > 0) {
        for (int i = 0; i < ninclude; i++)
            if (sluice_path_under(abs_path, includes[i]))
                return 1;
        return 0;
    }
    for (size_t i = 0; i < sizeof system_prefixes / sizeof *system_prefixes; i++)
        if (sluice_path_under(abs_path, system_prefixes[i]))
            return 0;
    return 1;
}

/* ---- modes ---- */

static const char *const mode_names[SLUICE_MODE_COUNT] = {
#define SLUICE_MODE(id, name, tiers, help) [SLUICE_MODE_##id] = name,
#include "core/modes.def"
#undef SLUICE_MODE
};

static enum sluice_mode default_mode = SLUICE_MODE_PROFILE;
static char mode_prefix_buf[4096];
static struct {
    const char *prefix;
    size_t len;
    enum sluice_mode mode;
} mode_rules[POLICY_MAX_PREFIXES];
static int nmode_rules;
static unsigned modes_used = 1u << SLUICE_MODE_PROFILE;   /* bits of the modes some path may get */

/* "profile, buffer, ..." for messages. */
static const char *mode_list(void)
{
    static char list[128];
    if (!list[0])
        for (int i = 0; i < SLUICE_MODE_COUNT; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", mode_names[i]);
    return list;
}

int sluice_mode_from_name(const char *name)
{
    for (int i = 0; i < SLUICE_MODE_COUNT; i++)
        if (strcmp(name, mode_names[i]) == 0)
            return i;
    return -1;
}

const char *sluice_mode_name(enum sluice_mode m)
{
    return (unsigned)m < SLUICE_MODE_COUNT ? mode_names[m] : "?";
}

int sluice_policy_init_modes(const char *dflt, const char *policy)
{
    int bad = 0, m = sluice_mode_from_name(dflt), too_long;
    char *out = mode_prefix_buf, item[PATH_MAX];
    const char *s = policy;

    if (m < 0) {
        sluice_diag("SLUICE_MODE=%s is not a mode (%s); using profile", dflt, mode_list());
        bad++;
        m = SLUICE_MODE_PROFILE;
    }
    default_mode = (enum sluice_mode)m;
    nmode_rules = 0;
    while (nmode_rules < POLICY_MAX_PREFIXES && list_next(&s, ',', item, sizeof item, &too_long)) {
        if (too_long) {
            sluice_diag("SLUICE_POLICY has an item longer than a path; ignored");
            bad++;
        } else if (item[0]) {
            char *eq = strrchr(item, '=');
            int im = eq ? sluice_mode_from_name(eq + 1) : -1;
            size_t room = sizeof mode_prefix_buf - (size_t)(out - mode_prefix_buf);
            if (eq)
                *eq = '\0';
            if (im < 0 || !item[0] || sluice_path_absolute(AT_FDCWD, item, out, room) != 0) {
                if (eq)
                    *eq = '=';   /* shown as given */
                sluice_diag("SLUICE_POLICY item '%s' is not PREFIX=MODE with MODE one of %s; ignored", item,
                            mode_list());
                bad++;
            } else {
                mode_rules[nmode_rules].prefix = out;
                mode_rules[nmode_rules].len = strlen(out);
                mode_rules[nmode_rules].mode = (enum sluice_mode)im;
                nmode_rules++;
                out += strlen(out) + 1;
            }
        }
    }
    modes_used = 1u << default_mode;
    for (int i = 0; i < nmode_rules; i++)
        modes_used |= 1u << mode_rules[i].mode;
    return bad;
}

unsigned sluice_policy_modes_used(void)
{
    return modes_used;
}

enum sluice_mode sluice_policy_mode(const char *abs_path)
{
    enum sluice_mode m = default_mode;
    size_t best = 0;

    for (int i = 0; i < nmode_rules; i++)
        if (mode_rules[i].len >= best && sluice_path_under(abs_path, mode_rules[i].prefix)) {
            best = mode_rules[i].len;
            m = mode_rules[i].mode;
        }
    return m;
}
