/* A struct stat in statx's layout (a tier that answers stat answers statx). */
#ifndef SLUICE_COMMON_STATCONV_H
#define SLUICE_COMMON_STATCONV_H

#include <fcntl.h>
#include <sys/stat.h>

void sluice_stat_to_statx(const struct stat *st, struct statx *stx);

#endif
