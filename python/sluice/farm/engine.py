"""The loop that keeps one node's worker slots busy.

Single-threaded: attempts are child processes; the loop sleeps in select()
until a child ends (SIGCHLD wakes it through signal.set_wakeup_fd), a signal
comes, or the source (local hand-out, or rank 0 over MPI) may have news.

SIGTERM (a batch system ending the job) stops hand-out; running tasks get
`grace` seconds to finish, then SIGTERM themselves (a program may checkpoint
then), then SIGKILL `kill_after` seconds later. SIGINT (Ctrl-C) skips the
grace time.
"""

from __future__ import annotations

import os
import select
import signal
import time
from typing import Callable, Protocol

from sluice.farm.attempt import Attempt, FarmSettings, Result
from sluice.farm.dispatch import Assignment, Dispatcher


class Source(Protocol):
    def request(self, slot: int) -> None: ...
    def assignments(self) -> list[tuple[int, Assignment | None]]: ...
    def report(self, slot: int, result: Result) -> None: ...
    def pump(self) -> None: ...
    def stop(self) -> None: ...
    def busy_wait_s(self) -> float: ...
    def busy(self) -> bool: ...


class LocalSource:
    """Tasks straight from the dispatcher; slots are workers first_worker, first_worker+1, ..."""

    def __init__(self, dispatcher: Dispatcher, first_worker: int = 0) -> None:
        self.d = dispatcher
        self.first = first_worker
        self.waiting: set[int] = set()

    def request(self, slot: int) -> None:
        self.waiting.add(slot)

    def assignments(self) -> list[tuple[int, Assignment | None]]:
        out: list[tuple[int, Assignment | None]] = []
        for slot in sorted(self.waiting):
            a = self.d.next(self.first + slot)
            if a is not None or self.d.exhausted(self.first + slot):
                out.append((slot, a))
        for slot, _ in out:
            self.waiting.discard(slot)
        return out

    def report(self, slot: int, result: Result) -> None:
        self.d.report(result, self.first + slot)

    def pump(self) -> None:
        pass

    def stop(self) -> None:
        self.d.stop()

    def busy_wait_s(self) -> float:
        return 0.5

    def busy(self) -> bool:
        """Work elsewhere still to wait for (other ranks' tasks)."""
        return False


class NodeLoop:
    def __init__(self, farm: FarmSettings, source: Source, slots: int, *, grace: float, kill_after: float,
                 tick: Callable[[], None] | None = None) -> None:
        self.farm = farm
        self.source = source
        self.slots = slots
        self.grace = grace
        self.kill_after = kill_after
        self.tick = tick or (lambda: None)
        self.running: dict[int, Attempt] = {}
        self.stop_signal = 0
        self._stop_at = 0.0
        self._term_sent = False
        self._kill_sent = False

    def run(self) -> int:
        """Run until every slot is retired; the signal that stopped the farm, or 0."""
        rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        old_fd = signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
        handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        old_chld = signal.signal(signal.SIGCHLD, lambda *_: None)
        try:
            return self._loop(rfd)
        finally:
            signal.signal(signal.SIGCHLD, old_chld)
            for s, h in handlers.items():
                signal.signal(s, h)
            signal.set_wakeup_fd(old_fd)
            os.close(rfd)
            os.close(wfd)

    def _loop(self, rfd: int) -> int:
        active = set(range(self.slots))
        for slot in active:
            self.source.request(slot)
        while active or self.running or self.source.busy():
            self.source.pump()
            for slot, a in self.source.assignments():
                if a is None:
                    active.discard(slot)
                    continue
                self._start(slot, a)
            for slot, attempt in list(self.running.items()):
                result = attempt.poll()
                if result is not None:
                    del self.running[slot]
                    self.source.report(slot, result)
                    if slot in active:
                        self.source.request(slot)
            self._enforce_stop()
            self.tick()
            if active or self.running or self.source.busy():
                self._wait(rfd)
        self.source.pump()
        return self.stop_signal

    def _start(self, slot: int, a: Assignment) -> None:
        attempt = Attempt(self.farm, a.number, a.attempt, slot + 1, a.last_try, a.clear)
        failed = attempt.start()
        if failed is not None:
            self.source.report(slot, failed)
            self.source.request(slot)
        else:
            self.running[slot] = attempt

    def _wait(self, rfd: int) -> None:
        timeout = self.source.busy_wait_s()
        if self.stop_signal:
            timeout = min(timeout, 0.1)
        try:
            ready, _, _ = select.select([rfd], [], [], timeout)
        except InterruptedError:
            ready = []
        if ready:
            try:
                while os.read(rfd, 512):
                    pass
            except BlockingIOError:
                pass

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.stop_signal == 0:
            self.stop_signal = signum
            self._stop_at = time.monotonic() + (0.0 if signum == signal.SIGINT else self.grace)
            self.source.stop()
        elif signum == signal.SIGINT:
            self._stop_at = time.monotonic()  # a second Ctrl-C: no more grace

    def _enforce_stop(self) -> None:
        if not self.stop_signal or not self.running:
            return
        now = time.monotonic()
        name = signal.Signals(self.stop_signal).name
        if not self._term_sent and now >= self._stop_at:
            self._term_sent = True
            sig = signal.SIGINT if self.stop_signal == signal.SIGINT else signal.SIGTERM
            for attempt in self.running.values():
                attempt.signal(sig, f"stopped: the farm got {name}")
        if self._term_sent and not self._kill_sent and now >= self._stop_at + self.kill_after:
            self._kill_sent = True
            for attempt in self.running.values():
                attempt.signal(signal.SIGKILL, f"killed: the farm got {name} and the task outlived the grace time")
