/* Path policy; see policy.h. The tables are filled once by the constructor. */
#include "core/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

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
    char *p = include_buf;
    const char *s = paths;

    ninclude = 0;
    while (*s && ninclude < POLICY_MAX_PREFIXES) {
        const char *e = strchr(s, ':');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char one[PATH_MAX];
        if (len > 0 && len < sizeof one) {
            memcpy(one, s, len);
            one[len] = '\0';
            if (sluice_path_absolute(AT_FDCWD, one, p, sizeof include_buf - (size_t)(p - include_buf)) == 0) {
                includes[ninclude++] = p;
                p += strlen(p) + 1;
            }
        }
        if (!e)
            break;
        s = e + 1;
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
