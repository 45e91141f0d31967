/*
 * Writes a file, closes it, then dies of a signal: SIGSEGV (a null
 * pointer), SIGABRT (abort) or SIGBUS/SIGFPE (raised). Its log must still
 * be written (tests/python/test_profile_truth.py). With "noclose" it
 * leaves the stream open and returns from main: exit() writes what the
 * stream holds.
 *
 *   crash_after_close FILE segv|abort|bus|fpe|noclose
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    FILE *f = fopen(argv[1], "w");
    if (!f)
        return 1;
    for (int i = 0; i < 100; i++)
        fprintf(f, "line %d\n", i);
    if (strcmp(argv[2], "noclose") == 0)
        return 0;
    fclose(f);
    if (strcmp(argv[2], "abort") == 0)
        abort();
    if (strcmp(argv[2], "bus") == 0)
        raise(SIGBUS);
    if (strcmp(argv[2], "fpe") == 0)
        raise(SIGFPE);
    volatile int *volatile p = NULL;
    *p = 1;
    return 0;
}
