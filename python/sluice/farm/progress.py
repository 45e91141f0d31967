"""Progress: a bar on a terminal, a plain line every `interval` seconds in a
batch log (stderr not a terminal)."""

from __future__ import annotations

import sys
import time

from sluice.farm.dispatch import Dispatcher


def status_line(d: Dispatcher) -> str:
    c = d.counts()
    ended = c["done"] + c["failed"] + c["interrupted"]
    todo = c["total"] - c["skipped"]
    elapsed = max(1e-9, time.monotonic() - d.started)
    rate = ended / elapsed
    left = todo - ended
    eta = f"ETA {_clock(left / rate)}" if rate > 0 and left > 0 else "ETA -"
    parts = [f"{ended}/{todo} ended", f"{c['done']} done", f"{c['failed']} failed", f"{c['running']} running"]
    if c["skipped"]:
        parts.append(f"{c['skipped']} skipped")
    return ", ".join(parts) + f", {rate:.1f} tasks/s, {eta}"


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    def __init__(self, d: Dispatcher, *, enabled: bool = True, interval: float = 10.0) -> None:
        self.d = d
        self.enabled = enabled
        self.interval = interval
        self.tty = enabled and sys.stderr.isatty()
        self._last = time.monotonic()
        self._bar = None
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, Progress as Bar, TextColumn

            self._bar = Bar(TextColumn("sluice farm"), BarColumn(), TextColumn("{task.description}"),
                            console=Console(stderr=True), transient=True)
            self._id = self._bar.add_task(status_line(d), total=max(1, d.total - len(d.skipped)))
            self._bar.start()

    def tick(self) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self._bar is not None:
            if now - self._last >= 0.1:
                c = self.d.counts()
                self._bar.update(self._id, completed=c["done"] + c["failed"] + c["interrupted"],
                                 description=status_line(self.d))
                self._last = now
        elif now - self._last >= self.interval:
            print(f"sluice farm: {status_line(self.d)}", file=sys.stderr, flush=True)
            self._last = now

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
