/*
 * Diagnostics from inside the application's process: one line to stderr,
 * prefixed "sluice: ", written with the real write(2) (stdio is intercepted
 * and may be in any state). Formatting uses vsnprintf into a stack buffer,
 * with no floating point, so it allocates nothing.
 */
#ifndef SLUICE_COMMON_DIAG_H
#define SLUICE_COMMON_DIAG_H

#include <stddef.h>

void sluice_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write all of buf to fd with the real write, looping over short writes and
 * EINTR. Returns 0 or -errno. Async-signal-safe. */
int sluice_write_all(int fd, const void *buf, size_t len);

#endif
