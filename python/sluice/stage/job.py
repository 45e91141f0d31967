"""The job's stage drainer, as `sluice run` starts and ends it.

In stage and auto modes `sluice run` starts one drainer per job and tier
(``sluice-stage-drain``, the library's own publishing code: docs/stage.md,
"The job drains") before the program, and tells the program's processes
its name (``SLUICE_STAGE_JOB``): each process then leaves the files it
closed to the drainer and never waits to publish at fork, exec or exit.
When the program ends, `sluice run` closes the drainer's standard input;
the drainer publishes what is left and prints one JSON line, which
`sluice run` reports.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass

from sluice.errors import UserError
from sluice.paths import default_tier_path, native


@dataclass
class DrainSummary:
    published: int = 0
    bytes: int = 0
    removed: int = 0      # removed or renamed over on the node before they were published
    failed: int = 0
    wait_s: float = 0.0   # from the program's end until the last publish


class JobDrainer:
    """A running drainer; `finish()` waits for it and returns its summary."""

    def __init__(self, proc: subprocess.Popen, name: str):
        self.proc = proc
        self.name = name

    def finish(self) -> DrainSummary | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()   # the program ended: publish everything now
        line = self.proc.stdout.readline()
        self.proc.wait()
        try:
            return DrainSummary(**json.loads(line))
        except (ValueError, TypeError):
            return None


def start(env: dict[str, str], say) -> JobDrainer | None:
    """Start the job's drainer for the tier env names; None (and one line
    said) when it cannot run: the processes then publish their own files."""
    tier = str(default_tier_path(env))
    name = f"job-{socket.gethostname().replace('/', '_').replace('.', '_')}-{os.getpid()}-{time.time_ns() % 10**9}"
    try:
        drainer = native("sluice-stage-drain", "bin")
    except UserError as e:
        say(f"sluice: stage mode: {e}; each process publishes its own files")
        return None
    try:
        proc = subprocess.Popen([str(drainer), "--tier", tier, "--name", name],
                                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
                                start_new_session=True)
    except OSError as e:
        say(f"sluice: stage mode: cannot start the job's drainer: {e.strerror}; each process publishes its own files")
        return None
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"ready":
        # (a tier refused: the library says why, and writes straight through)
        proc.wait()
        return None
    env["SLUICE_STAGE_JOB"] = name
    # Early copies are for processes that publish their own files at exit.
    # Under the job's drainer they run in the writer at idle priority, copy
    # bytes rewritten after they began twice, and keep the file from the
    # drainer, which copies it whole at the file system's speed: off unless
    # asked for (docs/benchmarks.md, "Stage mode with the job's drainer").
    env.setdefault("SLUICE_STAGE_PRECOPY", "0")
    return JobDrainer(proc, name)
