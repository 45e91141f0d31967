/* Publishing; see publish.h. */
#include "stage/publish.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buffer/unit.h"
#include "core/counters.h"
#include "sys/privfd.h"
#include "sys/real.h"

/* DIR/.NAME.sluice-ID for final path DIR/NAME, NAME shortened (in bytes)
 * so that the whole name fits in a directory entry (255 bytes). */
static int temp_name(const struct journal_entry *e, char *out, size_t len)
{
    const char *slash = strrchr(e->path, '/');
    if (!slash)
        return -EINVAL;
    int room = 255 - (int)strlen(".") - (int)strlen(".sluice-") - (int)strlen(e->id);
    int name_len = (int)strlen(slash + 1);
    if (room < 1)
        return -ENAMETOOLONG;
    if (name_len > room)
        name_len = room;
    int n = snprintf(out, len, "%.*s/.%.*s.sluice-%s", (int)(slash - e->path), e->path, name_len, slash + 1, e->id);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void count(struct sluice_record *rec, int counter, uint64_t t0)
{
    if (rec)
        sluice_count_meta(rec, SLUICE_SIDES_FS, counter, t0, sluice_now());
}

static int fail(const char *what, const char *path, int err, char *why, size_t whylen)
{
    snprintf(why, whylen, "%s %s: %s", what, path, strerror(err));
    return -err;
}

/* Write n bytes of buf at off to dst, counted; 0 or -errno. */
static int write_counted(int dst, const char *buf, int64_t n, int64_t off, struct sluice_record *rec)
{
    for (int64_t done = 0; done < n;) {
        uint64_t t0 = sluice_now();
        ssize_t w = SLUICE_REAL(pwrite)(dst, buf + done, (size_t)(n - done), off + done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (rec)
                sluice_count_error(rec, SLUICE_SIDES_FS);
            return w < 0 ? -errno : -EIO;
        }
        if (rec)
            sluice_count_rw(rec, SLUICE_SIDES_FS, SLUICE_WRITE, off + done, w, t0, sluice_now());
        done += w;
    }
    return 0;
}

/* Copy src (size bytes) to dst in unit-sized writes straight from a
 * mapping of the tier file (one copy less than read + write); 0 or -errno. */
static int copy_mapped(int src, int64_t size, int dst, size_t unit, struct sluice_record *rec)
{
    const char *map = SLUICE_REAL(mmap)(NULL, (size_t)size, PROT_READ, MAP_SHARED, src, 0);
    int rc = 0;

    if (map == MAP_FAILED)
        return 1;   /* not mappable: the caller copies through a buffer */
    madvise((void *)map, (size_t)size, MADV_SEQUENTIAL);
    for (int64_t off = 0; off < size && rc == 0; off += (int64_t)unit)
        rc = write_counted(dst, map + off, size - off < (int64_t)unit ? size - off : (int64_t)unit, off, rec);
    munmap((void *)map, (size_t)size);
    return rc;
}

int publish_begin(const struct journal_entry *e, struct sluice_record *rec, char *tmp, size_t tmplen,
                  char *why, size_t whylen)
{
    int rc, dst;
    uint64_t t0;

    if ((rc = temp_name(e, tmp, tmplen)) != 0)
        return fail("cannot name a temporary file for", e->path, -rc, why, whylen);
    (void)SLUICE_REAL(unlink)(tmp);   /* a stale one from a crashed publish */
    t0 = sluice_now();
    /* (moved out of the program's low numbers at once: a drainer runs beside
     * the program's own opens) */
    dst = sluice_privfd_keep(SLUICE_REAL(open)(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (dst < 0) {
        rc = fail("cannot create", tmp, errno, why, whylen);
        if (rec)
            sluice_count_error(rec, SLUICE_SIDES_FS);
        return rc;
    }
    if (rec)
        sluice_count_open(rec, SLUICE_SIDES_FS, t0, sluice_now());
    return dst;
}

/* The write size of buffer mode: the configured unit, rounded to the
 * destination's stripe or block size. A file of at most one unit is one
 * write whatever the alignment: no question to the file system. */
static size_t publish_unit(int dst, size_t unit, struct sluice_record *rec, int64_t size)
{
    struct stat st;
    uint64_t t0 = sluice_now();
    if (unit && size >= 0 && (uint64_t)size <= unit)
        return unit;
    if (SLUICE_REAL(fstat)(dst, &st) == 0) {
        count(rec, POSIX_STATS, t0);
        unit = buffer_unit(dst, &st, (int64_t)unit, rec);
    }
    return unit ? unit : 4 << 20;
}

int publish_copy_range(int src, int dst, int64_t from, int64_t to, size_t unit, struct sluice_record *rec)
{
    char *buf;
    int rc = 0;

    unit = publish_unit(dst, unit, rec, to);
    if (!(buf = malloc(unit)))
        return -ENOMEM;
    for (int64_t off = from; off < to;) {
        size_t want = to - off < (int64_t)unit ? (size_t)(to - off) : unit;
        ssize_t n = SLUICE_REAL(pread)(src, buf, want, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : 0;
            break;
        }
        if ((rc = write_counted(dst, buf, n, off, rec)) != 0)
            break;
        off += n;
    }
    free(buf);
    return rc;
}

/* Copy all of src to dst in unit-sized writes, from a mapping when it can
 * be made; 0 or -errno. */
static int copy_data(int src, int dst, size_t unit, struct sluice_record *rec)
{
    struct stat st;
    int rc;

    if (SLUICE_REAL(fstat)(src, &st) != 0)
        return -errno;
    if (st.st_size == 0)
        return 0;
    if ((rc = copy_mapped(src, st.st_size, dst, unit, rec)) <= 0)
        return rc;
    return publish_copy_range(src, dst, 0, st.st_size, unit, rec);
}

int publish_complete(int ddir, const struct journal_entry *e, int dst, const char *tmp, int64_t from, size_t unit,
                     struct sluice_record *rec, char *why, size_t whylen)
{
    struct stat st;
    int src, rc = 0;
    uint64_t t0;

    src = sluice_privfd_keep(SLUICE_REAL(openat)(ddir, e->id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0));
    if (src < 0 || SLUICE_REAL(fstat)(src, &st) != 0) {
        rc = fail("cannot open the staged data of", e->path, errno, why, whylen);
        goto out;
    }
    if (from < st.st_size) {
        rc = from == 0 ? copy_data(src, dst, publish_unit(dst, unit, rec, st.st_size), rec)
                       : publish_copy_range(src, dst, from, st.st_size, unit, rec);
        if (rc)
            fail("cannot write", tmp, -rc, why, whylen);
    }
    /* (a copy made early may be longer than the file became) */
    if (!rc && SLUICE_REAL(ftruncate)(dst, st.st_size) != 0)
        rc = fail("cannot truncate", tmp, errno, why, whylen);
    if (!rc) {
        t0 = sluice_now();
        if (SLUICE_REAL(fsync)(dst) != 0)
            rc = fail("cannot sync", tmp, errno, why, whylen);
        else
            count(rec, POSIX_FSYNCS, t0);
    }
    t0 = sluice_now();
    if (!rc && SLUICE_REAL(fchmod)(dst, e->mode & 07777) != 0)
        rc = fail("cannot set the mode of", tmp, errno, why, whylen);
    else if (!rc)
        count(rec, POSIX_CHMODS, t0);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    t0 = sluice_now();
    if (!rc && SLUICE_REAL(futimens)(dst, times) != 0)
        rc = fail("cannot set the times of", tmp, errno, why, whylen);
    else if (!rc)
        count(rec, POSIX_UTIMES, t0);
out:
    t0 = sluice_now();
    if (sluice_privfd_close(dst) != 0 && !rc)
        rc = fail("cannot close", tmp, errno, why, whylen);
    else if (rec && !rc)
        sluice_count_close(rec, SLUICE_SIDES_FS, t0, sluice_now());
    if (src >= 0)
        sluice_privfd_close(src);
    if (!rc) {
        t0 = sluice_now();
        if (SLUICE_REAL(rename)(tmp, e->path) != 0)
            rc = fail("cannot rename to", e->path, errno, why, whylen);
        else
            count(rec, POSIX_RENAMES, t0);
    }
    if (rc)
        (void)SLUICE_REAL(unlink)(tmp);
    return rc;
}

int publish_entry(int ddir, const struct journal_entry *e, size_t unit, struct sluice_record *rec,
                  char *why, size_t whylen)
{
    char tmp[4200];
    int dst = publish_begin(e, rec, tmp, sizeof tmp, why, whylen);

    if (dst < 0)
        return dst;
    return publish_complete(ddir, e, dst, tmp, 0, unit, rec, why, whylen);
}

void publish_finish(int ddir, int jdir, struct journal_entry *e)
{
    e->state = JOURNAL_PUBLISHED;
    e->updated_ns = journal_now_ns();
    e->error[0] = '\0';
    (void)journal_write(jdir, e);
    (void)SLUICE_REAL(unlinkat)(ddir, e->id, 0);
    (void)SLUICE_REAL(unlinkat)(jdir, e->id, 0);
}
