#!/usr/bin/env python3
"""The ACB scale model (docs/acb-scale.md): per-operation costs measured on
the testbed, and predicted checkpoint time against ranks for independent
writes, ROMIO's two-phase collective buffering and ACB.

    # on the testbed, node clients with the write cache off (root):
    sluice testbed up --delay-us 100 --clients 2 --write-cache off
    python3 bench/acb_scale.py measure --json bench/results/acb-scale-costs-delay100.json
    # the model (any machine): predictions for 10^2 .. 10^5 ranks
    python3 bench/acb_scale.py model --costs bench/results/acb-scale-costs-delay100.json \\
        --json bench/results/acb-scale-model.json

`measure` times, through the testbed's node clients (the costs of a file
system that charges per write need them with the write cache off):
  write_call_s     one 4 KiB write that goes to the servers (synchronous mount), median
  byte_s           per byte of 4 MiB writes, streaming, median
  metadata_op_s    one create+close of a new file (two requests to the master), median
  contention       slowest rank's time when two clients write interleaved 4 KiB pieces
                   of one file, over the same writes into two files (median of rounds)
  exchange_byte_s  ACB's exchange per byte on this machine (SLUICE_ACB_TIMING's data
                   phase of a 4-rank, 64 MiB flush under `sluice run --mode acb`)
`model` reads those and the cluster's shape (the assumptions in ASSUMED) and
writes the predictions; it also checks the published Darshan counts of the
Chombo field report (2,304 ranks) against the write counts the model gives.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing import Barrier, Process, Queue
from pathlib import Path

KiB, MiB = 1024, 1024 * 1024

# ---------------------------------------------------------------- measuring


def _node_dirs() -> tuple[list[Path], int, bool]:
    """The first two node clients' mount points, the delay, whether they cache writes."""
    from sluice import testbed

    st = testbed.status()
    nodes = [n for n in st["nodes"] if n["mounted"] and n["alive"]]
    if len(nodes) < 2:
        sys.exit("acb_scale measure: needs two node clients (sluice testbed up --clients 2 --write-cache off)")
    return [Path(n["mountpoint"]) for n in nodes[:2]], st["delay_us"], nodes[0]["write_cache"]


def _median_op(fn, n: int) -> float:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _pieces(path: Path, rank: int, nranks: int, n: int, piece: int, bar, q) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    buf = bytes([rank + 1]) * piece
    bar.wait()
    t0 = time.perf_counter()
    for i in range(n):
        os.pwrite(fd, buf, (i * nranks + rank) * piece)
    os.close(fd)
    q.put(time.perf_counter() - t0)


def _two_writers(paths: list[Path], n: int, piece: int) -> float:
    """Slowest of two processes writing interleaved pieces, each through its path."""
    for p in set(paths):
        p.unlink(missing_ok=True)
    bar, q = Barrier(2), Queue()
    procs = [Process(target=_pieces, args=(p, r, 2, n, piece, bar, q)) for r, p in enumerate(paths)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return max(q.get() for _ in procs)


def _exchange_per_byte(work: Path, native: Path) -> float:
    """Seconds per byte of ACB's data exchange (4 ranks, 16 MiB each, 16 KiB pieces)."""
    env = {**os.environ, "SLUICE_ACB_TIMING": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    rates = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-m", "sluice", "run", "--mode", "acb", "--quiet", "--log-dir", tempfile.mkdtemp(prefix="acb-scale-logs-"),
             "--path", str(work), "--", "mpirun", "--oversubscribe", "-np", "4",
             str(native / "sluice-bench-ior-shared"), "--file", str(work / "x.dat"), "--piece", "16K",
             "--per-rank", "16M", "--api", "indep"],
            capture_output=True, text=True, env=env, check=True, timeout=600).stderr
        for m in re.finditer(r"rank 0 .* received (\d+) .* data ([0-9.]+)", out):
            if int(m.group(1)) > 0:
                rates.append(float(m.group(2)) / int(m.group(1)))
    return statistics.median(rates)


def _round_trip() -> float:
    """Median TCP round trip from node 1 to a server at the master's address
    (sluice.testbed.rtt: the server in the servers' namespace, the client in
    node 1's), through the veth link and the delay."""
    from sluice import testbed

    st = testbed.status()
    addr, port = st["address"].split(":")[0], "39421"
    rtt = [sys.executable, "-m", "sluice.testbed.rtt"]
    server = subprocess.Popen(["nsenter", f"--net=/run/netns/{st['netns']}", *rtt, "server", addr, port])
    try:
        time.sleep(0.5)
        out = subprocess.run(["nsenter", f"--net=/run/netns/{st['nodes'][0]['netns']}", *rtt, "client", addr, port,
                              "2000"], capture_output=True, text=True, check=True, timeout=120).stdout
    finally:
        server.wait(timeout=30)
    return float(json.loads(out)["median_us"]) / 1e6


def measure(args: argparse.Namespace) -> dict:
    (n1, n2), delay_us, write_cache = _node_dirs()
    work1, work2 = n1 / "acb-scale", n2 / "acb-scale"
    shutil.rmtree(work1, ignore_errors=True)
    work1.mkdir()
    small = os.open(work1 / "calls.dat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    big = os.open(work1 / "bytes.dat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    data = os.urandom(4 * MiB)
    try:
        write_call = _median_op(lambda i: os.pwrite(small, data[: 4 * KiB], 2 * i * 4 * KiB), 400)
        big_write = _median_op(lambda i: os.pwrite(big, data, i * 4 * MiB), 32)
    finally:
        os.close(small)
        os.close(big)
    meta = _median_op(lambda i: os.close(os.open(work1 / f"m{i}", os.O_WRONLY | os.O_CREAT, 0o644)), 300)
    for f in work1.iterdir():
        f.unlink()
    shared, apart = [], []
    for _ in range(args.rounds):
        shared.append(_two_writers([work1 / "one.dat", work2 / "one.dat"], 512, 4 * KiB))
        apart.append(_two_writers([work1 / "a.dat", work2 / "b.dat"], 512, 4 * KiB))
    for f in work1.iterdir():
        f.unlink()
    exchange = _exchange_per_byte(work1, Path(args.native))
    shutil.rmtree(work1)
    return {
        "delay_us": delay_us,
        "write_cache": write_cache,
        "write_call_s": write_call,
        "byte_s": big_write / (4 * MiB),
        "metadata_op_s": meta / 2,
        "contention": statistics.median(s / a for s, a in zip(shared, apart)),
        "concurrent_write_s": statistics.median(apart) / (2 * 512),   # two clients at once
        "round_trip_s": _round_trip(),
        "contention_rounds": {"one_file_s": shared, "two_files_s": apart},
        "exchange_byte_s": exchange,
        "load_average": os.getloadavg(),
    }


# ---------------------------------------------------------------- the model

# The cluster and the checkpoint at scale. The field report gives Darshan
# counts at 2,304 ranks, not the machine, so these are assumptions (named in
# docs/acb-scale.md); the counts fix the pattern per rank.
ASSUMED = {
    "ranks_per_node": 32,                          # 2,304 ranks = 72 nodes
    "servers": 48,                                 # OSTs the file is striped over
    "stripe": 4 * MiB,                             # the unit of ACB's writes and of Lustre's locks
    "cb_buffer": 16 * MiB,                         # ROMIO's (and ACB's) cb_buffer_size
    "boxes_per_rank": 115_268 / 2_304,             # independent MPI-IO writes per rank (field report)
    "calls_per_rank": 6_912 / 2_304,               # collective MPI-IO writes per rank (field report)
    "box_bytes": 2.3e6,                            # "boxes of 1-4 MB"; 2.3 MB gives ACB's 63,241 writes
    "handover_calls": 2,                           # a lock taken from another client: revoke + grant
}
SMALL_BOX = 32 * KiB   # a 16^3 box of doubles: the small-box variant of the same checkpoint
RANKS = (100, 300, 1_000, 2_304, 3_000, 10_000, 30_000, 100_000)


def model(costs: dict, ranks: int, a: dict = ASSUMED) -> dict:
    """Predicted seconds and write counts of one checkpoint at `ranks` ranks
    (docs/acb-scale.md gives the formulas and what each term stands for)."""
    call = costs["write_call_s"]           # a write that reaches the servers (latency)
    occupy = costs["concurrent_write_s"]   # server time per write, clients writing in parallel
    per_byte = costs["byte_s"]             # streaming, per byte, one server
    kappa = costs["contention"]            # clients writing one chunk / separate chunks
    xbyte = costs["exchange_byte_s"]       # moving a byte to its aggregator
    rtt = costs["round_trip_s"]            # one network round trip (a message of a collective)
    nodes = max(1, math.ceil(ranks / a["ranks_per_node"]))
    boxes = ranks * a["boxes_per_rank"]
    data = boxes * a["box_bytes"]
    k, S, cb = a["calls_per_rank"], a["servers"], a["cb_buffer"]
    stream = data * per_byte / S
    log_n = math.log2(max(2, ranks))

    # independent: one write per box; a box shares its first and last stripe
    # with boxes of other ranks, on another node with probability 1 - 1/nodes
    w_i = boxes
    h_i = 2 * boxes * (1 - 1 / nodes)
    indep = max(a["boxes_per_rank"] * (call + a["box_bytes"] * per_byte),
                (w_i * occupy + h_i * a["handover_calls"] * call) / S + kappa * stream)

    # ROMIO two-phase: per collective call, one aggregator per node owns a
    # contiguous, unaligned domain, written in cb_buffer pieces; rounds of
    # an all-to-all exchange; neighbouring domains share a stripe
    rounds_c = math.ceil(data / (k * nodes * cb))
    w_c = k * nodes * rounds_c
    h_c = 2 * k * (nodes - 1)
    coll = (data * xbyte / nodes + k * rounds_c * rtt * log_n
            + (w_c * occupy + h_c * a["handover_calls"] * call) / S + stream)

    # ACB: one flush; stripe k to aggregator k % nodes, so no stripe has two
    # writers; writes of whole stripes
    rounds_a = math.ceil(data / (nodes * cb))
    w_a = math.ceil(data / a["stripe"])
    acb = data * xbyte / nodes + rounds_a * rtt * log_n + w_a * occupy / S + stream
    return {
        "ranks": ranks, "nodes": nodes, "bytes": data,
        "independent": {"seconds": indep, "posix_writes": w_i, "mpiio_writes": boxes, "handovers": h_i},
        "collective": {"seconds": coll, "posix_writes": w_c, "mpiio_writes": ranks * k, "handovers": h_c},
        "acb": {"seconds": acb, "posix_writes": w_a, "mpiio_writes": ranks * k, "handovers": 0},
    }


def run_model(args: argparse.Namespace) -> dict:
    costs = json.loads(Path(args.costs).read_text())
    if args.contention:
        costs["contention"] = json.loads(Path(args.contention).read_text())["contention"]
    if args.exchange_byte_s:
        costs["exchange_byte_s"] = args.exchange_byte_s
    rows = [model(costs, n) for n in RANKS]
    small = {**ASSUMED, "box_bytes": SMALL_BOX}
    rows_small = [model(costs, n, small) for n in RANKS]
    at = next(r for r in rows if r["ranks"] == 2_304)
    check = {
        "published": {"mpiio_writes": [115_268, 6_912], "posix_writes": [115_628, 63_241],
                      "acb_over_independent": [2.6, 9.6], "acb_over_collective": [1.5, 2.6]},
        "model": {"mpiio_writes": [round(at["independent"]["mpiio_writes"]), round(at["acb"]["mpiio_writes"])],
                  "posix_writes": [round(at["independent"]["posix_writes"]), at["acb"]["posix_writes"]],
                  "acb_over_independent": at["independent"]["seconds"] / at["acb"]["seconds"],
                  "acb_over_collective": at["collective"]["seconds"] / at["acb"]["seconds"]},
    }
    # what a lock hand-over would have to cost for the published gains over
    # independent writes (in round trips of a measured write call)
    need = {}
    for target in (2.6, 9.6):
        h = 0.0
        while h < 10_000:
            r = model(costs, 2_304, {**ASSUMED, "handover_calls": h})
            if r["independent"]["seconds"] / r["acb"]["seconds"] >= target:
                break
            h += 0.5
        need[str(target)] = {"handover_calls": h, "handover_s": h * costs["write_call_s"]}
    check["handover_needed_for_published_gain"] = need
    return {"costs": costs, "assumed": ASSUMED, "rows": rows, "small_box_bytes": SMALL_BOX,
            "rows_small_boxes": rows_small, "check_2304": check}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="per-operation costs on the testbed's node clients (root)")
    m.add_argument("--rounds", type=int, default=5)
    m.add_argument("--native", default=os.environ.get("SLUICE_NATIVE_DIR", "build/dev/native"))
    m.add_argument("--json", required=True)
    p = sub.add_parser("model", help="predicted time against ranks from measured costs")
    p.add_argument("--costs", required=True, help="measure's JSON (node clients with the write cache off)")
    p.add_argument("--contention", help="take the contention factor from this measure JSON instead")
    p.add_argument("--exchange-byte-s", type=float, help="use this exchange cost per byte instead")
    p.add_argument("--json", required=True)
    args = ap.parse_args()
    out = measure(args) if args.cmd == "measure" else run_model(args)
    out = {"command": " ".join(["python3", "bench/acb_scale.py", *sys.argv[1:]]), **out}
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    if args.cmd == "model":
        for title, rows in ((f"boxes of {ASSUMED['box_bytes'] / 1e6:.1f} MB", out["rows"]),
                            (f"boxes of {SMALL_BOX // KiB} KiB", out["rows_small_boxes"])):
            print(f"{title}\n{'ranks':>7} {'indep s':>10} {'coll s':>10} {'acb s':>10} {'indep/acb':>9} {'coll/acb':>9}")
            for r in rows:
                i, c, x = (r[k]["seconds"] for k in ("independent", "collective", "acb"))
                print(f"{r['ranks']:>7} {i:>10.3g} {c:>10.3g} {x:>10.3g} {i / x:>9.2f} {c / x:>9.2f}")
        print(json.dumps(out["check_2304"]))
    else:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
