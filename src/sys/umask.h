/*
 * The process's umask as the program last set it. Reading the umask takes
 * two umask() calls (not safe while other threads create files), so sluice
 * reads it once at load and follows every umask() the program makes.
 */
#ifndef SLUICE_SYS_UMASK_H
#define SLUICE_SYS_UMASK_H

#include <sys/types.h>

/* At load, before any thread exists. */
void sluice_umask_init(void);

/* The umask now in force. */
mode_t sluice_umask_get(void);

/* The program set it (the umask wrapper). */
void sluice_umask_note(mode_t m);

#endif
