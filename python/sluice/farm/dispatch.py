"""Which task runs next, and what an attempt's end means for its task.

Dynamic hand-out (the default): any free worker gets the next task, so long
and short tasks mix well. Static (`--schedule static`): task i belongs to
worker (i-1) mod W from the start, as a plain MPI wrapper assigns them; kept
to measure what dynamic hand-out gains.

A failed attempt is queued again (at the back, for another worker when one
is free) until `--retries` is spent. After `stop()` (SIGTERM), nothing more
is handed out and the journal says which tasks are left.

Each hand-out makes the task's directory first, or says what the attempt
must clear from it (taskdir.py).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from sluice.farm.attempt import DONE, FAILED, INTERRUPTED, Result
from sluice.farm.journal import Journal, JournalLine, task_key
from sluice.farm.taskdir import KEEP, TaskDirs
from sluice.farm.template import Template
from sluice.farm.tasks import Task

_SCAN_FOR_OTHER_WORKER = 64


@dataclass(frozen=True)
class Assignment:
    number: int
    attempt: int
    last_try: bool
    clear: str = KEEP             # taskdir.KEEP, OUTPUTS or EMPTY


class Dispatcher:
    def __init__(self, tasks: list[Task], template: Template, journal: Journal | None, *,
                 retries: int, workers: int, static: bool = False, dirs: TaskDirs | None = None) -> None:
        self.template = template
        self.journal = journal
        self.dirs = dirs
        self.retries = retries
        self.workers = max(1, workers)
        self.static = static
        self.keys = {t.number: task_key(template.argv(t, None), template.directory(t)) for t in tasks}
        finished = journal.finished() if journal else {}
        self.skipped = [t.number for t in tasks if self.keys[t.number] in finished]
        skip = set(self.skipped)
        todo = [t.number for t in tasks if t.number not in skip]
        self.total = len(tasks)
        # (number, attempt, worker that failed it last)
        self._queues: list[deque[tuple[int, int, int]]] = [deque() for _ in range(self.workers if static else 1)]
        for i, n in enumerate(todo):
            self._queues[i % self.workers if static else 0].append((n, 1, -1))
        self.running: dict[int, int] = {}      # task -> worker
        self.final: dict[int, Result] = {}
        self.attempts: dict[int, int] = {}
        self.retried = 0
        self.stopping = False
        self.started = time.monotonic()

    def next(self, worker: int) -> Assignment | None:
        """A task for `worker`, or None (nothing now: see `exhausted`)."""
        if self.stopping:
            return None
        queue = self._queues[worker % self.workers if self.static else 0]
        if not queue:
            return None
        pick = next((i for i in range(min(len(queue), _SCAN_FOR_OTHER_WORKER)) if queue[i][2] != worker), None)
        if pick is None:
            # Only retries of tasks that failed on this worker: another
            # worker takes them when it asks (every idle worker asks, and
            # none retires while tasks are queued), unless there is no other.
            if self.workers > 1 and not self.static:
                return None
            pick = 0
        number, attempt, _ = queue[pick]
        del queue[pick]
        self.running[number] = worker
        self.attempts[number] = attempt
        clear = self.dirs.prepare(number, self.keys[number]) if self.dirs is not None else KEEP
        return Assignment(number, attempt, attempt > self.retries, clear)

    def exhausted(self, worker: int | None = None) -> bool:
        """True when no task will ever be handed to `worker` (any worker if None)."""
        if self.stopping:
            return True
        if self.static and worker is not None:
            return not self._queues[worker % self.workers] and not any(
                w % self.workers == worker % self.workers for w in self.running.values())
        return not any(self._queues) and not self.running

    def report(self, result: Result, worker: int) -> None:
        self.running.pop(result.number, None)
        if result.outcome == FAILED and result.attempt <= self.retries and not self.stopping:
            self.retried += 1
            queue = self._queues[worker % self.workers if self.static else 0]
            queue.append((result.number, result.attempt + 1, worker))
            return
        self.final[result.number] = result
        if self.journal is not None:
            self.journal.record(JournalLine(result.outcome, result.number, self.keys[result.number], result.status,
                                            result.seconds, result.attempt, result.host))

    def stop(self) -> None:
        self.stopping = True

    def counts(self) -> dict[str, int]:
        outcomes = [r.outcome for r in self.final.values()]
        return {
            "total": self.total,
            "skipped": len(self.skipped),
            "done": outcomes.count(DONE),
            "failed": outcomes.count(FAILED),
            "interrupted": outcomes.count(INTERRUPTED),
            "running": len(self.running),
            "retried": self.retried,
        }

    def not_run(self) -> int:
        return self.total - len(self.skipped) - len(self.final)
