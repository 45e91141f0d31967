"""Where stage mode's tier goes when none is named, and what it costs where it is.

docs/stage.md, "The tier". Without ``--tier``/``SLUICE_TIER``, `sluice run`
puts the tier (``sluice-stage-UID``) in the first of these places that is in
memory (tmpfs or ramfs), writable and has room (``MIN_FREE``), else in the
first but /dev/shm that is on a local disk file system, writable and with
room:

    /dev/shm, $SLURM_TMPDIR, $TMPDIR, /tmp, /var/tmp

(a batch system's node-local scratch comes before the system's temporary
directories; a network file system is never chosen). `sluice run` passes
the choice to the program in ``SLUICE_TIER``, so the library (whose own
default is /dev/shm) and the job's drainer use the same tier, and
`sluice status`/`drain`/`recover`/`wait` look in the same places
(:func:`lookup`).

A tier that is not in memory costs every staged file more: `sluice run`
says so once at its start with the measured cost (:func:`warning`),
measured once per tier and kept in the tier (``placement.json``). On a
tmpfs tier the check is a ``stat`` and a read of /proc/self/mountinfo.

Only the standard library's light modules: `sluice run` imports this at
the start of every stage-mode job (tests/python/test_cli_startup.py).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from sluice.paths import tier_journal_empty

SHM = "/dev/shm"
# After a batch system's node-local scratch ($SLURM_TMPDIR, $TMPDIR).
SYSTEM_TMP = ("/tmp", "/var/tmp")
# Tests only: the memory directory tried first instead of /dev/shm (a
# directory that is not tmpfs, or none, stands for an unusable /dev/shm).
SHM_ENV = "SLUICE_TEST_SHM"
# Less free space than this and a place is not chosen: staged files would
# soon fill it (a container's /dev/shm is 64 MiB by default).
MIN_FREE = 1 << 30
MEMORY_FS = frozenset({"tmpfs", "ramfs"})
# Local disk file systems a tier may go on when no memory one has room.
DISK_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "jfs", "reiserfs", "bcachefs",
                     "nilfs2", "overlay"})

COST_FILE = "placement.json"
COST_FORMAT = 1
COST_MAX_AGE_S = 7 * 86400
# The measurement: what the library does on the tier for each file it
# stages (src/stage/open.c, src/stage/journal.c): create the data file and
# write PROBE_SMALL bytes, write the journal entry ENTRY_WRITES times (to
# .ID.tmp, fsync, rename over ID: open, closed, published), remove both.
# PROBE_FILES such files at most, fewer once PROBE_BUDGET_NS has gone by
# (at least one); the median.
PROBE_FILES = 3
PROBE_SMALL = 4096
ENTRY_WRITES = 3
PROBE_BUDGET_NS = 15_000_000


def tier_name(base: str) -> str:
    return os.path.join(base, f"sluice-stage-{os.getuid()}")


def shm_dir(env: dict[str, str] | None = None) -> str:
    return (os.environ if env is None else env).get(SHM_ENV) or SHM


def places(env: dict[str, str] | None = None) -> list[str]:
    """The directories a tier may go in, in order (absolute, existing or
    not, each once)."""
    env = os.environ if env is None else env
    seen: set[str] = set()
    out = []
    for d in (shm_dir(env), env.get("SLURM_TMPDIR", ""), env.get("TMPDIR", ""), *SYSTEM_TMP):
        if not d or not os.path.isabs(d):
            continue
        real = os.path.realpath(d)
        if real not in seen:
            seen.add(real)
            out.append(d.rstrip("/") or "/")
    return out


# ---------------------------------------------------------------- file system types

_mounts: list[tuple[str, str, str]] | None = None   # (major:minor, mount point, type), in mount order


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as \ooo
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _mount_table() -> list[tuple[str, str, str]]:
    global _mounts
    if _mounts is None:
        _mounts = []
        chunks = []
        try:
            fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
            try:
                while chunk := os.read(fd, 65536):
                    chunks.append(chunk)
            finally:
                os.close(fd)
        except OSError:
            pass
        for line in b"".join(chunks).decode("utf-8", "surrogateescape").splitlines():
            head, sep, tail = line.partition(" - ")
            fields = head.split(" ")
            if sep and len(fields) >= 5 and tail:
                _mounts.append((fields[2], _unescape(fields[4]), tail.split(" ", 1)[0]))
    return _mounts


def fs_type(path: str) -> str | None:
    """The type of the file system path is on (of its nearest existing
    ancestor if it does not exist), as /proc/self/mountinfo names it
    (``tmpfs``, ``ext4``, ``nfs4``, ``fuse.mfsmount``, ...); None if unknown."""
    p = os.path.abspath(path)
    while True:
        try:
            st = os.stat(p)
            break
        except OSError:
            parent = os.path.dirname(p)
            if parent == p:
                return None
            p = parent
    table = _mount_table()
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    found = [t for d, _, t in table if d == dev]
    if found:
        return found[-1]
    # (a btrfs subvolume has a device number of its own): the longest mount point above it
    real = os.path.realpath(p)
    best, kind = -1, None
    for _, mnt, t in table:
        if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= best:
            best, kind = len(mnt), t
    return kind


# ---------------------------------------------------------------- choosing

class Choice:
    """The tier `sluice run` uses: its path, its file system's type, and why
    the memory directory was passed over (empty when it was not)."""

    __slots__ = ("path", "fstype", "shm_problem")

    def __init__(self, path: str, fstype: str | None, shm_problem: str = "") -> None:
        self.path = path
        self.fstype = fstype
        self.shm_problem = shm_problem

    def __repr__(self) -> str:
        return f"Choice({self.path!r}, {self.fstype!r}, {self.shm_problem!r})"


def _mib(n: int) -> str:
    return f"{n / 1048576:.0f} MiB"


def problem(base: str, kinds: frozenset[str]) -> tuple[str | None, str]:
    """(the file system type of base, why a tier may not go there: "" when it may)."""
    try:
        st = os.stat(base)
    except FileNotFoundError:
        return None, "does not exist"
    except OSError as e:
        return None, f"cannot be used ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return None, "is not a directory"
    kind = fs_type(base)
    if kind not in kinds:
        return kind, f"is on {kind or 'an unknown file system'}"
    tier = tier_name(base)
    try:
        tst = os.lstat(tier)
    except FileNotFoundError:
        if not os.access(base, os.W_OK | os.X_OK):
            return kind, "is not writable"
    except OSError as e:
        return kind, f"has a {tier} that cannot be used ({e.strerror})"
    else:
        if not stat.S_ISDIR(tst.st_mode) or tst.st_uid != os.getuid():
            return kind, f"has a {tier} that is not your own directory"
    try:
        vfs = os.statvfs(base)
    except OSError as e:
        return kind, f"cannot be used ({e.strerror})"
    free = vfs.f_bavail * vfs.f_frsize
    if kind != "ramfs" and free < MIN_FREE:   # (ramfs has no size: statvfs says 0)
        return kind, f"has only {_mib(free)} free"
    return kind, ""


def choose(env: dict[str, str] | None = None) -> Choice:
    """Where a new job's tier goes (SLUICE_TIER is not looked at)."""
    candidates = places(env)
    shm = shm_dir(env).rstrip("/") or "/"
    shm_problem = ""
    for base in candidates:
        kind, why = problem(base, MEMORY_FS)
        if not why:
            return Choice(tier_name(base), kind, shm_problem)
        if base == shm:
            shm_problem = why
    for base in candidates:
        if base != shm:
            kind, why = problem(base, DISK_FS)
            if not why:
                return Choice(tier_name(base), kind, shm_problem)
    # nowhere: the library's own default (it says why it cannot use it)
    return Choice(tier_name(SHM), fs_type(SHM), shm_problem)


def lookup(env: dict[str, str] | None = None) -> str:
    """The tier `sluice status`, `drain`, `recover` and `wait` look at when
    none is named: the first place holding a tier with journal entries,
    else where a job would put its tier now."""
    for base in places(env):
        tier = tier_name(base)
        if not tier_journal_empty(Path(tier)):
            return tier
    return choose(env).path


# ---------------------------------------------------------------- what it costs

def _probe(directory: str) -> int:
    """Median ns of a staged file's work on the tier, done in directory."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    stem = os.path.join(directory, f".sluice-probe-{os.getpid()}")
    data, entry, tmp = f"{stem}-data", f"{stem}-entry", f"{stem}-entry.tmp"
    small = bytes(PROBE_SMALL)
    text = b"sluice-stage 2\n" + b"key=value\n" * 24
    times: list[int] = []
    try:
        start = time.perf_counter_ns()
        for _ in range(PROBE_FILES):
            t = time.perf_counter_ns()
            fd = os.open(data, flags | os.O_EXCL, 0o600)
            try:
                os.write(fd, small)
            finally:
                os.close(fd)
            for _ in range(ENTRY_WRITES):
                fd = os.open(tmp, flags | os.O_TRUNC, 0o600)
                try:
                    os.write(fd, text)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.rename(tmp, entry)
            os.unlink(data)
            os.unlink(entry)
            times.append(time.perf_counter_ns() - t)
            if time.perf_counter_ns() - start > PROBE_BUDGET_NS:
                break
    finally:
        for name in (data, entry, tmp):
            try:
                os.unlink(name)
            except OSError:
                pass
    times.sort()
    return times[(len(times) - 1) // 2]


def _probe_shm(shm: str) -> int | None:
    """The same in a private directory of its own on the memory file system."""
    if fs_type(shm) not in MEMORY_FS:
        return None
    d = os.path.join(shm, f".sluice-probe-{os.getuid()}-{os.getpid()}")
    try:
        os.mkdir(d, 0o700)
    except OSError:
        return None
    try:
        return _probe(d)
    except OSError:
        return None
    finally:
        try:
            os.rmdir(d)
        except OSError:
            pass


def private_tier(tier: str) -> os.stat_result | None:
    """The tier's directory, made (mode 0700) if it is not there, when it is
    a private directory of the user (what the library accepts); else None."""
    try:
        os.mkdir(tier, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(tier)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return st


def cost(tier: str, kind: str, shm: str = SHM) -> dict | None:
    """What files cost on the tier and on the memory file system, measured
    now or earlier (kept in TIER/placement.json for COST_MAX_AGE_S); None
    when the tier is not usable."""
    import json   # (not on the way of a tier in memory)

    st = private_tier(tier)
    if st is None:
        return None
    path = os.path.join(tier, COST_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            kept = json.load(f)
        if (kept.get("format") == COST_FORMAT and kept.get("dev") == st.st_dev and kept.get("fstype") == kind
                and kept.get("shm") == shm and 0 <= time.time() - kept.get("measured", 0) < COST_MAX_AGE_S):
            return kept
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    try:
        file_ns = _probe(tier)
    except OSError:
        return None
    measured = {"format": COST_FORMAT, "dev": st.st_dev, "fstype": kind, "shm": shm, "measured": time.time(),
                "file_ns": file_ns}
    on_shm = _probe_shm(shm)
    if on_shm is not None:
        measured["shm_file_ns"] = on_shm
    tmp = f"{path}.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(measured, f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return measured


def shown_time(ns: int) -> str:
    if ns < 1_000_000:
        return f"{max(1, round(ns / 1000))} µs"
    if ns < 10_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{round(ns / 1e6)} ms"


def warning(tier: str, choice: Choice | None = None, env: dict[str, str] | None = None) -> str | None:
    """The line `sluice run` says when the tier is not in memory; None when
    it is (or it cannot be told, or the library will refuse the tier and
    say so). choice: how the tier was chosen, when it was not named."""
    kind = choice.fstype if choice is not None else fs_type(tier)
    if kind is None or kind in MEMORY_FS:
        return None
    shm = shm_dir(env)
    c = cost(tier, kind, shm)
    if c is None:
        return None
    what = "a disk" if kind in DISK_FS else "not memory"
    line = (f"sluice: stage tier {tier} is on {kind} ({what}): each file staged there costs "
            f"{shown_time(c['file_ns'])} ({ENTRY_WRITES} fsynced journal writes)")
    if "shm_file_ns" in c:
        line += f" against {shown_time(c['shm_file_ns'])} on {shm}"
    if choice is not None:
        if choice.shm_problem:
            line += f"; {shm} {choice.shm_problem} (--tier DIR to choose)"
    elif not problem(shm, MEMORY_FS)[1]:
        line += f"; --tier {tier_name(shm)} stages in memory"
    return line


def place(env: dict[str, str], say, quiet: bool = False) -> str:
    """`sluice run` in stage and auto modes: put the tier in env's
    SLUICE_TIER (the one named, else :func:`choose`'s), say once when it is
    not in memory (unless quiet), and return it."""
    named = env.get("SLUICE_TIER")
    choice = None
    if not named:
        choice = choose(env)
        env["SLUICE_TIER"] = choice.path
    tier = env["SLUICE_TIER"]
    if not quiet:
        line = warning(os.path.abspath(tier), choice, env)
        if line:
            say(line)
    return tier
