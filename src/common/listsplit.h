/*
 * Walking a separated list from the environment ("a:b:c", "x=1,y=2")
 * without allocating: each call copies the next item into a buffer.
 */
#ifndef SLUICE_COMMON_LISTSPLIT_H
#define SLUICE_COMMON_LISTSPLIT_H

#include <stddef.h>

/* Copy the item at *s (up to sep or the end) into item (len bytes) and
 * move *s past it. Returns 1 when an item was taken (it may be empty, or
 * cut to "" when it does not fit: *too_long is then set), 0 at the end. */
int list_next(const char **s, char sep, char *item, size_t len, int *too_long);

#endif
