/* The index link target's parser; see names.h. Apart from names.c so that
 * the fuzz target (tests/fuzz/fuzz_names.c) links it alone. */
#include <string.h>

#include "stage/names.h"

int names_parse(const char *target, size_t n, struct names_entry *e, const char **path, size_t *plen)
{
    const char *sp1 = memchr(target, ' ', n), *sp2;
    size_t idlen;
    unsigned mode = 0;

    if (!sp1 || (idlen = (size_t)(sp1 - target)) == 0 || idlen >= sizeof e->id)
        return -1;
    for (size_t i = 0; i < idlen; i++)
        if (target[i] == '/' || target[i] == '\0' || target[i] == '\n' || (i == 0 && target[i] == '.'))
            return -1;
    sp2 = memchr(sp1 + 1, ' ', n - idlen - 1);
    if (!sp2 || sp2 - sp1 - 1 < 1 || sp2 - sp1 - 1 > 5)
        return -1;
    for (const char *p = sp1 + 1; p < sp2; p++) {
        if (*p < '0' || *p > '7')
            return -1;
        mode = mode * 8 + (unsigned)(*p - '0');
    }
    if (mode > 07777 || (size_t)(sp2 + 1 - target) >= n || sp2[1] != '/')
        return -1;
    memcpy(e->id, target, idlen);
    e->id[idlen] = '\0';
    e->mode = (mode_t)mode;
    *path = sp2 + 1;
    *plen = n - (size_t)(sp2 + 1 - target);
    return memchr(*path, '\0', *plen) ? -1 : 0;
}
