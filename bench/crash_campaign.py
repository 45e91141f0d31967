#!/usr/bin/env python3
"""Crash campaign for stage mode, in the spirit of SQLite's crash tests: run a
mixed workload under `sluice run --mode stage`, SIGKILL it at seeded random
points, run `sluice recover`, and check every byte against what the program
had completed.

    bench/crash_campaign.py --points 1000 --seed 1 [--jobs 2] [--json bench/results/FILE.json]
    bench/crash_campaign.py --seed 1 --point 417 --keep /tmp/p417     # one point again, its files kept

The workload (tests/progs/crash_workload.c) is three processes started by a
shell, each running operations chosen from the seed: stdio files and a file
a forked child writes through the descriptor it inherits (the driver, whose
stdout the shell sends to OUT/console.log), POSIX write and pwrite, HDF5 and
netCDF-4 files, files written again under the same name, renames over
existing files, the rename of a directory holding staged files, unlinks.
Each finished operation is logged outside OUT with O_APPEND and an fsync
after the close (or rename, unlink) returned. A plain run of the same
workload (no sluice, no kill) keeps every content it produces: the expected
bytes. --variants workloads (seed and point %% variants) are used in turn.

Each point runs the workload under `sluice run --mode stage` with one of a
few option sets (stage delay, early copies, fsync, --detach), waits for a
moment chosen from the point's seed (a number of lines of the side log,
the end of every operation, or a time), and SIGKILLs one process of the
job's tree (`sluice run`, the shell, a lane, the driver's forked child, or
any helper process sluice started: every descendant of `sluice run`,
orphans included, as the campaign is their subreaper) or, one time in four,
stops and kills the whole tree at once (a node crash). The processes not
killed run to their end. Then `sluice recover --tier DIR`, and the checks:

- each lane's files and directories are exactly those after some number of
  its operations, at least the number it logged: a file whose close was
  logged holds that content or a later one, a file present holds one whole
  content it could have had (never a partial one), renames and unlinks
  logged are done, and the files of one lane are those of one moment;
- a file written by an operation cut short appears only as
  NAME.sluice-incomplete, and only for the operation that was under way
  (its bytes a prefix of the content, for pwrite each block the content's
  or zeros); console.log is whole lines of the driver's;
- `sluice recover` succeeds, `sluice status --json` shows 0 pending and no
  problem, the tier's data/, journal/ and names/ are empty, and no
  temporary file (.NAME.sluice-*) is left under the output directory;
- every logged CRC-32 (the file read back after its close) is the plain
  run's, and a lane not killed finished its operations.

Files found partial under a final name before `recover` (a publish the kill
cut short: docs/stage.md says a created or in-place published file can be
seen half written) are counted, not failures. Prints a summary (points, the
phase each killed process was in, bytes and files checked, failures with
the command that reruns the point); writes JSON to bench/results/.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCOMPLETE = ".sluice-incomplete"
WRITES = ("stdio", "posix", "pwrite", "inherit", "h5", "nc")
IN_ORDER = ("stdio", "posix", "inherit")   # written front to back: a cut-short copy is a prefix
LANES = 3
# sluice run's stage options, one set per point
OPTION_SETS = (
    (),
    ("--stage-delay", "0"),
    ("--stage-delay", "50", "--stage-precopy", "1M"),
    ("--stage-fsync", "--stage-drainers", "1"),
    ("--detach",),
)
TREE_KILL = 0.25      # share of points that kill the whole tree at once
TIMED_KILL = 0.15     # share of points killed at a time, not at a line of the side log
AFTER_END = 0.10      # share of the side-log points placed after every operation ended
PR_SET_CHILD_SUBREAPER = 36


# ------------------------------------------------------------ the workload

@dataclass
class Op:
    lane: int
    idx: int
    kind: str
    cid: str | None
    path: str
    path2: str | None
    size: int


@dataclass
class Variant:
    """One workload (a seed): its operations, the state after each prefix of
    each lane's operations, and the plain run's contents."""
    v: int
    wseed: int
    ops: dict[int, list[Op]]
    states: dict[int, list[tuple[frozenset, dict]]]
    refs: dict[str, bytes] = field(default_factory=dict)
    console: bytes = b""
    log_lines: int = 0
    calibration_s: float = 0.0

    def possible(self, path: str) -> set[str]:
        """Every content a path holds after some prefix of its lane."""
        lane = lane_of(path)
        return {s[1][path] for s in self.states.get(lane, []) if path in s[1]}


def lane_of(rel: str) -> int | None:
    top = rel.split("/", 1)[0]
    return int(top[1:]) if len(top) == 2 and top[0] == "l" and top[1].isdigit() else None


def load_plan(workload: str, wseed: int, ops: int, max_size: int) -> dict[int, list[Op]]:
    out = subprocess.run([workload, "plan", str(wseed), str(ops), str(max_size)], check=True,
                         capture_output=True, text=True).stdout
    plan: dict[int, list[Op]] = collections.defaultdict(list)
    for line in out.splitlines():
        lane, idx, kind, cid, path, path2, size = line.split("\t")
        plan[int(lane)].append(Op(int(lane), int(idx), kind, None if cid == "-" else cid, path,
                                  None if path2 == "-" else path2, int(size)))
    return dict(plan)


def lane_states(ops: list[Op]) -> list[tuple[frozenset, dict]]:
    """(directories, {path: content}) after each prefix of a lane's operations."""
    dirs: set[str] = set()
    files: dict[str, str] = {}
    states = [(frozenset(dirs), dict(files))]
    for op in ops:
        if op.kind == "mkdir":
            dirs.add(op.path)
        elif op.kind in WRITES:
            files[op.path] = op.cid
        elif op.kind == "rename":
            files[op.path2] = files.pop(op.path)
        elif op.kind == "unlink":
            del files[op.path]
        elif op.kind == "dirrename":
            a, b = op.path, op.path2

            def moved(p: str) -> str:
                return b + p[len(a):] if p == a or p.startswith(a + "/") else p
            dirs = {moved(d) for d in dirs}
            files = {moved(p): c for p, c in files.items()}
        else:
            raise ValueError(op.kind)
        states.append((frozenset(dirs), dict(files)))
    return states


def shell_script(workload: str, wseed: int, ops: int, max_size: int, out: Path, log: Path) -> str:
    """Lanes 1 and 2 in the background, the driver in the foreground with its
    stdout sent to OUT/console.log (the shell opens it, the driver writes it
    through the descriptor it inherits across fork and exec)."""
    args = f"{wseed} {ops} {max_size} {out} {log}"
    return (f"W={workload}\n$W lane 1 {args} &\n$W lane 2 {args} &\n"
            f"$W lane 0 {args} > {out}/console.log\nwait\n")


def make_variant(cfg: dict, v: int, work: Path) -> Variant:
    wseed = cfg["seed"] * 100 + v
    ops = load_plan(cfg["workload"], wseed, cfg["ops"], cfg["max_size"])
    var = Variant(v, wseed, ops, {lane: lane_states(o) for lane, o in ops.items()})
    d = work / f"ref-v{v}"
    shutil.rmtree(d, ignore_errors=True)
    (d / "out").mkdir(parents=True)
    (d / "ref").mkdir()
    log = d / "side.log"
    log.touch()
    subprocess.run(["sh", "-c", shell_script(cfg["workload"], wseed, cfg["ops"], cfg["max_size"], d / "out", log)],
                   check=True, env=dict(os.environ, CRASH_REF=str(d / "ref")))
    var.refs = {p.name: p.read_bytes() for p in (d / "ref").iterdir()}
    var.console = (d / "out" / "console.log").read_bytes()
    lines = log.read_text().splitlines()
    var.log_lines = len(lines)
    if sum(1 for l in lines if l.startswith("E ")) != LANES or any(l.startswith("X ") for l in lines):
        raise SystemExit(f"crash_campaign: the plain run of workload {wseed} failed:\n" + "\n".join(lines[-5:]))
    want = {c for o in ops.values() for c in (op.cid for op in o) if c}
    if set(var.refs) != want:
        raise SystemExit(f"crash_campaign: the plain run kept {sorted(var.refs)}, want {sorted(want)}")
    shutil.rmtree(d)
    return var


# ------------------------------------------------------------ the process tree

def proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state) of every process."""
    t = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(b")") + 2:].split()
        t[int(name)] = (int(rest[1]), rest[0].decode())
    return t


def descendants(root: int, table: dict[int, tuple[int, str]]) -> list[int]:
    kids = collections.defaultdict(list)
    for pid, (ppid, _) in table.items():
        kids[ppid].append(pid)
    out, todo = [], [root]
    while todo:
        for c in kids.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def role(pid: int, table: dict[int, tuple[int, str]]) -> str:
    """What a process of the job is: sluice-run, sh, sh-fork (a shell's child
    before its exec), laneN, laneN-child (the driver's forked child), or
    helper:NAME (anything else: a process sluice started)."""
    argv = cmdline(pid)
    if not argv:
        return "gone"
    base = os.path.basename(argv[0])
    if "sluice" in argv and "run" in argv and "-m" in argv:
        return "sluice-run"
    if base == "crash_workload" and len(argv) > 2 and argv[1] == "lane":
        parent = cmdline(table.get(pid, (0, ""))[0])
        child = parent[:3] == argv[:3]
        return f"lane{argv[2]}" + ("-child" if child else "")
    if base in ("sh", "dash", "bash"):
        parent = cmdline(table.get(pid, (0, ""))[0])
        return "sh-fork" if parent and os.path.basename(parent[0]) in ("sh", "dash", "bash") else "sh"
    return "helper:" + base


def lane_phases(lines: list[str]) -> dict[int, str]:
    """Each lane's phase from the side log: start (no line yet), an
    operation's kind (begun, not ended), between, or exit (every operation
    ended: the process is ending)."""
    ph = {lane: "start" for lane in range(LANES)}
    for l in lines:
        f = l.split()
        if len(f) < 2 or not f[1].isdigit():
            continue
        lane = int(f[1])
        if f[0] == "S":
            ph[lane] = "between"
        elif f[0] == "B":
            ph[lane] = f[3]
        elif f[0] == "D":
            ph[lane] = "between"
        elif f[0] == "E":
            ph[lane] = "exit"
    return ph


# ------------------------------------------------------------ one point

@dataclass
class Point:
    point: int
    variant: int
    options: tuple
    trigger: str
    victim: str = "none"
    killed: list = field(default_factory=list)      # [(pid, role, phase)]
    phases: dict = field(default_factory=dict)
    matched: dict = field(default_factory=dict)     # lane -> prefix length
    logged: dict = field(default_factory=dict)      # lane -> operations logged
    files: int = 0
    bytes: int = 0
    partial_before_recover: list = field(default_factory=list)
    rewrites_cut_short: list = field(default_factory=list)   # as plain leaves them (docs/stage.md, limits)
    locks_left: int = 0
    recover: str = ""
    job_seconds: float = 0.0
    seconds: float = 0.0
    failures: list = field(default_factory=list)


def read_lines(p: Path) -> list[str]:
    try:
        return p.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []


def sluice_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sluice", *args]


def job_env(cfg: dict) -> dict[str, str]:
    env = dict(os.environ)
    env["SLUICE_NATIVE_DIR"] = cfg["native"]
    env["PYTHONPATH"] = str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def stop_and_kill() -> dict[int, str]:
    """Stop every process of the tree (again until no new one appears), then
    SIGKILL them all: the whole job ends at one moment, as in a node crash.
    Returns each one's role, read while it was stopped."""
    stopped: list[int] = []
    me = os.getpid()
    table: dict[int, tuple[int, str]] = {}
    for _ in range(20):
        table = proc_table()
        new = [p for p in descendants(me, table) if p not in stopped and table[p][1] != "Z"]
        if not new:
            break
        for p in new:
            try:
                os.kill(p, signal.SIGSTOP)
                stopped.append(p)
            except ProcessLookupError:
                pass
    roles = {p: role(p, table) for p in stopped}
    for p in stopped:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {p: rl for p, rl in roles.items() if rl != "gone"}


def wait_tree(p: subprocess.Popen, timeout: float) -> bool:
    """Reap the job's processes until none is left (orphans come to us, the
    subreaper: with no child left, no process of the job is left); False
    on timeout."""
    end = time.monotonic() + timeout
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
        if pid:
            continue
        if time.monotonic() > end:
            return False
        time.sleep(0.005)


def describe_tree(table: dict[int, tuple[int, str]]) -> str:
    out = []
    for pid in descendants(os.getpid(), table):
        try:
            wchan = Path(f"/proc/{pid}/wchan").read_text()
        except OSError:
            wchan = "?"
        out.append(f"{pid} {role(pid, table)} state {table[pid][1]} wchan {wchan}")
    return "; ".join(out)


def scan(out: Path) -> tuple[set, dict, dict, list]:
    """Directories, files and .sluice-incomplete files (relative path ->
    bytes) under out, and temporary files (.NAME.sluice-*)."""
    dirs, files, incomplete, temps = set(), {}, {}, []
    for dp, dn, fn in os.walk(out):
        rel = os.path.relpath(dp, out)
        for d in dn:
            dirs.add(os.path.normpath(os.path.join(rel, d)))
        for f in fn:
            r = os.path.normpath(os.path.join(rel, f))
            if f.startswith(".") and ".sluice-" in f:
                temps.append(r)
            elif f.endswith(INCOMPLETE):
                incomplete[r[:-len(INCOMPLETE)]] = Path(dp, f).read_bytes()
            else:
                files[r] = Path(dp, f).read_bytes()
    return dirs, files, incomplete, temps


def cut_short_ok(kind: str, got: bytes, want: bytes) -> bool:
    """Bytes of a write cut short: a prefix of the content (written in
    order), each byte the content's or zero (pwrite: blocks in any order,
    holes), any bytes (HDF5 and netCDF write their headers last)."""
    if kind in IN_ORDER:
        return want.startswith(got)
    if kind == "pwrite":
        if len(got) > len(want):
            return False
        for off in range(0, len(got), 4096):
            a, b = got[off:off + 4096], want[off:off + 4096]
            if a != b[:len(a)] and a.count(0) != len(a):
                if any(x != y and x != 0 for x, y in zip(a, b)):
                    return False
        return True
    return True


def rewrite_cut_short(var: Variant, op, before: dict, files: dict) -> str | None:
    """The path of `op`, under way when the lane was killed, if it rewrites
    (O_TRUNC) a file whose previous version was still on the tier, handed
    to the job's drainer, and holds the start of its new content under its
    name: the rewriting process shared that data file as another process's
    file, and its O_TRUNC truncated it, as it truncates the file in a plain
    run (docs/stage.md, "Limits"). Counted, not a failure. (The workload's
    files do not say whether the previous version had been published: a
    rewrite cut short over a published file is let through here too.)"""
    if op is None or op.kind not in WRITES or op.path not in before or op.path not in files:
        return None
    got = files[op.path]
    if got == var.refs[before[op.path]] or not cut_short_ok(op.kind, got, var.refs[op.cid]):
        return None
    return op.path


def console_ok(got: bytes, full: bytes, logged0: int) -> bool:
    """console.log: whole lines of the driver's output, at least one per
    operation it logged but the last (its line follows the log's)."""
    if not full.startswith(got) or (got and not got.endswith(b"\n")):
        return False
    return got.count(b"\n") >= logged0 - 1


def check_lane(var: Variant, lane: int, logged: int, dirs: set, files: dict, incomplete: dict,
               pt: Point) -> list[str]:
    ops, states = var.ops[lane], var.states[lane]
    for k in range(logged, len(ops) + 1):
        sdirs, sfiles = states[k]
        if dirs != sdirs:
            continue
        want = dict(sfiles)
        if incomplete:
            op = ops[k] if k < len(ops) else None
            if op is None or op.kind not in WRITES or set(incomplete) != {op.path}:
                continue
            if not cut_short_ok(op.kind, incomplete[op.path], var.refs[op.cid]):
                continue
            if op.path not in files:
                # written again while its previous version was still on the tier: the
                # program's O_TRUNC truncated that data file, as it truncates the file in a plain run
                want.pop(op.path, None)
        cut = rewrite_cut_short(var, ops[k] if k < len(ops) else None, sfiles, files)
        if cut:
            want[cut] = None
        if set(files) != set(want) or any(c is not None and files[p] != var.refs[c] for p, c in want.items()):
            continue
        pt.matched[lane] = k
        if cut:
            pt.rewrites_cut_short.append(f"lane {lane}: {cut} ({len(files[cut])} B)")
        return []
    # no moment of the lane fits: say how the nearest one (the logged one) differs
    sdirs, sfiles = states[logged]
    why = []
    for p in sorted(set(sfiles) - set(files)):
        why.append(f"{p} missing (want {sfiles[p]}, logged closed or renamed there)")
    for p in sorted(set(files) - set(sfiles)):
        later = [k for k in range(logged, len(ops) + 1) if p in states[k][1]]
        what = which_content(var, p, files[p])
        why.append(f"{p} present ({what})" + ("" if later else ", a name the lane no longer has after its logged operations"))
    for p in sorted(set(files) & set(sfiles)):
        if files[p] != var.refs[sfiles[p]]:
            why.append(f"{p}: {which_content(var, p, files[p])}, want {sfiles[p]} or a later one")
    for d in sorted(dirs ^ sdirs):
        why.append(f"directory {d} {'present' if d in dirs else 'missing'}")
    for p, b in sorted(incomplete.items()):
        why.append(f"{p}{INCOMPLETE} ({len(b)} B)")
    return [f"lane {lane} ({logged} operations logged): no state after {logged}..{len(ops)} operations fits: "
            + "; ".join(why or ["the files match no single moment of the lane"])]


def which_content(var: Variant, path: str, data: bytes) -> str:
    for c in sorted(var.possible(path)):
        if data == var.refs[c]:
            return f"holds {c}"
    for c, b in var.refs.items():
        if data == b:
            return f"holds {c}, a content never under this name"
    return f"{len(data)} B matching no whole content (partial)"


def run_point(cfg: dict, var: Variant, point: int, kill: bool = True) -> Point:
    rnd = random.Random(f"{cfg['seed']}:{point}")
    options = rnd.choice(OPTION_SETS) if kill else ()
    r = rnd.random()
    if not kill:
        trigger: tuple = ("none",)
    elif r < TIMED_KILL:
        trigger = ("time", rnd.uniform(0, var.calibration_s))
    elif rnd.random() < AFTER_END:
        trigger = ("end", rnd.uniform(0, 0.05))
    else:
        trigger = ("line", rnd.randint(1, var.log_lines), rnd.choice((0.0, rnd.uniform(0, 0.003))))
    pt = Point(point, var.v, options, ":".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in trigger))
    base = Path(cfg["work"]) / f"p{point}"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    out = Path(cfg["target"]) / f"sluice-crash-{os.getpid()}-p{point}" if cfg["target"] else base / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    tier, log = base / "tier", base / "side.log"
    log.touch()
    t0 = time.monotonic()
    cmd = sluice_cmd("run", "-q", "--mode", "stage", "--tier", str(tier), "--path", str(out),
                     "--log-dir", str(base / "logs"), *options, "--",
                     "sh", "-c", shell_script(cfg["workload"], var.wseed, cfg["ops"], cfg["max_size"], out, log))
    with open(base / "run.stderr", "wb") as err:
        p = subprocess.Popen(cmd, env=job_env(cfg), stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    # wait for the moment
    deadline = t0 + trigger[1] if trigger[0] == "time" else None
    ended_at, size, lines = None, -1, []
    while kill and p.poll() is None:
        if deadline is not None:
            if time.monotonic() >= deadline:
                break
        else:
            if os.stat(log).st_size != size:
                size = os.stat(log).st_size
                lines = read_lines(log)
            if trigger[0] == "line" and len(lines) >= trigger[1]:
                if trigger[2]:
                    time.sleep(trigger[2])
                break
            if trigger[0] == "end" and sum(1 for l in lines if l.startswith("E ")) == LANES:
                if ended_at is None:
                    ended_at = time.monotonic()
                if time.monotonic() - ended_at >= trigger[1]:
                    break
        time.sleep(0.0005)
    # kill
    table = proc_table()
    me = os.getpid()
    roles = {q: role(q, table) for q in descendants(me, table) if table[q][1] != "Z"}
    tree = [q for q, rl in roles.items() if rl != "gone"]
    lines = read_lines(log)
    phases = lane_phases(lines)
    pt.phases = phases
    lane_pid = {int(l.split()[1]): int(l.split()[2]) for l in lines if l.startswith("S ")}

    def phase_of(q: int, rl: str) -> str:
        if rl.startswith("lane"):
            lane = int(rl[4])
            ph = phases[lane] if lane_pid.get(lane) == q or rl.endswith("-child") else "start"
            return ph + (" (child)" if rl.endswith("-child") else "")
        return f"{rl} (program {'ended' if all(ph == 'exit' for ph in phases.values()) else 'running'})"

    if kill and tree:
        if rnd.random() < TREE_KILL:
            pt.victim = "tree"
            pt.killed = [(q, rl, phase_of(q, rl)) for q, rl in stop_and_kill().items()]
        else:
            by_role = collections.defaultdict(list)
            for q in tree:
                by_role[roles[q]].append(q)
            rl = rnd.choice(sorted(by_role))
            q = rnd.choice(sorted(by_role[rl]))
            pt.victim = rl
            try:
                os.kill(q, signal.SIGKILL)
                pt.killed = [(q, rl, phase_of(q, rl))]
            except ProcessLookupError:
                pt.victim = "none (gone)"
    if not wait_tree(p, cfg["hang_timeout"]):
        pt.failures.append(f"hang: the job's processes still run {cfg['hang_timeout']:.0f} s after the kill: "
                           + describe_tree(proc_table()))
        stop_and_kill()
        wait_tree(p, 30)
    pt.job_seconds = time.monotonic() - t0
    lines = read_lines(log)
    # before recover: a file under a final name that is no whole content
    dirs, files, incomplete, temps = scan(out)
    for rel, data in files.items():
        if rel == "console.log":
            continue
        if not any(data == var.refs[c] for c in var.possible(rel)):
            pt.partial_before_recover.append(f"{rel} ({len(data)} B)")
    rec = subprocess.run(sluice_cmd("recover", "--tier", str(tier)), env=job_env(cfg), capture_output=True,
                         text=True, timeout=600)
    pt.recover = (rec.stdout.strip().splitlines() or [""])[-1]
    if rec.returncode != 0:
        pt.failures.append(f"sluice recover exited {rec.returncode}: {rec.stdout.strip()} {rec.stderr.strip()}")
    st = subprocess.run(sluice_cmd("status", "--tier", str(tier), "--json"), env=job_env(cfg), capture_output=True,
                        text=True, timeout=600)
    try:
        status = json.loads(st.stdout)
        if status["pending"] or status["problems"]:
            pt.failures.append(f"left on the tier after recover: {status['pending']} pending "
                               f"{[(e['state'], e['path']) for e in status['entries']]}, problems {status['problems']}")
    except (ValueError, KeyError):
        pt.failures.append(f"sluice status --json failed ({st.returncode}): {st.stdout} {st.stderr}")
    for sub in ("data", "journal", "names"):
        left = sorted(os.listdir(tier / sub)) if (tier / sub).is_dir() else []
        if left:
            pt.failures.append(f"tier {sub}/ not empty after recover: {left[:5]}")
    pt.locks_left = len(os.listdir(tier / "locks")) if (tier / "locks").is_dir() else 0
    # the side log
    logged = {lane: 0 for lane in range(LANES)}
    ended, started = set(), {}
    for l in lines:
        f = l.split()
        if not f:
            continue
        if f[0] == "X":
            pt.failures.append(f"workload error: {l}")
        elif f[0] == "S":
            started[int(f[1])] = int(f[2])
        elif f[0] == "E":
            ended.add(int(f[1]))
        elif f[0] == "D":
            lane, idx = int(f[1]), int(f[2])
            if idx != logged[lane]:
                pt.failures.append(f"side log out of order: {l}")
            logged[lane] = idx + 1
            cid, crc, size = f[4], int(f[5], 16), int(f[6])
            if cid != "-" and (zlib.crc32(var.refs[cid]), len(var.refs[cid])) != (crc, size):
                pt.failures.append(f"lane {lane} op {idx}: read back after its close, {cid} was {size} B crc "
                                   f"{crc:08x}, the plain run's is {len(var.refs[cid])} B crc "
                                   f"{zlib.crc32(var.refs[cid]):08x}")
    pt.logged = logged
    killed_pids = {q for q, _, _ in pt.killed}
    killed_lanes = {int(rl[4]) for _, rl, _ in pt.killed if rl.startswith("lane")}
    for lane in range(LANES):
        if lane in ended or lane in killed_lanes or pt.victim == "tree":
            continue
        if lane in started:
            if started[lane] not in killed_pids:
                pt.failures.append(f"lane {lane} stopped after {logged[lane]} operations, its processes not killed")
        elif not any(rl in ("sluice-run", "sh", "sh-fork") for _, rl, _ in pt.killed):
            pt.failures.append(f"lane {lane} never started, though no shell or sluice process was killed")
    # after recover
    dirs, files, incomplete, temps = scan(out)
    for t in temps:
        pt.failures.append(f"temporary file left: {t}")
    per_lane = collections.defaultdict(lambda: (set(), {}, {}))
    for d in dirs:
        lane = lane_of(d)
        if lane is None or lane >= LANES:
            pt.failures.append(f"unexpected directory {d}")
        else:
            per_lane[lane][0].add(d)
    for kind, src in ((1, files), (2, incomplete)):
        for rel, data in src.items():
            pt.files += 1
            pt.bytes += len(data)
            if rel == "console.log":
                continue
            lane = lane_of(rel)
            if lane is None or lane >= LANES:
                pt.failures.append(f"unexpected file {rel}{INCOMPLETE if kind == 2 else ''}")
            else:
                per_lane[lane][kind][rel] = data
    for lane in range(LANES):
        d, f, inc = per_lane[lane]
        pt.failures += check_lane(var, lane, logged[lane], d, f, inc, pt)
    con, con_inc = files.get("console.log"), incomplete.get("console.log")
    if con is not None and con_inc is not None:
        pt.failures.append("console.log both whole and incomplete")
    got = con if con is not None else con_inc
    if got is None:
        if 0 in started:
            pt.failures.append("console.log missing though the driver started")
    elif not console_ok(got, var.console, logged[0]):
        pt.failures.append(f"console.log{INCOMPLETE if con is None else ''}: {len(got)} B, not whole lines of the "
                           f"driver's output with at least {max(logged[0] - 1, 0)} of them")
    pt.seconds = time.monotonic() - t0
    if pt.failures:
        keep = Path(cfg["keep"] or cfg["work"]) / f"failed-p{point}"
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(base, keep, symlinks=True, ignore_dangling_symlinks=True)
        if cfg["target"]:
            shutil.copytree(out, keep / "out", symlinks=True)
        pt.failures.append(f"files kept in {keep}")
    elif cfg["keep"]:
        shutil.copytree(base, Path(cfg["keep"]) / f"p{point}", symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(base, ignore_errors=True)
    if cfg["target"]:
        shutil.rmtree(out, ignore_errors=True)
    return pt


# ------------------------------------------------------------ the campaign

_worker: dict = {}


def worker_init(cfg: dict, variants: dict[int, Variant]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    _worker["cfg"], _worker["variants"] = cfg, variants


def worker_point(point: int) -> Point:
    cfg, variants = _worker["cfg"], _worker["variants"]
    return run_point(cfg, variants[point % cfg["variants"]], point)


def calibrate(cfg: dict, var: Variant) -> Point:
    """One run to its end, no kill (checked like any point): how long the job takes."""
    pt = run_point(cfg, var, -1 - var.v, kill=False)
    var.calibration_s = pt.job_seconds
    return pt


def commit() -> str:
    try:
        h = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", "src",
                                "python"], capture_output=True, text=True).stdout.strip()
        return h + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--point", type=int, action="append", help="run only this point (repeatable)")
    ap.add_argument("--ops", type=int, default=10, help="operations per lane")
    ap.add_argument("--max-size", type=int, default=65536, help="largest file but the 5 MiB one")
    ap.add_argument("--variants", type=int, default=4, help="workloads (seeds), point %% variants")
    ap.add_argument("--jobs", type=int, default=1, help="points run at once")
    ap.add_argument("--target", help="directory the output goes under (the shared file system; default: "
                                     "beside the tier, under --work)")
    ap.add_argument("--work", help="work directory (tiers, side logs; default a new one under /dev/shm)")
    ap.add_argument("--keep", help="keep every point's files here (failed points are kept under --work anyway)")
    ap.add_argument("--hang-timeout", type=float, default=120.0)
    ap.add_argument("--native", default=os.environ.get("SLUICE_NATIVE_DIR", str(ROOT / "build" / "dev" / "native")))
    ap.add_argument("--workload", default=str(Path(os.environ.get("SLUICE_TEST_BIN", ROOT / "build" / "dev" / "tests"
                                                                  / "bin")) / "crash_workload"))
    ap.add_argument("--json", type=Path, help="results file; default bench/results/crash-campaign-seedS-Npts-COMMIT.json")
    ap.add_argument("--no-json", action="store_true")
    a = ap.parse_args()
    for what, p in (("--native", Path(a.native) / "libsluice.so"), ("--workload", Path(a.workload))):
        if not p.exists():
            raise SystemExit(f"crash_campaign: {what}: {p} missing (build the tree with -DSLUICE_BUILD_TESTS=ON)")
    work = Path(a.work or tempfile.mkdtemp(prefix="sluice-crash-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK)
                                           else None))
    work.mkdir(parents=True, exist_ok=True)
    cfg = {"seed": a.seed, "ops": a.ops, "max_size": a.max_size, "variants": a.variants, "target": a.target,
           "work": str(work), "keep": a.keep, "hang_timeout": a.hang_timeout, "native": str(Path(a.native).resolve()),
           "workload": str(Path(a.workload).resolve())}
    points = sorted(set(a.point)) if a.point else list(range(a.points))
    started, t0 = time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.monotonic()
    worker_init(cfg, {})
    variants: dict[int, Variant] = {}
    results: list[Point] = []
    for v in sorted({pt % a.variants for pt in points}):
        variants[v] = make_variant(cfg, v, work)
        results.append(calibrate(cfg, variants[v]))
        print(f"workload {variants[v].wseed}: {sum(len(o) for o in variants[v].ops.values())} operations, "
              f"{len(variants[v].refs)} contents, {sum(map(len, variants[v].refs.values())):,} B; "
              f"a run takes {variants[v].calibration_s:.2f} s", flush=True)
    done = 0

    def report(pt: Point) -> None:
        nonlocal done
        done += 1
        results.append(pt)
        if pt.failures:
            print(f"point {pt.point}: FAILED ({pt.victim}, {pt.trigger}, {' '.join(pt.options) or 'defaults'}):",
                  flush=True)
            for f in pt.failures:
                print(f"    {f}", flush=True)
        if done % 50 == 0 or done == len(points):
            print(f"{done}/{len(points)} points, {sum(1 for r in results if r.failures)} failed, "
                  f"{time.monotonic() - t0:.0f} s", flush=True)

    if a.jobs > 1:
        with ProcessPoolExecutor(a.jobs, initializer=worker_init, initargs=(cfg, variants)) as ex:
            for pt in ex.map(worker_point, points):
                report(pt)
    else:
        _worker["variants"] = variants
        for point in points:
            report(worker_point(point))
    elapsed = time.monotonic() - t0
    return summarize(a, cfg, results, elapsed, started, work)


# What a failure is, from its message (the first kind that matches each part)
FAILURE_KINDS = (
    ("matching no whole content", "partial file under a final name"),
    ("a content never under this name", "a content under a name it never had"),
    ("a name the lane no longer has", "a name the program removed or renamed away is present"),
    ("logged closed or renamed there", "a file whose close or rename was logged is missing"),
    ("or a later one", "an older content than the one logged"),
    ("present (holds", "a file present that no moment of the lane has"),
    ("directory", "directories differ"),
    (INCOMPLETE, "an unexpected NAME.sluice-incomplete"),
    ("temporary file left", "temporary file left in the output directory"),
    ("names/ not empty", "index link (names/) left on the tier"),
    ("data without a journal entry", "data file without a journal entry left on the tier"),
    ("left on the tier", "entries left pending on the tier"),
    ("not empty after recover", "files left on the tier"),
    ("sluice recover exited", "sluice recover failed"),
    ("sluice status", "sluice status failed"),
    ("read back", "a file read back after its close differs"),
    ("console.log", "console.log"),
    ("hang", "hang"),
    ("workload error", "workload error"),
    ("stopped after", "a lane not killed did not finish"),
    ("never started", "a lane not killed did not start"),
    ("unexpected", "unexpected file or directory"),
    ("side log", "side log out of order"),
)


def failure_kinds(failures: list[str]) -> list[str]:
    kinds: list[str] = []
    for f in failures:
        mine = []
        for part in f.split("; "):
            for key, label in FAILURE_KINDS:
                if key in part:
                    mine.append(label)
                    break
        if len(set(mine)) > 1:   # an incomplete file listed beside the real difference
            mine = [k for k in mine if k != "an unexpected NAME.sluice-incomplete"]
        for k in mine:
            if k not in kinds:
                kinds.append(k)
    return kinds


def summarize(a, cfg: dict, results: list[Point], elapsed: float, started: str, work: Path) -> int:
    victims = collections.Counter(r.victim for r in results if r.point >= 0)
    phases = collections.Counter(ph for r in results if r.point >= 0 for _, _, ph in r.killed)
    options = collections.Counter(" ".join(r.options) or "defaults" for r in results if r.point >= 0)
    failed = [r for r in results if r.failures]
    partial = [(r.point, x) for r in results for x in r.partial_before_recover]
    rewrites = [(r.point, x) for r in results for x in r.rewrites_cut_short]
    n = sum(1 for r in results if r.point >= 0)
    print(f"\n{n} points (seed {a.seed}, {a.variants} workloads of {a.ops} operations per lane), "
          f"{len(results) - n} full runs, {elapsed:.0f} s ({elapsed / max(len(results), 1):.2f} s a point)")
    print("victims: " + ", ".join(f"{k} {v}" for k, v in victims.most_common()))
    print("killed while in: " + ", ".join(f"{k} {v}" for k, v in phases.most_common()))
    print("options: " + ", ".join(f"{k} {v}" for k, v in options.most_common()))
    print(f"checked after recover: {sum(r.files for r in results):,} files, {sum(r.bytes for r in results):,} bytes")
    print(f"partial under a final name before recover (a publish cut short): {len(partial)}"
          + (f" e.g. point {partial[0][0]}: {partial[0][1]}" if partial else ""))
    print(f"rewrites of a handed-over file cut short, left as plain leaves them: {len(rewrites)}"
          + (f" e.g. point {rewrites[0][0]}: {rewrites[0][1]}" if rewrites else ""))
    print(f"lock files of killed processes left on the tier: {sum(r.locks_left for r in results)} "
          f"in {sum(1 for r in results if r.locks_left)} points")
    print(f"failures: {len(failed)}")
    by_kind: dict[str, list[Point]] = collections.defaultdict(list)
    for r in failed:
        for k in failure_kinds(r.failures) or ["other"]:
            by_kind[k].append(r)
    for k, rs in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
        print(f"  {k}: {len(rs)} points ({', '.join(str(r.point) for r in rs[:40])}{' ...' if len(rs) > 40 else ''})")
        for r in rs[:3]:
            again = (f"bench/crash_campaign.py --seed {a.seed} --point {r.point} --ops {a.ops} --max-size {a.max_size} "
                     f"--variants {a.variants}" + (f" --target {a.target}" if a.target else ""))
            print(f"    seed {a.seed} point {r.point} ({r.victim}, {r.trigger}, {' '.join(r.options) or 'defaults'}): "
                  f"{r.failures[0]}\n      again: {again}")
    if not a.no_json:
        path = a.json or ROOT / "bench" / "results" / f"crash-campaign-seed{a.seed}-{n}pts-{commit()}.json"
        path.write_text(json.dumps({
            "command": " ".join(sys.argv), "started": started, "commit": commit(), "seed": a.seed, "points": n,
            "ops": a.ops, "max_size": a.max_size, "variants": a.variants, "jobs": a.jobs, "target": a.target,
            "seconds": round(elapsed, 1), "load1_after": os.getloadavg()[0],
            "victims": dict(victims), "killed_while_in": dict(phases), "options": dict(options),
            "files_checked": sum(r.files for r in results), "bytes_checked": sum(r.bytes for r in results),
            "partial_before_recover": len(partial), "rewrites_cut_short": len(rewrites), "failures": len(failed),
            "failures_by_kind": {k: [r.point for r in rs] for k, rs in by_kind.items()},
            "results": [r.__dict__ for r in results]}, indent=1, default=str) + "\n")
        print(f"results: {path}")
    if not failed and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
