"""A profile-mode run's per-call trace replayed through a mode, for
``sluice predict``: the same library, the same windows and read-ahead,
on scratch copies of the job's files in a private directory of the node
(docs/predict.md, "Replaying the trace").

What the counters cannot say (how far a write jumps, what is read back in
between) the trace holds: each read and write of a process, its offset and
length, in order. A file is replayed when the trace holds all of its
calls and each process's opens of it can be placed: one open, or one per
run of writes or reads (as many opens as switches between them, plus one:
written, closed, reopened to read it back); its processes are replayed one
after another, in the order of their first call on it (a workflow's
steps; ranks that wrote at once are taken one at a time). Its calls are made again
with zeros of the same lengths at the same offsets (a file the job did not
create is first made as large as the job found it, holes only), under
``sluice run --mode MODE``, and the fs side of the replay's log is the
prediction of its writes, reads and bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice.predict import _v
from sluice.report.model import FileTotals, Job, per_process_app

READ, WRITE, OPEN, CLOSE, TRUNCATE, SYNC = range(6)   # the trace's ops (docs/logformat.md)
REPLAYED = ("POSIX_WRITES", "POSIX_READS", "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ", "POSIX_CONSEC_READS")
MAX_BYTES = 1 << 30      # beyond this much data on the scratch tier, the counters' model is used


@dataclass
class FilePlan:
    """One file's calls, as its process made them: sessions of (op, offset,
    length), op 0 read, 1 write, each session one open."""

    path: str
    sessions: list["Session"]
    created: bool            # the job made it (O_CREAT): it starts empty
    append: bool             # opened with O_APPEND: writes go to the end
    size: int                # how large the job found it (made with holes first)


@dataclass
class Plan:
    files: list[FilePlan] = field(default_factory=list)
    why_not: dict[str, str] = field(default_factory=dict)   # path -> why it is not replayed

    def nbytes(self) -> int:
        return sum(max((o + n for s in f.sessions for op, o, n in s.calls if op == WRITE), default=0) + f.size
                   for f in self.files)


def plan(job: Job, files: list[FileTotals], per_proc: Mapping[str, Mapping[int, Mapping[str, float]]] | None = None
         ) -> Plan:
    """Which files the trace can replay, and their calls (per_proc: the
    job's per_process_app, when the caller has it)."""
    out = Plan()
    per_proc = per_process_app(job) if per_proc is None else per_proc
    calls: dict[tuple[str, int], list[tuple[int, int, int]]] = defaultdict(list)
    first: dict[tuple[str, int], int] = {}
    dropped: set[int] = set()
    traced: set[int] = set()
    for l in job.logs:
        t = l.trace
        if t is None:
            continue
        traced.add(l.pid)
        if t.dropped:
            dropped.add(l.pid)
        for path, mod, op, off, n, t0 in zip(t.paths, t.module.tolist(), t.op.tolist(), t.offset.tolist(),
                                             t.length.tolist(), t.start_ns.tolist()):
            if mod == 1:
                calls[(path, l.pid)].append((op, off, n))
                first.setdefault((path, l.pid), l.start_ns + t0)
    for f in files:
        if _v(f.app, "POSIX_READS", "POSIX_WRITES") == 0:
            continue
        procs = per_proc.get(f.path, {})
        users = sorted((pid for pid, c in procs.items() if _v(c, "POSIX_READS", "POSIX_WRITES") > 0),
                       key=lambda pid: first.get((f.path, pid), 0))
        sessions: list[Session] = []
        why = ""
        for pid in users:
            got = _sessions(procs[pid], calls.get((f.path, pid), []), pid in traced and pid not in dropped)
            if isinstance(got, str):
                why = got
                break
            sessions += got
        if why or not users:
            out.why_not[f.path] = why or "no process read or wrote it"
            continue
        created = sessions[0].trunc or _v(procs[users[0]], "POSIX_OPENS_CREATE") > 0
        size = 0 if created else int(max(_v(f.app, "POSIX_MAX_BYTE_READ"), _v(f.app, "POSIX_MAX_BYTE_WRITTEN")) + 1)
        grown = max(size, 0)
        for sess in sessions:   # (one file's size, over its processes in turn)
            if sess.trunc:
                grown = 0
            sess.calls = asked_reads(sess.calls, grown)
            for op, o, n in sess.calls:
                grown = n if op == TRUNCATE else max(grown, o + n) if op == WRITE else grown
        append = any(_v(c, "POSIX_OPENS_APPEND") > 0 for c in procs.values())
        out.files.append(FilePlan(f.path, sessions, created, append, max(size, 0)))
    return out


@dataclass
class Session:
    """One open of a file: its reads and writes in order; trunc: the open
    emptied it."""

    calls: list[tuple[int, int, int]]
    trunc: bool = False
    truncate: bool = False    # ends with an ftruncate to the file's extent


def _sessions(app: Mapping[str, float], seq: list[tuple[int, int, int]], complete: bool) -> list[Session] | str:
    """One process's calls on a file as its opens, or why they cannot be
    placed. Opens go where the calls switch between reads and writes (a
    file written, closed and reopened to read it back), then, if there
    are more, where the reads or writes start again from the beginning (a
    library that opens a file to look at it, closes it and opens it again);
    a truncate (HDF5 sets the file's end at its close) at the end of each
    open, from the last."""
    if not complete:
        return "a process's trace is missing or cut short (sluice run --trace N)"
    if any(op >= OPEN for op, _, _ in seq):
        return _placed_sessions(app, seq)
    if len(seq) != _v(app, "POSIX_READS", "POSIX_WRITES") or any(off < 0 for _, off, _ in seq):
        return "the trace does not hold every call"
    if _v(app, "POSIX_FSYNCS", "POSIX_FDSYNCS", "POSIX_MMAPS") > 0:
        return "fsync or mmap: not placed in the trace"
    opens = int(_v(app, "POSIX_OPENS"))
    cuts = [i for i in range(1, len(seq)) if seq[i][0] != seq[i - 1][0]]
    if opens - 1 > len(cuts):
        restarts = [i for i in range(1, len(seq)) if seq[i][1] == 0 and i not in cuts]
        cuts = sorted(cuts + restarts[:opens - 1 - len(cuts)])
    if opens - 1 != len(cuts) and opens > 1:
        return f"{opens} opens by one process that the trace cannot place"
    bounds = [0, *cuts, len(seq)] if opens > 1 else [0, len(seq)]
    out = [Session(seq[a:b]) for a, b in zip(bounds, bounds[1:])]
    out[0].trunc = _v(app, "POSIX_OPENS_TRUNC") > 0
    # (one at each close from the last, as HDF5 sets the end when it closes
    # the file; more truncates than opens: the rest where it was still empty)
    for sess in out[len(out) - min(len(out), int(_v(app, "POSIX_TRUNCATES"))):]:
        sess.truncate = True
    return out


def _placed_sessions(app: Mapping[str, float], seq: list[tuple[int, int, int]]) -> list[Session] | str:
    """Sessions from a trace that holds the opens and closes too (logs of
    this version): one from an open of a closed file to its last close,
    its truncates and syncs where they were made."""
    rw = [c for c in seq if c[0] in (READ, WRITE)]
    if len(rw) != _v(app, "POSIX_READS", "POSIX_WRITES") or any(off < 0 for _, off, _ in rw) or \
            sum(1 for c in seq if c[0] == OPEN) != _v(app, "POSIX_OPENS"):
        return "the trace does not hold every call"
    if _v(app, "POSIX_MMAPS") > 0:
        return "mmap: its bytes are not calls"
    out: list[Session] = []
    depth = 0
    for op, off, n in seq:
        if op == OPEN:
            if depth == 0:
                out.append(Session([], trunc=not out and _v(app, "POSIX_OPENS_TRUNC") > 0))
            depth += 1
        elif op == CLOSE:
            depth = max(0, depth - 1)
        elif out:
            out[-1].calls.append((op, off, n))
    return out or "no open in the trace"


def asked_reads(session: list[tuple[int, int, int]], size: int) -> list[tuple[int, int, int]]:
    """The trace holds what a read returned, not what it asked: a read that
    came back short at the end of the file (netCDF-3 asks its 8 KiB block
    there and gets what there is, or nothing) asked, as a rule, the size
    the file's other reads asked, and what a mode does with it depends on
    that (buffer mode goes to the file system for the rest). Such reads
    are made again at that size."""
    lengths: dict[int, int] = defaultdict(int)
    for op, _, n in session:
        if op == READ and n > 0:
            lengths[n] += 1
    usual = max(lengths, key=lambda n: (lengths[n], n)) if lengths else 0
    out = []
    for op, off, n in session:
        if op == READ and n < usual and off + n >= size:
            n = usual
        if op == WRITE:
            size = max(size, off + n)
        elif op == TRUNCATE:
            size = n
        out.append((op, off, n))
    return out


def _scratch_root() -> Path:
    if os.environ.get("SLUICE_REPLAY_DIR"):
        return Path(os.environ["SLUICE_REPLAY_DIR"])
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


class ReplayError(Exception):
    """Why a replay gave nothing (the counters' model is used instead)."""


def replay(p: Plan, mode: str) -> dict[str, dict[str, float]]:
    """Replay the plan under mode: path -> the replay's fs side (REPLAYED);
    ReplayError when it cannot run or failed."""
    if not p.files:
        return {}
    if p.nbytes() > MAX_BYTES:
        raise ReplayError(f"{p.nbytes():,} bytes to replay, more than the {MAX_BYTES:,} a scratch tier may take")
    work = Path(tempfile.mkdtemp(prefix="sluice-replay.", dir=_scratch_root()))   # (mkdtemp: 0700)
    try:
        data, logs = work / "files", work / "logs"
        data.mkdir()
        doc = []
        for i, f in enumerate(p.files):
            name = str(data / f"f{i:06d}")
            if not f.created:
                with open(name, "wb") as fh:   # (the inputs the job found: holes, made plain)
                    fh.truncate(f.size)
            doc.append({"path": name, "sessions": [{"calls": x.calls, "trunc": x.trunc, "truncate": x.truncate}
                                                   for x in f.sessions],
                        "created": f.created, "append": f.append})
        (work / "plan.json").write_text(json.dumps(doc))
        cp = subprocess.run([sys.executable, "-m", "sluice", "run", "-q", "--mode", mode, "--log-dir", str(logs),
                             "--path", str(data), "--", sys.executable, "-m", "sluice.replay", str(work / "plan.json")],
                            capture_output=True, text=True, env=dict(os.environ, SLUICE_TIER=str(work / "tier")))
        if cp.returncode != 0:
            tail = (cp.stderr.strip().splitlines() or [f"exit status {cp.returncode}"])[-1]
            raise ReplayError(f"the replay under {mode} mode failed: {tail}")
        from sluice.report.model import load_logs, merge, select_job
        job = merge(*select_job(load_logs([logs])))
        by_name = {f.path: f for f in job.files}
        out = {}
        for i, f in enumerate(p.files):
            got = by_name.get(str(data / f"f{i:06d}"))
            if got is not None:
                out[f.path] = {k: float(got.fs.get(k) or 0) for k in REPLAYED}
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(plan_file: str) -> None:
    """The replaying program (run under sluice): each file's sessions."""
    doc: list[dict[str, Any]] = json.loads(Path(plan_file).read_text())
    zeros = bytes(max((n for f in doc for s in f["sessions"] for op, _, n in s["calls"] if op == WRITE), default=0))
    extent: dict[str, int] = {}   # the highest byte written so far, per file (a truncate sets the end there)
    for f in doc:
        for session in f["sessions"]:
            flags = (os.O_RDWR | (os.O_CREAT if f["created"] else 0) | (os.O_APPEND if f["append"] else 0)
                     | (os.O_TRUNC if session["trunc"] else 0))
            fd = os.open(f["path"], flags, 0o644)
            try:
                for op, off, n in session["calls"]:
                    if op == WRITE:
                        extent[f["path"]] = max(extent.get(f["path"], 0), off + n)
                        if f["append"]:
                            os.write(fd, zeros[:n])
                        else:
                            os.pwrite(fd, zeros[:n], off)
                    elif op == READ:
                        os.pread(fd, n, off)
                    elif op == TRUNCATE:
                        os.ftruncate(fd, n)
                        extent[f["path"]] = n
                    elif op == SYNC:
                        os.fsync(fd)
                if session["truncate"]:
                    os.ftruncate(fd, extent.get(f["path"], 0))
            finally:
                os.close(fd)


if __name__ == "__main__":
    _run(sys.argv[1])
