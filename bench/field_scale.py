#!/usr/bin/env python3
"""The field reports as the scale check of `sluice predict` (docs/predict.md,
"At the field reports' scale"): the project's workloads shaped like three
field reports run here once under `--mode profile --trace`, `sluice predict
--scale N` reads their logs with a Lustre profile made from published
figures, and the predictions are set beside the reports' own numbers.

    bench/field_scale.py --json bench/results/field-scale-COMMIT.json
    bench/field_scale.py --stripes 144 --target /tmp

- FMS (ORNL): file-per-process netCDF (sluice-bench-fpp-netcdf, one output
  step of 0.74 MB a process) at 1,176 processes, the files striped over --stripes OSTs and
  over one: the opens' and unlinks' aggregate seconds, the bandwidth.
- Agro-IBIS (Indiana U.): serial instances (sluice-bench-ensemble) at 2,000
  at once: the metadata calls a second the server is asked for and
  delivers, against its ~25,000 IOPS peak.
- Chombo (LBNL): an AMR checkpoint of 50 independent box writes a rank into
  one shared file (sluice-bench-amr-ckpt, 4 ranks) at 2,304 ranks:
  independent writes against acb.

The Lustre profile's figures and where they come from are in
LUSTRE_SOURCES; what no publication gave is an assumption, named there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from sluice.bench.calibrate import SCHEMA  # noqa: E402

# Lustre metadata rates, ops/s at 1 and at 240 threads (MDtest, one OST):
# Dell, "Dell HPC Lustre Storage solution with Intel Omni-Path" (Lustre 2.7)
# for creates and removes, "Dell Storage for HPC with Intel EE for Lustre"
# (Lustre 2.5) for stats
RATES = {"create": (1_100, 27_000), "unlink": (1_900, 144_000), "stat": (2_000, 400_000)}
# Liao, "Design and evaluation of MPI file domain partitioning methods under
# extent-based file locking protocol", IEEE TPDS 22(2), 2011: "more than
# thirty times of write bandwidth differences are observed between the best
# and worst methods" (no stripe shared; every stripe shared)
SHARED_SLOWDOWN = 30.0
RANKS_PER_NODE = 32   # assumed for the Chombo run (the report does not say): 72 nodes
LUSTRE_SOURCES = {
    "create, unlink": "Dell whitepaper, Lustre 2.7, MDtest, 1 OST: creates 1,100 ops/s at 1 thread, 27,000 at "
                      "240; removes 1,900 and 144,000",
    "stat": "Dell whitepaper, Lustre 2.5, MDtest: stats 2,000 ops/s at 1 thread, 400,000 at 240",
    "open": "assumed: an open of a file that stands costs what a stat does (no published open rate found)",
    "stripes": "assumed: a create or unlink of a file of S stripes costs (1 + S) / 2 of one of a single stripe "
               "(the MDT's half, plus an OST object per stripe; Dell: 'a stripe count of 24 had a significant "
               "decrease in performance', no figure)",
    "bandwidth": "400 MB/s one stream (an OST, 350-500 MB/s single stream: Swinburne g2); 40 GB/s in all "
                 "(Jaguar's file systems before Spider: Spider's 240 GB/s was 6x theirs, CUG 2010)",
    "shared stripes": "a byte written into a 1 MiB stripe another process writes too costs 30 written apart: "
                      "Liao, IEEE TPDS 22(2) 2011, 'more than thirty times of write bandwidth differences' between "
                      "the file-domain partitionings with the fewest and the most lock conflicts (on Lustre and "
                      "GPFS; taken as the cost of a conflict, an upper figure)",
    "small calls": "assumed: a small write 30 us (into the client's cache), a small read 100 us, a random "
                   "read 1 ms, an fsync 10 ms",
}
REPORTS = {
    "fms_open_s": 2_241, "fms_unlink_s": 6_709, "fms_MBps_default": 128, "fms_MBps_stripe1": 4_277,
    "agro_peak_iops": 25_000, "chombo_acb_over_indep": (2.6, 9.6), "chombo_acb_over_coll": (1.5, 2.6),
    "chombo_mpiio_writes": (115_268, 6_912),
}


def lustre_profile(stripes: int) -> dict:
    """A `sluice bench calibrate` profile of a Lustre whose files have
    `stripes` stripes, from the published figures above."""
    stretch = (1 + stripes) / 2
    meta = {}
    for kind, (one, many) in {**RATES, "open": RATES["stat"]}.items():
        if kind in ("create", "unlink"):
            one, many = one / stretch, many / stretch
        meta[kind] = {"latency_s": {"median": 1 / one}, "ops_per_s": {"1": {"median": one},
                                                                       "240": {"median": many}}}
    meta["create_written"] = {"latency_s": {"median": meta["create"]["latency_s"]["median"] + 30e-6},
                              "ops_per_s": {p: {"median": 1 / (1 / r["median"] + 30e-6 / int(p))}
                                            for p, r in meta["create"]["ops_per_s"].items()}}
    return {"schema": SCHEMA, "command": f"bench/field_scale.py (published figures, {stripes} stripes)",
            "measured": "published figures", "target": f"lustre, stripe count {stripes}",
            "filesystem": {"type": "lustre", "stripe_count": stripes}, "sources": LUSTRE_SOURCES,
            "metadata": meta,
            "data": {"write_MBps": {"1": {"median": 400.0}, "100": {"median": 40_000.0}},
                     "read_MBps": {"1": {"median": 400.0}, "100": {"median": 40_000.0}},
                     "small_write_s": {"median": 30e-6}, "small_read_s": {"median": 100e-6},
                     "random_read_s": {"median": 1e-3}, "fsync_s": {"median": 10e-3},
                     "shared_stripe": {"piece": 1 << 20, "slowdown": {"median": SHARED_SLOWDOWN}}}}


def run_profiled(name: str, argv: list[str], work: Path, env: dict) -> Path:
    logs = work / f"{name}.logs"
    cp = subprocess.run([sys.executable, "-m", "sluice", "run", "-q", "--mode", "profile", "--trace", "1000000",
                         "--log-dir", str(logs), "--path", str(work), "--", *argv], env=env, text=True,
                        capture_output=True)
    if cp.returncode != 0:
        raise SystemExit(f"field_scale: {name} failed: {cp.stderr.strip()[-400:]}")
    return logs


def predict(logs: Path, fs: Path, scale: int, env: dict, nodes: int | None = None) -> dict:
    cp = subprocess.run([sys.executable, "-m", "sluice", "predict", "--json", "--no-replay", "--fs", str(fs),
                         "--scale", str(scale), *(["--nodes", str(nodes)] if nodes else []), str(logs)], env=env,
                        text=True, capture_output=True)
    if cp.returncode != 0:
        raise SystemExit(f"field_scale: predict failed: {cp.stderr.strip()[-400:]}")
    return json.loads(cp.stdout)


def error(predicted: float, published: float) -> str:
    return f"{predicted / published:.2f}x the report's" if published else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--stripes", type=int, default=144,
                    help="the default striping's stripe count (FMS: 'over all OSTs'; 144 assumed)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    native = Path(os.environ.get("SLUICE_NATIVE_DIR") or ROOT / "build" / "dev" / "native").resolve()
    env = dict(os.environ, SLUICE_NATIVE_DIR=str(native),
               PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = Path(tempfile.mkdtemp(prefix="sluice-field-scale.", dir=a.target))
    out: dict = {"command": " ".join(sys.argv), "lustre": LUSTRE_SOURCES, "reports": REPORTS}
    try:
        profiles = {}
        for s in sorted({1, a.stripes}):
            profiles[s] = work / f"lustre-{s}.json"
            profiles[s].write_text(json.dumps(lustre_profile(s)))
        b = lambda name: str(native / f"sluice-bench-{name}")  # noqa: E731

        # FMS: 2 processes here, 1,176 there; the workload's own output step
        # (0.74 MB a process: 4 fields of 96 x 96 x 5, 4 records)
        logs = run_profiled("fms", [b("fpp-netcdf"), "--dir", str(work / "fms"), "--procs", "2"], work, env)
        fms = {}
        for s, prof in profiles.items():
            d = predict(logs, prof, 1176, env)
            fms["concurrency"] = d["job"]["concurrency"]
            for mode in ("profile", "stage"):   # (stage: its opens; its publish is the drainers')
                m = d["modes"][mode]
                nbytes = m["fs"]["POSIX_BYTES_WRITTEN"]
                fms[f"{mode}, {s} stripes"] = {
                    "open_s": m["io_time_by_kind_s"]["open"], "unlink_s": m["io_time_by_kind_s"]["unlink"],
                    "opens": m["fs"]["POSIX_OPENS"], "unlinks": m["fs"]["POSIX_UNLINKS"],
                    "io_time_s": m["io_time_s"]}
                if mode == "profile":   # (the job's bytes over its processes' I/O time; stage's is the drainers')
                    fms[f"{mode}, {s} stripes"]["MBps"] = nbytes / m["io_time_s"] / 1e6 if m["io_time_s"] else 0.0
        out["fms"] = fms
        wide, one = fms[f"profile, {a.stripes} stripes"], fms["profile, 1 stripes"]
        print(f"FMS at 1,176 processes, {a.stripes} stripes (report: opens {REPORTS['fms_open_s']:,} s, unlinks "
              f"{REPORTS['fms_unlink_s']:,} s, {REPORTS['fms_MBps_default']} MB/s; one stripe "
              f"{REPORTS['fms_MBps_stripe1']:,} MB/s)")
        for k, v in fms.items():
            if k == "concurrency":
                continue
            print(f"  {k:22s} opens {v['opens']:>6,.0f} {v['open_s']:>9,.0f} s  unlinks {v['unlinks']:>4,.0f} "
                  f"{v['unlink_s']:>7,.0f} s" + (f"  {v['MBps']:>9,.0f} MB/s" if "MBps" in v else ""))
        print(f"  opens: {error(wide['open_s'], REPORTS['fms_open_s'])}; bandwidth {error(wide['MBps'], 128)} "
              f"(wide), {error(one['MBps'], 4277)} (one stripe); one stripe over wide: "
              f"{one['MBps'] / wide['MBps']:.1f}x (report {4277 / 128:.1f}x)")

        # Agro-IBIS: 2 instances here, 2,000 there
        ens = work / "ens"
        subprocess.run([b("ensemble"), "--dir", str(ens), "--phase", "setup"], env=env, check=True,
                       capture_output=True)
        logs = run_profiled("agro", [b("ensemble"), "--dir", str(ens), "--procs", "2", "--files", "200",
                                     "--steps", "20", "--phase", "run"], work, env)
        d = predict(logs, profiles[1], 2000, env)
        agro = {"concurrency": d["job"]["concurrency"]}
        for mode in ("profile", "buffer", "stage"):
            m = d["modes"][mode]
            # I/O-bound instances: the job lasts its processes' I/O time, and the
            # server delivers the metadata calls over that
            delivered = m["metadata_ops"] / m["io_time_s"] if m["io_time_s"] else 0.0
            agro[mode] = {"metadata_ops": m["metadata_ops"], "io_time_s": m["io_time_s"],
                          "delivered_ops_per_s": delivered, "metadata_s": sum(
                              v for k, v in m["io_time_by_kind_s"].items() if k not in ("write", "read", "fsync"))}
        out["agro_ibis"] = agro
        print(f"Agro-IBIS at 2,000 instances (report: the server swamped at ~{REPORTS['agro_peak_iops']:,} IOPS)")
        for k, v in agro.items():
            if k == "concurrency":
                continue
            print(f"  {k:8s} metadata calls {v['metadata_ops']:>11,.0f}  each instance's I/O {v['io_time_s']:>8,.1f} s"
                  f"  the server delivers {v['delivered_ops_per_s']:>9,.0f} ops/s")

        # Chombo: 4 ranks here (50 boxes a rank, as at 2,304), 2,304 there;
        # each box its own independent write (the report's "independent"),
        # or one collective write per box under the MPI library's collective
        # buffering (OMPIO's two-phase: the profile run's kernel writes are
        # its aggregators'); acb from the collective run's logs
        chombo = {}
        for label, box in (("2.3 MB boxes", 2_300_000), ("32 KiB boxes", 32 << 10)):
            got = {}
            for variant in ("indep", "coll"):
                logs = run_profiled(f"chombo-{variant}-{box}", [
                    shutil.which("mpirun") or "mpirun", "--oversubscribe", "-np", "4", b("amr-ckpt"), "--variant",
                    variant, "--file", str(work / f"ckpt-{variant}-{box}"), "--boxes", "200", "--box-bytes",
                    str(box)], work, env)
                got[variant] = predict(logs, profiles[a.stripes], 2304, env, nodes=2304 // RANKS_PER_NODE)["modes"]
                (work / f"ckpt-{variant}-{box}").unlink(missing_ok=True)
            indep, coll = got["indep"]["profile"], got["coll"]["profile"]
            acb, acb_indep = got["coll"]["acb"], got["indep"]["acb"]
            chombo[label] = {
                "writes": {"independent": indep["fs"]["POSIX_WRITES"], "collective": coll["fs"]["POSIX_WRITES"],
                           "acb": acb["fs"]["POSIX_WRITES"], "acb_of_independent": acb_indep["fs"]["POSIX_WRITES"]},
                "io_time_s": {"independent": indep["io_time_s"], "collective": coll["io_time_s"],
                              "acb": acb["io_time_s"], "acb_of_independent": acb_indep["io_time_s"]}}
            t = chombo[label]["io_time_s"]
            chombo[label]["acb_over_independent"] = t["independent"] / t["acb"] if t["acb"] else 0.0
            chombo[label]["acb_over_collective"] = t["collective"] / t["acb"] if t["acb"] else 0.0
        out["chombo"] = chombo
        print(f"Chombo at 2,304 ranks, {a.stripes} stripes (report: ACB {REPORTS['chombo_acb_over_indep'][0]}-"
              f"{REPORTS['chombo_acb_over_indep'][1]}x over independent, {REPORTS['chombo_acb_over_coll'][0]}-"
              f"{REPORTS['chombo_acb_over_coll'][1]}x over collective buffering)")
        for k, v in chombo.items():
            w, t = v["writes"], v["io_time_s"]
            print(f"  {k:13s} writes indep {w['independent']:>8,.0f} coll {w['collective']:>8,.0f} acb "
                  f"{w['acb']:>7,.0f} | I/O indep {t['independent']:.2f} s coll {t['collective']:.2f} s acb "
                  f"{t['acb']:.2f} s (acb of the independent writes {t['acb_of_independent']:.2f} s) | acb over "
                  f"indep {v['acb_over_independent']:.2f}x, over coll {v['acb_over_collective']:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
