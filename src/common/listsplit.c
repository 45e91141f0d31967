/* Separated lists; see listsplit.h. */
#include "common/listsplit.h"

#include <string.h>

int list_next(const char **s, char sep, char *item, size_t len, int *too_long)
{
    const char *p = *s, *e;
    size_t n;

    if (!p || !*p)
        return 0;
    e = strchr(p, sep);
    n = e ? (size_t)(e - p) : strlen(p);
    *too_long = n >= len;
    if (*too_long)
        n = 0;
    memcpy(item, p, n);
    item[n] = '\0';
    *s = e ? e + 1 : p + strlen(p);
    return 1;
}
