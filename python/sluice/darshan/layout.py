"""The Darshan log format (log version 3.41) as data: header layout, module
ids and versions, and each exported module's counter names in storage order.

Learnt from darshan-util/darshan-logutils.c and include/darshan-*-log-format.h
of darshan-hpc/darshan; docs/darshan.md describes it. tests/python/test_darshan.py
checks the name lists against the ones PyDarshan's libdarshan-util carries.
"""

from __future__ import annotations

import struct

LOG_VERSION = b"3.41"
MAGIC = 6567223
ZLIB, BZIP2, NO_COMPRESSION = 0, 1, 2   # compression types; sluice writes zlib, one stream per region
MAX_MODS = 64

# version_string[8], magic (i64), comp_type (u8, then 7 bytes of padding),
# partial_flag (u64), name_map {off, len}, mod_map[64] {off, len}, mod_ver[64] (u32)
HEADER = struct.Struct(f"<8sqB7xQ2Q{2 * MAX_MODS}Q{MAX_MODS}I")
# The header of logs 3.00-3.21: 16 modules and a u32 partial flag.
HEADER_OLD = struct.Struct("<8sqB3xI2Q32Q16I")

# uid, start sec/nsec, end sec/nsec, nprocs, jobid, metadata[1024]
JOB = struct.Struct("<7q1024s")
JOB_RECORD_SIZE = 4096        # a reader takes at most this much of the job region
EXE_MOUNTS_MAX = JOB_RECORD_SIZE - JOB.size - 1   # exe line + mount lines, without the NUL
METADATA_LEN = 1024

BASE_RECORD = struct.Struct("<Qq")    # record id, rank (-1: shared by every rank)

# Module ids are positions in Darshan's module table.
POSIX, MPIIO, H5F, H5D, PNETCDF_FILE, PNETCDF_VAR, BGQ, LUSTRE, STDIO, DXT_POSIX, DXT_MPIIO = range(1, 12)
MODULE_NAMES = {POSIX: "POSIX", MPIIO: "MPI-IO", H5F: "H5F", H5D: "H5D", PNETCDF_FILE: "PNETCDF_FILE",
                PNETCDF_VAR: "PNETCDF_VAR", STDIO: "STDIO"}
MODULE_VERSIONS = {POSIX: 4, MPIIO: 3, H5F: 3, H5D: 2, PNETCDF_FILE: 3, PNETCDF_VAR: 1, STDIO: 2, DXT_POSIX: 1,
                   DXT_MPIIO: 2}
MODULE_NAMES.update({DXT_POSIX: "DXT_POSIX", DXT_MPIIO: "DXT_MPIIO"})
# A DXT record: base record, shared_record (-1: a shared file's), hostname[64],
# write_count, read_count; then its segments, writes first: offset, length,
# start and end (seconds since the job started).
DXT_RECORD = struct.Struct("<Qqq64sqq")
# A LUSTRE record (version 2): base record, num_comps, num_stripes; then per
# component its 7 counters and a 16-byte pool name; then num_stripes OST ids.
LUSTRE_VERSION = 2
LUSTRE_HEAD = struct.Struct("<Qqqq")
LUSTRE_COMP = struct.Struct("<7q16s")
MODULE_VERSIONS[LUSTRE] = LUSTRE_VERSION
MODULE_NAMES[LUSTRE] = "LUSTRE"
# Darshan 3.4's HEATMAP module (darshan/heatmap.py): bytes per rank and time bin
HEATMAP = 15
MODULE_VERSIONS[HEATMAP] = 1
MODULE_NAMES[HEATMAP] = "HEATMAP"
DXT_SEGMENT = struct.Struct("<qqdd")
# Modules whose records carry the record id of their file after the base
# record (darshan_hdf5_dataset's and darshan_pnetcdf_var's file_rec_id).
WITH_FILE_ID = {H5D, PNETCDF_VAR}

_SIZES = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")


def _p(prefix: str, *names: str) -> list[str]:
    return [f"{prefix}_{n}" for n in names]


def _sizes(prefix: str, agg: str = "") -> list[str]:
    return [f"{prefix}_SIZE_{kind}_{agg}{s}" for kind in ("READ", "WRITE") for s in _SIZES]


def _common(prefix: str, what: str) -> list[str]:
    """The four most common values of `what` (STRIDE, ACCESS) and their counts."""
    return [f"{prefix}_{what}{i}_{what}" for i in range(1, 5)] + [f"{prefix}_{what}{i}_COUNT" for i in range(1, 5)]


def _ranks(prefix: str) -> list[str]:
    return _p(prefix, "FASTEST_RANK", "FASTEST_RANK_BYTES", "SLOWEST_RANK", "SLOWEST_RANK_BYTES")


def _f_ranks(prefix: str) -> list[str]:
    return _p(prefix, "F_FASTEST_RANK_TIME", "F_SLOWEST_RANK_TIME", "F_VARIANCE_RANK_TIME", "F_VARIANCE_RANK_BYTES")


def _f_stamps(prefix: str) -> list[str]:
    return _p(prefix, *(f"F_{op}_{edge}_TIMESTAMP" for edge in ("START", "END")
                        for op in ("OPEN", "READ", "WRITE", "CLOSE")))


INT_NAMES: dict[int, list[str]] = {
    POSIX: _p("POSIX", "OPENS", "FILENOS", "DUPS", "READS", "WRITES", "SEEKS", "STATS", "MMAPS", "FSYNCS", "FDSYNCS",
              "RENAME_SOURCES", "RENAME_TARGETS", "RENAMED_FROM", "MODE", "BYTES_READ", "BYTES_WRITTEN",
              "MAX_BYTE_READ", "MAX_BYTE_WRITTEN", "CONSEC_READS", "CONSEC_WRITES", "SEQ_READS", "SEQ_WRITES",
              "RW_SWITCHES", "MEM_NOT_ALIGNED", "MEM_ALIGNMENT", "FILE_NOT_ALIGNED", "FILE_ALIGNMENT",
              "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE")
    + _sizes("POSIX") + _common("POSIX", "STRIDE") + _common("POSIX", "ACCESS") + _ranks("POSIX"),
    MPIIO: _p("MPIIO", "INDEP_OPENS", "COLL_OPENS", "INDEP_READS", "INDEP_WRITES", "COLL_READS", "COLL_WRITES",
              "SPLIT_READS", "SPLIT_WRITES", "NB_READS", "NB_WRITES", "SYNCS", "HINTS", "VIEWS", "MODE",
              "BYTES_READ", "BYTES_WRITTEN", "RW_SWITCHES", "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE")
    + _sizes("MPIIO", "AGG_") + _common("MPIIO", "ACCESS") + _ranks("MPIIO"),
    H5F: _p("H5F", "OPENS", "FLUSHES", "USE_MPIIO"),
    H5D: _p("H5D", "OPENS", "READS", "WRITES", "FLUSHES", "BYTES_READ", "BYTES_WRITTEN", "RW_SWITCHES",
            "REGULAR_HYPERSLAB_SELECTS", "IRREGULAR_HYPERSLAB_SELECTS", "POINT_SELECTS", "MAX_READ_TIME_SIZE",
            "MAX_WRITE_TIME_SIZE") + _sizes("H5D", "AGG_")
    + [f"H5D_ACCESS{i}_{what}" for i in range(1, 5)
       for what in ["ACCESS"] + [f"{kind}_D{d}" for kind in ("LENGTH", "STRIDE") for d in range(1, 6)]]
    + [f"H5D_ACCESS{i}_COUNT" for i in range(1, 5)]
    + _p("H5D", "DATASPACE_NDIMS", "DATASPACE_NPOINTS", "DATATYPE_SIZE")
    + [f"H5D_CHUNK_SIZE_D{d}" for d in range(1, 6)]
    + _p("H5D", "USE_MPIIO_COLLECTIVE", "USE_DEPRECATED") + _ranks("H5D"),
    STDIO: _p("STDIO", "OPENS", "FDOPENS", "READS", "WRITES", "SEEKS", "FLUSHES", "BYTES_WRITTEN", "BYTES_READ",
              "MAX_BYTE_READ", "MAX_BYTE_WRITTEN") + _ranks("STDIO"),
    PNETCDF_FILE: _p("PNETCDF_FILE", "CREATES", "OPENS", "REDEFS", "INDEP_WAITS", "COLL_WAITS", "SYNCS",
                     "BYTES_READ", "BYTES_WRITTEN", "WAIT_FAILURES"),
    PNETCDF_VAR: _p("PNETCDF_VAR", "OPENS", "INDEP_READS", "INDEP_WRITES", "COLL_READS", "COLL_WRITES", "NB_READS",
                    "NB_WRITES", "BYTES_READ", "BYTES_WRITTEN", "RW_SWITCHES")
    + [f"PNETCDF_VAR_{fam}_{kind}" for fam, kinds in (("PUT", 7), ("GET", 7), ("IPUT", 6), ("IGET", 6), ("BPUT", 6))
       for kind in ("VAR", "VAR1", "VARA", "VARS", "VARM", "VARN", "VARD")[:kinds]]
    + _p("PNETCDF_VAR", "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE") + _sizes("PNETCDF_VAR", "AGG_")
    + [f"PNETCDF_VAR_ACCESS{i}_{what}" for i in range(1, 5)
       for what in ["ACCESS"] + [f"{kind}_D{d}" for kind in ("LENGTH", "STRIDE") for d in range(1, 6)]]
    + [f"PNETCDF_VAR_ACCESS{i}_COUNT" for i in range(1, 5)]
    + _p("PNETCDF_VAR", "NDIMS", "NPOINTS", "DATATYPE_SIZE", "IS_RECORD_VAR") + _ranks("PNETCDF_VAR"),
}

FLOAT_NAMES: dict[int, list[str]] = {
    POSIX: _f_stamps("POSIX") + _p("POSIX", "F_READ_TIME", "F_WRITE_TIME", "F_META_TIME", "F_MAX_READ_TIME",
                                   "F_MAX_WRITE_TIME") + _f_ranks("POSIX"),
    MPIIO: _f_stamps("MPIIO") + _p("MPIIO", "F_READ_TIME", "F_WRITE_TIME", "F_META_TIME", "F_MAX_READ_TIME",
                                   "F_MAX_WRITE_TIME") + _f_ranks("MPIIO"),
    H5F: _p("H5F", "F_OPEN_START_TIMESTAMP", "F_CLOSE_START_TIMESTAMP", "F_OPEN_END_TIMESTAMP",
            "F_CLOSE_END_TIMESTAMP", "F_META_TIME"),
    H5D: _f_stamps("H5D") + _p("H5D", "F_READ_TIME", "F_WRITE_TIME", "F_META_TIME", "F_MAX_READ_TIME",
                               "F_MAX_WRITE_TIME") + _f_ranks("H5D"),
    STDIO: _p("STDIO", "F_META_TIME", "F_WRITE_TIME", "F_READ_TIME", "F_OPEN_START_TIMESTAMP",
              "F_CLOSE_START_TIMESTAMP", "F_WRITE_START_TIMESTAMP", "F_READ_START_TIMESTAMP",
              "F_OPEN_END_TIMESTAMP", "F_CLOSE_END_TIMESTAMP", "F_WRITE_END_TIMESTAMP", "F_READ_END_TIMESTAMP")
    + _f_ranks("STDIO"),
    PNETCDF_FILE: _p("PNETCDF_FILE", "F_OPEN_START_TIMESTAMP", "F_CLOSE_START_TIMESTAMP", "F_WAIT_START_TIMESTAMP",
                     "F_OPEN_END_TIMESTAMP", "F_CLOSE_END_TIMESTAMP", "F_WAIT_END_TIMESTAMP", "F_META_TIME",
                     "F_WAIT_TIME"),
    PNETCDF_VAR: _f_stamps("PNETCDF_VAR") + _p("PNETCDF_VAR", "F_READ_TIME", "F_WRITE_TIME", "F_META_TIME",
                                               "F_MAX_READ_TIME", "F_MAX_WRITE_TIME") + _f_ranks("PNETCDF_VAR"),
}


def record_struct(module: int) -> struct.Struct:
    """One record of an exported module: base record (and, for H5D and
    PNETCDF_VAR, its file's record id), integer counters, float counters."""
    file_id = "Q" if module in WITH_FILE_ID else ""
    return struct.Struct(f"<Qq{file_id}{len(INT_NAMES[module])}q{len(FLOAT_NAMES[module])}d")
