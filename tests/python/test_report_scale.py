"""The report's merge as arrays (python/sluice/report/tables.py) against the
plain merge of one dict per record that it replaces: the same totals, files,
key order, value types and float bits, and the same JSON text, for records
read from logs (arrays) and records given as dicts (Darshan's, hand-made);
the per-process rows of report --json --per-process."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import bin_path, report_json, sluice

from sluice.logfmt import Log, Module, RecordBlock, Records, read_log
from sluice.report.model import SIDES, Job, merge, merge_counters, zero_counters

POSIX = Module(1, 1, "POSIX", ["POSIX_OPENS", "POSIX_WRITES", "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ",
                               "POSIX_MAX_BYTE_WRITTEN"],
               ["POSIX_F_WRITE_TIME", "POSIX_F_OPEN_START_TIMESTAMP", "POSIX_F_WRITE_END_TIMESTAMP"])
# another writer's POSIX: counters reordered, one more, one listed twice
POSIX_B = Module(1, 2, "POSIX", ["POSIX_BYTES_WRITTEN", "POSIX_OPENS", "POSIX_SEEKS", "POSIX_WRITES",
                                 "POSIX_MAX_BYTE_WRITTEN", "POSIX_SEEKS"],
                 ["POSIX_F_OPEN_START_TIMESTAMP", "POSIX_F_WRITE_TIME"])
STDIO = Module(2, 1, "STDIO", ["STDIO_OPENS", "STDIO_WRITES", "STDIO_BYTES_WRITTEN", "STDIO_MAX_BYTE_WRITTEN"],
               ["STDIO_F_WRITE_TIME", "STDIO_F_OPEN_START_TIMESTAMP"])
PATHS = ["/s/a", "/s/b", "/s/%d {x}", '/s/"q"\\é\n', "/s/e", "<other files>"]


def reference(job_id: str, logs: list[Log]) -> dict:
    """What model.merge gave when every record was a dict: Job.to_json()."""
    start = min(l.start_ns for l in logs)
    totals = {s: zero_counters(logs) for s in SIDES}
    files: dict[str, dict] = {}

    def into(dst: dict, src: dict) -> None:
        merge_counters(dst, src)

    for l in sorted(logs, key=lambda x: (x.start_ns, x.pid)):
        offset = (l.start_ns - start) / 1e9
        for r in l.records:
            f = files.setdefault(r.path, {"path": r.path, "processes": set(), "app": {}, "fs": {}})
            f["processes"].add(l.pid)
            for side in SIDES:
                c = {k: (v + offset if "_TIMESTAMP" in k and v else v) for k, v in getattr(r, side).items()}
                into(f[side], c)
                into(totals[side], c)

    def nbytes(c: dict) -> int:
        def moved(m: str) -> float:
            return c.get(f"{m}_BYTES_READ", 0) + c.get(f"{m}_BYTES_WRITTEN", 0)
        return int(max(moved("POSIX"), moved("MPIIO")) + moved("STDIO"))

    def ops(c: dict) -> int:
        return int(sum(c.get(k, 0) for k in ("POSIX_OPENS", "POSIX_WRITES", "POSIX_SEEKS", "STDIO_OPENS",
                                              "STDIO_WRITES")))

    order = sorted(files.values(), key=lambda f: (-nbytes(f["app"]), -ops(f["app"]), f["path"]))
    return {"job_id": job_id, "processes": len(logs), "runtime_s": (max(l.end_ns for l in logs) - start) / 1e9,
            "partial": False, "logs": [str(l.path) for l in logs], "app": totals["app"], "fs": totals["fs"],
            "files": [{"path": f["path"], "processes": len(f["processes"]), "app": f["app"], "fs": f["fs"]}
                      for f in order]}


def typed(x):
    """A value with its types spelt out, so that 1 and 1.0 differ."""
    if isinstance(x, dict):
        return [(k, typed(v)) for k, v in x.items()]
    if isinstance(x, list):
        return [typed(v) for v in x]
    return (type(x).__name__, repr(x))


def random_logs(rng: random.Random, as_arrays: bool, odd_floats: bool = False, same_until: int = 0) -> list[Log]:
    """Six logs of random records; in the first `same_until` the fs side
    equals the app side (as in profile mode)."""
    logs = []
    for n in range(6):
        mods = [POSIX_B if n == 3 else POSIX, STDIO]
        log = Log(Path(f"/logs/{n}.sluice"), (1, 0), 0, 1000 + n % 4, 1, -1, -1,
                  10**18 + rng.randrange(10**9), 10**18 + 2 * 10**9, "exit", {"job_id": "j", "host": "h"},
                  {m.id: m for m in mods})
        blocks, records = [], []
        for m in mods:
            k = rng.randrange(0, 8)
            paths = [rng.choice(PATHS) for _ in range(k)]   # a path twice in one region, too

            def value(name: str, is_float: bool):
                if not is_float:
                    return rng.choice([0, 0, 1, 7, 2**40 + rng.randrange(1000), -1 if "MAX" in name else 3])
                if odd_floats and rng.random() < 0.1:
                    return rng.choice([float("nan"), float("inf"), -0.0])
                return rng.choice([0.0, rng.random(), rng.random() * 1e-7, 1e16 * rng.random()])

            ints = np.array([[[value(c, False) for c in m.int_names] for _ in SIDES] for _ in paths],
                            dtype=np.int64).reshape(k, 2, len(m.int_names))
            floats = np.array([[[value(c, True) for c in m.float_names] for _ in SIDES] for _ in paths],
                              dtype=np.float64).reshape(k, 2, len(m.float_names))
            if n < same_until:
                ints[:, 1], floats[:, 1] = ints[:, 0], floats[:, 0]
            b = RecordBlock(m, np.arange(k, dtype=np.uint64), np.zeros(k, dtype=np.uint32), ints, floats, paths)
            blocks.append(b)
            records.extend(b.records())
        log.records = Records(blocks) if as_arrays else records
        logs.append(log)
    return logs


@pytest.mark.parametrize("seed", range(40))
def test_merge_as_dicts(seed: int) -> None:
    """Also with fs equal to app in every log (one table serves both), and
    in the first logs only (the fs table starts as a copy, mid-way)."""
    same = [0, 6, 3][seed % 3]
    for as_arrays in (True, False):
        logs = random_logs(random.Random(seed), as_arrays, same_until=same)
        want = reference("j", random_logs(random.Random(seed), False, same_until=same))
        job = merge("j", logs)
        got = job.to_json()
        assert typed(got["app"]) == typed(want["app"]) and typed(got["fs"]) == typed(want["fs"])
        assert typed(got["files"]) == typed(want["files"])
        text = io.StringIO()
        job.write_json(text, {"tasks": [1]})
        assert text.getvalue() == json.dumps({**got, "tasks": [1]}, indent=1) + "\n"


@pytest.mark.parametrize("seed", range(10))
def test_json_of_odd_floats(seed: int) -> None:
    """NaN, infinities and -0.0 are written as json writes them."""
    job = merge("j", random_logs(random.Random(seed), True, odd_floats=True))
    text = io.StringIO()
    job.write_json(text)
    assert text.getvalue() == json.dumps(job.to_json(), indent=1) + "\n"


def test_empty_job_json() -> None:
    log = Log(Path("/l"), (1, 0), 0, 1, 1, -1, -1, 5, 6, "exit", {}, {})
    job = merge("j", [log])
    text = io.StringIO()
    job.write_json(text)
    assert text.getvalue() == json.dumps(job.to_json(), indent=1) + "\n"


def test_records_read_as_needed() -> None:
    """A read log's records are arrays; Record objects are made per look."""
    log = read_log(Path(__file__).resolve().parents[1] / "vectors" / "posix_stdio.sluice")
    assert isinstance(log.records, Records) and len(log.records) == 2
    recs = list(log.records)
    assert [r.module for r in recs] == ["POSIX", "STDIO"]
    assert log.records[1].app == recs[1].app and log.records[-1].path == recs[-1].path
    assert sum(len(b) for b in log.records.blocks) == 2


def test_many_records_and_per_process(tmp_path: Path) -> None:
    """Three processes of 300 files each (logs of the C writer): the report's
    JSON equals the dict merge's; --per-process adds a row per process whose
    counters add up to the job's, and nothing else changes."""
    logs = tmp_path / "logs"
    for i in range(3):
        d = tmp_path / "data" / f"p{i}"
        d.mkdir(parents=True)
        sluice("run", "--job-id", "scale", "--log-dir", str(logs), "--path", str(tmp_path / "data"), "--",
               bin_path("manyfiles"), str(d), "300", "64", "2")
    read = [read_log(p) for p in sorted(logs.glob("*.sluice"))]
    want = reference("scale", [Log(**{**l.__dict__, "records": list(l.records)}) for l in read])
    plain = sluice("report", "--json", str(logs)).stdout
    got = json.loads(plain)
    assert len(got["files"]) == 900
    assert typed(got["app"]) == typed(want["app"]) and typed(got["files"]) == typed(want["files"])
    rows = report_json(logs, "--per-process")
    per = rows.pop("per_process")
    assert rows == got and "per_process" not in got
    assert sorted(r["pid"] for r in per) == sorted(l.pid for l in read)
    assert {r["files"] for r in per} == {300}
    for name in ("POSIX_WRITES", "POSIX_BYTES_WRITTEN", "POSIX_OPENS"):
        for side in SIDES:
            assert sum(r["modules"]["POSIX"][side]["counters"][name] for r in per) == got[side][name] == \
                (1800 if name == "POSIX_WRITES" else 900 if name == "POSIX_OPENS" else 1800 * 64)
    assert all(set(r) >= {"rank", "pid", "host", "exe", "start_ns", "end_ns", "runtime_s"} for r in per)
    bad = sluice("report", "--per-process", str(logs), check=False)
    assert bad.returncode != 0 and "--per-process" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_job_api_unchanged() -> None:
    """Callers read a file's counters as a mapping and its bytes/ops."""
    job: Job = merge("j", random_logs(random.Random(7), True))
    f = job.files[0]
    assert dict(f.app) == {k: f.app[k] for k in f.app} and len(f.app) == len(dict(f.app))
    assert f.app.get("NOPE", 5) == 5 and ("NOPE" in f.app) is False
    assert f.bytes() == max(g.bytes() for g in job.files)


def test_per_process_of_a_darshan_log() -> None:
    """A Darshan log (PyDarshan's example): a row per rank, and one of rank
    -1 for the files all ranks shared; their POSIX bytes add up to the job's."""
    darshan = pytest.importorskip("darshan")
    log = Path(darshan.__file__).parent / "examples" / "example_logs" / "ior_hdf5_example.darshan"
    got = report_json(log, "--per-process")
    rows = got["per_process"]
    assert len(rows) == got["processes"] + 1 and [r["rank"] for r in rows][0] == -1
    for side in SIDES:
        assert sum(r["modules"].get("POSIX", {}).get(side, {}).get("counters", {}).get("POSIX_BYTES_WRITTEN", 0)
                   for r in rows) == got[side]["POSIX_BYTES_WRITTEN"] > 0
