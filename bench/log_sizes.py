#!/usr/bin/env python3
"""Log sizes beside Darshan's (docs/darshan.md, "Sizes"): three test programs
run under `sluice run` (profile mode) and under Darshan's runtime, and the
bytes of the logs each writes, per job and per file record.

    bench/log_sizes.py DIR --darshan-lib LIB --darshan-mpi-lib LIB [--json bench/results/FILE.json]

DIR must be a directory Darshan records (not under /dev). The programs:
known_mix (1 process, 5 files), manyfiles (1,000 files of 10 writes of 4
KiB), mpiio_known on 4 ranks (a shared file).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
JOBS = {  # name: (MPI ranks or 0, program, extra arguments after DIR)
    "known_mix": (0, "known_mix", []),
    "manyfiles": (0, "manyfiles", ["1000", "4096", "10"]),
    "mpiio_known": (4, "mpiio_known", []),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--darshan-lib", required=True, help="libdarshan.so built --without-mpi")
    ap.add_argument("--darshan-mpi-lib", required=True, help="libdarshan.so built with MPI")
    ap.add_argument("--bin", type=Path, default=Path(os.environ.get("SLUICE_TEST_BIN", ROOT / "build/dev/tests/bin")))
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    env = dict(os.environ, **MPI_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), env.get("PYTHONPATH")]))
    out = {}
    for name, (ranks, prog, extra) in JOBS.items():
        base = a.dir / name
        shutil.rmtree(base, ignore_errors=True)
        for d in ("sw", "dw", "slogs", "dlogs"):
            (base / d).mkdir(parents=True)
        launch = ["mpirun", "--oversubscribe", "-np", str(ranks)] if ranks else []
        subprocess.run([sys.executable, "-m", "sluice", "run", "--log-dir", str(base / "slogs"), "--path",
                        str(base / "sw"), "--", *launch, str(a.bin / prog), str(base / "sw"), *extra],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dlog = base / "dlogs" / "job.darshan"
        if ranks:
            cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), "-x", "DARSHAN_LOGFILE", "-x",
                   f"LD_PRELOAD={a.darshan_mpi_lib}", str(a.bin / prog), str(base / "dw"), *extra]
            denv = dict(env, DARSHAN_LOGFILE=str(dlog))
        else:
            cmd = [str(a.bin / prog), str(base / "dw"), *extra]
            denv = dict(env, DARSHAN_LOGFILE=str(dlog), LD_PRELOAD=a.darshan_lib, DARSHAN_ENABLE_NONMPI="1")
        subprocess.run(cmd, env=denv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sizes = sorted(p.stat().st_size for p in (base / "slogs").glob("*.sluice"))
        from sluice.logfmt import read_log

        records = sum(len(read_log(p).records) for p in (base / "slogs").glob("*.sluice"))
        out[name] = {"sluice_logs": sizes, "sluice_bytes": sum(sizes), "sluice_records": records,
                     "darshan_bytes": dlog.stat().st_size}
        print(f"{name:12} sluice {sum(sizes):,} B in {len(sizes)} log(s), {records} records "
              f"({sum(sizes) / records:.0f} B per record); Darshan {dlog.stat().st_size:,} B")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "python"))
    raise SystemExit(main())
