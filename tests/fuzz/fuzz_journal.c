/*
 * Fuzz target for stage journal entries (src/stage/journal_parse.c): any
 * bytes either parse into a well-formed entry (a safe id, an absolute file
 * path, a mode of permission bits, a known state) whose text, as the
 * writer formats it, parses back to the same entry, or are refused.
 * Built with -fsanitize=fuzzer for libFuzzer, or linked with onefile.c to
 * replay files without it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stage/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes: a read past it is the sanitizers' to see */
    char *buf = malloc(size ? size : 1);
    static struct journal_entry e, e2;
    static char again[16384];

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (journal_parse(buf, size, &e) == 0) {
        size_t idlen = strlen(e.id);
        if (idlen == 0 || idlen >= sizeof e.id || strchr(e.id, '/') || e.id[0] == '.' || e.mode > 07777 ||
            e.path[0] != '/' || e.state > JOURNAL_REMOVED || e.pid <= 0)
            abort();
        ssize_t n = journal_format(&e, again, sizeof again);
        if (n < 0 || journal_parse(again, (size_t)n, &e2) != 0 || memcmp(&e, &e2, sizeof e) != 0)
            abort();
    }
    free(buf);
    return 0;
}
