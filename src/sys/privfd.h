/*
 * Descriptors sluice keeps for itself (tier directories, lock files, early
 * copies, private copies of the program's descriptors). They live at high
 * numbers, away from the small numbers programs expect open() to return,
 * and they are marked, so that a program's close_range()/closefrom() over
 * "everything above 2" closes its own descriptors and not ours.
 */
#ifndef SLUICE_SYS_PRIVFD_H
#define SLUICE_SYS_PRIVFD_H

/* Lowest number for descriptors sluice keeps for itself. */
#define SLUICE_PRIVATE_FD_MIN 512

/* Move fd (just opened by sluice) to a high number, close-on-exec, and
 * mark it private. Returns the descriptor to use (fd itself when no high
 * number is free: it is still marked). fd < 0 is returned as is. */
int sluice_privfd_keep(int fd);

/* Mark fd private where it is (short-lived descriptors). */
void sluice_privfd_note(int fd);

/* A private copy of the program's descriptor fd at a high number, marked;
 * -errno on failure. */
int sluice_privfd_dup(int fd);

/* Unmark (if marked) and close a descriptor. 0 or -errno. */
int sluice_privfd_close(int fd);

/* The highest number ever marked (-1: none). */
int sluice_privfd_high(void);

/* 1 when fd is one of ours. */
int sluice_privfd_is(int fd);

#endif
