#!/usr/bin/env python3
"""Where a stage-mode job's publishing time goes, run by run.

Runs `ckpt-burst` or `create-once` (the `sluice bench` workload programs,
same arguments as the workloads' defaults) plain and under `sluice run
--mode stage|auto` in alternating rounds on a target directory, keeps each
sluice run's logs, and derives from them, per run:

  prog_end      the workload's first process's exit (its log's end_ns)
  last_close    the last close of a workload file by the program (app side)
  pub_end       the last publish's end: the latest fs-side close of a
                workload file, in whichever log it is counted (the job's
                drainer or a process that published its own file)
  ret           sluice run's return (this script's clock, CLOCK_REALTIME,
                the logs' clock too)
  tail_s        ret - prog_end: how long sluice run went on after the program
  drain_MBps    bytes / (pub_end - last_close)
  brief_MBps    bytes published by the job's drainer / tail_s (0 when the
                drainer published nothing)
and who published what (the drainer or the processes), the fs-side write
and metadata time of each, and sluice run's own stderr summary line.

Usage (PYTHONPATH and SLUICE_NATIVE_DIR set as for `python -m sluice`):
  probe.py --target /mnt/sluice-pfs --workload ckpt-burst --rounds 5 \
      --variant plain --variant stage --variant stage:--stage-drainers=8 --json out.json

A variant is plain, stage, auto, or MODE:OPT[,OPT...] with sluice run options
(`stage:--stage-delay=0,--buffer-size=16M`), or MODE@ENV=V[,ENV=V] for
environment settings. `limit` runs the physical limit in the same round, as
`sluice bench limits` measures it (ckpt-burst: one process writes 1 GiB in
4 MiB writes, fsync, close; create-once: one process creates the same
number of 4 KiB files). A variant ending in `+normal` has every SCHED_IDLE
thread of the job (the job's drainer, the processes' drainer threads)
switched to SCHED_OTHER as it appears (polled every 20 ms): the drainers at
normal priority, without a code change.

--schedstat samples every thread of the job every 50 ms (policy, CPU time,
run-queue wait from /proc/PID/task/TID/schedstat); --strace-all DIR runs
round --strace-round under strace -f. Each run also records the CPU time
the testbed's client, master and chunkservers used (fs_cpu_s).

  probe.py --show FILE.json...    medians [min-max] per variant
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

DRAINER = "sluice-stage-drain"


def descendants(top: int) -> list[int]:
    """top and every process below it, from /proc."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            kids.setdefault(int(st[st.rindex(")") + 2:].split()[1]), []).append(int(d))
    out, todo = [], [top]
    while todo:
        x = todo.pop()
        out.append(x)
        todo.extend(kids.get(x, []))
    return out


def native(name: str) -> str:
    return str(Path(os.environ["SLUICE_NATIVE_DIR"]) / name)


def workload_argv(workload: str, work: Path, args) -> tuple[list[str], list[str] | None]:
    if workload == "ckpt-burst":
        return ([native("sluice-bench-ckpt-burst"), "--dir", str(work / "ckpt"), "--procs", str(args.procs),
                 "--size", args.size, "--write-size", "1M"], None)
    if workload == "create-once":
        base = [native("sluice-bench-create-once"), "--dir", str(work / "md"), "--procs", str(args.procs),
                "--files", str(args.files), "--file-size", "4K"]
        return base + ["--phase", "run", "--stat"], base + ["--phase", "verify"]
    raise SystemExit(f"unknown workload {workload}")


def parse_variant(v: str) -> tuple[str | None, list[str], dict[str, str]]:
    v = v.removesuffix("+normal")
    if v in ("plain", "limit"):
        return None, [], {}
    env: dict[str, str] = {}
    opts: list[str] = []
    if "@" in v:
        mode, rest = v.split("@", 1)
        for kv in rest.split(","):
            k, val = kv.split("=", 1)
            env[k] = val
    elif ":" in v:
        mode, rest = v.split(":", 1)
        for o in rest.split(","):
            opts.extend(o.split("=", 1))
    else:
        mode = v
    return mode, opts, env


def find_drainer(parent: int, timeout: float = 10.0) -> int | None:
    end = time.time() + timeout
    while time.time() < end:
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            if ppid == parent and comm.startswith("sluice-stage-dr"):
                return int(d)
        time.sleep(0.01)
    return None


def analyse(logdir: Path, prefix: str) -> dict:
    from sluice.report.model import load_job

    job = load_job([logdir])
    work = [lg for lg in job.logs if Path(str(lg.info.get("exe", ""))).name != DRAINER]
    drain = [lg for lg in job.logs if lg not in work]
    pids = {lg.pid for lg in work}
    root = [lg for lg in work if lg.ppid not in pids] or work
    out: dict = {
        "prog_start_ns": min(lg.start_ns for lg in root),
        "prog_end_ns": max(lg.end_ns for lg in root),
        "procs_end_ns": max(lg.end_ns for lg in work),
        "drainer_logs": len(drain),
    }
    last_close = 0
    pub_end = 0
    pub_start = None
    who: dict[str, dict] = {}
    for lg in job.logs:
        kind = "drainer" if lg in drain else "processes"
        w = who.setdefault(kind, {"files": 0, "bytes": 0, "write_s": 0.0, "meta_s": 0.0, "writes": 0,
                                  "opens": 0, "renames": 0, "first_open_ns": None, "last_close_ns": 0})
        for rec in lg.records:
            if rec.module != "POSIX" or not rec.path.startswith(prefix):
                continue
            app, fs = rec.app, rec.fs
            if app.get("POSIX_BYTES_WRITTEN", 0) > 0 and app.get("POSIX_F_CLOSE_END_TIMESTAMP", 0) > 0:
                last_close = max(last_close, lg.start_ns + int(app["POSIX_F_CLOSE_END_TIMESTAMP"] * 1e9))
            if fs.get("POSIX_BYTES_WRITTEN", 0) > 0:
                w["files"] += 1
                w["bytes"] += int(fs["POSIX_BYTES_WRITTEN"])
                w["writes"] += int(fs.get("POSIX_WRITES", 0))
                w["opens"] += int(fs.get("POSIX_OPENS", 0))
                w["renames"] += int(fs.get("POSIX_RENAME_SOURCES", 0))
                w["write_s"] += fs["POSIX_F_WRITE_TIME"]
                w["meta_s"] += fs["POSIX_F_META_TIME"]
                o = lg.start_ns + int(fs["POSIX_F_OPEN_START_TIMESTAMP"] * 1e9)
                e = lg.start_ns + int(fs["POSIX_F_CLOSE_END_TIMESTAMP"] * 1e9)
                w["first_open_ns"] = o if w["first_open_ns"] is None else min(w["first_open_ns"], o)
                w["last_close_ns"] = max(w["last_close_ns"], e)
                pub_end = max(pub_end, e)
                pub_start = o if pub_start is None else min(pub_start, o)
    out["who"] = {k: v for k, v in who.items() if v["files"]}
    out["last_close_ns"] = last_close
    out["pub_end_ns"] = pub_end
    out["pub_start_ns"] = pub_start
    if drain:
        out["drainer_start_ns"] = min(lg.start_ns for lg in drain)
        out["drainer_end_ns"] = max(lg.end_ns for lg in drain)
    return out


def summary_line(stderr: str) -> str | None:
    for line in stderr.splitlines():
        if line.startswith("sluice: stage:"):
            return line
    return None


FS_PIDS: dict[str, int] = {}


def fs_cpu() -> dict[str, float]:
    """CPU seconds (user+system) of the testbed's daemons and client so far."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for name, pid in FS_PIDS.items():
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[name] = (int(f[11]) + int(f[12])) / tick
        except OSError:
            pass
    return out


def run_once(args, workload: str, variant: str, rnd: int, root: Path, scratch: Path) -> dict:
    mode, opts, env_extra = parse_variant(variant)
    work = root / f"r{rnd}-{re.sub(r'[^A-Za-z0-9]+', '_', variant)}"
    work.mkdir(parents=True)
    argv, verify = workload_argv(workload, work, args)
    if variant == "limit":
        lim = native("sluice-bench-limits")
        argv = ([lim, "write", "--file", str(work / "big"), "--size", "1G", "--request-size", "4M"]
                if workload == "ckpt-burst" else
                [lim, "create", "--dir", str(work / "md"), "--files", str(args.procs * args.files), "--file-size", "4K"])
        verify = None
    logdir = scratch / f"log-{rnd}-{re.sub(r'[^A-Za-z0-9]+', '_', variant)}"
    if mode is None:
        cmd = argv
    else:
        logdir.mkdir(parents=True)
        cmd = [sys.executable, "-m", "sluice", "run", "--mode", mode, "--log-dir", str(logdir),
               "--path", str(work), *opts, "--", *argv]
    env = dict(os.environ, **env_extra)
    if args.strace_all and rnd == args.strace_round:
        sout = Path(args.strace_all) / f"{workload}-{re.sub(r'[^A-Za-z0-9]+', '_', variant)}-r{rnd}.strace"
        sout.parent.mkdir(parents=True, exist_ok=True)
        cmd = ["strace", "-f", "-tt", "-T", *(["-e", "trace=" + args.strace_set] if args.strace_set else []),
               "-o", str(sout), *cmd]
    if args.sync:
        subprocess.run(["sync"], check=True)
    load = os.getloadavg()[0]
    rec: dict = {"round": rnd, "variant": variant, "mode": mode, "opts": opts, "env": env_extra, "load1_before": load}
    strace = None
    cpu0 = fs_cpu()
    t0 = time.time_ns()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if args.strace_drainer and mode is not None and rnd == args.strace_round:
        dpid = find_drainer(proc.pid)
        if dpid:
            out = Path(args.strace_drainer) / f"{workload}-{re.sub(r'[^A-Za-z0-9]+', '_', variant)}-r{rnd}.strace"
            out.parent.mkdir(parents=True, exist_ok=True)
            strace = subprocess.Popen(["strace", "-f", "-tt", "-T", "-o", str(out), "-p", str(dpid)])
            rec["strace"] = str(out)
    if args.schedstat:
        rec["sched"] = []


        def sample():
            n = 0
            pids = []
            while proc.poll() is None:
                if n % 5 == 0:
                    pids = descendants(proc.pid)
                n += 1
                now = time.time_ns()
                for pid in pids:
                    try:
                        comm = Path(f"/proc/{pid}/comm").read_text().strip()
                        for t in os.listdir(f"/proc/{pid}/task"):
                            s = Path(f"/proc/{pid}/task/{t}/schedstat").read_text().split()
                            pol = Path(f"/proc/{pid}/task/{t}/stat").read_text().rsplit(")", 1)[1].split()[38]
                            rec["sched"].append([now, pid, int(t), comm, int(s[0]), int(s[1]), int(pol)])
                    except OSError:
                        pass
                time.sleep(0.05)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
    if variant.endswith("+normal"):
        rec["flipped"] = []


        def flip():
            n = 0
            pids = []
            while proc.poll() is None:
                if n % 10 == 0:
                    pids = descendants(proc.pid)
                n += 1
                for pid in pids:
                    try:
                        for t in os.listdir(f"/proc/{pid}/task"):
                            pol = int(Path(f"/proc/{pid}/task/{t}/stat").read_text().rsplit(")", 1)[1].split()[38])
                            if pol == 5:
                                os.sched_setscheduler(int(t), os.SCHED_OTHER, os.sched_param(0))
                                rec["flipped"].append([time.time_ns(), pid, int(t)])
                    except OSError:
                        pass
                time.sleep(0.02)

        threading.Thread(target=flip, daemon=True).start()
    stdout, stderr = proc.communicate(timeout=args.timeout)
    t1 = time.time_ns()
    if strace:
        strace.wait(timeout=30)
    rec["start_ns"], rec["return_ns"] = t0, t1
    rec["wall_s"] = (t1 - t0) / 1e9
    rec["load1_after"] = os.getloadavg()[0]
    cpu1 = fs_cpu()
    rec["fs_cpu_s"] = {k: cpu1[k] - cpu0[k] for k in cpu1 if k in cpu0}
    if proc.returncode != 0:
        raise SystemExit(f"{variant} round {rnd} failed ({proc.returncode}): {stderr[-2000:]}")
    line = [ln for ln in stdout.splitlines() if ln.startswith("{")][-1]
    rec["program"] = json.loads(line)
    rec["sluice_summary"] = summary_line(stderr)
    if variant == "limit":
        pr = rec["program"]
        rec["limit_rate"] = (pr["bytes"] / pr["seconds"] / 1e6) if workload == "ckpt-burst" else pr.get("files", 0) / pr["seconds"]
    elif verify:
        v = json.loads(subprocess.run(verify, capture_output=True, text=True, check=True).stdout.splitlines()[-1])
        rec["verify"] = v
        want = args.procs * args.files
        if v["files_found"] != want:
            raise SystemExit(f"{variant} round {rnd}: {v['files_found']} files found, want {want}")
    elif workload == "ckpt-burst":
        sizes = [p.stat().st_size for p in (work / "ckpt").iterdir()]
        rec["files_found"] = len(sizes)
        if len(sizes) != args.procs or any(s != sizes[0] for s in sizes):
            raise SystemExit(f"{variant} round {rnd}: files {sizes}")
    if mode is not None:
        a = analyse(logdir, str(work))
        rec["logs"] = a
        prog_end = a["prog_end_ns"]
        rec["tail_s"] = (t1 - prog_end) / 1e9
        rec["launch_s"] = (a["prog_start_ns"] - t0) / 1e9
        rec["close_to_pub_end_s"] = (a["pub_end_ns"] - a["last_close_ns"]) / 1e9 if a["last_close_ns"] else None
        rec["close_to_return_s"] = (t1 - a["last_close_ns"]) / 1e9 if a["last_close_ns"] else None
        rec["pub_end_to_return_s"] = (t1 - a["pub_end_ns"]) / 1e9
        total = sum(w["bytes"] for w in a["who"].values())
        rec["bytes_published"] = total
        if rec["close_to_pub_end_s"] and rec["close_to_pub_end_s"] > 0:
            rec["drain_MBps"] = total / rec["close_to_pub_end_s"] / 1e6
        d = a["who"].get("drainer")
        rec["drainer_bytes"] = d["bytes"] if d else 0
        rec["brief_MBps"] = (d["bytes"] / rec["tail_s"] / 1e6) if d and rec["tail_s"] > 0 else None
        if not args.keep_logs:
            shutil.rmtree(logdir, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return rec


def med(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}



def mm(xs):
    xs = [x for x in xs if x is not None]
    if not xs: return "-"
    m = statistics.median(xs)
    return f"{m:.3g} [{min(xs):.3g}-{max(xs):.3g}]"


def show(paths: list[str]) -> None:
    for path in paths:
        d = json.load(open(path))
        print("##", path, d["workload"], d.get("started"), "->", d.get("finished"))
        rs = [r for r in d["rounds"] if not r["warmup"]]
        base = {r["round"]: r for r in rs if r["variant"] == d["variants"][0]}
        for v in d["variants"]:
            vr = [r for r in rs if r["variant"] == v]
            row = {"n": len(vr), "load": mm([r["load1_before"] for r in vr]), "wall": mm([r["wall_s"] for r in vr]),
                   "ratio": mm([r["wall_s"] / base[r["round"]]["wall_s"] for r in vr if r["round"] in base])}
            if vr and vr[0].get("limit_rate") is not None:
                row["limit_rate"] = mm([r["limit_rate"] for r in vr])
            if vr and vr[0].get("fs_cpu_s"):
                row["fs cpu s (client)"] = mm([r["fs_cpu_s"].get("client") for r in vr])
                row["fs cpu s (cs+master)"] = mm([sum(v for k, v in r["fs_cpu_s"].items() if k != "client") for r in vr])
            if vr and vr[0]["mode"]:
                L = lambda r: r["logs"]
                row.update({
                    "launch": mm([r["launch_s"] for r in vr]),
                    "prog": mm([(L(r)["prog_end_ns"] - L(r)["prog_start_ns"]) / 1e9 for r in vr]),
                    "io(prog)": mm([r["program"].get("io_seconds") for r in vr]),
                    "close->pubend": mm([r["close_to_pub_end_s"] for r in vr]),
                    "progend->pubend": mm([(L(r)["pub_end_ns"] - L(r)["prog_end_ns"]) / 1e9 for r in vr]),
                    "pubend->ret": mm([r["pub_end_to_return_s"] for r in vr]),
                    "tail": mm([r["tail_s"] for r in vr]),
                    "drain_MBps": mm([r.get("drain_MBps") for r in vr if (r.get("drain_MBps") or 0) > 0]),
                    "brief_MBps": mm([r.get("brief_MBps") for r in vr]),
                    "by_drainer": mm([L(r)["who"].get("drainer", {}).get("files", 0) for r in vr]),
                    "by_procs": mm([L(r)["who"].get("processes", {}).get("files", 0) for r in vr]),
                    "pub_during_prog": mm([(L(r)["prog_end_ns"] - L(r)["pub_start_ns"]) / 1e9 if L(r)["pub_start_ns"] and L(r)["pub_start_ns"] < L(r)["prog_end_ns"] else 0 for r in vr]),
                })
                dr = [L(r)["who"].get("drainer") for r in vr]
                if any(dr):
                    row["drainer meta_s/file ms"] = mm([x["meta_s"] / x["files"] * 1e3 for x in dr if x])
                    row["drainer write_s/file ms"] = mm([x["write_s"] / x["files"] * 1e3 for x in dr if x])
                lim = {r["round"]: r["limit_rate"] for r in rs if r["variant"] == "limit"}
                if lim and d["workload"] == "ckpt-burst":
                    row["drain/limit (same round)"] = mm([r["drain_MBps"] / lim[r["round"]] for r in vr if (r.get("drain_MBps") or 0) > 0 and r["round"] in lim])
                    row["brief/limit (same round)"] = mm([r["brief_MBps"] / lim[r["round"]] for r in vr if r.get("brief_MBps") and r["round"] in lim])
            print(f"  {v}")
            for k, val in row.items():
                print(f"      {k:24s} {val}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--show":
        show(sys.argv[2:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--procs", type=int)
    ap.add_argument("--size", default="256M")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--sync", action="store_true", help="sync before each run")
    ap.add_argument("--strace-drainer", help="directory: strace -f the job's drainer in round --strace-round")
    ap.add_argument("--strace-round", type=int, default=1)
    ap.add_argument("--strace-all", help="directory: strace -f the whole command in round --strace-round")
    ap.add_argument("--strace-set", help="strace -e trace= set")
    ap.add_argument("--schedstat", action="store_true", help="sample the drainer's threads' schedstat")
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    if args.procs is None:
        args.procs = 4 if args.workload == "ckpt-burst" else 2
    try:
        st = json.loads(subprocess.run([sys.executable, "-m", "sluice", "testbed", "status", "--json"],
                                       capture_output=True, text=True).stdout)
        FS_PIDS.update({"master": st["master"]["pid"], "client": st["client"]["pid"]})
        for c in st["chunkservers"]:
            FS_PIDS[f"cs{c['id']}"] = c["pid"]
    except (ValueError, KeyError, TypeError):
        pass
    root = Path(args.target) / f"drainprobe.{os.getpid()}"
    root.mkdir()
    scratch = Path(tempfile.mkdtemp(prefix="drainprobe-"))
    doc = {"command": sys.argv, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "workload": args.workload, "params": {"procs": args.procs, "size": args.size, "files": args.files},
           "variants": args.variant, "rounds": [], "scratch": str(scratch)}
    try:
        for rnd in range(-args.warmup, args.rounds):
            for v in args.variant:
                r = run_once(args, args.workload, v, rnd, root, scratch)
                r["warmup"] = rnd < 0
                doc["rounds"].append(r)
                print(json.dumps({k: r.get(k) for k in ("round", "variant", "wall_s", "tail_s", "drain_MBps",
                                                       "brief_MBps", "close_to_pub_end_s", "pub_end_to_return_s",
                                                       "load1_before")}), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if not args.keep_logs:
            shutil.rmtree(scratch, ignore_errors=True)
        doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        summ = {}
        for v in args.variant:
            rs = [r for r in doc["rounds"] if r["variant"] == v and not r["warmup"]]
            summ[v] = {k: med([r.get(k) for r in rs]) for k in
                       ("wall_s", "tail_s", "launch_s", "drain_MBps", "brief_MBps", "close_to_pub_end_s",
                        "close_to_return_s", "pub_end_to_return_s", "load1_before")}
            base = [r for r in doc["rounds"] if r["variant"] == args.variant[0] and not r["warmup"]]
            if v != args.variant[0] and len(base) == len(rs):
                summ[v]["wall_ratio"] = med([b["wall_s"] and r["wall_s"] / b["wall_s"] for r, b in zip(rs, base)])
        doc["summary"] = summ
        Path(args.json).write_text(json.dumps(doc, indent=1))
        print(json.dumps(summ, indent=1))


if __name__ == "__main__":
    main()
