/*
 * stdio wrappers (the STDIO module). A stream is recorded when fopen,
 * fdopen or freopen opens a recorded path; its position is tracked from the
 * bytes each call moved and from ftell after seeks, so MAX_BYTE counters
 * need no system call. The app side counts the stdio calls; the fs side,
 * the system calls the C library made for them (stdio_kernel.h). fprintf and fscanf forward to the v* functions, the
 * only way to pass on a variable argument list.
 */
/* glibc's C99 headers redirect fscanf to __isoc99_fscanf; both symbols are
 * ours to define, so the headers' declarations of the plain names are moved
 * out of the way. */
#define fscanf sluice__glibc_fscanf
#define vfscanf sluice__glibc_vfscanf
#include <stdio.h>
#undef fscanf
#undef vfscanf
#include <stdarg.h>
int fscanf(FILE *fp, const char *fmt, ...);
int vfscanf(FILE *fp, const char *fmt, va_list ap);

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "common/pathnorm.h"
#include "core/counters.h"
#include "core/file.h"
#include "core/policy.h"
#include "core/stack.h"
#include "core/stream.h"
#include "core/trace.h"
#include "interpose/interpose.h"
#include "interpose/stdio_kernel.h"
#include "sys/userptr.h"

/* Optimised builds define some of these as macros; we define the functions. */
#undef fread_unlocked
#undef fwrite_unlocked
#undef fgets_unlocked
#undef fputs_unlocked
#undef putc
#undef getc
#undef fputc
#undef fgetc

/* ------------------------------------------------------------------ open */

/* Each thread's last absolute path as the program spelled it in fopen,
 * its record and mode: an absolute path resolves the same way every time
 * (lexically, under a policy fixed at start), so a program reopening the
 * file it just closed skips resolution, the policy and the registry
 * (core/pathcall.c keeps the same for POSIX records). The record was
 * split when the entry was made, and a record never mirrors again. */
#define LAST_STREAM_PATH_MAX 256
static __thread char last_stream_path[LAST_STREAM_PATH_MAX] __attribute__((tls_model("initial-exec")));
static __thread struct sluice_record *last_stream_rec __attribute__((tls_model("initial-exec")));
static __thread enum sluice_mode last_stream_mode __attribute__((tls_model("initial-exec")));

/* The STDIO record of path, or NULL; *mode: the path's I/O mode. */
static struct sluice_record *stream_path_record(const char *path, enum sluice_mode *mode)
{
    char abs[PATH_MAX];
    struct sluice_record *rec;

    *mode = SLUICE_MODE_PROFILE;
    if (sluice_ptr_null_page(path))
        return NULL;
    /* (emptied while it changes, as in core/pathcall.c: a signal handler's
     * fopen reads it as unchanged only if its record stayed put) */
    if (path[0] == '/' && (rec = last_stream_rec) != NULL) {
        atomic_signal_fence(memory_order_seq_cst);
        enum sluice_mode m = last_stream_mode;
        int same = strcmp(path, last_stream_path) == 0;
        atomic_signal_fence(memory_order_seq_cst);
        if (same && last_stream_rec == rec) {
            *mode = m;
            return rec;
        }
    }
    if (sluice_policy_skip_fast(path) || sluice_path_absolute(AT_FDCWD, path, abs, sizeof abs) != 0 ||
        !sluice_policy_records(abs))
        return NULL;
    rec = sluice_record_get(SLUICE_MOD_STDIO, abs);
    *mode = sluice_file_mode(sluice_policy_mode(abs), rec);
    if (!rec)
        return NULL;
    sluice_record_split_sides(rec);   /* the fs side is the kernel's (stdio_kernel.h) */
    size_t n = strlen(path);
    if (path[0] == '/' && !(rec->flags & SLUICE_REC_OVERFLOW) && n < LAST_STREAM_PATH_MAX) {
        last_stream_rec = NULL;
        atomic_signal_fence(memory_order_seq_cst);
        memcpy(last_stream_path, path, n + 1);
        last_stream_mode = *mode;
        atomic_signal_fence(memory_order_seq_cst);
        last_stream_rec = rec;
    }
    return rec;
}

/* A stream of a mode whose tiers give stream buffers (buffer mode: the
 * write unit, within the memory cap): glibc's stdio reaches the kernel
 * through calls no wrapper sees, so the stream's own buffer is what a mode
 * can change. Must run before the stream's first I/O. Returns the buffer
 * given, or NULL. */
static void *stream_enlarge_buffer(FILE *fp, enum sluice_mode mode, size_t *size)
{
    void *buf;

    if (!(buf = sluice_stack_stream_buffer(mode, size)))
        return NULL;
    if (setvbuf(fp, buf, _IOFBF, *size) != 0) {
        sluice_stack_stream_buffer_free(buf, *size);
        return NULL;
    }
    return buf;
}

/* After glibc let go of the buffer (fclose, freopen). */
static void stream_buffer_release(void *buf, size_t size)
{
    if (buf)
        sluice_stack_stream_buffer_free(buf, size);
}

/* Where a newly opened stream starts: at the end in append mode. An "a"
 * stream's open left the descriptor there (the C library seeks to the end):
 * its position is read without a call the file system would see; "a+"
 * streams do not seek, and their size is asked. */
static int64_t stream_start_pos(FILE *fp, const char *mode)
{
    struct stat st;

    if (!mode || mode[0] != 'a')
        return 0;
    if (!strchr(mode, '+')) {
        int64_t pos = sluice_fd_position(fileno(fp));
        if (pos >= 0)
            return pos;
    }
    return SLUICE_REAL(fstat)(fileno(fp), &st) == 0 ? (int64_t)st.st_size : -1;
}

/* The C library opened the stream's descriptor behind the public open():
 * a table slot for its number belonged to a descriptor closed unseen. */
static void stream_fd_fresh(FILE *fp)
{
    int fd = fp ? fileno(fp) : -1;
    if (fd >= 0 && sluice_fd_known(fd) && !sluice_in_vfork_child())
        sluice_fd_forget(fd);
}

static int stream_open_through_stack(const char *path, const char *mode, int large, FILE **out);
static int stream_open_flags(const char *mode);

/* A stream opened on rec: the program's open, and the kernel's where the
 * stream's descriptor is the file on the file system (not a tier's copy);
 * an "a" stream's seek to the end too. */
static void stream_opened(struct sluice_record *rec, FILE *fp, const char *mode, void *buf, size_t size,
                          uint64_t t0, uint64_t t1)
{
    struct sluice_stream *s;
    struct stream_snap none = {.fd = fileno(fp), .offset = -1};

    unsigned sides = stream_reaches_fs(none.fd) ? SLUICE_SIDES_BOTH : SLUICE_SIDES_APP;
    sluice_count_open(rec, sides, t0, t1);
    sluice_count_open_flags(rec, sides, stream_open_flags(mode));
    sluice_stream_add(fp, rec, stream_start_pos(fp, mode), buf, size);
    if (!stream_open_kernel_silent(fp) && (s = sluice_stream_get(fp)) != NULL)
        stream_kernel_count(s, fp, &none, 0, 0, STREAM_K_OPEN, t0, t1);
}

/* After the C library's fopen or freopen of path: 1 when path must not be
 * read. A stream opened means the kernel read the path, so the common case
 * costs no check; a failed open may not have reached the kernel (a bad
 * mode is refused first), and is rare enough to check the path. */
static int stream_open_failed_unreadable(FILE *fp, const char *path, int err)
{
    return !fp && (err == EFAULT || !sluice_user_str_ok(path));
}

static FILE *wrap_fopen(const char *path, const char *mode, FILE *(*real)(const char *, const char *))
{
    struct sluice_record *rec;
    enum sluice_mode io_mode;
    int saved = errno;
    uint64_t t0;
    FILE *fp;

    if (!sluice_active())
        return real(path, mode);
    sluice__guard++;
    if (stream_open_through_stack(path, mode, real == SLUICE_REAL(fopen64), &fp)) {
        saved = fp ? saved : errno;
        sluice__guard--;
        errno = saved;
        return fp;
    }
    t0 = sluice_now();
    fp = real(path, mode);
    if (!fp)
        saved = errno;
    stream_fd_fresh(fp);
    rec = stream_open_failed_unreadable(fp, path, saved) ? NULL : stream_path_record(path, &io_mode);
    if (rec) {
        if (!fp) {
            sluice_count_error(rec, SLUICE_SIDES_BOTH);
        } else {
            size_t size = 0;
            uint64_t t1 = sluice_now();
            void *buf = stream_enlarge_buffer(fp, io_mode, &size);
            stream_opened(rec, fp, mode, buf, size, t0, t1);
        }
    }
    sluice__guard--;
    errno = saved;
    return fp;
}

SLUICE_EXPORT FILE *fopen(const char *path, const char *mode)
{
    return wrap_fopen(path, mode, SLUICE_REAL(fopen));
}

SLUICE_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    return wrap_fopen(path, mode, SLUICE_REAL(fopen64));
}

/* fdopen of a recorded descriptor: the stream takes its path. */
/* fdopen of recorded f (a reference held; the guard taken). open_flags:
 * those of the program's fopen this stream stands for, -1 for its fdopen. */
static FILE *stream_of_file(struct sluice_file *f, int fd, const char *mode, int open_flags)
{
    struct sluice_record *rec = NULL;
    int saved = errno;
    uint64_t t0;
    FILE *fp;

    /* The stream moves the descriptor's position behind our back. */
    if (f->depth > 1) {
        unsigned reason = SLUICE_FALLBACK_SHARED;
        (void)sluice_tier_control(f, 0, SLUICE_CTL_FALLBACK, &reason);
    }
    rec = sluice_record_get(SLUICE_MOD_STDIO, f->rec->path);
    if (rec)
        sluice_record_split_sides(rec);
    t0 = sluice_now();
    fp = SLUICE_REAL(fdopen)(fd, mode);
    if (!fp)
        saved = errno;
    if (rec && fp) {
        /* The description's position as its record tracks it (no lseek the
         * file system would see); an O_APPEND one writes at the end,
         * wherever it stands. */
        struct stat st;
        int64_t pos = !(f->flags & O_APPEND) ? atomic_load(&f->pos)
                      : SLUICE_REAL(fstat)(fd, &st) == 0 ? (int64_t)st.st_size : -1;
        /* the kernel opened nothing: the descriptor was open */
        sluice_count_open(rec, SLUICE_SIDES_APP, t0, sluice_now());
        sluice_count_open_flags(rec, SLUICE_SIDES_APP, open_flags);
        sluice_stream_add(fp, rec, pos, NULL, 0);
    }
    errno = saved;
    return fp;
}

SLUICE_EXPORT FILE *fdopen(int fd, const char *mode)
{
    struct sluice_file *f;
    FILE *fp;

    if (!sluice_active() || !(f = sluice_fd_get(fd)))
        return SLUICE_REAL(fdopen)(fd, mode);
    sluice__guard++;
    fp = stream_of_file(f, fd, mode, -1);
    sluice_file_put(f);
    sluice__guard--;
    return fp;
}

/* open() flags of an fopen mode; -1 for what only the C library can do
 * (",ccs=" wide streams, unknown letters). */
static int stream_open_flags(const char *mode)
{
    int flags;

    switch (mode[0]) {
    case 'r': flags = 0; break;
    case 'w': flags = O_CREAT | O_TRUNC; break;
    case 'a': flags = O_CREAT | O_APPEND; break;
    default: return -1;
    }
    int plus = 0;
    for (const char *m = mode + 1; *m; m++) {
        if (*m == '+') plus = 1;
        else if (*m == 'x') flags |= O_EXCL;
        else if (*m == 'e') flags |= O_CLOEXEC;
        else if (*m == 'b' || *m == 't' || *m == 'm' || *m == 'c') continue;
        else return -1;
    }
    return flags | (plus ? O_RDWR : mode[0] == 'r' ? O_RDONLY : O_WRONLY);
}

/* 1 when a mode some path may get (the default or a --policy rule's) has
 * a tier that opens streams itself. Asked of the modes in use, not of every
 * mode's stack: otherwise each fopen would check its pointers (two system
 * calls) for a mode no path has. Policy and stacks are fixed before the
 * wrappers are active, so the answer is kept (0: not asked yet). */
static _Atomic int tiers_open_streams;

static int stream_tiers_open_streams(void)
{
    int known = atomic_load_explicit(&tiers_open_streams, memory_order_relaxed);
    unsigned used;

    if (known)
        return known == 2;
    used = sluice_policy_modes_used();
    known = 1;
    for (int m = 0; m < SLUICE_MODE_COUNT; m++)
        if ((used & (1u << m)) && (sluice_stack_caps((enum sluice_mode)m) & SLUICE_TIER_OPENS_STREAMS))
            known = 2;
    atomic_store_explicit(&tiers_open_streams, known, memory_order_relaxed);
    return known == 2;
}

/* The open flags of a stream on path when its mode's tier opens streams
 * itself, else -1. */
static int stream_tier_flags(const char *path, const char *mode)
{
    char abs[PATH_MAX];
    int flags;

    if (!stream_tiers_open_streams() || !sluice_user_str_ok(path) || !sluice_user_str_ok(mode) ||
        (flags = stream_open_flags(mode)) < 0 || sluice_policy_skip_fast(path) ||
        sluice_path_absolute(AT_FDCWD, path, abs, sizeof abs) != 0 || !sluice_policy_records(abs) ||
        !(sluice_stack_caps(sluice_policy_mode(abs)) & SLUICE_TIER_OPENS_STREAMS))
        return -1;
    return flags;
}

/* A mode whose tier must see stream opens (stage: the bytes live on the
 * tier): fopen is open() down the stack, then fdopen, as in the C library.
 * Returns 1 when it did (*out: the stream or NULL with errno), 0 when the
 * C library's fopen should. */
static int stream_open_through_stack(const char *path, const char *mode, int large, FILE **out)
{
    struct sluice_file *f;
    int flags, fd;

    if ((flags = stream_tier_flags(path, mode)) < 0)
        return 0;
    fd = sluice_file_open_for_stream(AT_FDCWD, path, flags | (large ? O_LARGEFILE : 0), 0666);
    if (fd < 0) {
        errno = -fd;
        *out = NULL;
        return 1;
    }
    *out = (f = sluice_fd_get(fd)) ? stream_of_file(f, fd, mode, flags) : SLUICE_REAL(fdopen)(fd, mode);
    if (f)
        sluice_file_put(f);
    if (!*out) {
        int saved = errno;
        (void)sluice_fd_close(fd);
        errno = saved;
    }
    return 1;
}

/* freopen opened path inside the C library, on the file system: a stream
 * written from the start (mode "w") whose mode's tier opens streams (stage)
 * has its descriptor replaced by one opened through the tier, so its bytes
 * go where fopen's would. */
static void stream_move_to_tier(FILE *nfp, const char *path, const char *mode)
{
    int flags = stream_tier_flags(path, mode), fd, target = fileno(nfp);

    if (flags < 0 || !(flags & O_TRUNC) || target < 0)
        return;
    fd = sluice_file_open(AT_FDCWD, path, flags & ~O_EXCL, 0666);
    if (fd < 0)
        return;   /* the C library's descriptor stays */
    sluice_fd_prepare_replace(target);
    if (SLUICE_REAL(dup2)(fd, target) >= 0) {
        sluice_fd_replaced(target);
        sluice_fd_dup(fd, target);
    }
    (void)sluice_fd_close(fd);
}

static FILE *wrap_freopen(const char *path, const char *mode, FILE *fp,
                          FILE *(*real)(const char *, const char *, FILE *))
{
    struct sluice_record *old, *rec;
    enum sluice_mode io_mode = SLUICE_MODE_PROFILE;
    void *old_buf;
    size_t old_size = 0;
    int saved = errno, old_fd, track;
    uint64_t t0;
    FILE *nfp;

    if (!sluice_active())
        return real(path, mode, fp);
    sluice__guard++;
    /* freopen closes the stream's descriptor inside the C library. */
    old_fd = fp ? fileno(fp) : -1;
    track = old_fd >= 0 && sluice_fd_known(old_fd) && !sluice_in_vfork_child();
    if (track)
        sluice_fd_prepare_replace(old_fd);
    old = sluice_stream_remove(fp, &old_buf, &old_size);
    t0 = sluice_now();
    nfp = real(path, mode, fp);
    if (!nfp)
        saved = errno;
    else if (path)
        stream_move_to_tier(nfp, path, mode);
    /* NULL path: same file, new mode */
    rec = !path ? old : stream_open_failed_unreadable(nfp, path, saved) ? NULL : stream_path_record(path, &io_mode);
    if (track && sluice_fd_known(old_fd))
        sluice_fd_replaced(old_fd);
    stream_fd_fresh(nfp);
    stream_buffer_release(old_buf, old_size);
    if (old)
        sluice_count_close(old, SLUICE_SIDES_APP, t0, sluice_now());
    if (rec) {
        if (!nfp) {
            sluice_count_error(rec, SLUICE_SIDES_BOTH);
        } else {
            size_t size = 0;
            uint64_t t1 = sluice_now();
            void *buf = stream_enlarge_buffer(nfp, io_mode, &size);
            stream_opened(rec, nfp, mode, buf, size, t0, t1);
        }
    }
    sluice__guard--;
    errno = saved;
    return nfp;
}

SLUICE_EXPORT FILE *freopen(const char *path, const char *mode, FILE *fp)
{
    return wrap_freopen(path, mode, fp, SLUICE_REAL(freopen));
}

SLUICE_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *fp)
{
    return wrap_freopen(path, mode, fp, SLUICE_REAL(freopen64));
}

SLUICE_EXPORT int fclose(FILE *fp)
{
    struct sluice_record *rec;
    struct stream_snap before;
    int fs = 0;
    void *buf;
    size_t size = 0;
    int saved = errno, rc, fd, track;
    uint64_t t0;

    if (!sluice_active())
        return SLUICE_REAL(fclose)(fp);
    /* A stream made by fdopen closes a descriptor we may be recording: the
     * tiers that work through it get a private copy first. */
    fd = fp ? fileno(fp) : -1;
    track = fd >= 0 && sluice_fd_known(fd) && !sluice_in_vfork_child();
    if (track) {
        sluice__guard++;
        sluice_fd_prepare_replace(fd);
        sluice__guard--;
    }
    if ((rec = sluice_stream_remove(fp, &buf, &size)) != NULL) {
        stream_snap_take(fp, &before);
        fs = stream_reaches_fs(before.fd);
    }
    t0 = sluice_now();
    rc = SLUICE_REAL(fclose)(fp);
    uint64_t t1 = sluice_now();
    stream_buffer_release(buf, size);
    if (rc != 0)
        saved = errno;
    if (rec) {
        struct sluice_stream gone = {.rec = rec};
        /* what the buffer held went to the kernel before its close */
        if (fs)
            stream_kernel_count(&gone, NULL, &before, 0, 0, STREAM_K_CLOSE, t0, t1);
        if (rc != 0) {
            sluice_count_error(rec, fs ? SLUICE_SIDES_BOTH : SLUICE_SIDES_APP);
        } else {
            sluice_count_close(rec, fs ? SLUICE_SIDES_BOTH : SLUICE_SIDES_APP, t0, t1);
        }
    }
    if (track && sluice_fd_known(fd)) {
        sluice__guard++;
        sluice_fd_replaced(fd);
        sluice__guard--;
    }
    errno = saved;
    return rc;
}

/* stdin, stdout and stderr: streams the program did not open. When the
 * descriptor under one is a recorded regular file (a shell's
 * `model > run.log`), the stream is recorded from its first call on, as
 * that file. Looked at once per stream and process image (freopen goes
 * through our wrapper). */
static _Atomic int std_looked[3];

static struct sluice_stream *stream_adopt_std(FILE *fp)
{
    struct sluice_record *rec;
    struct sluice_file *f;
    struct stat st;
    int fd = fileno(fp);

    if (fd < 0 || (f = sluice_fd_get_adopt(fd)) == NULL)
        return NULL;
    if ((rec = sluice_record_get(SLUICE_MOD_STDIO, f->rec->path)) != NULL) {
        sluice_record_split_sides(rec);
        /* (the position as the descriptor's record tracks it: no lseek
         * the kernel would see and the program did not make) */
        int64_t pos = !(f->flags & O_APPEND) ? atomic_load(&f->pos)
                      : SLUICE_REAL(fstat)(fd, &st) == 0 ? (int64_t)st.st_size : -1;
        sluice_stream_add(fp, rec, pos, NULL, 0);
    }
    sluice_file_put(f);
    return sluice_stream_get(fp);
}

/* The recorded stream fp, or NULL. */
static struct sluice_stream *stream_lookup(FILE *fp)
{
    struct sluice_stream *s = sluice_stream_get(fp);
    int i;

    if (s || !fp)
        return s;
    i = fp == stdout ? 1 : fp == stderr ? 2 : fp == stdin ? 0 : -1;
    /* (a vfork child shares the parent's memory: it must not mark it) */
    if (i < 0 || atomic_load_explicit(&std_looked[i], memory_order_relaxed) || sluice_in_vfork_child() ||
        atomic_exchange(&std_looked[i], 1))
        return NULL;
    sluice__guard++;
    s = stream_adopt_std(fp);
    sluice__guard--;
    return s;
}

/* ------------------------------------------------------------------ data */

/* Count a transfer of `bytes` on a stream; `failed` when the call reported
 * an error (ferror set, or EOF from a write call). */
static void stream_done(FILE *fp, struct sluice_stream *s, const struct stream_snap *before, enum sluice_access kind,
                        int64_t bytes, int failed, uint64_t t0)
{
    uint64_t t1 = sluice_now();
    int64_t start = -1;

    stream_kernel_count(s, fp, before, kind == SLUICE_WRITE ? bytes : 0, kind == SLUICE_READ ? bytes : 0,
                        STREAM_K_IO, t0, t1);
    if (bytes > 0 || !failed) {
        /* (relaxed: a position, not a lock; a seq_cst store is a locked
         * instruction on every stdio call) */
        int64_t pos = atomic_load_explicit(&s->pos, memory_order_relaxed);
        if (pos >= 0) {
            start = pos;
            atomic_store_explicit(&s->pos, pos + bytes, memory_order_relaxed);
        }
        sluice_count_rw(s->rec, SLUICE_SIDES_APP, kind, start, bytes, t0, t1);
    }
    if (failed)
        sluice_count_error(s->rec, SLUICE_SIDES_BOTH);
}

/* The body of every counted stream call: lookup, real call, count. `bytes`
 * and `failed` are expressions over `ret`. */
#define STREAM_IO(fp, type, realcall, kind, bytes, failed)     \
    do {                                                       \
        struct sluice_stream *s_;                              \
        struct stream_snap before_;                            \
        int saved_;                                            \
        uint64_t t0_;                                          \
        type ret;                                              \
        if (!sluice_active() || !(s_ = stream_lookup(fp))) \
            return realcall;                                   \
        saved_ = errno;                                        \
        stream_snap_take(fp, &before_);                        \
        t0_ = sluice_now();                                    \
        ret = realcall;                                        \
        int err_ = errno;                                      \
        stream_done(fp, s_, &before_, kind, (int64_t)(bytes), (failed), t0_); \
        errno = (failed) ? err_ : saved_;                      \
        return ret;                                            \
    } while (0)

#define FREAD_FAILED(ret, n, fp) ((ret) < (n) && ferror(fp))

SLUICE_EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *fp)
{
    STREAM_IO(fp, size_t, SLUICE_REAL(fread)(buf, size, n, fp), SLUICE_READ, ret * size, FREAD_FAILED(ret, n, fp));
}

SLUICE_EXPORT size_t fread_unlocked(void *buf, size_t size, size_t n, FILE *fp)
{
    STREAM_IO(fp, size_t, SLUICE_REAL(fread_unlocked)(buf, size, n, fp), SLUICE_READ, ret * size,
              FREAD_FAILED(ret, n, fp));
}

SLUICE_EXPORT size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *fp)
{
    STREAM_IO(fp, size_t, SLUICE_REAL(__fread_chk)(buf, buflen, size, n, fp), SLUICE_READ, ret * size,
              FREAD_FAILED(ret, n, fp));
}

SLUICE_EXPORT size_t __fread_unlocked_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *fp)
{
    STREAM_IO(fp, size_t, SLUICE_REAL(__fread_unlocked_chk)(buf, buflen, size, n, fp), SLUICE_READ, ret * size,
              FREAD_FAILED(ret, n, fp));
}

SLUICE_EXPORT size_t fwrite(const void *buf, size_t size, size_t n, FILE *fp)
{
    STREAM_IO(fp, size_t, SLUICE_REAL(fwrite)(buf, size, n, fp), SLUICE_WRITE, ret * size, ret < n);
}

SLUICE_EXPORT size_t fwrite_unlocked(const void *buf, size_t size, size_t n, FILE *fp)
{
    STREAM_IO(fp, size_t, SLUICE_REAL(fwrite_unlocked)(buf, size, n, fp), SLUICE_WRITE, ret * size, ret < n);
}

#define FGETS_BYTES(ret) ((ret) ? strlen(ret) : 0)

SLUICE_EXPORT char *fgets(char *str, int n, FILE *fp)
{
    STREAM_IO(fp, char *, SLUICE_REAL(fgets)(str, n, fp), SLUICE_READ, FGETS_BYTES(ret), !ret && ferror(fp));
}

SLUICE_EXPORT char *fgets_unlocked(char *str, int n, FILE *fp)
{
    STREAM_IO(fp, char *, SLUICE_REAL(fgets_unlocked)(str, n, fp), SLUICE_READ, FGETS_BYTES(ret),
              !ret && ferror(fp));
}

SLUICE_EXPORT char *__fgets_chk(char *str, size_t size, int n, FILE *fp)
{
    STREAM_IO(fp, char *, SLUICE_REAL(__fgets_chk)(str, size, n, fp), SLUICE_READ, FGETS_BYTES(ret),
              !ret && ferror(fp));
}

SLUICE_EXPORT char *__fgets_unlocked_chk(char *str, size_t size, int n, FILE *fp)
{
    STREAM_IO(fp, char *, SLUICE_REAL(__fgets_unlocked_chk)(str, size, n, fp), SLUICE_READ, FGETS_BYTES(ret),
              !ret && ferror(fp));
}

SLUICE_EXPORT int fputs(const char *str, FILE *fp)
{
    STREAM_IO(fp, int, SLUICE_REAL(fputs)(str, fp), SLUICE_WRITE, ret == EOF ? 0 : strlen(str), ret == EOF);
}

SLUICE_EXPORT int fputs_unlocked(const char *str, FILE *fp)
{
    STREAM_IO(fp, int, SLUICE_REAL(fputs_unlocked)(str, fp), SLUICE_WRITE, ret == EOF ? 0 : strlen(str),
              ret == EOF);
}

SLUICE_EXPORT int fputc(int c, FILE *fp)
{
    STREAM_IO(fp, int, SLUICE_REAL(fputc)(c, fp), SLUICE_WRITE, ret == EOF ? 0 : 1, ret == EOF);
}

SLUICE_EXPORT int putc(int c, FILE *fp)
{
    STREAM_IO(fp, int, SLUICE_REAL(putc)(c, fp), SLUICE_WRITE, ret == EOF ? 0 : 1, ret == EOF);
}

SLUICE_EXPORT int _IO_putc(int c, FILE *fp)
{
    STREAM_IO(fp, int, SLUICE_REAL(_IO_putc)(c, fp), SLUICE_WRITE, ret == EOF ? 0 : 1, ret == EOF);
}

SLUICE_EXPORT int fgetc(FILE *fp)
{
    STREAM_IO(fp, int, SLUICE_REAL(fgetc)(fp), SLUICE_READ, ret == EOF ? 0 : 1, ret == EOF && ferror(fp));
}

SLUICE_EXPORT int getc(FILE *fp)
{
    STREAM_IO(fp, int, SLUICE_REAL(getc)(fp), SLUICE_READ, ret == EOF ? 0 : 1, ret == EOF && ferror(fp));
}

SLUICE_EXPORT int _IO_getc(FILE *fp)
{
    STREAM_IO(fp, int, SLUICE_REAL(_IO_getc)(fp), SLUICE_READ, ret == EOF ? 0 : 1, ret == EOF && ferror(fp));
}

SLUICE_EXPORT int vfprintf(FILE *fp, const char *fmt, va_list ap)
{
    STREAM_IO(fp, int, SLUICE_REAL(vfprintf)(fp, fmt, ap), SLUICE_WRITE, ret < 0 ? 0 : ret, ret < 0);
}

SLUICE_EXPORT int __vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap)
{
    STREAM_IO(fp, int, SLUICE_REAL(__vfprintf_chk)(fp, flag, fmt, ap), SLUICE_WRITE, ret < 0 ? 0 : ret, ret < 0);
}

SLUICE_EXPORT int fprintf(FILE *fp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfprintf(fp, fmt, ap);
    va_end(ap);
    return rc;
}

SLUICE_EXPORT int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = __vfprintf_chk(fp, flag, fmt, ap);
    va_end(ap);
    return rc;
}

SLUICE_EXPORT int vprintf(const char *fmt, va_list ap)
{
    STREAM_IO(stdout, int, SLUICE_REAL(vprintf)(fmt, ap), SLUICE_WRITE, ret < 0 ? 0 : ret, ret < 0);
}

SLUICE_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
    STREAM_IO(stdout, int, SLUICE_REAL(__vprintf_chk)(flag, fmt, ap), SLUICE_WRITE, ret < 0 ? 0 : ret, ret < 0);
}

SLUICE_EXPORT int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vprintf(fmt, ap);
    va_end(ap);
    return rc;
}

SLUICE_EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = __vprintf_chk(flag, fmt, ap);
    va_end(ap);
    return rc;
}

SLUICE_EXPORT int puts(const char *str)
{
    STREAM_IO(stdout, int, SLUICE_REAL(puts)(str), SLUICE_WRITE, ret == EOF ? 0 : strlen(str) + 1, ret == EOF);
}

SLUICE_EXPORT int putchar(int c)
{
    STREAM_IO(stdout, int, SLUICE_REAL(putchar)(c), SLUICE_WRITE, ret == EOF ? 0 : 1, ret == EOF);
}

/* fscanf: bytes consumed are the change of the stream position. */
static int wrap_vfscanf(FILE *fp, const char *fmt, va_list ap, int (*real)(FILE *, const char *, va_list))
{
    struct sluice_stream *s;
    int saved = errno, ret;
    uint64_t t0;
    long before, after;

    if (!sluice_active() || !(s = stream_lookup(fp)))
        return real(fp, fmt, ap);
    struct stream_snap snap;
    before = SLUICE_REAL(ftell)(fp);
    stream_snap_take(fp, &snap);
    t0 = sluice_now();
    ret = real(fp, fmt, ap);
    int err = errno;
    after = SLUICE_REAL(ftell)(fp);
    int failed = ret == EOF && ferror(fp);
    stream_done(fp, s, &snap, SLUICE_READ, (before >= 0 && after >= before) ? after - before : 0, failed, t0);
    errno = failed ? err : saved;
    return ret;
}

SLUICE_EXPORT int vfscanf(FILE *fp, const char *fmt, va_list ap)
{
    return wrap_vfscanf(fp, fmt, ap, SLUICE_REAL(vfscanf));
}

SLUICE_EXPORT int __isoc99_vfscanf(FILE *fp, const char *fmt, va_list ap)
{
    return wrap_vfscanf(fp, fmt, ap, SLUICE_REAL(__isoc99_vfscanf));
}

SLUICE_EXPORT int fscanf(FILE *fp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = wrap_vfscanf(fp, fmt, ap, SLUICE_REAL(vfscanf));
    va_end(ap);
    return rc;
}

SLUICE_EXPORT int __isoc99_fscanf(FILE *fp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = wrap_vfscanf(fp, fmt, ap, SLUICE_REAL(__isoc99_vfscanf));
    va_end(ap);
    return rc;
}

/* -------------------------------------------------------- seek and flush */

/* A seek, rewind or position query: meta time; seeks also count and resync
 * the tracked position from ftello. */
static void stream_meta(struct sluice_stream *s, FILE *fp, const struct stream_snap *before, int rc, int is_seek,
                        uint64_t t0)
{
    uint64_t t1 = sluice_now();

    if (rc != 0) {
        sluice_count_error(s->rec, SLUICE_SIDES_BOTH);
        return;
    }
    stream_kernel_count(s, fp, before, 0, 0, is_seek ? STREAM_K_SEEK : STREAM_K_TELL, t0, t1);
    if (is_seek) {
        /* (ftello here asks the kernel nothing: the seek left the stream
         * knowing its position) */
        off_t pos = SLUICE_REAL(ftello)(fp);
        atomic_store(&s->pos, pos >= 0 ? (int64_t)pos : -1);
    }
    sluice_count_meta(s->rec, SLUICE_SIDES_APP, is_seek ? STDIO_SEEKS : -1, t0, t1);
}

#define STREAM_SEEK(fp, realcall)                              \
    do {                                                       \
        struct sluice_stream *s_;                              \
        struct stream_snap before_;                            \
        int saved_ = errno, rc_;                               \
        uint64_t t0_;                                          \
        if (!sluice_active() || !(s_ = stream_lookup(fp))) \
            return realcall;                                   \
        stream_snap_take(fp, &before_);                        \
        t0_ = sluice_now();                                    \
        rc_ = realcall;                                        \
        int err_ = errno;                                      \
        stream_meta(s_, fp, &before_, rc_, 1, t0_);            \
        errno = rc_ ? err_ : saved_;                           \
        return rc_;                                            \
    } while (0)

SLUICE_EXPORT int fseek(FILE *fp, long off, int whence)
{
    STREAM_SEEK(fp, SLUICE_REAL(fseek)(fp, off, whence));
}

SLUICE_EXPORT int fseeko(FILE *fp, off_t off, int whence)
{
    STREAM_SEEK(fp, SLUICE_REAL(fseeko)(fp, off, whence));
}

SLUICE_EXPORT int fseeko64(FILE *fp, off64_t off, int whence)
{
    STREAM_SEEK(fp, SLUICE_REAL(fseeko64)(fp, off, whence));
}

SLUICE_EXPORT void rewind(FILE *fp)
{
    struct sluice_stream *s;
    struct stream_snap before;
    int saved = errno;
    uint64_t t0;

    if (!sluice_active() || !(s = stream_lookup(fp))) {
        SLUICE_REAL(rewind)(fp);
        return;
    }
    stream_snap_take(fp, &before);
    t0 = sluice_now();
    SLUICE_REAL(rewind)(fp);
    stream_meta(s, fp, &before, 0, 1, t0);
    errno = saved;
}

#define STREAM_TELL(fp, type, realcall)                        \
    do {                                                       \
        struct sluice_stream *s_;                              \
        struct stream_snap before_;                            \
        int saved_ = errno;                                    \
        uint64_t t0_;                                          \
        type ret_;                                             \
        if (!sluice_active() || !(s_ = stream_lookup(fp))) \
            return realcall;                                   \
        stream_snap_take(fp, &before_);                        \
        t0_ = sluice_now();                                    \
        ret_ = realcall;                                       \
        int err_ = errno;                                      \
        stream_meta(s_, fp, &before_, ret_ < 0, 0, t0_);       \
        errno = ret_ < 0 ? err_ : saved_;                      \
        return ret_;                                           \
    } while (0)

SLUICE_EXPORT long ftell(FILE *fp)
{
    STREAM_TELL(fp, long, SLUICE_REAL(ftell)(fp));
}

SLUICE_EXPORT off_t ftello(FILE *fp)
{
    STREAM_TELL(fp, off_t, SLUICE_REAL(ftello)(fp));
}

SLUICE_EXPORT off64_t ftello64(FILE *fp)
{
    STREAM_TELL(fp, off64_t, SLUICE_REAL(ftello64)(fp));
}

SLUICE_EXPORT int fflush(FILE *fp)
{
    struct sluice_stream *s;
    int saved = errno, rc;
    uint64_t t0;

    if (!sluice_active() || !(s = stream_lookup(fp)))
        return SLUICE_REAL(fflush)(fp);
    struct stream_snap before;
    stream_snap_take(fp, &before);
    t0 = sluice_now();
    rc = SLUICE_REAL(fflush)(fp);
    uint64_t t1 = sluice_now();
    /* the kernel saw the write of what the buffer held, not a flush */
    stream_kernel_count(s, fp, &before, 0, 0, STREAM_K_IO, t0, t1);
    if (rc != 0) {
        saved = errno;
        sluice_count_error(s->rec, SLUICE_SIDES_BOTH);
    } else {
        sluice_count_sync(s->rec, SLUICE_SIDES_APP, STDIO_FLUSHES, t0, t1);
        /* (where the flushes fall among the writes decides what a larger
         * buffer would write: sluice predict reads it from the trace) */
        sluice_trace_meta(s->rec, SLUICE_SIDES_APP, SLUICE_TRACE_SYNC, 0, t0, t1);
    }
    errno = saved;
    return rc;
}
