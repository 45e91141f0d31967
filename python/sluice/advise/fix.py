"""Turning a set of files into the path prefixes a fix names, and a mode per
prefix into a ready `sluice run` line and a `sluice.toml` snippet."""

from __future__ import annotations

import shlex
from collections import Counter, defaultdict
from posixpath import dirname

from sluice.report.model import Job

MAX_PREFIXES = 16         # per finding
MAX_POLICY_ITEMS = 32     # what the library keeps (src/core/policy.c)
MAX_COMMAND = 200         # a longer command line is shown as its program and "..."


def is_real(path: str) -> bool:
    """A path a policy can name (not the '<other files>' aggregate)."""
    return path.startswith("/")


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


def _parent(p: str) -> str:
    return dirname(p.rstrip("/")) or "/"


def _ancestors(p: str):
    while p != "/":
        p = _parent(p)
        yield p


def group_paths(paths: list[str], others: list[str], limit: int = MAX_PREFIXES) -> list[str]:
    """The prefixes that cover `paths`: a file's directory when nothing
    else the job touched is under it (or when more than MAX_PREFIXES of
    `paths` are in it),
    sibling directories merged into their parent while nothing else is
    under it, and at most `limit` prefixes in the end (merging the deepest)."""
    chosen = sorted({p for p in paths if is_real(p)})
    if not chosen:
        return []
    mine = set(chosen)
    rest = [o for o in others if is_real(o) and o not in mine]
    under_rest = {a for o in rest for a in _ancestors(o)}      # directories with another file somewhere below
    by_dir: dict[str, list[str]] = defaultdict(list)
    for p in chosen:
        by_dir[_parent(p)].append(p)
    prefixes: set[str] = set()
    for d, members in by_dir.items():
        if d not in under_rest or len(members) > MAX_PREFIXES:
            prefixes.add(d)
        else:
            prefixes.update(members)

    def clean(ps: set[str]) -> set[str]:
        # a prefix under another one adds nothing
        return {p for p in ps if not any(a in ps for a in _ancestors(p))}

    prefixes = clean(prefixes)
    # Siblings merge into their parent while no other file is under it.
    while len(prefixes) > 1:
        parents = Counter(_parent(p) for p in prefixes if p != "/")
        merge = [par for par, k in parents.items() if k >= 2 and par != "/" and par not in under_rest]
        if not merge:
            break
        merge_set = set(merge)
        prefixes = clean({p for p in prefixes if _parent(p) not in merge_set} | merge_set)
    # Too many: merge the deepest ones into their parents, a level at a time.
    while len(prefixes) > limit:
        depth = max(p.count("/") for p in prefixes)
        deep = {p for p in prefixes if p.count("/") == depth and p != "/"}
        if not deep:
            break
        prefixes = clean((prefixes - deep) | {_parent(p) for p in deep})
    return sorted(prefixes)


def _policy_prefix(p: str) -> str:
    """A prefix the --policy syntax can hold (no comma)."""
    while "," in p and p != "/":
        p = _parent(p)
    return p


def policy_items(prefixes: list[str], mode: str) -> list[str]:
    return [f"{_policy_prefix(p)}={mode}" for p in dict.fromkeys(prefixes)]


def _toml_key(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def toml_snippet(rules: list[tuple[str, str]], sections: dict[str, dict[str, str]] | None = None) -> str:
    """`[policy]` (and other tables) as sluice run --config reads them."""
    lines = []
    if rules:
        lines.append("[policy]")
        lines += [f"{_toml_key(_policy_prefix(p))} = \"{m}\"" for p, m in rules]
    for name, table in (sections or {}).items():
        if table:
            lines += ([""] if lines else []) + [f"[{name}]"]
            lines += [f"{k} = {_toml_key(str(v))}" for k, v in table.items()]
    return "\n".join(lines) + ("\n" if lines else "")


def program_command(job: Job) -> str:
    """The job's command, as `sluice run -- ...` would take it."""
    logs = sorted(job.logs, key=lambda l: (l.start_ns, l.pid))
    if not logs:
        return "CMD"
    ranked = [l for l in logs if l.rank >= 0 and l.nprocs > 1]
    root = min(ranked, key=lambda l: l.rank) if ranked else logs[0]
    cmd = root.info.get("cmdline") or root.info.get("exe") or "CMD"
    if len(cmd) > MAX_COMMAND:
        cmd = shlex.quote(root.info.get("exe") or cmd.split()[0]) + " ..."
    if ranked:
        cmd = f"mpirun -np {max(l.nprocs for l in ranked)} {cmd}"
    return cmd


def run_line(rules: list[tuple[str, str]], command: str, extra: list[str] | None = None) -> str:
    opts = [f"--policy {shlex.quote(f'{_policy_prefix(p)}={m}')}" for p, m in rules]
    return " ".join(["sluice run", *opts, *(extra or []), "--", command])
