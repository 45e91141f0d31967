/*
 * Pointers the program hands us. The kernel answers EFAULT for a path it
 * cannot read; sluice must never crash where the kernel would have said so.
 * The cheap rule: call the kernel first and read the path only if it did not
 * answer EFAULT. Where sluice must read a path before any kernel call (to
 * choose a file's mode, or to answer from the stage tier), it asks first.
 */
#ifndef SLUICE_SYS_USERPTR_H
#define SLUICE_SYS_USERPTR_H

#include <stdint.h>

/* Certainly unreadable (NULL and the first page): no system call needed. */
static inline int sluice_ptr_null_page(const void *p)
{
    return (uintptr_t)p < 4096;
}

/* 1 when the NUL-terminated string at p can be read (up to PATH_MAX bytes
 * are checked), 0 when reading it would fault. One system call that copies
 * the rest of p's page, usually enough. */
int sluice_user_str_ok(const char *p);

#endif
