/* Unit tests link the config parser without the preload library: its
 * diagnostics go to stderr through plain stdio here. */
#include <stdarg.h>
#include <stdio.h>

#include "common/diag.h"

void sluice_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sluice: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
