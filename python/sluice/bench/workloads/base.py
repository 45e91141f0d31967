"""What a workload is: parameters, metrics, variants, and one timed run.

A workload declares

* ``params``: named settings with defaults (``-p WORKLOAD.NAME=VALUE`` on
  the command line);
* ``metrics``: the quantities a run returns, with their unit, which way is
  better, and which physical limit (a ``limits`` metric) they compare to;
* ``variants``: the ways it runs by default (``plain`` first: the baseline);
* ``reads``: whether the page cache is dropped before each run;
* ``run(ctx)``: one measured run in the empty directory ``ctx.workdir``,
  returning the metrics. Programs started through ``ctx.exec`` run as the
  current variant; their JSON lines are kept as the round's raw record.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice import paths
from sluice.bench.caches import CacheDropper
from sluice.bench.variants import Variant
from sluice.errors import UserError
from sluice.testbed import clientstats

_SIZE = re.compile(r"^(\d+)\s*([kKmMgGtT]?)(i?B)?$")
_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}


def parse_size(text: str | int) -> int:
    """``4096``, ``4K``, ``64M``, ``1GiB`` ... as bytes (binary suffixes)."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(text.strip())
    if not m or (m.group(3) and not m.group(2)):
        raise ValueError(f"not a size: {text!r} (use e.g. 4096, 4K, 64M, 1G)")
    return int(m.group(1)) << _SHIFT[m.group(2).lower()]


def format_size(n: int) -> str:
    """The shortest exact binary form: 4096 -> 4K, 1073741824 -> 1G, 100 -> 100."""
    for suffix, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


@dataclass(frozen=True)
class Param:
    name: str
    default: Any
    help: str
    kind: str = "int"  # int | size | str | bool | choice
    choices: tuple[str, ...] = ()

    def parse(self, text: str) -> Any:
        try:
            if self.kind == "size":
                return parse_size(text)
            if self.kind == "int":
                v = int(text)
                if v < 0:
                    raise ValueError
                return v
            if self.kind == "bool":
                low = text.lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError
            if self.kind == "choice" and text not in self.choices:
                raise ValueError
        except ValueError:
            want = {
                "size": "a size such as 4096, 4K, 64M, 1G",
                "int": "a non-negative integer",
                "bool": "true or false",
                "choice": "one of " + ", ".join(self.choices),
            }.get(self.kind, "a value")
            raise UserError(f"bad value {text!r} for {self.name}: want {want}") from None
        return text

    def show(self, value: Any) -> str:
        if self.kind == "size" and isinstance(value, int):
            return format_size(value)
        return str(value)


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # s, MB/s, ops/s, µs/op, B ...
    better: str = "higher"  # higher | lower
    limit: str | None = None  # the ``limits`` metric this is a fraction of
    help: str = ""


@dataclass
class RunContext:
    """Everything one measured run may use."""

    workdir: Path  # empty directory on the target, removed after the run
    scratch: Path  # directory off the target (logs of sluice variants)
    variant: Variant
    params: dict[str, Any]
    seed: int
    caches: CacheDropper
    timeout: float | None = None
    raw: list[dict[str, Any]] = field(default_factory=list)  # every program's JSON line
    wall_seconds: float = 0.0  # wall time of the timed program runs
    caches_dropped: list[bool] = field(default_factory=list)
    _log_seq: int = 0

    def native(self, name: str) -> str:
        return str(paths.native(name, "bin"))

    def drop_caches(self) -> bool:
        done = self.caches.drop()
        self.caches_dropped.append(done)
        return done

    def exec(self, argv: list[str], *, as_variant: bool = True, timed: bool = True) -> dict[str, Any]:
        """Run a workload program, as the current variant unless told not to,
        and return its JSON line (with ``wall_seconds`` added)."""
        variant = self.variant if as_variant else None
        log_dir = None
        if variant is not None and variant.mode is not None:
            self._log_seq += 1
            log_dir = self.scratch / f"log.{self._log_seq}"
            log_dir.mkdir(parents=True, exist_ok=True)
        cmd = variant.command(argv, log_dir, [self.workdir]) if variant is not None else list(argv)
        env = variant.env() if variant is not None else None
        client = clientstats.Counter(self.workdir)
        client.start()
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=self.timeout)
        except FileNotFoundError as e:
            raise UserError(f"cannot run {cmd[0]}: {e.strerror}") from None
        except subprocess.TimeoutExpired:
            raise UserError(f"{Path(argv[0]).name} did not finish within {self.timeout:.0f} s") from None
        wall = time.perf_counter() - t0
        client.stop()
        if proc.returncode != 0:
            tail = "; ".join(proc.stderr.strip().splitlines()[-3:]) or f"exit status {proc.returncode}"
            raise UserError(f"{' '.join(cmd[:1] + cmd[1:8])} ... failed: {tail}")
        data = last_json_line(proc.stdout)
        if data is None:
            raise UserError(f"{Path(argv[0]).name} printed no JSON result line")
        data["wall_seconds"] = wall
        data["argv"] = [Path(argv[0]).name, *argv[1:]]
        data["as_variant"] = variant.name if variant is not None else None
        if client.ops is not None:
            # the requests the file system's own client received (MooseFS .stats)
            data["client_ops"] = client.ops
        if log_dir is not None:
            logs = list(log_dir.glob("*.sluice"))
            data["sluice_logs"] = len(logs)
            data["sluice_log_bytes"] = sum(p.stat().st_size for p in logs)
            if logs:
                data["sluice_counters"] = counter_totals(log_dir)
        if timed:
            self.wall_seconds += wall
        self.raw.append(data)
        return data


# What the benchmarks quote from sluice's own logs, on both sides.
_QUOTED_COUNTERS = ("POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_STATS", "POSIX_SEEKS",
                    "POSIX_RENAMES", "POSIX_UNLINKS", "POSIX_MKDIRS", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN",
                    "POSIX_FALLBACKS")
# Metadata operations: what loads a parallel file system's metadata server.
META_COUNTERS = ("POSIX_OPENS", "POSIX_STATS", "POSIX_RENAMES", "POSIX_UNLINKS", "POSIX_MKDIRS")


def counter_totals(log_dir: Path) -> dict[str, dict[str, int]]:
    from sluice.report.model import load_job

    job = load_job([log_dir])
    return {side: {k: int(getattr(job, side).get(k, 0)) for k in _QUOTED_COUNTERS} for side in ("app", "fs")}


def fs_count(data: dict[str, Any], counter: str, own: str) -> float:
    """How many calls of a kind reached the file system in one program run:
    sluice's fs-side counter when it ran under sluice, else the program's
    own count (field `own` of its JSON line)."""
    c = data.get("sluice_counters")
    return float(c["fs"][counter]) if c else float(data[own])


def client_meta_count(data: dict[str, Any]) -> float | None:
    """Metadata requests the file system's own clients received during one
    program run (MooseFS's .stats: every node's client for a run on the
    testbed's nodes), None off MooseFS."""
    ops = data.get("client_ops")
    return float(clientstats.meta_requests(ops)) if ops is not None else None


def fs_meta_count(data: dict[str, Any], own_opens: str) -> float:
    """Metadata operations that reached the file system in one program run:
    sluice's fs-side counters under sluice, else the program's own opens."""
    c = data.get("sluice_counters")
    return float(sum(c["fs"][k] for k in META_COUNTERS)) if c else float(data[own_opens])


def last_json_line(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if isinstance(v, dict):
                return v
    return None


def rate(amount: float, seconds: float, scale: float = 1.0) -> float | None:
    """amount / seconds / scale, None when no time passed."""
    if seconds <= 0:
        return None
    return amount / seconds / scale


class Workload:
    """Base class; subclasses set the class attributes and implement run()."""

    name: str = ""
    summary: str = ""  # one line for --list
    reads: bool = False
    variants: tuple[str, ...] = ("plain",)
    allowed_variants: tuple[str, ...] | None = None  # None = any variant
    params: tuple[Param, ...] = ()
    metrics: tuple[Metric, ...] = ()
    native_programs: tuple[str, ...] = ()

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise UserError(f"workload {self.name} has no parameter {name!r} (known: {known})")

    def check(self, params: dict[str, Any]) -> None:
        """Fail early (UserError) when the run cannot work: a missing program ..."""
        for prog in self.native_programs:
            paths.native(prog, "bin")

    def describe(self, params: dict[str, Any]) -> str:
        """A short line of the parameters as run, for the table heading."""
        return ", ".join(f"{p.name}={p.show(params[p.name])}" for p in self.params)

    def run(self, ctx: RunContext) -> dict[str, float | None]:
        raise NotImplementedError

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

