"""The thresholds `sluice advise` applies, and where each comes from.

The baseline is Drishti's published defaults (``drishti/includes/config.py``
of hpc-io/drishti-io: ``small_bytes`` 1 MiB, ``small_requests`` 10 % and
1,000, ``misaligned_requests`` 10 %, ``metadata_time_rank`` 30 s,
``random_operations`` 20 % and 1,000, ``imbalance_stragglers`` 15 %,
``imbalance_size`` 30 %, ``interface_stdio`` 10 %, ``collective_operations``
50 % and 1,000). The rest are sluice's own, for what Drishti does not check
(small files, reopened files, file layout) or where both sides of sluice's
counters give better evidence; docs/advise.md lists them all.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024 * 1024
GIB = 1024 * MIB

# ---- Drishti's defaults
SMALL_BYTES = MIB                 # small_bytes: a request of at most 1 MiB (Darshan's buckets up to 100K_1M)
SMALL_SHARE = 0.10                # small_requests: more than 10 % of the requests are small ...
SMALL_ABS = 1000                  # small_requests_absolute: ... and more than 1,000 of them
MISALIGNED_SHARE = 0.10           # misaligned_requests
METADATA_RANK_SECONDS = 30.0      # metadata_time_rank: a process spends more than 30 s in metadata calls
RANDOM_SHARE = 0.20               # random_operations: more than 20 % of the reads are not sequential ...
RANDOM_ABS = 1000                 # random_operations_absolute: ... and more than 1,000 of them
STRAGGLER_SHARE = 0.15            # imbalance_stragglers
IMBALANCE_SIZE = 0.30             # imbalance_size
STDIO_SHARE = 0.10                # interface_stdio: more than 10 % of the bytes go through stdio
COLLECTIVE_SHARE = 0.50           # collective_operations: more than 50 % of a shared file's MPI-IO calls independent ...
COLLECTIVE_ABS = 1000             # collective_operations_absolute: ... and more than 1,000 of them

# ---- sluice's own
METADATA_SHARE = 0.30             # metadata calls take 30 % of the job's I/O time ...
METADATA_CALLS = 1000             # ... over at least 1,000 metadata calls
SMALL_FILE_BYTES = MIB            # a small file: nothing written or read beyond its first MiB
SMALL_FILES_MIN = 100             # at least 100 such files, each used by one process ...
SMALL_FILES_PER_DIR = 10          # ... counting those in directories that hold 10 or more of them
OPENS_PER_PROCESS = 100           # one process opens one file 100 times or more
REDUNDANT_SHARE = 0.10            # bytes moved beyond the extent touched: more than 10 % of it ...
REDUNDANT_MIN_BYTES = MIB         # ... and at least 1 MiB
CONSECUTIVE_FOR_BUFFER = 0.5      # half the accesses continue the previous one: coalescing/read-ahead applies
SCATTERED_MAX_CONSECUTIVE = 0.5   # a shared file whose writes mostly do not continue each other
ALIGNMENT = MIB                   # the boundary misalignment is measured against (Lustre's default stripe)
MISALIGNED_MIN_SIZE = 100 * KIB   # requests this large are checked for alignment (smaller: small-writes)
LARGE_SHARED_BYTES = GIB          # a shared file this large wants more than one stripe
IN_EFFECT_RATIO = 2.0             # the fs side made at least 2 times fewer calls than the program: a mode already works
PARTLY_RATIO = 1.1                # at least 10 % fewer: a mode acts on the file, with less effect
FEW_SMALL_MIN_SAVED = 10          # below Drishti's thresholds, a mode that would save this many calls is a finding

# ---- what the fixes assume (the library's defaults, docs/configuration.md)
BUFFER_UNIT = 4 * MIB             # buffer.size
READAHEAD = 4 * MIB               # buffer.readahead
ACB_WRITE_SIZE = 16 * MIB         # acb.write_size

# ---- severity: the share of the job's I/O time a finding explains
SEVERITY_HIGH = 0.25
SEVERITY_MEDIUM = 0.05
IO_SHARE_OF_RUNTIME = 0.05        # below this share of the processes' run time, severities drop one level

DRISHTI = {
    "small_bytes": SMALL_BYTES, "small_requests": SMALL_SHARE, "small_requests_absolute": SMALL_ABS,
    "misaligned_requests": MISALIGNED_SHARE, "metadata_time_rank": METADATA_RANK_SECONDS,
    "random_operations": RANDOM_SHARE, "random_operations_absolute": RANDOM_ABS,
    "imbalance_stragglers": STRAGGLER_SHARE, "imbalance_size": IMBALANCE_SIZE, "interface_stdio": STDIO_SHARE,
    "collective_operations": COLLECTIVE_SHARE, "collective_operations_absolute": COLLECTIVE_ABS,
}
