/*
 * Who still writes a staged file (docs/stage.md, "Writers"). A process
 * under sluice that opened another's staged file by name holds a shared
 * flock on locks/ID.users while it has it open; whoever publishes takes it
 * exclusively, so such a writer waits for the publish and then finds the
 * published file. Every other descriptor open for writing (inherited by a
 * child, kept across an exec into a program not under sluice, passed over
 * a UNIX socket, or a shared writable mapping) only the kernel knows of:
 * it refuses a read lease while the file is open for writing anywhere.
 */
#ifndef SLUICE_STAGE_WRITERS_H
#define SLUICE_STAGE_WRITERS_H

/* A writer joins entry id: the shared lock's descriptor, or -errno. Waits
 * while a publish holds it. */
int writers_join(int ldir, const char *id);

/* Before publishing: the exclusive lock (a descriptor to release after;
 * -1 when the lock file cannot be made), or -EBUSY while a writer has it
 * open. */
int writers_hold(int ldir, const char *id);

/* After the publish (published: the lock file goes too). */
void writers_release(int ldir, int fd, const char *id, int published);

/* The file is gone from the tier unpublished (removed): its lock file goes. */
void writers_forget(int ldir, const char *id);

/* Whether any descriptor or mapping anywhere has data file ddir/ID open for
 * writing: 1, 0, or -errno when the kernel cannot say (leases disabled, or
 * the file is not the caller's). Takes a read lease and drops it at once:
 * the caller must ignore SIGIO (a writer opening in between breaks the
 * lease with it). Only the job's drainer calls it. */
int writers_open_anywhere(int ddir, const char *id);

#endif
