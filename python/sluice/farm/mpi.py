"""The farm over MPI ranks (mpirun or srun): rank 0 hands tasks out to every
rank's worker slots as they free up, and writes the journal; the other ranks
run what they are given and report back.

Messages are small Python tuples (mpi4py's pickled send). A rank never waits
in a blocking receive (Open MPI spins there, stealing the CPU the tasks
need): it probes, then sleeps in the engine's select() between probes, a
millisecond after traffic, backing off to 10 ms when quiet.
"""

from __future__ import annotations

import os
from dataclasses import asdict

from sluice.errors import UserError
from sluice.farm.attempt import Result
from sluice.farm.dispatch import Assignment, Dispatcher
from sluice.farm.engine import LocalSource

TAG = 77
_SIZE_ENV = ("OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS")
_FAST_S, _SLOW_S = 0.001, 0.010


def launched_ranks() -> int:
    """How many ranks the launcher started (1 outside mpirun/srun)."""
    for name in _SIZE_ENV:
        v = os.environ.get(name, "")
        if v.isdigit():
            return int(v)
    return 1


def world():
    try:
        from mpi4py import MPI
    except ImportError:
        raise UserError("sluice farm under mpirun/srun needs mpi4py (pip install 'sluice[mpi]'); "
                        "or run it alone with -j N") from None
    return MPI.COMM_WORLD


class _Backoff:
    def __init__(self) -> None:
        self.wait = _FAST_S

    def traffic(self, seen: bool) -> None:
        self.wait = _FAST_S if seen else min(_SLOW_S, self.wait * 2)


class CoordinatorSource(LocalSource):
    """Rank 0: its own slots take tasks straight from the dispatcher; other
    ranks' requests are answered as tasks become free."""

    def __init__(self, comm, dispatcher: Dispatcher, slots_per_rank: int) -> None:
        super().__init__(dispatcher, first_worker=0)
        self.comm = comm
        self.slots = slots_per_rank
        self.remote_wants: list[tuple[int, int]] = []
        self.live = set(range(1, comm.Get_size()))
        self.backoff = _Backoff()

    def pump(self) -> None:
        seen = False
        while self.comm.iprobe(source=-1, tag=TAG):
            msg, src = self._recv()
            seen = True
            kind = msg[0]
            if kind == "want":
                self.remote_wants.append((src, msg[1]))
            elif kind == "result":
                self.d.report(Result(**msg[2]), src * self.slots + msg[1])
            elif kind == "stop":
                self.d.stop()
            elif kind == "bye":
                self.live.discard(src)
        still = []
        for rank, slot in self.remote_wants:
            worker = rank * self.slots + slot
            a = self.d.next(worker)
            if a is not None:
                self.comm.send(("task", slot, a.number, a.attempt, a.last_try, a.clear), dest=rank, tag=TAG)
                seen = True
            elif self.d.exhausted(worker):
                self.comm.send(("none", slot), dest=rank, tag=TAG)
            else:
                still.append((rank, slot))
        self.remote_wants = still
        self.backoff.traffic(seen)

    def _recv(self):
        from mpi4py import MPI

        status = MPI.Status()
        msg = self.comm.recv(source=MPI.ANY_SOURCE, tag=TAG, status=status)
        return msg, status.Get_source()

    def busy(self) -> bool:
        return bool(self.live)

    def busy_wait_s(self) -> float:
        return self.backoff.wait if self.live else 0.5


class WorkerSource:
    """Ranks 1..N-1: ask rank 0 for tasks, report results to it."""

    def __init__(self, comm) -> None:
        self.comm = comm
        self.inbox: list[tuple[int, Assignment | None]] = []
        self.outstanding = 0
        self.backoff = _Backoff()

    def request(self, slot: int) -> None:
        self.comm.send(("want", slot), dest=0, tag=TAG)
        self.outstanding += 1

    def assignments(self) -> list[tuple[int, Assignment | None]]:
        out, self.inbox = self.inbox, []
        return out

    def report(self, slot: int, result: Result) -> None:
        self.comm.send(("result", slot, asdict(result)), dest=0, tag=TAG)

    def pump(self) -> None:
        seen = False
        while self.comm.iprobe(source=0, tag=TAG):
            msg = self.comm.recv(source=0, tag=TAG)
            seen = True
            self.outstanding -= 1
            if msg[0] == "task":
                self.inbox.append((msg[1], Assignment(msg[2], msg[3], msg[4], msg[5])))
            else:
                self.inbox.append((msg[1], None))
        self.backoff.traffic(seen)

    def stop(self) -> None:
        self.comm.send(("stop",), dest=0, tag=TAG)

    def busy(self) -> bool:
        return False

    def busy_wait_s(self) -> float:
        return self.backoff.wait if self.outstanding else 0.5

    def finish(self) -> None:
        self.comm.send(("bye",), dest=0, tag=TAG)
