/* Publishing; see publish.h. */
#include "stage/publish.h"

#include "stage/names.h"

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
#include "core/config.h"
#include "core/counters.h"
#include "layout/layout.h"
#include "stage/names.h"
#include "sys/privfd.h"
#include "sys/real.h"
#include "sys/umask.h"

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

void publish_drop_stale_temp(const struct journal_entry *e)
{
    char tmp[4200];
    if (temp_name(e, tmp, sizeof tmp) == 0)
        (void)SLUICE_REAL(unlink)(tmp);
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
    int rc, dst, flags, created = 0;
    uint64_t t0;

    if ((rc = temp_name(e, tmp, tmplen)) != 0)
        return fail("cannot name a temporary file for", e->path, -rc, why, whylen);
    (void)SLUICE_REAL(unlink)(tmp);   /* a stale one from a crashed publish */
    t0 = sluice_now();
    /* (moved out of the program's low numbers at once: a drainer runs beside
     * the program's own opens) */
    flags = sluice_layout_publish_create(tmp, e->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600, rec, &created);
    dst = sluice_privfd_keep(SLUICE_REAL(open)(tmp, flags, 0600));
    if (dst < 0) {
        rc = fail("cannot create", tmp, errno, why, whylen);
        sluice_layout_undo(AT_FDCWD, tmp, created);
        if (rec)
            sluice_count_error(rec, SLUICE_SIDES_FS);
        return rc;
    }
    if (rec) {
        sluice_count_open(rec, SLUICE_SIDES_FS, t0, sluice_now());
        sluice_count_open_flags(rec, SLUICE_SIDES_FS, flags);
        sluice_layout_observe(rec, dst);
    }
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

/* A small file in one read and one write through a buffer on the stack:
 * no mapping (whose unmap, in a process with threads, interrupts every
 * core that ran one) and no heap buffer. 0, 1 when src came out shorter
 * than size (the caller copies the usual way), or -errno. */
#define SMALL_COPY 16384
static int copy_small(int src, int64_t size, int dst, struct sluice_record *rec)
{
    char buf[SMALL_COPY];
    int64_t got = 0;

    while (got < size) {
        ssize_t n = SLUICE_REAL(pread)(src, buf + got, (size_t)(size - got), got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 1;
        got += n;
    }
    return write_counted(dst, buf, size, 0, rec);
}

/* Copy the data extents of a sparse src from `from` to size and leave its
 * holes unwritten, as the program left them; the caller sets dst's size. 1
 * when the tier cannot tell holes (the caller copies everything), 0 or
 * -errno. */
static int copy_extents(int src, int64_t from, int64_t size, int dst, size_t unit, struct sluice_record *rec)
{
    off_t off = SLUICE_REAL(lseek)(src, from, SEEK_DATA);

    if (off < 0)
        return errno == ENXIO ? 0 : 1;   /* ENXIO: all hole */
    while (off < size) {
        off_t end = SLUICE_REAL(lseek)(src, off, SEEK_HOLE);
        if (end < 0)
            return 1;
        int rc = publish_copy_range(src, dst, off, end < size ? end : size, unit, rec);
        if (rc)
            return rc;
        if (end >= size || (off = SLUICE_REAL(lseek)(src, end, SEEK_DATA)) < 0)
            break;   /* (ENXIO: a hole to the end) */
    }
    return 0;
}

int publish_copy_from(int src, int dst, int64_t from, int64_t to, size_t unit, struct sluice_record *rec,
                      int *sparse)
{
    struct stat st;
    int rc;

    *sparse = 0;
    if (SLUICE_REAL(fstat)(src, &st) == 0 && (int64_t)st.st_blocks * 512 < (int64_t)st.st_size &&
        SLUICE_REAL(ftruncate)(dst, from) == 0 && (rc = copy_extents(src, from, to, dst, unit, rec)) <= 0) {
        *sparse = 1;
        return rc;
    }
    return publish_copy_range(src, dst, from, to, unit, rec);
}

/* Copy all of src to dst in unit-sized writes, from a mapping when it can
 * be made, skipping the holes of a sparse file; 0 or -errno. *sparse: 1
 * when holes were skipped (dst needs its size set). */
static int copy_data(int src, int dst, size_t unit, struct sluice_record *rec, int *sparse)
{
    struct stat st;
    int rc;

    *sparse = 0;
    if (SLUICE_REAL(fstat)(src, &st) != 0)
        return -errno;
    if (st.st_size == 0)
        return 0;
    /* (dst may hold an early copy: publish_copy_from empties it first, so
     * that no stale byte stays where the file now has a hole) */
    if ((int64_t)st.st_blocks * 512 < (int64_t)st.st_size)
        return publish_copy_from(src, dst, 0, st.st_size, unit, rec, sparse);
    if (st.st_size <= SMALL_COPY && (rc = copy_small(src, st.st_size, dst, rec)) <= 0)
        return rc;
    if ((rc = copy_mapped(src, st.st_size, dst, unit, rec)) <= 0)
        return rc;
    return publish_copy_range(src, dst, 0, st.st_size, unit, rec);
}

/* How the destination descriptor came to be, which decides what is left
 * to do once the bytes are in. */
enum publish_dst {
    DST_TEMP,      /* DIR/.NAME.sluice-ID: mode always, then renamed over NAME */
    DST_CREATED,   /* NAME itself, created by us with the entry's mode */
    DST_INPLACE,   /* NAME itself, an existing file truncated (inode, owner, links kept) */
};

/* Bits an open(O_CREAT) with mode m would not give (set-id and sticky
 * bits, and those the umask takes away): they need an fchmod. */
static int create_misses_bits(mode_t m)
{
    return (m & 07000) || (m & sluice_umask_get());
}

static int complete(int ddir, const struct journal_entry *e, int dst, enum publish_dst how, const char *tmp,
                    int64_t from, size_t unit, struct sluice_record *rec, char *why, size_t whylen)
{
    const char *name = how == DST_TEMP ? tmp : e->path;
    struct stat st, dsb;
    int src, rc = 0, chmod_needed = how == DST_TEMP, sparse = 0;
    uint64_t t0;

    src = sluice_privfd_keep(SLUICE_REAL(openat)(ddir, e->id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0));
    if (src < 0 || SLUICE_REAL(fstat)(src, &st) != 0) {
        rc = fail("cannot open the staged data of", e->path, errno, why, whylen);
        goto out;
    }
    if (from < st.st_size) {
        /* (from > 0: the early copy holds [0, from)) */
        rc = from == 0 ? copy_data(src, dst, publish_unit(dst, unit, rec, st.st_size), rec, &sparse)
                       : publish_copy_from(src, dst, from, st.st_size, unit, rec, &sparse);
        if (rc)
            fail("cannot write", name, -rc, why, whylen);
    }
    /* (a copy made early may be longer than the file became; a sparse file
     * may end in a hole) */
    if (!rc && (how == DST_TEMP || sparse) && SLUICE_REAL(ftruncate)(dst, st.st_size) != 0)
        rc = fail("cannot truncate", name, errno, why, whylen);
    if (!rc && sluice_cfg.stage_fsync) {
        t0 = sluice_now();
        if (SLUICE_REAL(fsync)(dst) != 0)
            rc = fail("cannot sync", name, errno, why, whylen);
        else
            count(rec, POSIX_FSYNCS, t0);
    }
    if (how == DST_CREATED)
        chmod_needed = create_misses_bits(e->mode & 07777);
    if (!rc && how == DST_INPLACE) {
        /* the file keeps its mode, as an open with O_TRUNC leaves it,
         * unless the program changed it on the tier */
        t0 = sluice_now();
        if (SLUICE_REAL(fstat)(dst, &dsb) == 0) {
            count(rec, POSIX_STATS, t0);
            chmod_needed = (dsb.st_mode & 07777) != (e->mode & 07777);
        }
    }
    t0 = sluice_now();
    if (!rc && chmod_needed && SLUICE_REAL(fchmod)(dst, e->mode & 07777) != 0)
        rc = fail("cannot set the mode of", name, errno, why, whylen);
    else if (!rc && chmod_needed)
        count(rec, POSIX_CHMODS, t0);
    if (!rc && (sluice_cfg.stage_keep_times || e->keep_times)) {
        struct timespec times[2] = {st.st_atim, st.st_mtim};
        t0 = sluice_now();
        if (SLUICE_REAL(futimens)(dst, times) != 0)
            rc = fail("cannot set the times of", name, errno, why, whylen);
        else
            count(rec, POSIX_UTIMES, t0);
    }
out:
    t0 = sluice_now();
    if (sluice_privfd_close(dst) != 0 && !rc)
        rc = fail("cannot close", name, errno, why, whylen);
    else if (rec && !rc)
        sluice_count_close(rec, SLUICE_SIDES_FS, t0, sluice_now());
    if (src >= 0)
        sluice_privfd_close(src);
    if (!rc && how == DST_TEMP) {
        t0 = sluice_now();
        if (SLUICE_REAL(rename)(tmp, e->path) != 0)
            rc = fail("cannot rename to", e->path, errno, why, whylen);
        else {
            count(rec, POSIX_RENAMES, t0);
            count(rec, POSIX_RENAME_TARGETS, t0);   /* (the record is the final name's: both ends) */
        }
    }
    /* a file this publish made and could not fill goes again (the data
     * stays on the tier); one truncated in place stays as it is, as a
     * program's own failed write leaves it */
    if (rc && how != DST_INPLACE)
        (void)SLUICE_REAL(unlink)(name);
    return rc;
}

int publish_complete(int ddir, const struct journal_entry *e, int dst, const char *tmp, int64_t from, size_t unit,
                     struct sluice_record *rec, char *why, size_t whylen)
{
    return complete(ddir, e, dst, DST_TEMP, tmp, from, unit, rec, why, whylen);
}

/* Open e->path itself for the publish: the existing file truncated (an
 * entry that must keep its inode), or, for data of at most one write
 * (`direct_max` bytes), a new file made with the entry's mode. -EEXIST
 * when the file must be replaced whole: a file of that name stands, or the
 * data is larger (it goes under a temporary name and is renamed, so no
 * reader sees it half copied). */
static int open_final(int ddir, const struct journal_entry *e, int64_t direct_max, struct sluice_record *rec,
                      enum publish_dst *how)
{
    uint64_t t0 = sluice_now();
    struct stat sb;
    int dst = -1, flags = O_WRONLY | O_TRUNC | O_CLOEXEC;

    if (e->inplace) {
        dst = sluice_privfd_keep(SLUICE_REAL(open)(e->path, flags, 0));
        *how = DST_INPLACE;
    }
    if (dst < 0 && (SLUICE_REAL(fstatat)(ddir, e->id, &sb, AT_SYMLINK_NOFOLLOW) != 0 || sb.st_size > direct_max))
        return -EEXIST;
    if (dst < 0) {
        t0 = sluice_now();
        int created = 0;
        flags = sluice_layout_publish_create(e->path, e->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                                             e->mode & 07777, rec, &created);
        dst = sluice_privfd_keep(SLUICE_REAL(open)(e->path, flags, e->mode & 07777));
        *how = DST_CREATED;
        if (dst < 0)
            sluice_layout_undo(AT_FDCWD, e->path, created);
    }
    if (dst < 0) {
        int err = errno;
        if (err != EEXIST && rec)
            sluice_count_error(rec, SLUICE_SIDES_FS);
        return -err;
    }
    if (rec) {
        sluice_count_open(rec, SLUICE_SIDES_FS, t0, sluice_now());
        sluice_count_open_flags(rec, SLUICE_SIDES_FS, flags);
        sluice_layout_observe(rec, dst);
    }
    return dst;
}

int publish_entry(int ddir, const struct journal_entry *e, size_t unit, struct sluice_record *rec,
                  char *why, size_t whylen)
{
    char tmp[4200];
    enum publish_dst how;
    int dst = open_final(ddir, e, unit ? (int64_t)unit : 4 << 20, rec, &how);

    if (dst >= 0)
        return complete(ddir, e, dst, how, NULL, 0, unit, rec, why, whylen);
    if (dst != -EEXIST)
        return fail("cannot create", e->path, -dst, why, whylen);
    /* A file of that name stands (made since, or left by a publish cut
     * short): the new one replaces it whole, under a temporary name first. */
    dst = publish_begin(e, rec, tmp, sizeof tmp, why, whylen);
    if (dst < 0)
        return dst;
    return complete(ddir, e, dst, DST_TEMP, tmp, 0, unit, rec, why, whylen);
}

void publish_finish(int ddir, int jdir, int ndir, struct journal_entry *e)
{
    names_remove(ndir, e->path, e->id);
    e->state = JOURNAL_PUBLISHED;
    e->updated_ns = journal_now_ns();
    e->error[0] = '\0';
    (void)journal_write(jdir, e);
    (void)SLUICE_REAL(unlinkat)(ddir, e->id, 0);
    (void)SLUICE_REAL(unlinkat)(jdir, e->id, 0);
}
