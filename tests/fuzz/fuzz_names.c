/*
 * Fuzz target for the stage index's link targets ("ID MODE PATH",
 * src/stage/names_parse.c): any bytes either parse into an entry whose
 * parts are well formed and lie inside the input, or are refused.
 * Built with -fsanitize=fuzzer for libFuzzer, or linked with onefile.c to
 * replay files without it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stage/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes: a read past it is the sanitizers' to see */
    char *buf = malloc(size ? size : 1);
    struct names_entry e;
    const char *path;
    size_t plen;

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (names_parse(buf, size, &e, &path, &plen) == 0) {
        size_t idlen = strlen(e.id);
        if (idlen == 0 || idlen >= sizeof e.id || strchr(e.id, '/') || e.id[0] == '.' || e.mode > 07777 ||
            path < buf || path + plen != buf + size || plen == 0 || path[0] != '/' || memchr(path, '\0', plen))
            abort();
    }
    free(buf);
    return 0;
}
