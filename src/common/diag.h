/*
 * Diagnostics from inside the application's process: one line to the
 * program's stderr (only while descriptor 2 is still the file it was at load),
 * prefixed "sluice: ", written with the real write(2) (stdio is intercepted
 * and may be in any state). Formatting uses vsnprintf into a stack buffer,
 * with no floating point, so it allocates nothing.
 */
#ifndef SLUICE_COMMON_DIAG_H
#define SLUICE_COMMON_DIAG_H

#include <stddef.h>

void sluice_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* At load, before any message: remember which file descriptor 2 is (and
 * SLUICE_QUIET). Messages are dropped once 2 names another file or none. */
void sluice_diag_init(void);

/* Write all of buf to fd with the real write, looping over short writes and
 * EINTR. Returns 0 or -errno. Async-signal-safe. */
int sluice_write_all(int fd, const void *buf, size_t len);

#endif
