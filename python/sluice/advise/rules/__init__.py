"""The rules of `sluice advise`, registered in one table.

A rule is a function `check(ctx, files) -> [Finding]`: it looks at the
given files' merged counters (and, where it needs them, each process's:
the Context) and returns its findings, with their evidence, cost and fix.
A rule never looks at another's findings: overlaps are settled by the
ranking (rank.py), where a costlier finding may fold a cheaper one whose
time it already holds (`folds`), and never the other way round.

Residual rules see only the files no earlier finding names, in table order:
they say what is left.

A new rule is one module here and one row in RULES (docs/advise.md lists
them all, test_advise.py tests each).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sluice.advise.context import Context
from sluice.advise.finding import Finding
from sluice.advise.rules import (few_small_requests, file_per_process, large_shared, many_opens, metadata_heavy,
                                 misaligned, no_collective, nothing_to_gain, random_reads, rank_imbalance, redundant,
                                 small_files, small_mpiio_writes, small_requests, small_shared_writes, stdio_heavy)
from sluice.report.model import FileTotals


@dataclass(frozen=True)
class Rule:
    id: str
    check: Callable[[Context, list[FileTotals]], list[Finding]]
    folds: tuple[str, ...] = ()    # cheaper findings on the same files whose time this one's cost holds
    residual: bool = False         # sees only the files no earlier finding names


RULES: tuple[Rule, ...] = (
    Rule("file-per-process-small-files", small_files.check, folds=("metadata-heavy",)),
    Rule("many-opens-one-file", many_opens.check, folds=("metadata-heavy",)),
    Rule("small-mpiio-writes", small_mpiio_writes.check, folds=("metadata-heavy", "no-collective-mpiio")),
    Rule("small-writes", small_requests.small_writes),
    Rule("small-reads", small_requests.small_reads),
    Rule("small-shared-writes", small_shared_writes.check),
    Rule("random-reads", random_reads.check),
    Rule("redundant-reads", redundant.redundant_reads),
    Rule("redundant-writes", redundant.redundant_writes),
    Rule("misaligned", misaligned.check),
    Rule("stdio-heavy", stdio_heavy.check),
    Rule("metadata-heavy", metadata_heavy.check),
    Rule("no-collective-mpiio", no_collective.check),
    Rule("rank-imbalance", rank_imbalance.check),
    Rule("file-per-process", file_per_process.check),
    Rule("large-shared-file", large_shared.check),
    Rule("few-small-requests", few_small_requests.check, residual=True),
    Rule("nothing-to-gain", nothing_to_gain.check, residual=True),
)

# Finding ids, in the order they are listed when their costs are equal.
IDS = [r.id for r in RULES]


def _validate(rules: tuple[Rule, ...]) -> None:
    """The table's own consistency, checked at import: ids unique, folds name rules, a folded rule folds
    none itself (so one pass of folding settles every overlap), residual rules last."""
    ids = [r.id for r in rules]
    folded = {i for r in rules for i in r.folds}
    problems = [f"{i} twice" for i in ids if ids.count(i) > 1]
    problems += [f"{r.id} folds {i}, no rule" for r in rules for i in r.folds if i not in ids]
    problems += [f"{r.id} is folded and folds" for r in rules if r.id in folded and r.folds]
    problems += [f"{r.id} is residual and folded" for r in rules if r.residual and r.id in folded]
    first_residual = next((k for k, r in enumerate(rules) if r.residual), len(rules))
    problems += [f"{r.id} after a residual rule" for r in rules[first_residual:] if not r.residual]
    if problems:
        raise ValueError("advise rules: " + "; ".join(problems))


_validate(RULES)

__all__ = ["RULES", "IDS", "Rule"]
