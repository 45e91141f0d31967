/*
 * What the wrapper layer adds to the bottom layer (sys/guard.h, sys/real.h):
 * the export marker and the process's end. Nothing below the wrappers
 * includes this header.
 */
#ifndef SLUICE_INTERPOSE_H
#define SLUICE_INTERPOSE_H

#include <errno.h>
#include <sys/types.h>

#include "sys/guard.h"
#include "sys/real.h"

#define SLUICE_EXPORT __attribute__((visibility("default")))

/* Write this process's log once and stop recording (exit, exec, _exit,
 * SIGTERM). Returns 0 if this call wrote it. */
int sluice_finish(unsigned end_reason, unsigned flags, char *path, unsigned long path_len);

/* vfork() calls under way in this process (x86-64: process.c wraps vfork).
 * A child of the program's own raw clone(CLONE_VM | CLONE_VFORK) is not
 * counted: it must not close or dup2 managed descriptors (the children of
 * glibc's posix_spawn, system and popen call glibc's internal functions,
 * which are never interposed). */
extern int sluice__vforks;

/* In the parent, before a child that no fork handler sees is started
 * (vfork, posix_spawn, posix_spawnp, system, popen): what fork's prepare
 * handler does, and the descriptions open now count as shared with it
 * (exec_only: the child runs no code of the program's and no file action
 * before its exec; if no recorded descriptor survives an exec, none is). */
void sluice_before_spawn(int exec_only);

/* After a failed exec: drop the log written for it and record again. */
void sluice_resume_after_exec_failure(const char *log_path);

#endif
