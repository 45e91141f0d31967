/* Path policy; see policy.h. The tables are filled once by the constructor. */
#include "core/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/listsplit.h"
#include "common/pathnorm.h"

#define POLICY_MAX_PREFIXES 32

/* A prefix and its length (without trailing '/'; "/" is 0: everything). */
struct prefix {
    const char *s;
    size_t n;
};
#define PREFIX(lit) {lit, sizeof lit - 1}

static const struct prefix system_prefixes[] = {
    PREFIX("/proc"), PREFIX("/sys"), PREFIX("/dev"), PREFIX("/etc"), PREFIX("/usr"), PREFIX("/lib"),
    PREFIX("/lib32"), PREFIX("/lib64"), PREFIX("/libx32"), PREFIX("/bin"), PREFIX("/sbin"),
    PREFIX("/boot"), PREFIX("/run"), PREFIX("/var/run"), PREFIX("/var/lib"), PREFIX("/var/cache"),
    PREFIX("/var/log"),
};

static char include_buf[4096];
static struct prefix includes[POLICY_MAX_PREFIXES];
static int ninclude;
static char log_dir_abs[PATH_MAX];
static struct prefix log_dir_prefix;

/* The MPI runtime's files: its session directories (shared-memory
 * segments, lock and rendezvous files) and, in an Open MPI rank, the
 * per-user parameter files it looks for in $HOME/.openmpi and $HOME/.pmix.
 * They belong to the MPI library, not to the program. */
static const char *const runtime_dir_env[] = {"OMPI_MCA_orte_top_session_dir", "PMIX_SERVER_TMPDIR"};
static const char *const runtime_home_dirs[] = {".openmpi", ".pmix"};
#define RUNTIME_DIRS_MAX 4
static char runtime_buf[RUNTIME_DIRS_MAX][PATH_MAX];
static struct prefix runtime_dirs[RUNTIME_DIRS_MAX];
static int nruntime;

/* sluice_path_under with the prefix's length known (as sluice_prefix_of makes it). */
static int under(const char *path, const struct prefix *p)
{
    if (p->n == 0)
        return path[0] == '/';
    return strncmp(path, p->s, p->n) == 0 && (path[p->n] == '\0' || path[p->n] == '/');
}

static struct prefix prefix_of(const char *s)
{
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        n--;
    return (struct prefix){s, n == 1 && s[0] == '/' ? 0 : n};
}

/* One more runtime directory (absolute, never "/"; a directory under one
 * already there adds nothing). */
static void runtime_dir_add(const char *dir)
{
    if (nruntime == RUNTIME_DIRS_MAX || dir[0] != '/' ||
        sluice_path_absolute(AT_FDCWD, dir, runtime_buf[nruntime], PATH_MAX) != 0)
        return;
    struct prefix p = prefix_of(runtime_buf[nruntime]);
    for (int i = 0; i < nruntime; i++)
        if (under(p.s, &runtime_dirs[i]))
            return;
    if (p.n > 0)
        runtime_dirs[nruntime++] = p;
}

static void runtime_dirs_init(void)
{
    const char *v, *home = getenv("HOME");
    char dir[PATH_MAX];

    nruntime = 0;
    for (size_t i = 0; i < sizeof runtime_dir_env / sizeof *runtime_dir_env; i++)
        if ((v = getenv(runtime_dir_env[i])) != NULL)
            runtime_dir_add(v);
    if (nruntime > 0 && home && home[0] == '/' && strcmp(home, "/") != 0)
        for (size_t i = 0; i < sizeof runtime_home_dirs / sizeof *runtime_home_dirs; i++)
            if (snprintf(dir, sizeof dir, "%s/%s", home, runtime_home_dirs[i]) < (int)sizeof dir)
                runtime_dir_add(dir);
}

int sluice_policy_init(const char *paths, const char *log_dir, int runtime_files)
{
    char *p = include_buf, one[PATH_MAX];
    const char *s = paths;
    int too_long;

    ninclude = 0;
    while (ninclude < POLICY_MAX_PREFIXES && list_next(&s, ':', one, sizeof one, &too_long)) {
        if (one[0] && sluice_path_absolute(AT_FDCWD, one, p, sizeof include_buf - (size_t)(p - include_buf)) == 0) {
            includes[ninclude++] = prefix_of(p);
            p += strlen(p) + 1;
        }
    }
    log_dir_abs[0] = '\0';
    if (log_dir && *log_dir)
        (void)sluice_path_absolute(AT_FDCWD, log_dir, log_dir_abs, sizeof log_dir_abs);
    log_dir_prefix = prefix_of(log_dir_abs);
    nruntime = 0;
    if (!runtime_files)
        runtime_dirs_init();
    return 0;
}

/* Under one of the system directories (the first byte sorts most out). */
static int under_system(const char *path)
{
    for (size_t i = 0; i < sizeof system_prefixes / sizeof *system_prefixes; i++)
        if (path[1] == system_prefixes[i].s[1] && under(path, &system_prefixes[i]))
            return 1;
    return 0;
}

int sluice_policy_skip_fast(const char *path)
{
    /* with --path, the include list decides after resolution */
    if (ninclude > 0 || path[0] != '/' || strstr(path, "/.") != NULL)
        return 0;   /* relative, or "." / ".." to resolve first */
    return under_system(path);
}

int sluice_policy_records(const char *abs_path)
{
    if (log_dir_abs[0] && under(abs_path, &log_dir_prefix))
        return 0;
    for (int i = 0; i < nruntime; i++)
        if (under(abs_path, &runtime_dirs[i]))
            return 0;
    if (ninclude > 0) {
        for (int i = 0; i < ninclude; i++)
            if (under(abs_path, &includes[i]))
                return 1;
        return 0;
    }
    return !under_system(abs_path);
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
