#!/usr/bin/env python3
"""Predictions checked against measurement: each bench workload program
runs under `sluice run --mode profile`, `sluice predict` reads that run's
logs, then the program runs under each modelled mode, and the predicted fs
side is compared with the measured one, counter by counter (the job's
totals). Prints the table and writes it as JSON; exits 1 when a count is
off by more than --tolerance (10 % by default).

    bench/predict_check.py --target /mnt/sluice-pfs [--workloads smallio,nc-append] [--json FILE]
    (the bench workloads, then LAMMPS, a CDO/NCO workflow, an h5py script and a PnetCDF code where installed,
    and an AMR checkpoint through MPI-IO and parallel HDF5: --modes acb)
    bench/predict_check.py --target /mnt/sluice-pfs --fs testbed.json   # I/O times too (within --time-tolerance)
    (a profile with auto's staged-against-direct figures: stage and auto run with --fs, as predict prices them)
    bench/predict_check.py ... --json R.json --keep R.logs; bench/predict_check.py --fs testbed.json --again R.json
    (the second runs nothing: the model again, from the kept profile runs, against R's measurements)
    bench/predict_check.py --agree R1.json R2.json   # two measurements' I/O times against each other

The measured I/O time of a run is the seconds its processes spent in the
file system's calls (the fs side's read, write and metadata times of the
workload's files, the stage drainer's publishing included), divided by the
workload's processes, as the prediction spreads its calls over them;
with --rounds R, the median of R runs of each mode made side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES = ("POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME", "STDIO_F_READ_TIME", "STDIO_F_WRITE_TIME",
         "STDIO_F_META_TIME")
COUNTERS = ("POSIX_WRITES", "POSIX_READS", "POSIX_OPENS", "POSIX_STATS", "POSIX_RENAMES", "POSIX_UNLINKS",
            "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ", "STDIO_WRITES", "STDIO_READS")


@dataclass
class Step:
    """One program run of a workload: under sluice in the mode checked, or
    plain (a setup: the inputs a job finds on the file system)."""

    argv: list[str]
    cwd: Path | None = None
    plain: bool = False


H5PY_SCRIPT = """
import sys, h5py, numpy as np
path = sys.argv[1]
with h5py.File(path, "w") as f:
    for step in range(20):
        g = f.create_group(f"step{step:03d}")
        g.create_dataset("t", data=np.arange(4096, dtype="f8") * step)
        g.attrs["time"] = step * 0.5
with h5py.File(path, "r") as f:
    total = sum(float(f[f"step{s:03d}/t"][-1]) for s in range(20))
print(total)
"""


def workloads(native: Path, tests_bin: Path, work: Path, scratch: Path) -> dict[str, list[Step] | str]:
    """Workload -> its steps, small enough for CI; or why it cannot run here."""
    b = lambda name: str(native / f"sluice-bench-{name}")  # noqa: E731
    out: dict[str, list[Step] | str] = {
        "smallio": [Step([b("smallio"), "--file", f"{work}/smallio", "--size", "16M"])],
        "nc-append": [Step([b("nc-append"), "--file", f"{work}/append.nc", "--records", "200"])],
        "nc-append-64bit": [Step([b("nc-append"), "--file", f"{work}/append64.nc", "--records", "200", "--format",
                                  "64bit"])],
        "ensemble": [Step([b("ensemble"), "--dir", f"{work}/ens", "--procs", "2", "--files", "50", "--steps", "3"])],
        "randread": [Step([b("randread"), "--file", f"{work}/rand", "--size", "16M", "--reads", "2000"])],
        "smallread": [Step([b("smallread"), "--dir", f"{work}/sr", "--files", "200"])],
        "strided-shared": [Step([b("strided-shared"), "--file", f"{work}/strided", "--procs", "2", "--size", "8M"])],
        "fpp-netcdf": [Step([b("fpp-netcdf"), "--dir", f"{work}/fpp", "--procs", "2"])],
    }
    # the four real applications
    lmp = shutil.which("lmp")
    melt = ROOT / "tests" / "data" / "lammps" / "in.melt"
    out["lammps"] = ([Step(["cp", str(melt), str(work)], plain=True),
                      Step([lmp, "-in", "in.melt", "-log", "log.lammps", "-screen", "none"], cwd=work)]
                     if lmp else "LAMMPS is not installed (lmp)")
    from sluice.bench.workloads.cdo_nco import REAL_TOOLS, workflow_script
    missing = [t for t in REAL_TOOLS if not shutil.which(t)]
    script = scratch / "cdo-nco.sh"
    script.write_text(workflow_script("real", 8, b("cdo-nco")))
    out["cdo-nco"] = ([Step([b("cdo-nco"), "setup", "--dir", str(work), "--members", "8", "--steps", "3", "--nx",
                             "16", "--ny", "8"], plain=True), Step(["/bin/sh", str(script), str(work)])]
                      if not missing else f"CDO/NCO are not installed ({', '.join(missing)})")
    out["h5py"] = [Step([sys.executable, "-c", H5PY_SCRIPT, f"{work}/a.h5"])]
    pnc = tests_bin / "pnc_write"
    mpirun = shutil.which("mpirun")
    out["pnetcdf"] = ([Step([mpirun, "--oversubscribe", "-np", "2", str(pnc), f"{work}/out.nc"])]
                      if pnc.exists() and mpirun else f"no {pnc} (build with -DSLUICE_BUILD_TESTS=ON) or no mpirun")
    # an AMR checkpoint (docs/acb.md): 320 boxes of 32 KiB dealt to 4 ranks in
    # Morton order, one independent or one collective write each, or
    # through parallel HDF5
    for name, prog, variant in (("amr-indep", "amr-ckpt", "indep"), ("amr-coll", "amr-ckpt", "coll"),
                                ("amr-h5", "amr-ckpt-h5", "h5-indep")):
        amr = native / f"sluice-bench-{prog}"
        out[name] = ([Step([mpirun, "--oversubscribe", "-np", "4", str(amr), "--variant", variant, "--file",
                            f"{work}/ckpt", "--boxes", "64,256", "--box-bytes", "32768"])]
                     if amr.exists() and mpirun else f"no {amr} or no mpirun")
    return out


def sluice(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sluice", *args], env=env, text=True, capture_output=True)


def totals(logdir: Path, work: Path, env: dict[str, str]) -> dict[str, float]:
    """The job's fs side, summed over the files under work."""
    cp = sluice("report", "--json", str(logdir), env=env)
    if cp.returncode != 0:
        raise SystemExit(f"predict_check: report failed: {cp.stderr.strip()}")
    out = {k: 0.0 for k in (*COUNTERS, "io_time_s")}
    for f in json.loads(cp.stdout)["files"]:
        if f["path"].startswith(str(work)):
            for k in COUNTERS:
                out[k] += f["fs"].get(k) or 0
            out["io_time_s"] += sum(f["fs"].get(k) or 0 for k in TIMES)
    return out


def agree(a: Path, b: Path, tolerance: float) -> int:
    """Two measurements of the same workloads, I/O time by I/O time: the
    second over the first, and how many within the tolerance."""
    def times(p: Path) -> dict[tuple[str, str], float]:
        return {(r["workload"], r["mode"]): r["measured"] for r in json.loads(p.read_text())["rows"]
                if r["counter"] == "io_time_s" and r["measured"] > 0}
    ta, tb = times(a), times(b)
    both = [k for k in ta if k in tb]
    ratios = {k: tb[k] / ta[k] for k in both}
    ok = [k for k, x in ratios.items() if 1 / (1 + tolerance) <= x <= 1 + tolerance]
    for k, x in ratios.items():
        print(f"{k[0]:16s} {k[1]:8s} {ta[k] * 1e3:10,.1f} {tb[k] * 1e3:10,.1f} ms  {x:5.2f}"
              f"{'' if k in ok else '  <-- off'}")
    print(f"{len(ok)} of {len(both)} I/O times agree within {tolerance * 100:.0f} % (the second over the first: "
          f"median {statistics.median(ratios.values()):.2f})")
    return 0 if len(ok) == len(both) else 1


def again(a: argparse.Namespace) -> int:
    """Predictions made anew from kept logs, against the measurements of
    the run that kept them: counts and I/O times, printed as main prints
    them."""
    old = json.loads(a.again.read_text())
    kept = a.again.with_suffix(".logs")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    docs: dict[str, dict] = {}
    counts = times = counts_ok = times_ok = 0
    for r in old["rows"]:
        if r["counter"] == "wall_s" or "predicted" not in r:
            continue
        w = r["workload"]
        if w not in docs:
            if not (kept / f"{w}.logs").is_dir():
                raise SystemExit(f"predict_check: no kept logs of {w} in {kept} (made with --keep {kept})")
            cp = sluice("predict", "--json", *(["--fs", str(a.fs)] if a.fs else []), str(kept / f"{w}.logs"),
                        env=env)
            if cp.returncode != 0:
                raise SystemExit(f"predict_check: predict failed: {cp.stderr.strip()}")
            docs[w] = json.loads(cp.stdout)
        d = docs[w]
        if r["counter"] == "io_time_s":
            t = d["modes"][r["mode"]]["io_time_s"]
            err = (t - r["measured"]) / r["measured"] if r["measured"] else float("inf")
            ok = abs(err) <= a.time_tolerance
            times, times_ok = times + 1, times_ok + ok
            print(f"{w:16s} {r['mode']:8s} {'I/O time, ms':20s} predicted {t * 1e3:>12,.1f} (was "
                  f"{r['predicted'] * 1e3:,.1f})  measured {r['measured'] * 1e3:>10,.1f}  {err * 100:+7.1f}%"
                  f"{'' if ok else '  <-- off'}")
        else:
            p, m = d["modes"][r["mode"]]["fs"][r["counter"]], r["measured"]
            err = (p - m) / m if m else (0.0 if p == 0 else float("inf"))
            counts, counts_ok = counts + 1, counts_ok + (abs(err) <= a.tolerance)
    print(f"{counts_ok} of {counts} counts within {a.tolerance * 100:.0f} %, {times_ok} of {times} I/O times "
          f"within {a.time_tolerance * 100:.0f} % (predicted again from {kept})")
    return 0 if counts_ok == counts and times_ok == times else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--workloads", default="all")
    ap.add_argument("--modes", default="buffer")
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--fs", type=Path, help="a `sluice bench calibrate` profile of --target: compare I/O times too")
    ap.add_argument("--time-tolerance", type=float, default=0.30)
    ap.add_argument("--rounds", type=int, default=1,
                    help="runs of each mode, side by side; the I/O time compared is their median (counts: the first)")
    ap.add_argument("--trace", type=int, default=1 << 20,
                    help="the profile run's per-call trace (sluice run --trace N): predict replays it through "
                         "buffer mode; 0: the counters' model alone")
    ap.add_argument("--plan", action="store_true",
                    help="also run each workload under the plan `sluice predict --fs --plan` made from the profile "
                         "run (auto, each file in its cheapest mode by the model); every mode's wall time, "
                         "sluice run's own (publish included), and auto's and the plan's over the best mode's")
    ap.add_argument("--keep", type=Path,
                    help="keep each workload's profile-run logs there (NAME.logs), for --again")
    ap.add_argument("--again", type=Path, metavar="RESULTS",
                    help="run nothing: predict again from the logs --keep kept beside RESULTS (RESULTS.logs/) and "
                         "compare with RESULTS' measurements (a change of the model, against one measurement)")
    ap.add_argument("--agree", type=Path, nargs=2, metavar=("A", "B"),
                    help="run nothing: how many of two results files' measured I/O times agree within "
                         "--time-tolerance (the measurement's own reproducibility)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if a.agree:
        sys.exit(agree(*a.agree, a.time_tolerance))
    if a.again:
        sys.exit(again(a))
    if a.plan and not a.fs:
        raise SystemExit("predict_check: --plan needs --fs (the model chooses on a calibrated profile)")
    native = Path(os.environ.get("SLUICE_NATIVE_DIR") or ROOT / "build" / "dev" / "native").resolve()
    tests_bin = Path(os.environ.get("SLUICE_TEST_BIN") or native.parent / "tests" / "bin").resolve()
    env = dict(os.environ, SLUICE_NATIVE_DIR=str(native),
               PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    sys.path.insert(0, str(ROOT / "python"))
    # a profile with auto's staged-against-direct figures: predict prices
    # stage and auto as `sluice run --fs` runs them, and so they are run
    from sluice.autolarge import auto_large_of, read_profile
    if a.fs is not None:
        a.fs = a.fs.absolute()   # (the real applications run in directories of their own)
    by_fs = a.fs is not None and auto_large_of(read_profile(a.fs)) is not None
    work_root = Path(tempfile.mkdtemp(prefix="sluice-predict-check.", dir=a.target))
    rows, bad = [], 0
    try:
        for name, runs in workloads(native, tests_bin, work_root, work_root).items():
            if a.workloads != "all" and name not in a.workloads.split(","):
                continue
            if isinstance(runs, str):
                print(f"{name:16s} left out: {runs}")
                continue
            measured, predicted = {}, None
            times: dict[str, list[float]] = {}
            walls: dict[str, list[float]] = {}
            plan = work_root / f"{name}.plan.toml"
            runs = ["profile", *a.modes.split(",")] + (["plan"] if a.plan else [])
            for r in range(a.rounds):   # (the modes side by side in each round: the machine's moods hit all)
                for mode in runs:
                    work = work_root / f"{name}.{mode}.{r}"
                    work.mkdir()
                    logs = work_root / f"{name}.{mode}.{r}.logs"
                    steps = workloads(native, tests_bin, work, work_root)[name]
                    assert not isinstance(steps, str)
                    how = ["--mode", mode]
                    if mode in ("stage", "auto") and by_fs:
                        how += ["--fs", str(a.fs)]   # (as predict prices them with this profile)
                    if mode == "plan":   # (the plan names the profile run's paths: this run's, here)
                        mine = work_root / f"{name}.plan.{r}.toml"
                        mine.write_text(plan.read_text().replace(f"{name}.profile.0", f"{name}.plan.{r}"))
                        how = ["--config", str(mine)]
                    wall = 0.0
                    for st in steps:
                        trace = ["--trace", str(a.trace)] if mode == "profile" and a.trace and r == 0 else []
                        argv = st.argv if st.plain else [sys.executable, "-m", "sluice", "run", "-q", *how,
                                                         *trace, "--log-dir", str(logs), "--path", str(work),
                                                         "--", *st.argv]
                        t0 = time.monotonic()
                        cp = subprocess.run(argv, env=env, cwd=st.cwd, text=True, capture_output=True)
                        if not st.plain:
                            wall += time.monotonic() - t0   # (sluice run returns when all is published)
                        if cp.returncode != 0:
                            raise SystemExit(f"predict_check: {name} under {mode} failed: "
                                             f"{cp.stderr.strip()[-400:]}")
                    got = totals(logs, work, env)
                    times.setdefault(mode, []).append(got["io_time_s"])
                    walls.setdefault(mode, []).append(wall)
                    if r == 0:
                        measured[mode] = got
                    if mode == "profile" and r == 0:
                        cp = sluice("predict", "--json", *(["--fs", str(a.fs)] if a.fs else []),
                                    *(["--plan", str(plan)] if a.plan else []), str(logs), env=env)
                        if cp.returncode != 0:
                            raise SystemExit(f"predict_check: predict failed: {cp.stderr.strip()}")
                        doc = json.loads(cp.stdout)
                        predicted, procs = doc["modes"], max(1, doc["job"]["processes"])
                        if a.keep:
                            shutil.copytree(logs, a.keep / f"{name}.logs", dirs_exist_ok=True)
                    shutil.rmtree(work, ignore_errors=True)
            wall_med = {m: statistics.median(w) for m, w in walls.items()}
            best = min((m for m in wall_med if m not in ("plan",)), key=lambda m: wall_med[m])
            rows.append({"workload": name, "counter": "wall_s", "mode": "all", "ok": True, "walls": walls,
                         "best_mode": best, "auto_over_best": wall_med.get("auto", 0) / wall_med[best],
                         "plan_over_best": wall_med["plan"] / wall_med[best] if "plan" in wall_med else None,
                         "plan": plan.read_text() if a.plan else None})
            print(f"{name:16s} wall, s (median of {a.rounds}): " + ", ".join(f"{m} {w:.3f}" for m, w in
                                                                           wall_med.items())
                  + f"; best {best}" + (f"; auto/best {wall_med['auto'] / wall_med[best]:.2f}" if "auto" in wall_med
                                        else "")
                  + (f"; plan/best {wall_med['plan'] / wall_med[best]:.2f}" if "plan" in wall_med else ""))
            for mode in ["profile", *a.modes.split(",")]:
                p = predicted[mode]["fs"]
                for k in COUNTERS:
                    m = measured[mode][k]
                    err = (p[k] - m) / m if m else (0.0 if p[k] == 0 else float("inf"))
                    ok = abs(err) <= a.tolerance
                    bad += not ok
                    rows.append({"workload": name, "mode": mode, "counter": k, "predicted": p[k], "measured": m,
                                 "error": err, "ok": ok})
                    if m or p[k]:
                        print(f"{name:16s} {mode:8s} {k:20s} predicted {p[k]:>12,.0f}  measured {m:>12,.0f}  "
                              f"{err * 100:+7.1f}%{'' if ok else '  <-- off'}")
                if a.fs:
                    per_round = [x / procs for x in times[mode]]
                    t, m = predicted[mode]["io_time_s"], statistics.median(per_round)
                    err = (t - m) / m if m else float("inf")
                    ok = abs(err) <= a.time_tolerance
                    bad += not ok
                    rows.append({"workload": name, "mode": mode, "counter": "io_time_s", "predicted": t,
                                 "measured": m, "error": err, "ok": ok, "rounds": per_round})
                    print(f"{name:16s} {mode:8s} {'I/O time, ms':20s} predicted {t * 1e3:>12,.1f}  measured "
                          f"{m * 1e3:>12,.1f}  {err * 100:+7.1f}%{'' if ok else '  <-- off'}")
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"command": " ".join(sys.argv), "tolerance": a.tolerance, "rows": rows},
                                     indent=1) + "\n")
    counts = [r for r in rows if r["counter"] not in ("io_time_s", "wall_s")]
    times = [r for r in rows if r["counter"] == "io_time_s"]
    print(f"{sum(r['ok'] for r in counts)} of {len(counts)} counts within {a.tolerance * 100:.0f} %"
          + (f", {sum(r['ok'] for r in times)} of {len(times)} I/O times within {a.time_tolerance * 100:.0f} %"
             if times else ""))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
