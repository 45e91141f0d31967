"""Where a farm's tasks come from: a task file, a CSV or TOML table, or a grid.

A task is one line of arguments: `{}` is the whole line, `{1}`, `{2}`, ...
its whitespace-separated fields, `{NAME}` a named field (a CSV column, a
TOML key, a grid axis). Every problem names the file and line it comes from.
"""

from __future__ import annotations

import csv
import itertools
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sluice.errors import UserError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Task:
    number: int                   # {#}: 1, 2, ... in input order
    fields: tuple[str, ...]       # {1}, {2}, ...
    named: dict[str, str] = field(default_factory=dict)
    origin: str = ""              # "tasks.txt:5", for messages

    @property
    def line(self) -> str:
        return " ".join(self.fields)


def load(task_file: str | None, grids: list[str]) -> list[Task]:
    """The tasks of `--tasks FILE` (or `-` for stdin) or of `--grid` axes."""
    if task_file and grids:
        raise UserError("give --tasks or --grid, not both")
    if grids:
        tasks = from_grid(grids)
    elif task_file:
        tasks = from_file(task_file)
    else:
        raise UserError("no tasks: give --tasks FILE (one task per line, or a .csv/.toml table) or --grid NAME=FROM:TO")
    if not tasks:
        raise UserError(f"no tasks in {task_file or 'the grid'}")
    return tasks


def from_file(name: str) -> list[Task]:
    if name == "-":
        return from_lines(sys.stdin.read().splitlines(), "<stdin>")
    path = Path(name)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{name}: not a UTF-8 text file") from None
    except OSError as e:
        raise UserError(f"cannot read the task file {name}: {e.strerror}") from None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return from_csv(text, name)
    if suffix == ".toml":
        return from_toml(text, name)
    return from_lines(text.splitlines(), name)


def from_lines(lines: list[str], origin: str) -> list[Task]:
    """One task per line; blank lines and lines starting with # are skipped."""
    tasks = []
    for lineno, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        if "\0" in text:
            raise UserError(f"{origin}:{lineno}: a task line holds a NUL byte")
        tasks.append(Task(len(tasks) + 1, tuple(text.split()), {}, f"{origin}:{lineno}"))
    return tasks


def from_csv(text: str, origin: str) -> list[Task]:
    """A header row of names, then one task per row; {1}, {2}... are its columns."""
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        return []
    header = [h.strip() for h in rows[0]]
    names = _check_names(header, f"{origin}:1")
    tasks = []
    for lineno, row in enumerate(rows[1:], 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise UserError(f"{origin}:{lineno}: {len(row)} column{'s' if len(row) != 1 else ''}, "
                            f"the header has {len(header)}")
        values = tuple(c.strip() for c in row)
        tasks.append(Task(len(tasks) + 1, values, dict(zip(names, values)), f"{origin}:{lineno}"))
    return tasks


def from_toml(text: str, origin: str) -> list[Task]:
    """`[[task]]` tables of strings and numbers: one task each, fields in key order."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{origin}: not valid TOML: {e}") from None
    tables = doc.get("task")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise UserError(f"{origin}: expected [[task]] tables (one per task)")
    tasks = []
    for i, table in enumerate(tables, 1):
        where = f"{origin}: task {i}"
        _check_names(list(table), where)
        values = []
        for key, value in table.items():
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise UserError(f"{where}: {key} must be a string or a number")
            values.append(str(value))
        tasks.append(Task(i, tuple(values), dict(zip(table, values)), where))
    return tasks


def from_grid(specs: list[str]) -> list[Task]:
    """The Cartesian product of `NAME=FROM:TO[:STEP]` or `NAME=A,B,C` axes,
    the last axis varying fastest."""
    axes: list[tuple[str, list[str]]] = []
    for spec in specs:
        name, sep, values = spec.partition("=")
        if not sep or not _NAME.match(name.strip()):
            raise UserError(f"--grid {spec}: expected NAME=FROM:TO[:STEP] or NAME=A,B,C")
        axes.append((name.strip(), _axis_values(spec, values.strip())))
    names = _check_names([n for n, _ in axes], "--grid")
    tasks = []
    for combo in itertools.product(*(v for _, v in axes)):
        tasks.append(Task(len(tasks) + 1, tuple(combo), dict(zip(names, combo)), f"grid point {len(tasks) + 1}"))
    return tasks


def _axis_values(spec: str, values: str) -> list[str]:
    if "," in values or ":" not in values:
        items = [v.strip() for v in values.split(",")]
        if not all(items):
            raise UserError(f"--grid {spec}: an empty value")
        return items
    parts = values.split(":")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        raise UserError(f"--grid {spec}: FROM:TO[:STEP] takes integers") from None
    if len(nums) not in (2, 3) or (len(nums) == 3 and nums[2] <= 0):
        raise UserError(f"--grid {spec}: expected FROM:TO or FROM:TO:STEP with STEP > 0")
    lo, hi, step = nums[0], nums[1], nums[2] if len(nums) == 3 else 1
    if hi < lo:
        raise UserError(f"--grid {spec}: TO is below FROM")
    return [str(v) for v in range(lo, hi + 1, step)]


def _check_names(names: list[str], where: str) -> list[str]:
    seen = set()
    for n in names:
        if not _NAME.match(n):
            raise UserError(f"{where}: {n!r} is not a usable field name (letters, digits, _)")
        if n in seen:
            raise UserError(f"{where}: the field name {n} appears twice")
        seen.add(n)
    return names
