/* Path policy; see policy.h. The tables are filled once by the constructor,
 * but for the virtualenvs, which the interpreter names as it starts (see
 * runtime_tree_add): that table only grows, and is read without a lock. */
#include "core/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/diag.h"
#include "common/listsplit.h"
#include "common/pathnorm.h"
#include "core/config.h"
#include "sys/real.h"

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

/* ---- the interpreter's own files ---- */

/* A Python job opens hundreds of the interpreter's files (.pyc, site-packages,
 * pyvenv.cfg) before its first line; R and Julia jobs their libraries. They
 * are the runtime's, not the job's I/O, and are left out unless
 * SLUICE_RUNTIME_FILES. Two kinds of rule, both cheap at open time:
 *  - trees: the running interpreter's installation prefix, a conda prefix,
 *    an activated virtualenv or conda environment, R's and Julia's library
 *    paths from the environment, ~/.julia (found at load), and each
 *    virtualenv whose pyvenv.cfg the interpreter reads as it starts;
 *  - names, in any path: site-packages, dist-packages, __pycache__,
 *    site-library and R's <platform>-library components, and the files
 *    *.pyc, pyvenv.cfg, *._pth, pybuilddir.txt, python*.zip.
 * A tree that holds the working directory or the home directory is never
 * taken: the job's own files may be there. */
#define RUNTIME_TREES_MAX 16
static char runtime_tree_buf[RUNTIME_TREES_MAX][PATH_MAX];
static struct prefix runtime_trees[RUNTIME_TREES_MAX];
static atomic_int nruntime_trees;                           /* entries below it are complete */
static atomic_flag runtime_tree_adding = ATOMIC_FLAG_INIT;  /* one writer at a time */
static int runtime_files_kept;                              /* SLUICE_RUNTIME_FILES=1 */
static atomic_long runtime_left_out;                        /* calls on such files not recorded */
static char cwd_at_load[PATH_MAX];                          /* "" if unknown */
static char home_at_load[PATH_MAX];                         /* "" if unset */

#define NAME_IS(c, n, lit) ((n) == sizeof lit - 1 && memcmp((c), lit, sizeof lit - 1) == 0)
#define ENDS_WITH(c, n, lit) ((n) >= sizeof lit - 1 && memcmp((c) + (n) - (sizeof lit - 1), lit, sizeof lit - 1) == 0)

/* Add the absolute directory dir (not normalised yet) to the trees, unless
 * it is "/", holds the working or home directory, or is under a tree
 * already there. Safe to call while other threads read the table; a second
 * writer at the same time gives up (the names still catch its files). */
static void runtime_tree_add(const char *dir)
{
    int n;

    if (dir[0] != '/' || atomic_flag_test_and_set_explicit(&runtime_tree_adding, memory_order_acquire))
        return;
    n = atomic_load_explicit(&nruntime_trees, memory_order_relaxed);
    if (n < RUNTIME_TREES_MAX && sluice_path_absolute(AT_FDCWD, dir, runtime_tree_buf[n], PATH_MAX) == 0) {
        struct prefix p = prefix_of(runtime_tree_buf[n]);
        int taken = p.n > 0 && !(cwd_at_load[0] && under(cwd_at_load, &p)) &&
                    !(home_at_load[0] && under(home_at_load, &p));
        for (int i = 0; taken && i < n; i++)
            taken = !under(p.s, &runtime_trees[i]);
        if (taken) {
            runtime_trees[n] = p;
            atomic_store_explicit(&nruntime_trees, n + 1, memory_order_release);
        }
    }
    atomic_flag_clear_explicit(&runtime_tree_adding, memory_order_release);
}

/* Each absolute directory of a colon-separated list from the environment. */
static void runtime_trees_from_env(const char *name)
{
    const char *s = getenv(name);
    char one[PATH_MAX];
    int too_long;

    while (s && list_next(&s, ':', one, sizeof one, &too_long))
        if (!too_long)
            runtime_tree_add(one);
}

/* A directory that exists. */
static int is_dir(const char *path)
{
    struct stat st;
    return SLUICE_REAL(stat)(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* name is stem, or stem and a version (python3, python3.11, pypy3.10). */
static int versioned(const char *name, const char *stem)
{
    size_t n = strlen(stem);
    if (strncmp(name, stem, n) != 0)
        return 0;
    return strspn(name + n, "0123456789.") == strlen(name + n);
}

/* The installation prefix of the running program, when it is an
 * interpreter (PREFIX/bin/python3.11, PREFIX/bin/julia, R's
 * PREFIX/bin/exec/R) or lives in a conda prefix (one with conda-meta/). */
static void runtime_tree_of_exe(void)
{
    char exe[PATH_MAX], probe[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash, *base;

    if (n <= 0)
        return;
    exe[n] = '\0';
    if ((slash = strrchr(exe, '/')) == NULL)
        return;
    base = slash + 1;
    int interpreter = versioned(base, "python") || versioned(base, "pypy") || versioned(base, "julia") ||
                      strcmp(base, "R") == 0;
    *slash = '\0';
    if (strcmp(base, "R") == 0 && (slash = strrchr(exe, '/')) != NULL && strcmp(slash + 1, "exec") == 0)
        *slash = '\0';
    if ((slash = strrchr(exe, '/')) == NULL || strcmp(slash + 1, "bin") != 0)
        return;
    *slash = '\0';   /* exe is now the prefix */
    if (!interpreter) {
        snprintf(probe, sizeof probe, "%s/conda-meta", exe);
        if (!is_dir(probe))
            return;
    }
    runtime_tree_add(exe);
}

static void runtime_trees_init(void)
{
    const char *home = getenv("HOME");
    char dir[PATH_MAX];

    atomic_store_explicit(&nruntime_trees, 0, memory_order_relaxed);
    if (getcwd(cwd_at_load, sizeof cwd_at_load) == NULL)
        cwd_at_load[0] = '\0';
    home_at_load[0] = '\0';
    if (home && home[0] == '/')
        (void)sluice_path_absolute(AT_FDCWD, home, home_at_load, sizeof home_at_load);
    runtime_tree_of_exe();
    runtime_trees_from_env("VIRTUAL_ENV");
    runtime_trees_from_env("CONDA_PREFIX");
    runtime_trees_from_env("R_HOME");
    runtime_trees_from_env("R_LIBS");
    runtime_trees_from_env("R_LIBS_USER");
    runtime_trees_from_env("R_LIBS_SITE");
    runtime_trees_from_env("JULIA_DEPOT_PATH");
    if (home_at_load[0] && snprintf(dir, sizeof dir, "%s/.julia", home_at_load) < (int)sizeof dir)
        runtime_tree_add(dir);
}

/* The last component of a path names one of the runtime's own files. */
static int runtime_file_name(const char *c, size_t n)
{
    return ENDS_WITH(c, n, ".pyc") || NAME_IS(c, n, "pyvenv.cfg") || ENDS_WITH(c, n, "._pth") ||
           NAME_IS(c, n, "pybuilddir.txt") || (n > 10 && memcmp(c, "python", 6) == 0 && ENDS_WITH(c, n, ".zip"));
}

/* The component around a '-' of the path names one of the runtime's trees
 * that have a '-' in their name: site-packages, dist-packages, site-library,
 * or R's user library R/<platform>-library. */
static int runtime_dash_tree(const char *path, const char *dash)
{
    const char *c;

    if (strncmp(dash, "-packages", 9) == 0 && (dash[9] == '/' || dash[9] == '\0'))
        return dash - path >= 5 && dash[-5] == '/' && (memcmp(dash - 4, "site", 4) == 0 || memcmp(dash - 4, "dist", 4) == 0);
    if (strncmp(dash, "-library", 8) != 0 || (dash[8] != '/' && dash[8] != '\0'))
        return 0;
    if (dash - path >= 5 && dash[-5] == '/' && memcmp(dash - 4, "site", 4) == 0)
        return 1;
    for (c = dash; c[-1] != '/'; c--)   /* the path is absolute: a '/' comes first */
        ;
    return c - path >= 3 && c[-2] == 'R' && c[-3] == '/';
}

/* The virtualenv of a pyvenv.cfg the program opens, if it exists: the
 * interpreter reads it first thing, before anything else of the venv. */
static void runtime_venv_seen(const char *cfg_path, size_t dir_len)
{
    char dir[PATH_MAX];
    struct stat st;

    if (dir_len == 0 || dir_len >= sizeof dir || SLUICE_REAL(stat)(cfg_path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    memcpy(dir, cfg_path, dir_len);
    dir[dir_len] = '\0';
    runtime_tree_add(dir);
}

/* 1 if an absolute normalised path is one of the runtime's own files. A
 * few vector scans (strrchr, strchr) rather than a look at every byte:
 * this runs on every open and path call. */
static int runtime_file(const char *path)
{
    int n = atomic_load_explicit(&nruntime_trees, memory_order_acquire);
    const char *base = strrchr(path, '/') + 1;
    size_t len = strlen(base);

    for (int i = 0; i < n; i++)
        if (path[1] == runtime_trees[i].s[1] && under(path, &runtime_trees[i]))
            return 1;
    if (runtime_file_name(base, len)) {
        if (NAME_IS(base, len, "pyvenv.cfg"))
            runtime_venv_seen(path, (size_t)(base - 1 - path));
        return 1;
    }
    /* __pycache__ holds files, never directories */
    if (NAME_IS(base, len, "__pycache__") || (base - path >= 13 && memcmp(base - 13, "/__pycache__/", 13) == 0))
        return 1;
    for (const char *dash = strchr(path, '-'); dash; dash = strchr(dash + 1, '-'))
        if (runtime_dash_tree(path, dash))
            return 1;
    return 0;
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
    runtime_files_kept = sluice_cfg.runtime_files;
    if (!runtime_files_kept)
        runtime_trees_init();
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
    int runtime = !runtime_files_kept && runtime_file(abs_path);
    int recorded;
    if (ninclude > 0) {
        recorded = 0;
        for (int i = 0; i < ninclude && !recorded; i++)
            recorded = under(abs_path, &includes[i]);
    } else {
        recorded = !under_system(abs_path);
    }
    if (recorded && runtime) {
        /* left out, and said so in one line of the report */
        atomic_fetch_add_explicit(&runtime_left_out, 1, memory_order_relaxed);
        return 0;
    }
    return recorded;
}

long sluice_policy_runtime_left_out(void)
{
    return atomic_load_explicit(&runtime_left_out, memory_order_relaxed);
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
