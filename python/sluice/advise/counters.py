"""Reading a job's counters as the rules need them: sums over counter names
and files, the I/O time of a file, whether a mode already cut a kind of
call, and the numbers as the findings print them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from sluice.advise import thresholds as th
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

SMALL_BUCKETS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")
ALL_BUCKETS = SMALL_BUCKETS + ("1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")
META_CALLS = tuple(f"POSIX_{k}" for k in ("OPENS", "STATS", "SEEKS", "UNLINKS", "RENAMES", "MKDIRS", "RMDIRS",
                                          "TRUNCATES", "CHMODS", "CHOWNS", "UTIMES", "LINKS", "XATTR_READS",
                                          "XATTR_WRITES", "OPENDIRS")) + ("STDIO_OPENS", "STDIO_SEEKS")
SERVER_META_CALLS = tuple(c for c in META_CALLS if not c.endswith("_SEEKS"))
MPIIO_WRITES = ("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_NB_WRITES", "MPIIO_SHARED_WRITES")
HDF5_SUFFIXES = (".h5", ".hdf5", ".he5", ".hdf", ".nc4")


def v(d: Mapping[str, float], *names: str) -> float:
    total = 0
    get = d.get
    for name in names:
        x = get(name)
        if x:
            total += x
    return total


def v_sum(files: list[FileTotals], *names: str) -> float:
    """The app side's counters summed over files."""
    return sum(v(f.app, *names) for f in files)


def sum_fs(files: list[FileTotals]) -> dict[str, float]:
    """The fs side of the files, summed counter by counter."""
    out: dict[str, float] = defaultdict(float)
    for f in files:
        for k, x in f.fs.items():
            out[k] += x or 0
    return out


def small(d: Mapping[str, float], module: str, kind: str) -> float:
    """Requests of at most 1 MiB (Darshan's buckets up to 100K_1M)."""
    return v(d, *(f"{module}_SIZE_{kind}_{b}" for b in SMALL_BUCKETS))


def extent(d: Mapping[str, float], kind: str) -> int:
    """Bytes from offset 0 to the highest byte read or written (0: none)."""
    return int(max(v(d, f"POSIX_MAX_BYTE_{kind}"), d.get(f"STDIO_MAX_BYTE_{kind}", -1), -1)) + 1


def posix_time(d: Mapping[str, float]) -> float:
    return v(d, "POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME")


def stdio_time(d: Mapping[str, float]) -> float:
    return v(d, "STDIO_F_READ_TIME", "STDIO_F_WRITE_TIME", "STDIO_F_META_TIME")


def mpiio_time(d: Mapping[str, float]) -> float:
    return v(d, "MPIIO_F_READ_TIME", "MPIIO_F_WRITE_TIME", "MPIIO_F_META_TIME")


def io_time(d: Mapping[str, float]) -> float:
    """Seconds in I/O calls: MPI-IO's time holds the POSIX calls it makes, so the larger of the two."""
    return max(posix_time(d), mpiio_time(d)) + stdio_time(d)


def meta_time(d: Mapping[str, float]) -> float:
    return max(v(d, "POSIX_F_META_TIME"), v(d, "MPIIO_F_META_TIME")) + v(d, "STDIO_F_META_TIME")


def uses_mpiio(d: Mapping[str, float]) -> bool:
    return v(d, "MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS") > 0


def cut(f: FileTotals, counter: str) -> float:
    """How many times fewer of these calls reached the file system than the program made."""
    a, s = v(f.app, counter), v(f.fs, counter)
    return a / s if s else (float("inf") if a else 1.0)


def coalesced(f: FileTotals, counter: str) -> bool:
    """The fs side made far fewer of these calls than the program: a mode already works on this file."""
    a, s = v(f.app, counter), v(f.fs, counter)
    return a > 0 and s * th.IN_EFFECT_RATIO <= a


def staged(f: FileTotals) -> bool:
    """The file system saw the file only after the program closed it, or not while the process ran
    (stage mode published it, or left it on the tier)."""
    if v(f.app, "POSIX_OPENS") > 0 and v(f.fs, "POSIX_OPENS") == 0:
        return True
    a_close = v(f.app, "POSIX_F_CLOSE_END_TIMESTAMP")
    s_open = v(f.fs, "POSIX_F_OPEN_START_TIMESTAMP")
    return a_close > 0 and s_open >= a_close


def consecutive_share(f: FileTotals, kind: str, procs: int) -> float:
    """Accesses continuing the previous one, of those that could (each process's first cannot)."""
    calls = v(f.app, f"POSIX_{kind}S")
    return v(f.app, f"POSIX_CONSEC_{kind}S") / max(1.0, calls - procs)


def common_sizes(files: list[FileTotals], module: str = "POSIX", top: int = 4) -> list[tuple[int, int]]:
    """The most common request sizes of these files, (size, calls) most frequent first, from each file's
    four most common sizes (*_ACCESS1..4, counted at run time as Darshan does; empty in logs without them)."""
    counts: dict[int, float] = defaultdict(float)
    for f in files:
        for i in range(1, 5):
            size, c = int(v(f.app, f"{module}_ACCESS{i}_ACCESS")), v(f.app, f"{module}_ACCESS{i}_COUNT")
            if size > 0 and c > 0:
                counts[size] += c
    return [(s, int(c)) for s, c in sorted(counts.items(), key=lambda kv: (-kv[1], -kv[0]))[:top]]


def sizes_text(sizes: list[tuple[int, int]]) -> str:
    return ("; most common sizes " + ", ".join(f"{human_bytes(s)} x {c:,}" for s, c in sizes)) if sizes else ""


def pct(x: float) -> str:
    return f"{100 * x:.0f} %" if x >= 0.01 or x == 0 else f"{100 * x:.2f} %"


def secs(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def n(x: float) -> str:
    return f"{int(x):,}"


def plural(k: float, word: str, many: str | None = None) -> str:
    """'1 file', '3 files' (`many`: the plural where it is not word + 's')."""
    return f"{n(k)} {word if k == 1 else many or word + 's'}"
