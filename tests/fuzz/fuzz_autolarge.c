/*
 * Fuzz target for SLUICE_DIRECT_FROM ("PREFIX=SIZE[,...]",
 * src/core/autolarge.c): any string either gives rules whose prefixes are
 * absolute, normalised, NUL-terminated inside the table and of the length
 * recorded, or leaves items out; a look-up never reads outside them.
 * Built with -fsanitize=fuzzer for libFuzzer, or linked with onefile.c to
 * replay files without it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/autolarge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct auto_large_table t;
    char *spec = malloc(size + 1);

    if (!spec)
        return 0;
    memcpy(spec, data, size);
    spec[size] = '\0';   /* (the environment's strings end at their first NUL) */
    int bad = auto_large_parse(spec, &t);
    if (bad < 0 || t.n < 0 || t.n > AUTO_LARGE_RULES_MAX)
        abort();
    for (int i = 0; i < t.n; i++) {
        const struct auto_large_rule *r = &t.rule[i];
        if (r->prefix < t.buf || r->prefix + r->len >= t.buf + sizeof t.buf || r->prefix[0] != '/' ||
            strlen(r->prefix) != r->len || r->large < 0 || strstr(r->prefix, "//") || strstr(r->prefix, "/./"))
            abort();
        if (auto_large_of(&t, r->prefix, -1) < 0)
            abort();   /* (its own prefix matches a rule, whose size is never negative) */
    }
    (void)auto_large_of(&t, "/", 1);
    free(spec);
    return 0;
}
