"""``sluice bench calibrate``: what a file system charges, measured in a few
minutes and written as a profile (docs/calibrate.md) that predictions
(issue: `sluice predict`, `--mode auto`) read.

Per operation kind, the time one process waits for one call (latency) and
the rate 1, 2, 4, ... processes reach together (the server's queueing);
large and small writes and reads (bandwidth, and the fixed cost of a call);
fsync; and what sharing one stripe between two writers costs against each
writing a file of its own. On the testbed's simulated nodes the creates and
writes are also made from 1, 2, ... nodes at once, each through its own
client. Every figure is the median of the rounds, with its spread.

Safe on a production file system: everything happens in a directory of its
own under the target (removed afterwards, also after a failure), the bytes
written are bounded by --size (at most 2x at once), and nothing else is
touched. Needs root only to drop the page cache before the cold reads and
stats (without it they may be served from memory, and the profile says so).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sluice.autolarge import PROFILE_SCHEMA, read_profile  # noqa: F401 (read_profile: this module's readers')
from sluice.bench import sysinfo
from sluice.bench.caches import CacheDropper
from sluice.errors import UserError
from sluice.paths import native
from sluice.runner import sluice_env

SCHEMA = PROFILE_SCHEMA
PROGRAM = "sluice-bench-limits"
RANDOM_READER = "sluice-bench-randread"
# operation kind -> the program's phase; the profile's names are sluice's
# counter names' kinds (POSIX_OPENS, POSIX_STATS, ...)
META_PHASES = {"create": "create", "stat": "stat", "open": "openclose", "rename": "rename", "unlink": "unlink",
               "mkdir": "mkdir", "rmdir": "rmdir"}
WRITE_SIZES = (4096, 64 << 10, 1 << 20)   # request sizes a write call is timed at (no fsync)
# request sizes auto's two ways of writing a new file are timed at (auto_writes)
AUTO_WRITE_SIZES = (4096, 64 << 10, 256 << 10, 1 << 20, 4 << 20)
SMALL = 4096          # bytes of a small write or read (the per-call cost)
SHARED_PIECE = 64 << 10
# Five rounds give figures that agree within 20 % between runs on a quiet
# testbed where three did not (docs/calibrate.md); at least three, and no
# round begun that would end past the budget
ROUNDS = 5
MIN_ROUNDS = 3
BUDGET_S = 170.0
SETTLE_S = 0.2        # after a sync (which also writes back the servers of a testbed on this machine)


def small_file_pages(size: int) -> int:
    """The 4 KiB pages of the file the small calls are timed on (--size/16)."""
    return max(1024, min(16384, size // (16 * SMALL)))


def random_reads(pages: int) -> int:
    """The random reads timed on it: up to 2,000, at random pages."""
    return min(2000, pages)


@contextlib.contextmanager
def busy_cores(n: int):
    """n processes that only compute, for the length of the block."""
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.1)
        yield
    finally:
        for p in spin:
            p.kill()
        for p in spin:
            p.wait()


class Calibration:
    """One calibration: settings, the program, and where it runs."""

    def __init__(self, target: Path, *, rounds: int, files: int, size: int, procs: list[int],
                 nodes: int, caches: CacheDropper, progress: Callable[[str], None]):
        self.target, self.rounds, self.files, self.size = target, rounds, files, size
        self.procs, self.nodes, self.caches, self.progress = procs, nodes, caches, progress
        self.prog = str(native(PROGRAM, "bin"))
        self.work = Path(tempfile.mkdtemp(prefix="sluice-calibrate.", dir=target))
        self.raw: list[dict[str, Any]] = []

    # ---- running the program

    def _start(self, argv: list[str], node: int = 0) -> subprocess.Popen:
        if node:
            from sluice import testbed
            argv = testbed.node_command(f"node{node}", argv, cwd="/")
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def together(self, argvs: list[list[str]], nodes: list[int] | None = None) -> list[dict[str, Any]]:
        """Run the programs at once (they begin at one moment: --start-at);
        their JSON lines."""
        at = time.time() + 0.15 + 0.03 * len(argvs) + (0.2 if nodes else 0)
        start = ["--start-at", f"{at:.6f}"] if len(argvs) > 1 else []
        procs = [self._start([*a, *start], (nodes or [0] * len(argvs))[i]) for i, a in enumerate(argvs)]
        out = []
        for p in procs:
            stdout, stderr = p.communicate()
            if p.returncode != 0:
                raise UserError(f"calibrate: {PROGRAM} failed ({p.returncode}): {stderr.strip()[-300:]}")
            out.append(json.loads(stdout.strip().splitlines()[-1]))
        return out

    def one(self, argv: list[str]) -> dict[str, Any]:
        return self.together([argv])[0]

    # ---- the measurements of one round

    def metadata(self, nprocs: int, node_of: Callable[[int], int] | None = None) -> dict[str, float]:
        """Every metadata kind with nprocs processes at once, each in a
        directory of its own: kind -> (ops/s together, seconds per op of
        the slowest)."""
        dirs = [self.work / f"m{nprocs}.{i}" for i in range(nprocs)]
        nodes = [node_of(i) for i in range(nprocs)] if node_of else None
        rates: dict[str, float] = {}
        for kind, phase in META_PHASES.items():
            if kind in ("stat", "open"):
                # dentries and inodes only: the lookups ask the server, whose
                # data (and the page cache of everything else) stays warm
                self.caches.drop("2")
            res = self.together([[self.prog, phase, "--dir", str(d), "--files", str(self.files)] for d in dirs],
                                nodes)
            ops = sum(r["ops"] for r in res)
            secs = max(r["seconds"] for r in res)
            rates[kind] = ops / secs if secs > 0 else float("nan")
            rates[f"{kind}_latency_s"] = max(r["seconds"] / r["ops"] for r in res if r["ops"])
        # a new file written and closed: what a close after writes adds
        # (the client sends the data and the server makes its first chunk)
        wdirs = [self.work / f"w{nprocs}.{i}" for i in range(nprocs)]
        res = self.together([[self.prog, "create", "--dir", str(d), "--files", str(self.files), "--file-size",
                              str(SMALL)] for d in wdirs], nodes)
        secs = max(r["seconds"] for r in res)
        rates["create_written"] = sum(r["ops"] for r in res) / secs if secs > 0 else float("nan")
        rates["create_written_latency_s"] = max(r["seconds"] / r["ops"] for r in res if r["ops"])
        for d in dirs + wdirs:   # (unlink and rmdir emptied the first)
            shutil.rmtree(d, ignore_errors=True)
        return rates

    def bandwidth(self, nprocs: int, node_of: Callable[[int], int] | None = None) -> dict[str, float]:
        """Large writes (with fsync) and cold reads, nprocs streams at once
        (size bytes in all): MB/s together."""
        per = max(self.size // nprocs, 4 << 20)
        files = [self.work / f"d{nprocs}.{i}" for i in range(nprocs)]
        nodes = [node_of(i) for i in range(nprocs)] if node_of else None
        w = self.together([[self.prog, "write", "--file", str(f), "--size", str(per)] for f in files], nodes)
        self.caches.drop()
        r = self.together([[self.prog, "read", "--file", str(f)] for f in files], nodes)
        for f in files:
            f.unlink(missing_ok=True)
        mb = lambda res: sum(x["bytes"] for x in res) / max(x["seconds"] for x in res) / 1e6  # noqa: E731
        return {"write_MBps": mb(w), "read_MBps": mb(r)}

    def small_calls(self) -> dict[str, float]:
        """A stream of 4 KiB writes, then of cold 4 KiB reads, one process:
        seconds per call."""
        f = self.work / "small"
        n = small_file_pages(self.size)
        w = self.one([self.prog, "write", "--file", str(f), "--size", str(n * SMALL), "--request-size", str(SMALL),
                      "--no-fsync"])
        self.caches.drop()
        r = self.one([self.prog, "read", "--file", str(f), "--request-size", str(SMALL)])
        # 4 KiB reads at random offsets of the same (cold) file: each its own round trip
        self.caches.drop()
        rr = self.one([str(native(RANDOM_READER, "bin")), "--file", str(f), "--phase", "run", "--reads",
                       str(random_reads(n)), "--read-size", str(SMALL)])
        out = {"small_write_s": w["seconds"] / w["ops"], "small_read_s": r["seconds"] / max(r["ops"], 1),
               "random_read_s": rr["read_seconds"] / max(rr["read_ops"], 1)}
        # the same bytes in larger requests: what a call costs by its size
        # (a stdio stream's 64 KiB, a library's 1 MiB), between the 4 KiB
        # call and the 4 MiB stream
        for req in WRITE_SIZES[1:]:
            w = self.one([self.prog, "write", "--file", str(f), "--size", str(n * SMALL), "--request-size",
                          str(req), "--no-fsync"])
            out[f"write_call_s_{req}"] = w["seconds"] / max(w["ops"], 1)
        # again while every core computes (a program between its writes, MPI
        # ranks polling): the file system's client (and, on a testbed, its
        # servers) get the CPU only in turn
        with busy_cores(os.cpu_count() or 1):
            for req in WRITE_SIZES:
                w = self.one([self.prog, "write", "--file", str(f), "--size", str(n * SMALL // 4), "--request-size",
                              str(req), "--no-fsync"])
                out[f"write_call_busy_s_{req}"] = w["seconds"] / max(w["ops"], 1)
        f.unlink(missing_ok=True)
        return out

    def auto_writes(self) -> dict[str, float]:
        """One new file written in calls of each size under --mode auto,
        both ways auto can take it: staged (--auto-large 0) and straight
        through from its first write (--auto-large 1), each timed from the
        program's start to its exit, so the staged time holds the publish
        (no stage delay, the process's own drainers; the tier where `sluice
        run` puts it), less the program's start and exit. Seconds per call;
        what sluice.autolarge makes auto's first-write size of."""
        from sluice.report.model import load_job

        out: dict[str, float] = {}
        f = self.work / "auto"
        size = small_file_pages(self.size) * SMALL
        logs = Path(tempfile.mkdtemp(prefix="sluice-calibrate-logs."))

        def timed(req: int, nbytes: int, large: str, job: str) -> float:
            # (--auto-local: on a node's own file system too, where auto
            # would only profile: what the tier would cost there)
            env = sluice_env(dict(os.environ), mode="auto", log_dir=logs, job_id=job,
                             extra={"SLUICE_AUTO_LARGE": large, "SLUICE_STAGE_DELAY_MS": "0",
                                    "SLUICE_AUTO_LOCAL": "1", "SLUICE_QUIET": "1"})
            t0 = time.monotonic()
            p = subprocess.run([self.prog, "write", "--file", str(f), "--size", str(nbytes), "--request-size",
                                str(req), "--no-fsync"], env=env, capture_output=True, text=True)
            wall = time.monotonic() - t0
            if p.returncode != 0:
                raise UserError(f"calibrate: {PROGRAM} under --mode auto failed ({p.returncode}): "
                                f"{p.stderr.strip()[-300:]}")
            return wall

        try:
            # the program's start and exit under the library, with one small
            # write (the least of three): taken off each timed run, so that a
            # run of a few large calls is not priced by its start
            start = min(timed(SMALL, SMALL, "0", f"calibrate-start-{i}") for i in range(3))
            f.unlink(missing_ok=True)
            out["auto_write_start_s"] = start
            for req in AUTO_WRITE_SIZES:
                for way, large in (("staged", "0"), ("direct", "1")):
                    job = f"calibrate-{way}-{req}"
                    wall = timed(req, size, large, job)
                    # (the figure is auto's way only if auto took it: its own counters say)
                    got = {x.path: x.app for x in load_job([logs], job).files}.get(str(f), {})
                    if got.get("POSIX_STAGED_OPENS", 0) != 1 or got.get("POSIX_AUTO_DIRECT", 0) != (way == "direct"):
                        raise UserError(f"calibrate: --mode auto did not take {f} {way} (its counters: staged opens "
                                        f"{got.get('POSIX_STAGED_OPENS', 0)}, straight through "
                                        f"{got.get('POSIX_AUTO_DIRECT', 0)})")
                    out[f"auto_{way}_s_{req}"] = max(0.0, wall - start) / max(1, -(-size // req))
                    f.unlink(missing_ok=True)
        finally:
            shutil.rmtree(logs, ignore_errors=True)
        return out

    def fsync(self) -> dict[str, float]:
        f = self.work / "fsync"
        r = self.one([self.prog, "fsync", "--file", str(f), "--files", "50", "--file-size", str(SMALL)])
        f.unlink(missing_ok=True)
        return {"fsync_s": r["seconds"] / r["ops"]}

    def shared_stripe(self) -> dict[str, float]:
        """Two writers, 64 KiB pieces: interleaved in one file (every stripe
        shared) against each writing the same pieces into a file of its
        own: MB/s together."""
        size = max(8 << 20, min(self.size // 4, 64 << 20))
        shared = self.work / "shared"
        res = self.together([[self.prog, "strided", "--file", str(shared), "--size", str(size), "--request-size",
                              str(SHARED_PIECE), "--rank", str(r), "--nprocs", "2"] for r in (0, 1)])
        own = [self.work / f"own{r}" for r in (0, 1)]
        alone = self.together([[self.prog, "strided", "--file", str(own[r]), "--size", str(size), "--request-size",
                                str(SHARED_PIECE), "--rank", str(r), "--nprocs", "2"] for r in (0, 1)])
        for f in (shared, *own):
            f.unlink(missing_ok=True)
        mb = lambda rs: sum(x["bytes"] for x in rs) / max(x["seconds"] for x in rs) / 1e6  # noqa: E731
        return {"shared_MBps": mb(res), "apart_MBps": mb(alone)}

    def settle(self) -> None:
        """What was written reaches the servers' disks before the next
        measurement (a file system still writing back times slow)."""
        os.sync()
        time.sleep(SETTLE_S)

    def round(self, k: int) -> dict[str, Any]:
        """The metadata calls first, the bytes last (their write-back would
        slow what comes after them), the file system settled in between."""
        row: dict[str, Any] = {"round": k, "load1_before": sysinfo.loadavg()[0], "procs": {}, "nodes": {}}
        self.settle()
        for p in self.procs:
            self.progress(f"calibrate: round {k + 1}/{self.rounds}: metadata, {p} process{'es' if p > 1 else ''}")
            row["procs"][str(p)] = self.metadata(p)
        for n in range(1, self.nodes + 1):
            self.progress(f"calibrate: round {k + 1}/{self.rounds}: metadata, {n} node{'s' if n > 1 else ''}")
            row["nodes"][str(n)] = self.metadata(n, lambda i, n=n: i % n + 1)
        self.settle()
        row.update(self.fsync())
        row.update(self.small_calls())
        self.settle()
        row.update(self.auto_writes())
        self.settle()
        row.update(self.shared_stripe())
        for p in self.procs:
            self.settle()
            self.progress(f"calibrate: round {k + 1}/{self.rounds}: bandwidth, {p} stream{'s' if p > 1 else ''}")
            row["procs"][str(p)].update(self.bandwidth(p))
        for n in range(1, self.nodes + 1):
            self.settle()
            row["nodes"][str(n)].update(self.bandwidth(n, lambda i, n=n: i % n + 1))
        return row

    def run(self, budget_s: float | None = None, least: int = MIN_ROUNDS) -> list[dict[str, Any]]:
        """Up to self.rounds rounds; after the first `least`, another only
        if it can end within budget_s of the start at the pace so far (a
        file system with a slow round trip gets fewer rounds, not hours)."""
        started = time.monotonic()
        try:
            for k in range(self.rounds):
                if budget_s is not None and k >= least:
                    spent = time.monotonic() - started
                    if spent + spent / k > budget_s:
                        self.progress(f"calibrate: {k} rounds in {spent:.0f} s: another would pass "
                                      f"the {budget_s:.0f} s budget")
                        break
                self.raw.append(self.round(k))
        finally:
            shutil.rmtree(self.work, ignore_errors=True)
        return self.raw


def _median(values: list[float]) -> dict[str, float]:
    """The median and the spread (max/min - 1) of a figure's rounds."""
    v = sorted(x for x in values if x == x)
    if not v:
        return {"median": float("nan"), "spread": float("nan")}
    return {"median": statistics.median(v), "spread": (v[-1] / v[0] - 1) if v[0] > 0 else float("nan")}


def summarize(raw: list[dict[str, Any]], procs: list[int], nodes: int) -> dict[str, Any]:
    """The profile's figures from the rounds."""
    def fig(get: Callable[[dict[str, Any]], float]) -> dict[str, float]:
        return _median([get(r) for r in raw])

    one = str(procs[0])
    meta = {}
    for kind in (*META_PHASES, "create_written"):
        meta[kind] = {
            "latency_s": fig(lambda r, k=kind: r["procs"][one][f"{k}_latency_s"]),
            "ops_per_s": {str(p): fig(lambda r, k=kind, p=p: r["procs"][str(p)][k]) for p in procs},
        }
        if nodes:
            meta[kind]["ops_per_s_by_nodes"] = {str(n): fig(lambda r, k=kind, n=n: r["nodes"][str(n)][k])
                                                for n in range(1, nodes + 1)}
    data = {
        "write_MBps": {str(p): fig(lambda r, p=p: r["procs"][str(p)]["write_MBps"]) for p in procs},
        "read_MBps": {str(p): fig(lambda r, p=p: r["procs"][str(p)]["read_MBps"]) for p in procs},
        "small_write_s": fig(lambda r: r["small_write_s"]),
        "write_call_s": {str(q): fig(lambda r, q=q: r["small_write_s"] if q == SMALL else r[f"write_call_s_{q}"])
                         for q in WRITE_SIZES},
        "write_call_busy_s": {str(q): fig(lambda r, q=q: r.get(f"write_call_busy_s_{q}", float("nan")))
                              for q in WRITE_SIZES},
        "auto_write_s": {str(q): {way: fig(lambda r, q=q, way=way: r.get(f"auto_{way}_s_{q}", float("nan")))
                                  for way in ("staged", "direct")} for q in AUTO_WRITE_SIZES},
        "auto_write_start_s": fig(lambda r: r.get("auto_write_start_s", float("nan"))),
        "small_read_s": fig(lambda r: r["small_read_s"]),
        "random_read_s": fig(lambda r: r["random_read_s"]),
        "fsync_s": fig(lambda r: r["fsync_s"]),
        "shared_stripe": {
            "piece": SHARED_PIECE,
            "shared_MBps": fig(lambda r: r["shared_MBps"]),
            "apart_MBps": fig(lambda r: r["apart_MBps"]),
            "slowdown": fig(lambda r: r["apart_MBps"] / r["shared_MBps"]),
        },
    }
    if nodes:
        data["write_MBps_by_nodes"] = {str(n): fig(lambda r, n=n: r["nodes"][str(n)]["write_MBps"])
                                       for n in range(1, nodes + 1)}
    return {"metadata": meta, "data": data}


def calibrate(target: Path, *, rounds: int = ROUNDS, files: int = 500, size: int = 256 << 20,
              procs: list[int] | None = None, nodes: int = 0, drop_caches: bool = True,
              budget_s: float | None = BUDGET_S,
              progress: Callable[[str], None] = lambda m: None, argv: list[str] | None = None) -> dict[str, Any]:
    """Measure target's file system; the profile as a dict."""
    if not target.is_dir():
        raise UserError(f"calibrate: --target {target} is not a directory")
    if not os.access(target, os.W_OK | os.X_OK):
        raise UserError(f"calibrate: cannot write in {target}")
    procs = procs or [1, 2, 4]
    caches = CacheDropper(enabled=drop_caches)
    if nodes:
        from sluice.bench import nodes as bench_nodes
        bench_nodes.node_mounts(nodes, "calibrate", target)
    started = time.time()
    cal = Calibration(target, rounds=rounds, files=files, size=size, procs=procs, nodes=nodes, caches=caches,
                      progress=progress)
    raw = cal.run(budget_s, least=min(rounds, MIN_ROUNDS))
    doc = {
        "schema": SCHEMA,
        "command": " ".join(argv) if argv else None,
        "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(time.time() - started, 1),
        "target": str(target),
        "filesystem": sysinfo.filesystem_info(target),
        "machine": sysinfo.machine_info(),
        "settings": {"rounds": len(raw), "rounds_asked": rounds, "budget_s": budget_s, "files": files, "size": size, "procs": procs, "nodes": nodes,
                     "small": SMALL, "caches_dropped": caches.possible,
                     "caches_not_dropped_because": caches.reason},
        **summarize(raw, procs, nodes),
        "rounds": raw,
    }
    return doc
