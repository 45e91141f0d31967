"""sluice counters <-> Darshan counters, one record at a time.

Where a name is in both, the meaning is Darshan's (docs/darshan.md lists each
conversion): a dup is one of Darshan's POSIX_OPENS, MAX_BYTE_* of an untouched
file is 0, MPI-IO's size histogram is MPIIO_SIZE_*_AGG_*. What sluice does not
record is -1, Darshan's "unknown"; what Darshan leaves 0 in a record of one
rank (the fastest/slowest rank fields) is 0.
"""

from __future__ import annotations

import numpy as np

from sluice.darshan import layout as L

SLUICE_MODULES = {L.POSIX: "POSIX", L.MPIIO: "MPIIO", L.H5F: "H5F", L.H5D: "H5D", L.STDIO: "STDIO",
                  L.PNETCDF_FILE: "PNETCDF_FILE", L.PNETCDF_VAR: "PNETCDF_VAR"}
DARSHAN_IDS = {v: k for k, v in SLUICE_MODULES.items()}

# Darshan counters sluice has no source for: written as -1.
UNKNOWN = {
    L.POSIX: {"POSIX_FILENOS", "POSIX_RENAME_TARGETS", "POSIX_MODE", "POSIX_F_CLOSE_START_TIMESTAMP",
              "POSIX_F_OPEN_END_TIMESTAMP"},
    L.MPIIO: {"MPIIO_MODE", "MPIIO_F_CLOSE_START_TIMESTAMP",
              "MPIIO_F_OPEN_END_TIMESTAMP"},
    L.STDIO: {"STDIO_FDOPENS", "STDIO_F_CLOSE_START_TIMESTAMP", "STDIO_F_OPEN_END_TIMESTAMP"},
    L.H5F: set(),
    L.H5D: set(),
    L.PNETCDF_FILE: set(),
    L.PNETCDF_VAR: set(),
}

# Properties of a record rather than counts of calls (set when Darshan
# creates the record): they alone do not make a record visible.
PROPERTIES = {"POSIX_MEM_ALIGNMENT", "POSIX_FILE_ALIGNMENT"}
_PROPERTY_AT = {L.POSIX: [L.INT_NAMES[L.POSIX].index(n) for n in sorted(PROPERTIES)]}

# Darshan name -> sluice name where they differ only in name.
RENAMED = {"POSIX_RENAME_SOURCES": "POSIX_RENAMES"}
RENAMED.update({n: n.replace("_AGG_", "_") for n in L.INT_NAMES[L.MPIIO] if "_AGG_" in n})

RANK_FIELDS = {n for m in L.INT_NAMES.values() for n in m if "_RANK" in n} | \
    {n for m in L.FLOAT_NAMES.values() for n in m if "_RANK_" in n}


# Darshan counters sluice logs have had only since the access-pattern counters
# came (common sizes and strides, alignments, the slowest calls).
_SINCE_PATTERN = {n for m in L.INT_NAMES.values() for n in m
                  if any(p in n for p in ("_ACCESS", "_STRIDE", "ALIGN", "_TIME_SIZE"))} | \
    {n for m in L.FLOAT_NAMES.values() for n in m if "_F_MAX_" in n}


def _sluice_name(darshan: str) -> str:
    return RENAMED.get(darshan, darshan)


def to_darshan(module: int, c: dict[str, float]) -> tuple[list[int], list[float]]:
    """The integer and float counters of one Darshan record, in storage order,
    from one side (app or fs) of a sluice record."""
    unknown = UNKNOWN[module]

    def value(name: str) -> float:
        if name in unknown:
            return -1
        if name in RANK_FIELDS or name == "POSIX_RENAMED_FROM":
            return 0
        if name == "POSIX_OPENS":                 # Darshan counts a dup as an open
            return c.get("POSIX_OPENS", 0) + c.get("POSIX_DUPS", 0)
        if name == "MPIIO_INDEP_WRITES":          # write_shared and write_ordered are independent/collective
            return c.get("MPIIO_INDEP_WRITES", 0) + c.get("MPIIO_SHARED_WRITES", 0)
        if name not in c and name in _SINCE_PATTERN:  # a log written before sluice counted them
            return -1
        v = c.get(_sluice_name(name), 0)
        if "_MAX_BYTE_" in name and v < 0:        # Darshan: 0 when nothing was read or written
            return 0
        return v

    ints = [int(value(n)) for n in L.INT_NAMES[module]]
    floats = [float(value(n)) for n in L.FLOAT_NAMES[module]]
    return ints, floats


def dropped(module: int, c: dict[str, float]) -> dict[str, float]:
    """The sluice counters of a record that no Darshan counter carries."""
    module_prefix = SLUICE_MODULES[module] + "_"
    carried = {_sluice_name(n) for n in L.INT_NAMES[module] + L.FLOAT_NAMES[module]}
    carried |= {"POSIX_DUPS", "MPIIO_SHARED_WRITES"}
    return {k: v for k, v in c.items() if k.startswith(module_prefix) and k not in carried}


def visible(ints: list[int], module: int = L.POSIX) -> bool:
    """Whether Darshan would have a record: some call it counts touched the file
    (a path only made, removed or renamed over has none)."""
    skip = _PROPERTY_AT.get(module, [])
    return any(v > 0 for i, v in enumerate(ints) if i not in skip)


def to_sluice(module: int, counters: dict[str, float], reduced: bool = False) -> dict[str, float]:
    """One Darshan record (counter name -> value) as sluice counters, the ones
    both have; Darshan's unknowns (-1) read as 0, and its opens lose the dups.
    A record reduced over all ranks (rank -1) keeps Darshan's fastest/slowest
    rank fields, the only per-rank evidence such a log has (`sluice advise`'s
    rank-imbalance reads them)."""
    out: dict[str, float] = {}
    for name, v in counters.items():
        if name in UNKNOWN[module] or name not in _KNOWN[module]:
            continue
        if name in _NOT_IN_SLUICE and not (reduced and name in RANK_FIELDS):
            continue
        if v < 0 and "_MAX_BYTE_" not in name:
            v = 0
        out[_sluice_name(name)] = v
    if module == L.POSIX:
        out["POSIX_OPENS"] = max(0, counters.get("POSIX_OPENS", 0) - max(0, counters.get("POSIX_DUPS", 0))
                                 - max(0, counters.get("POSIX_FILENOS", 0)))
    for kind in ("READ", "WRITTEN"):
        prefix = SLUICE_MODULES[module]
        mb = f"{prefix}_MAX_BYTE_{kind}"
        if mb in out and out[mb] <= 0 and out.get(f"{prefix}_BYTES_{kind}", 0) == 0:
            out[mb] = -1
    return out


_KNOWN = {m: set(L.INT_NAMES[m]) | set(L.FLOAT_NAMES[m]) for m in L.INT_NAMES}
_NOT_IN_SLUICE = RANK_FIELDS | {"POSIX_RENAMED_FROM"}


def sluice_names(module: int, reduced: bool = False) -> tuple[list[str], list[str]]:
    """The sluice counter names to_sluice() gives for a module (reduced: with
    the rank fields of records reduced over all ranks): integers, floats."""
    keep = RANK_FIELDS if reduced else set()
    names = [_sluice_name(n) for n in L.INT_NAMES[module] + L.FLOAT_NAMES[module]
             if (n not in _NOT_IN_SLUICE or n in keep) and n not in UNKNOWN[module]]
    return [n for n in names if "_F_" not in n], [n for n in names if "_F_" in n]


def to_darshan_columns(module: int, get, n: int) -> tuple[np.ndarray, np.ndarray]:
    """to_darshan() of n records at once: integer counters [record, counter]
    and float counters, in storage order. get(name) gives a sluice counter
    of every record and whether each record has it ((values, present)), or
    None where no record has it."""
    unknown = UNKNOWN[module]
    zero = np.zeros(n)

    def of(name: str) -> np.ndarray:
        got = get(name)
        return zero if got is None else got[0]

    def value(name: str) -> np.ndarray:
        if name in unknown:
            return np.full(n, -1.0)
        if name in RANK_FIELDS or name == "POSIX_RENAMED_FROM":
            return zero
        if name == "POSIX_OPENS":
            return of("POSIX_OPENS") + of("POSIX_DUPS")
        if name == "MPIIO_INDEP_WRITES":
            return of("MPIIO_INDEP_WRITES") + of("MPIIO_SHARED_WRITES")
        if name in _SINCE_PATTERN:
            got = get(name)
            v = np.full(n, -1.0) if got is None else np.where(got[1], got[0], -1)
        else:
            v = of(_sluice_name(name))
        if "_MAX_BYTE_" in name:
            v = np.maximum(v, 0)
        return v

    ints = np.zeros((n, len(L.INT_NAMES[module])), dtype=np.int64)
    floats = np.zeros((n, len(L.FLOAT_NAMES[module])), dtype=np.float64)
    for i, name in enumerate(L.INT_NAMES[module]):
        ints[:, i] = value(name)
    for i, name in enumerate(L.FLOAT_NAMES[module]):
        floats[:, i] = value(name)
    return ints, floats


def visible_rows(ints: np.ndarray, module: int) -> np.ndarray:
    """visible() of each row of to_darshan_columns()'s integer counters."""
    keep = np.ones(ints.shape[1], dtype=bool)
    keep[_PROPERTY_AT.get(module, [])] = False
    return (ints[:, keep] > 0).any(axis=1)
