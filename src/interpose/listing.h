/*
 * Directory listings with the tiers' names (listing.c): opendir, fdopendir
 * and closedir tell it when a directory stream starts and ends.
 */
#ifndef SLUICE_INTERPOSE_LISTING_H
#define SLUICE_INTERPOSE_LISTING_H

#include <dirent.h>

/* d was opened on path (or, path NULL, on descriptor dirfd). */
void sluice_listing_begin(DIR *d, int dirfd, const char *path);
/* d is being closed. */
void sluice_listing_end(DIR *d);

#endif
