/* A tiny TAP-like harness: CHECK(cond) and CHECK_EQ(a, b); main() ends with
 * done(), which prints "N passed, N failed" and returns non-zero on failure. */
#ifndef SLUICE_TEST_HARNESS_H
#define SLUICE_TEST_HARNESS_H

#include <stdio.h>
#include <string.h>

static int t_passed, t_failed;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (cond) {                                                        \
            t_passed++;                                                    \
        } else {                                                           \
            t_failed++;                                                    \
            printf("not ok %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
        }                                                                  \
    } while (0)

#define CHECK_EQ(a, b)                                                     \
    do {                                                                   \
        long long a_ = (long long)(a), b_ = (long long)(b);                \
        if (a_ == b_) {                                                    \
            t_passed++;                                                    \
        } else {                                                           \
            t_failed++;                                                    \
            printf("not ok %s:%d: %s == %lld, want %lld\n", __FILE__,      \
                   __LINE__, #a, a_, b_);                                  \
        }                                                                  \
    } while (0)

#define CHECK_STR(a, b)                                                    \
    do {                                                                   \
        const char *a_ = (a), *b_ = (b);                                   \
        if (strcmp(a_, b_) == 0) {                                         \
            t_passed++;                                                    \
        } else {                                                           \
            t_failed++;                                                    \
            printf("not ok %s:%d: %s == \"%s\", want \"%s\"\n", __FILE__,  \
                   __LINE__, #a, a_, b_);                                  \
        }                                                                  \
    } while (0)

static int done(void)
{
    printf("%d passed, %d failed\n", t_passed, t_failed);
    return t_failed != 0;
}

#endif
