"""What a tier holds: its entries, their sizes and ages, and whether their processes live.

Reading only: nothing here takes a lock or changes a file, so `sluice status`
and `sluice wait` never get in the way of a drainer.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from sluice.stage.journal import PENDING_STATES, Entry, JournalError, read
from sluice.stage.tier import Tier

# How much later than an entry's creation a process may appear to have
# started before we call its pid reused (btime has a resolution of 1 s and
# moves when the wall clock is stepped).
PID_REUSE_SLACK_NS = 5_000_000_000

NO_ENTRY = "data without a journal entry"


@dataclass(frozen=True)
class Listed:
    id: str
    entry: Entry | None      # None: the entry does not parse, or there is none
    problem: str             # why entry is None (a parse error, NO_ENTRY); "" otherwise
    data_bytes: int | None   # size of data/ID; None if there is no data file
    process: str             # "running", "gone", "elsewhere" (another host) or "" (no entry)

    @property
    def pending(self) -> bool:
        return self.entry is not None and self.entry.state in PENDING_STATES

    def age_s(self, now_ns: int) -> float | None:
        """Seconds since the entry was created (how long the bytes have been only on the tier)."""
        return None if self.entry is None else max(0, now_ns - self.entry.created_ns) / 1e9


def entry_ids(tier: Tier) -> list[str]:
    """Names of journal entries, without entries being rewritten (.ID.tmp)."""
    return sorted(n for n in _names(tier.journal_dir) if not n.startswith("."))


def scan(tier: Tier) -> list[Listed]:
    """Every journal entry of the tier, and every data file without one."""
    ids = entry_ids(tier)
    listed = [l for l in (_listed(tier, i) for i in ids) if l is not None]
    known = set(ids)
    for name in sorted(_names(tier.data_dir)):
        if name not in known and not name.startswith("."):
            listed.append(Listed(name, None, NO_ENTRY, _size(tier.data(name)), ""))
    return listed


def stale_journal_temps(tier: Tier) -> list[Path]:
    """journal/.ID.tmp files (an entry being rewritten) left by a process
    killed before its rename: ID's process is gone, and nobody holds the
    file's lock (a drainer rewriting an entry of an ended process locks
    its new file before the rename). The entry itself is journal/ID."""
    found = []
    for name in sorted(_names(tier.journal_dir)):
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        host, _, rest = name[1:-4].rpartition("-")
        host, _, pid = host.rpartition("-")
        path = tier.journal_dir / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not pid.isdigit() or not rest.isdigit() or pid_state(host, int(pid), st.st_mtime_ns) != "gone":
            continue
        found.append(path)
    return found


def stale_links(tier: Tier) -> list[tuple[Path, str]]:
    """Index links (names/KEY -> "ID MODE PATH") whose entry is gone.

    A link is made after its entry and removed before it, so one without
    an entry was left by a process killed in between: it would make its
    directory look non-empty to rmdir. (link, its target) each."""
    found = []
    for name in sorted(_names(tier.names_dir)):
        if name.startswith("."):
            continue
        link = tier.names_dir / name
        try:
            target = os.readlink(link)
        except OSError:
            continue
        entry_id = target.split(" ", 1)[0]
        if entry_id and not os.path.lexists(tier.journal(entry_id)):
            found.append((link, target))
    return found


def pending(tier: Tier | None, paths: list[str] | None = None) -> list[Listed]:
    """Pending (open or closed) entries, only those for `paths` when given."""
    if tier is None:
        return []
    wanted = {same_file_key(p) for p in paths} if paths else None
    return [l for l in scan(tier)
            if l.pending and l.entry and (wanted is None or same_file_key(l.entry.path) in wanted)]


def same_file_key(path: str) -> str:
    """A path made absolute, its directory resolved when it exists, for comparing names."""
    p = os.path.abspath(path)
    parent, name = os.path.split(p)
    return os.path.join(os.path.realpath(parent), name) if os.path.isdir(parent) else p


def process_state(entry: Entry) -> str:
    """"running" if the staging process still runs on this host, "gone", or "elsewhere"."""
    return pid_state(entry.host, entry.pid, entry.created_ns)


def pid_state(host: str, pid: int, since_ns: int) -> str:
    """"running" if process `pid` of `host`, there since `since_ns`, still runs; "gone"; or "elsewhere"."""
    if host != socket.gethostname():
        return "elsewhere"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        pass  # it exists, as another user
    if _is_zombie(pid):
        return "gone"  # killed and not yet reaped: its descriptors and locks are gone
    started = process_start_ns(pid)
    if started is not None and started > since_ns + PID_REUSE_SLACK_NS:
        return "gone"  # the pid now belongs to a process started after the entry
    return "running"


def unentered_data(tier: Tier) -> list[Path]:
    """Empty data files without a journal entry whose process is gone.

    A process creates data/ID, then writes journal/ID, and only then gives
    the program its descriptor: killed in between, it leaves an empty data
    file that holds nothing the program wrote. A data file with bytes, or
    one whose process still runs, is never listed."""
    known = set(entry_ids(tier))
    found = []
    for name in sorted(_names(tier.data_dir)):
        if name in known or name.startswith("."):
            continue
        host, _, rest = name.rpartition("-")
        host, _, pid = host.rpartition("-")
        try:
            st = os.lstat(tier.data(name))
        except OSError:
            continue
        if not pid.isdigit() or not rest.isdigit() or st.st_size != 0:
            continue
        if os.path.exists(tier.journal(name)):
            continue   # its entry was written after we listed
        if pid_state(host, int(pid), st.st_mtime_ns) == "gone":
            found.append(tier.data(name))
    return found


def _is_zombie(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


def process_start_ns(pid: int) -> int | None:
    """Wall-clock start time of `pid` from /proc, or None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot_s = next(int(l.split()[1]) for l in Path("/proc/stat").read_text().splitlines()
                      if l.startswith("btime "))
        # Field 22 (starttime, in clock ticks since boot) counts from after the ")" of comm.
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        return boot_s * 1_000_000_000 + ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def now_ns() -> int:
    return time.time_ns()


def _listed(tier: Tier, entry_id: str) -> Listed | None:
    """The entry as listed; None if it was removed (published) while we looked."""
    size = _size(tier.data(entry_id))
    try:
        entry = read(tier.journal(entry_id))
    except JournalError as e:
        return Listed(entry_id, None, str(e), size, "")
    except FileNotFoundError:
        return None
    except OSError as e:
        return Listed(entry_id, None, f"cannot read: {e.strerror}", size, "")
    return Listed(entry_id, entry, "", size, process_state(entry))


def _names(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def _size(path: Path) -> int | None:
    try:
        return os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return None
