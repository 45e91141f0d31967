/*
 * File layouts chosen at create (docs/layout.md): on a file system with
 * per-file layouts (CephFS, Lustre), a NEW file gets a stripe count and
 * size from its class before its first write, never over a layout the user
 * set (the file existed, or its directory has an explicit layout). A
 * failure to set one is never the program's error.
 *
 * One table of function pointers per file-system type, found from the
 * mount the path lies under (core/mounts.h: kernel ceph, ceph-fuse,
 * lustre). The pure parts (SLUICE_LAYOUT parsing, the class's layout, the
 * attribute values) are in layout_format.c, unit-tested alone.
 */
#ifndef SLUICE_LAYOUT_LAYOUT_H
#define SLUICE_LAYOUT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sluice_record;

struct sluice_layout {
    int64_t stripe_count;   /* -1: all (Lustre) */
    int64_t stripe_size;    /* bytes (CephFS stripe_unit) */
    int64_t object_size;    /* CephFS only; 0: derived from stripe_size */
};

/* A file's layout as the file system gives it (POSIX_STRIPE_SIZE,
 * POSIX_STRIPE_COUNT, POSIX_OBJECT_SIZE, POSIX_LAYOUT_COMPONENTS). */
struct sluice_layout_seen {
    int64_t stripe_size, stripe_count, object_size, components;
};

/* What SLUICE_LAYOUT asks for. */
enum sluice_layout_want {
    SLUICE_LAYOUT_DEFAULT,  /* "": by class, in --mode auto only */
    SLUICE_LAYOUT_AUTO,     /* "auto": by class, in every mode */
    SLUICE_LAYOUT_OFF,      /* "off": never */
    SLUICE_LAYOUT_FIXED,    /* "stripe_count=N,stripe_size=S[,object_size=O]": this one */
};

struct sluice_layout_spec {
    enum sluice_layout_want want;
    struct sluice_layout fixed;
};

/* One file-system type (designated initializers; size first). */
struct sluice_layout_ops {
    size_t size;
    const char *name;
    /* extra flags of the open that creates the file, which keep it without
     * data objects until its layout is set (Lustre's O_LOV_DELAY_CREATE) */
    int create_flags;
    /* 1: the directory has a layout that new files inherit, set by a user
     * on it or on a directory above it; 0: it has none, and *effective is
     * the layout a new file gets there (stripe_count 0: not known);
     * -errno: cannot tell */
    int (*dir_layout)(const char *dir, int is_root, struct sluice_layout *effective);
    /* set the layout of the new, empty file open at fd: 0 or -errno */
    int (*set)(int fd, const struct sluice_layout *l);
    /* 1: a file given `want` would have `have` (NULL: never known) */
    int (*same)(const struct sluice_layout *want, const struct sluice_layout *have);
    /* the layout of the file open at fd: 0 or -errno */
    int (*read)(int fd, struct sluice_layout_seen *out);
};

extern const struct sluice_layout_ops sluice_layout_ceph_ops;
extern const struct sluice_layout_ops sluice_layout_lustre_ops;

/* ---- pure (layout_format.c) ---- */

/* Parse SLUICE_LAYOUT: 0, or -EINVAL (spec left as DEFAULT). */
int sluice_layout_parse(const char *text, struct sluice_layout_spec *spec);

/* The layout of a file of its class: one stripe for a file one process
 * creates (file per process), many for a file an MPI communicator of
 * `nprocs` > 1 ranks opens, the stripe size matched to the aggregation
 * unit `unit`. */
struct sluice_layout sluice_layout_for_class(int nprocs, int64_t unit);

/* "stripe_unit=S stripe_count=N object_size=O" for ceph.file.layout; its
 * length, or -1 when it does not fit or the layout is not valid there. */
int sluice_layout_ceph_value(const struct sluice_layout *l, char *buf, size_t len);

/* The layout in CephFS's ceph.dir.layout.json value (as of Ceph 16):
 * 1 when it was set on the directory or one above it ("@set",
 * "@inherited"), 0 for the file system's default ("@default"), -1 when the
 * text is not such a value. *l gets the layout. */
int sluice_layout_ceph_json(const char *json, struct sluice_layout *l);

/* 1 when CephFS would store `want` as `have` (a known layout), else 0. */
int sluice_layout_ceph_same(const struct sluice_layout *want, const struct sluice_layout *have);

/* ceph.file.layout's value ("stripe_unit=S stripe_count=N object_size=O
 * pool=P", any order, more keys allowed): 0, or -1 when one of the three
 * numbers is missing. */
int sluice_layout_ceph_parse(const char *text, struct sluice_layout_seen *out);

/* lustre.lov's value as a Lustre client gives it: lov_mds_md v1 or v3, or a
 * composite layout (lov_comp_md_v1) whose first component is one of those.
 * 0, or -1 when the bytes are none of these (or cut short). */
int sluice_layout_lustre_parse(const unsigned char *v, size_t n, struct sluice_layout_seen *out);
#define SLUICE_LOV_MAGIC_V3 0x0BD30BD0u
#define SLUICE_LOV_MAGIC_COMP_V1 0x0BD60BD0u

/* Lustre's lov_user_md v1 (lustre_user.h; 32 bytes, little-endian) for
 * the lustre.lov attribute; its length, or -1 when it does not fit. */
int sluice_layout_lustre_value(const struct sluice_layout *l, unsigned char *buf, size_t len);
#define SLUICE_LOV_USER_MAGIC_V1 0x0BD10BD0u
#define SLUICE_LOV_PATTERN_RAID0 0x1u
#define SLUICE_LOV_V1_SIZE 32

/* ---- the runtime's hooks (layout.c) ---- */

/* Cheap, for every creating open: whether any file may get a layout
 * (SLUICE_LAYOUT asks for them in every mode, or some path's mode is auto). */
int sluice_layout_active(void);

/* Before an open(path, flags, mode) that may create a file (O_CREAT):
 * when the file is new and should get a layout (`abs`: its absolute path;
 * `smode`: its sluice mode), create it here, empty, with `mode` (the
 * umask applies as to the program's open), set its layout through that
 * descriptor and close it, and count the decision in rec. The open that
 * follows then finds a file with its layout and fresh capabilities: on
 * ceph-fuse, writes through the descriptor a layout was set on go to the
 * servers one by one. Returns the flags for that open: without O_EXCL when
 * the file was created here (the creation was exclusive), else `flags`;
 * *created tells sluice_layout_undo() whether to remove the file if the
 * open fails. errno is preserved. */
int sluice_layout_create(int dirfd, const char *path, const char *abs, int flags, mode_t mode, int smode,
                         struct sluice_record *rec, int *created);

/* The open after sluice_layout_create failed: remove the file made there. */
void sluice_layout_undo(int dirfd, const char *path, int created);

/* The same for a file the stage tier creates to publish final_path: path
 * itself, or a temporary file renamed over final_path later (a file that
 * already stands at final_path keeps its layout then: none is set). */
int sluice_layout_publish_create(const char *path, const char *final_path, int flags, mode_t mode,
                                 struct sluice_record *rec, int *created);

/* After an open of rec's file reached the file system as fd: on CephFS or
 * Lustre, the file's layout into rec (POSIX_STRIPE_SIZE, ...), read once
 * per record (one fgetxattr on the open file; the layout came with the
 * open). errno is preserved. */
void sluice_layout_observe(struct sluice_record *rec, int fd);

/* MPI_File_open of a communicator of nprocs ranks with aggregation unit
 * `unit`: the files created inside are shared ones (thread-local). */
void sluice_layout_shared_begin(int nprocs, int64_t unit);
void sluice_layout_shared_end(void);

#endif
