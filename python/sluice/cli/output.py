"""What the verbs share about their output: the width of text tables, the
hint of what to run next, and the end of a verb whose reader went away.
Imports only from the standard library, so that
`sluice run` stays quick to start."""

from __future__ import annotations

import os
import signal
import sys
from typing import NoReturn

# Wide enough that no table of a report wraps a path: what a batch log or a
# file gets, where lines are read with a pager or searched, not fitted to a
# screen.
UNWRAPPED = 400


def text_width() -> int:
    """Columns for text tables: $COLUMNS when set, the terminal's width when
    stdout is one, otherwise no wrapping at all."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        pass
    return UNWRAPPED


def shown_dir(path: str) -> str:
    """A directory as the user would type it: relative to the working
    directory when below it, else absolute."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def next_steps(log_dir: str) -> str:
    """The line that follows a run: what reads its logs."""
    where = shown_dir(log_dir)
    return f"sluice: next: sluice advise {where}   (the whole profile: sluice report {where})"


def reader_gone() -> NoReturn:
    """stdout's reader closed the pipe (`sluice export ... | head`): what is
    left unwritten goes nowhere, not even at the interpreter's last flush,
    and the status is that of a process SIGPIPE ended, as `head` leaves any
    other program."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(128 + signal.SIGPIPE)
