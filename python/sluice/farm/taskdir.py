"""Each task's working directory: made when the task is handed out, and
emptied before the task runs again when it is the farm's own.

The process that hands tasks out (rank 0 under MPI) creates a task's
directory just before its first attempt and records that in the journal
directory (journal.Journal.record_created), so a later run of the same
command knows it too. Before a retry, or a re-run of a task that did not
finish, such a directory is emptied: the attempt starts from what the first
one found, and an output the task appends to is not appended twice.

Nothing else is ever emptied: not a directory that existed before the task
first ran (a case directory the user prepared, or the directory of another
farm's task: a second farm over the same directories reading the first
one's outputs), not one that several tasks share, not one that holds
another task's directory, the journal, the logs, the local directory, an
input or the directory the farm started in, and not a symbolic link. From a
task's own directory that the farm did not make, only the farm's task.out
and task.err of an earlier attempt of that same task are removed. A task
that is done is never handed out again, so its directory is never touched.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sluice.farm.journal import Journal, read_all
from sluice.farm.tasks import Task
from sluice.farm.template import Template

# What an attempt does to its directory before it starts.
KEEP, OUTPUTS, EMPTY = "", "outputs", "empty"
FARM_OUTPUTS = ("task.out", "task.err")


class TaskDirs:
    def __init__(self, template: Template, tasks: list[Task], journal: Journal | None,
                 protected: list[str | Path] = ()) -> None:
        self.journal = journal
        self.paths = {t.number: os.path.abspath(template.directory(t)) for t in tasks}
        users: dict[str, int] = {}
        above: set[str] = set()
        for p in self.paths.values():
            users[p] = users.get(p, 0) + 1
            parent = os.path.dirname(p)
            while parent not in above and parent != os.path.dirname(parent):
                above.add(parent)
                parent = os.path.dirname(parent)
        keep = [os.path.abspath(p) for p in protected]
        self.own = {n for n, p in self.paths.items()
                    if users[p] == 1 and p not in above and not any(_within(k, p) for k in keep)}
        self.created = journal.created() if journal is not None else set()
        # Tasks that ran before (any outcome recorded), or in this run.
        self.tried = {line.key for line in read_all(journal.directory)} if journal is not None else set()

    def prepare(self, number: int, key: str) -> str:
        """Before an attempt of task `number` is handed out: create its
        directory if missing; what the attempt must clear first."""
        if number not in self.own:
            return KEEP
        tried = key in self.tried
        self.tried.add(key)
        path = self.paths[number]
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.mkdir(path)
        except FileExistsError:
            return EMPTY if key in self.created else OUTPUTS if tried else KEEP
        except OSError:
            return KEEP  # the attempt's own mkdir fails and says why
        if self.journal is not None:
            self.journal.record_created(key)
        self.created.add(key)
        return KEEP


def clear(workdir: Path, what: str) -> None:
    """Empty the task's directory (EMPTY) or remove the farm's stale output
    files from it (OUTPUTS); OSError when something cannot be removed."""
    if what == KEEP or workdir.is_symlink() or not workdir.is_dir():
        return
    if what == OUTPUTS:
        for name in FARM_OUTPUTS:
            try:
                (workdir / name).unlink()
            except FileNotFoundError:
                pass
        return
    with os.scandir(workdir) as entries:
        for entry in list(entries):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")
