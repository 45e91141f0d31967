/*
 * What the path wrappers ask of stage mode: a path this process has staged
 * is answered from the tier (stat), and unlink and rename change the
 * staged file instead of the shared file system (docs/stage.md).
 */
#ifndef SLUICE_STAGE_STAGE_H
#define SLUICE_STAGE_STAGE_H

#include <sys/stat.h>
#include <sys/types.h>

/* 1 when this process has staged files (the hooks below may apply). */
int stage_active(void);

/* Each returns 1 when abs (absolute, normalised) is staged and the call was
 * handled here (*rc: 0 or -errno), 0 when the caller goes on as usual. */
int stage_path_stat(const char *abs, struct stat *st);
int stage_path_unlink(const char *abs, int *rc);
int stage_path_rename(const char *from, const char *to, int *rc);

int stage_path_truncate(const char *abs, off_t len, int *rc);

/* 1 when abs is a directory known to exist on the shared file system (a
 * mkdir of it can answer EEXIST without asking). */
int stage_dir_exists(const char *abs);

/* mkdir of abs succeeded in this process: files created in it need no
 * existence check on the shared file system. */
void stage_dir_created(const char *abs);

/* abs is about to be opened around the tier (MPI_File_open: the MPI
 * library's own opens are not staged): if it is staged on the node, by
 * this process or left to the job, it is published first. Returns 1 when
 * abs is under a mode that stages (the same answer on every rank), so that
 * the ranks wait for each other before they open it. */
int stage_publish_for_shared_open(const char *abs);

#endif
