/* The first-write size from which a staged file goes straight through, by path; see autolarge.h. */
#include "core/autolarge.h"

#include <limits.h>
#include <string.h>

#include "common/diag.h"
#include "common/listsplit.h"
#include "common/pathnorm.h"
#include "core/config.h"

int auto_large_parse(const char *spec, struct auto_large_table *t)
{
    char item[PATH_MAX + 32];
    char *out = t->buf;
    int bad = 0, too_long;

    t->n = 0;
    while (list_next(&spec, ',', item, sizeof item, &too_long)) {
        if (!item[0] && !too_long)
            continue;
        char *eq = strrchr(item, '=');
        int64_t large;
        if (too_long || !eq || item[0] != '/' || sluice_config_parse_int(eq + 1, &large) != 0 ||
            t->n == AUTO_LARGE_RULES_MAX) {
            bad++;
            continue;
        }
        *eq = '\0';
        size_t n = sluice_path_normalize(item);
        if (n + 1 > sizeof t->buf - (size_t)(out - t->buf)) {
            bad++;
            continue;
        }
        memcpy(out, item, n + 1);
        t->rule[t->n++] = (struct auto_large_rule){out, n, large};
        out += n + 1;
    }
    return bad;
}

int64_t auto_large_of(const struct auto_large_table *t, const char *abs_path, int64_t dflt)
{
    size_t best = 0;
    int64_t large = dflt;

    for (int i = 0; i < t->n; i++)
        if (t->rule[i].len >= best && sluice_path_under(abs_path, t->rule[i].prefix)) {
            best = t->rule[i].len;
            large = t->rule[i].large;
        }
    return large;
}

static struct auto_large_table auto_large_table;

void sluice_auto_large_init(void)
{
    int bad = auto_large_parse(sluice_cfg.direct_from, &auto_large_table);
    if (bad)
        sluice_diag("SLUICE_DIRECT_FROM='%.200s': %d item%s not /PREFIX=SIZE; left out", sluice_cfg.direct_from,
                    bad, bad == 1 ? " is" : "s are");
}

int64_t sluice_auto_large(const char *abs_path, int auto_mode)
{
    return auto_large_of(&auto_large_table, abs_path, auto_mode ? sluice_cfg.auto_large : 0);
}
