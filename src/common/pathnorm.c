/* Lexical path normalisation; see pathnorm.h. No allocation, no stdio. */
#include "common/pathnorm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The length of path if it is already normal (no empty, "." or ".."
 * segment, no trailing '/'), else 0: the usual case costs one scan. */
static size_t normal_length(const char *path)
{
    const char *s = path;   /* at a '/' */

    for (;;) {
        const char *seg = s + 1;
        if (*seg == '\0')
            return s == path ? 1 : 0;
        if (*seg == '/' || (seg[0] == '.' && (seg[1] == '/' || seg[1] == '\0' ||
                                              (seg[1] == '.' && (seg[2] == '/' || seg[2] == '\0')))))
            return 0;
        s = strchrnul(seg, '/');
        if (*s == '\0')
            return (size_t)(s - path);
    }
}

size_t sluice_path_normalize(char *path)
{
    char *out = path;       /* write cursor; path[0] is '/' */
    const char *in = path;
    size_t n = normal_length(path);

    if (n)
        return n;

    while (*in) {
        while (*in == '/')
            in++;
        if (!*in)
            break;
        const char *seg = in;
        while (*in && *in != '/')
            in++;
        size_t len = (size_t)(in - seg);
        if (len == 1 && seg[0] == '.')
            continue;
        if (len == 2 && seg[0] == '.' && seg[1] == '.') {
            while (out > path && *--out != '/')
                ;
            continue;
        }
        *out++ = '/';
        memmove(out, seg, len);
        out += len;
    }
    if (out == path)
        *out++ = '/';
    *out = '\0';
    return (size_t)(out - path);
}

int sluice_path_absolute(int dirfd, const char *path, char *out, size_t outlen)
{
    size_t base_len = 0;
    size_t plen = strlen(path);

    if (path[0] != '/') {
        if (dirfd == AT_FDCWD) {
            if (!getcwd(out, outlen))
                return -errno;
            base_len = strlen(out);
        } else {
            char link[32];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = readlink(link, out, outlen - 1);
            if (n < 0)
                return -errno;
            if (out[0] != '/')
                return -ENOTDIR;
            base_len = (size_t)n;
        }
        if (base_len + 1 + plen + 1 > outlen)
            return -ENAMETOOLONG;
        out[base_len++] = '/';
    } else if (plen + 1 > outlen) {
        return -ENAMETOOLONG;
    }
    memcpy(out + base_len, path, plen + 1);
    sluice_path_normalize(out);
    return 0;
}

int sluice_path_under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);

    while (n > 1 && prefix[n - 1] == '/')
        n--;
    if (n == 1 && prefix[0] == '/')
        return path[0] == '/';
    return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}
