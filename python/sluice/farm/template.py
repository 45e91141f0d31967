"""Filling a command's placeholders for one task, as GNU parallel fills them.

  {}          the whole task line          {#}   the task number
  {1}, {2}    the line's fields            {%}   the worker slot (1-based)
  {NAME}      a named field (CSV column, TOML key, grid axis)
  {input}     the node-local copy of the only --input; {input:BASENAME} of one of several
  {{ and }}   a literal { and }

`${NAME}` is left alone (a shell variable). A placeholder with no value is
an error naming the task. A command with no placeholder gets the task's
fields appended as arguments.

The program (the command's first word, once filled) is found as a shell
would find it from the directory `sluice farm` started in, not from the
task's own directory: a name without a slash on PATH, a relative path with a
slash (`./ibis`, `bin/model`) against the start directory, made absolute.
Only when it is not there, the task's directory is tried (a case directory
prepared with its own `./run`). Other arguments are left as written: a
relative path there is the task directory's, where the task's outputs go.
`check` stops the farm before anything runs when a task's program does not
exist or cannot be run.
"""

from __future__ import annotations

import os
import re
import shutil

from sluice.errors import UserError
from sluice.farm.tasks import Task

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}\s]*)\}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Template:
    def __init__(self, cmd: list[str], workdir: str, inputs: dict[str, str] | None = None,
                 start_dir: str | None = None) -> None:
        if not cmd:
            raise UserError("no command given: sluice farm [OPTIONS] -- CMD [ARGS...]")
        self.cmd = list(cmd)
        self.workdir = workdir
        self.inputs = dict(inputs or {})
        self.appends = not any(_has_placeholder(a) for a in self.cmd)
        self.start_dir = os.path.abspath(start_dir or os.getcwd())
        self._programs: dict[str, str] = {}

    def argv(self, task: Task, slot: int | None = None) -> list[str]:
        """The command for `task`; with slot None, {%} stays as it is (the
        journal's identity of a task must not depend on where it ran)."""
        argv = [self._fill(a, task, slot) for a in self.cmd]
        argv[0] = self._program(argv[0])
        return argv + list(task.fields) if self.appends else argv

    def directory(self, task: Task) -> str:
        return self._fill(self.workdir, task, None)

    def check(self, tasks: list[Task]) -> None:
        """Fill every task once, so a missing value or a program that does
        not exist stops the farm before anything runs."""
        seen: set[tuple[str, str]] = set()
        for t in tasks:
            self.argv(t, 1)
            workdir = self.directory(t)
            word = self._fill(self.cmd[0], t, 1)
            program = self._program(word)
            where = workdir if "/" in program and not os.path.isabs(program) else ""
            if word and (word, where) not in seen:
                seen.add((word, where))
                self._check_program(word, program, workdir)

    def _program(self, word: str) -> str:
        """The program of a command's first word: a relative path with a
        slash made absolute against the start directory when it is there."""
        if "/" not in word or os.path.isabs(word):
            return word
        found = self._programs.get(word)
        if found is None:
            rel = word
            while rel.startswith("./"):
                rel = rel[2:].lstrip("/")
            path = os.path.join(self.start_dir, rel)
            found = self._programs[word] = path if os.path.exists(path) else word
        return found

    def _check_program(self, word: str, program: str, workdir: str) -> None:
        if "/" not in program:
            if shutil.which(program) is None:
                raise UserError(f"command not found: {word}")
            return
        path = program if os.path.isabs(program) else os.path.join(workdir, program)
        if not os.path.exists(path):
            if os.path.isabs(word):
                raise UserError(f"command not found: {word} (no such file)")
            raise UserError(f"command not found: {word} (not in {self.start_dir}, where sluice farm "
                            f"started, nor in the task's directory {workdir})")
        if os.path.isdir(path):
            raise UserError(f"cannot run {word}: {path} is a directory")
        if not os.access(path, os.X_OK):
            raise UserError(f"cannot run {word}: {path} is not executable")

    def _fill(self, text: str, task: Task, slot: int | None) -> str:
        def one(m: re.Match[str]) -> str:
            token = m.group(0)
            if token == "{{":
                return "{"
            if token == "}}":
                return "}"
            key = m.group(1)
            if m.start() > 0 and text[m.start() - 1] == "$":
                return token
            value = self._value(key, task, slot)
            return token if value is None else value

        return _TOKEN.sub(one, text)

    def _value(self, key: str, task: Task, slot: int | None) -> str | None:
        if key == "":
            return task.line
        if key == "#":
            return str(task.number)
        if key == "%":
            return None if slot is None else str(slot)
        if key.isdigit():
            i = int(key)
            if 1 <= i <= len(task.fields):
                return task.fields[i - 1]
            raise UserError(f"placeholder {{{key}}} has no value in task {task.number} ({task.origin}: "
                            f"{len(task.fields)} field{'s' if len(task.fields) != 1 else ''})")
        if key == "input" or key.startswith("input:"):
            return self._input(key)
        if _IDENT.match(key):
            if key in task.named:
                return task.named[key]
            known = ", ".join("{" + n + "}" for n in task.named) or "none: the task file has no named fields"
            raise UserError(f"placeholder {{{key}}} has no value in task {task.number} ({task.origin}; "
                            f"named fields: {known})")
        return None  # not a placeholder: {a b}, {-x}, ... stay as written

    def _input(self, key: str) -> str:
        if key == "input":
            if len(self.inputs) != 1:
                raise UserError(f"{{input}} needs exactly one --input (given: {len(self.inputs)}); "
                                "name one with {input:BASENAME}")
            return next(iter(self.inputs.values()))
        name = key.partition(":")[2]
        if name not in self.inputs:
            raise UserError(f"{{{key}}}: no --input named {name} (inputs: {', '.join(self.inputs) or 'none'})")
        return self.inputs[name]


def _has_placeholder(text: str) -> bool:
    for m in _TOKEN.finditer(text):
        key = m.group(1)
        if key is None or (m.start() > 0 and text[m.start() - 1] == "$"):
            continue
        if key in ("", "#", "%") or key.isdigit() or key == "input" or key.startswith("input:") or _IDENT.match(key):
            return True
    return False
