"""Counters of many records merged as arrays, for jobs of many files.

A job of 64 processes with 1,000 files each is 64,000 records of a few
hundred counters: a dict per record and per file costs gigabytes. Here the
records of one module region (or of a run of alike records) are one
segment: a matrix of integer and one of float counters. A Table merges
segments into one row per file with the rules of model.combine, in the
order the records come, so that every sum is the same float as adding the
records one by one, and each file's counters keep the keys, order and types
a dict merge would give them (Counters reads a row as such a dict).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from sluice.logfmt import Log, Module, Record, RecordBlock, Records

SUM, MAX, FIRST = 0, 1, 2  # how a counter combines: add, largest, earliest non-zero
# The common values (model.common_groups) and the slowest call's size
# (model.time_size_pairs) combine as groups: Special below.


# Properties of an HDF5 file or dataset, or of a PnetCDF variable, rather
# than counts: equal in every record of it, so they take the maximum; so do
# the shapes (lengths and strides per dimension) of its most common accesses.
H5_PROPERTIES = ("H5D_DATASPACE_", "H5D_DATATYPE_SIZE", "H5D_CHUNK_SIZE_", "H5D_USE_", "H5F_USE_",
                 "PNETCDF_VAR_NDIMS", "PNETCDF_VAR_NPOINTS", "PNETCDF_VAR_DATATYPE_SIZE", "PNETCDF_VAR_IS_RECORD_VAR")


def is_property(name: str) -> bool:
    return name.startswith(H5_PROPERTIES) or (name.startswith(("H5D_ACCESS", "PNETCDF_VAR_ACCESS"))
                                              and ("_LENGTH_D" in name or "_STRIDE_D" in name))


# a file's layout as read at open: the same in every process that opened it
LAYOUT_PROPERTIES = ("POSIX_STRIPE_SIZE", "POSIX_STRIPE_COUNT", "POSIX_OBJECT_SIZE", "POSIX_LAYOUT_COMPONENTS")


def _rule(name: str) -> int:
    if "MAX_BYTE" in name or name.endswith("_END_TIMESTAMP") or "_F_MAX_" in name or name.endswith("ALIGNMENT") \
            or "_RANK" in name or is_property(name) or name in LAYOUT_PROPERTIES:
        return MAX
    return FIRST if name.endswith("_START_TIMESTAMP") else SUM


@dataclass(frozen=True)
class Special:
    """Where a layout's grouped counters are among its int and float values
    (in layout order, as Columns.of_layout has them): per common-values group
    the columns of the four values and of the four counts; per slowest-call
    pair the column of the size (an int) and of the time (a float)."""
    groups: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    pairs: tuple[tuple[int, int], ...]


def _special(lay: "Layout", is_float: Callable[[str], bool]) -> Special:
    from sluice.report.model import common_groups, time_size_pairs

    pos: dict[str, int] = {}
    seen = [0, 0]
    for k in lay.keys:
        f = int(is_float(k))
        pos[k] = seen[f]
        seen[f] += 1
    groups = tuple((tuple(pos[v] for v in vals), tuple(pos[c] for c in cnts))
                   for vals, cnts in common_groups(lay.keys)
                   if all(k in pos and not is_float(k) for k in vals + cnts))
    pairs = tuple((pos[sz], pos[t]) for sz, t in time_size_pairs(lay.keys)
                  if sz in pos and t in pos and not is_float(sz) and is_float(t))
    return Special(groups, pairs)


def _top_four(vals: np.ndarray, cnts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, of candidate values (each non-zero value at most once a row)
    and their counts: the four with the highest counts, then the larger
    value; zero values and counts drop out."""
    cnts = np.where(vals != 0, cnts, 0)
    vals = np.where(cnts > 0, vals, 0)
    order = np.lexsort((-vals, -cnts), axis=-1)[:, :4]
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(cnts, order, axis=1)


def _cv_pairwise(a: np.ndarray, b: np.ndarray, vi: tuple[int, ...], ci: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Two rows' lists of four common values merged, row by row."""
    av, ac = a[:, vi].copy(), a[:, ci].copy()
    bv, bc = b[:, vi].copy(), b[:, ci].copy()
    for j in range(4):
        for i in range(4):
            same = (bv[:, j] == av[:, i]) & (av[:, i] != 0)
            ac[:, i] += np.where(same, bc[:, j], 0)
            bc[:, j] = np.where(same, 0, bc[:, j])
    return _top_four(np.hstack([av, bv]), np.hstack([ac, bc]))


def _cv_many(rows_v: np.ndarray, rows_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Many lists of four common values ([list, 4]) merged into one ([4])."""
    v, c = rows_v.ravel(), rows_c.ravel()
    keep = (v != 0) & (c > 0)
    uniq, inv = np.unique(v[keep], return_inverse=True)
    sums = np.bincount(inv, weights=c[keep], minlength=len(uniq)).astype(np.int64) if len(uniq) else \
        np.zeros(0, dtype=np.int64)
    pad = max(0, 4 - len(uniq))
    tv, tc = _top_four(np.r_[uniq, np.zeros(pad, dtype=np.int64)][None, :],
                       np.r_[sums, np.zeros(pad, dtype=np.int64)][None, :])
    return tv[0], tc[0]


def _special_reduce(out: tuple[np.ndarray, np.ndarray], start: tuple[np.ndarray, np.ndarray],
                    present: tuple[np.ndarray, np.ndarray], vals: tuple[np.ndarray, np.ndarray],
                    sp: Special, one_by_one: bool) -> None:
    """The grouped counters of _reduce's result `out` (ints, floats), from the
    values before (`start`, where `present`) and every record's (`vals`).
    Common values: `one_by_one`, merged a record at a time (a file's row, as
    the dict merge does); else the four most frequent of all the lists at
    once (the job's totals: no order to depend on)."""
    for vi, ci in sp.groups:
        vi_, ci_ = list(vi), list(ci)
        had = bool(present[0][vi_].all())
        if one_by_one:
            cur = start[0][None, :] if had else vals[0][:1]
            for k in range(0 if had else 1, len(vals[0])):
                tv, tc = _cv_pairwise(cur, vals[0][k:k + 1], vi, ci)
                cur = cur.copy()
                cur[:, vi_], cur[:, ci_] = tv, tc
            out[0][vi_], out[0][ci_] = cur[0, vi_], cur[0, ci_]
            continue
        rows_v = np.vstack([start[0][vi_][None, :]] * had + [vals[0][:, vi_]])
        rows_c = np.vstack([start[0][ci_][None, :]] * had + [vals[0][:, ci_]])
        out[0][vi_], out[0][ci_] = _cv_many(rows_v, rows_c)
    for si, ti in sp.pairs:
        had = bool(present[0][si] and present[1][ti])
        times = np.r_[start[1][ti:ti + 1] if had else [], vals[1][:, ti]]
        sizes = np.r_[start[0][si:si + 1] if had else np.zeros(0, dtype=np.int64), vals[0][:, si]]
        out[0][si] = sizes[int(np.argmax(times))]      # the first of equally slow calls


@dataclass(frozen=True)
class Layout:
    """The keys of one side of a record, in its dict's order, and where each
    value is stored: (is_float, index into the int or the float values)."""
    keys: tuple[str, ...]
    where: tuple[tuple[bool, int], ...]


_module_layouts: dict[tuple, Layout] = {}


def module_layout(m: Module) -> Layout:
    """As logfmt's Record dicts have it: ints, then floats; a name listed
    twice keeps its first place and its last value."""
    key = (tuple(m.int_names), tuple(m.float_names))
    lay = _module_layouts.get(key)
    if lay is None:
        where: dict[str, tuple[bool, int]] = {}
        for i, n in enumerate(m.int_names):
            where[n] = (False, i)
        for i, n in enumerate(m.float_names):
            where[n] = (True, i)
        lay = _module_layouts[key] = Layout(tuple(where), tuple(where.values()))
    return lay


@dataclass
class Segment:
    """Records of one log (one side); layout.where tells where in ints or
    floats each key's values are."""
    layout: Layout
    ints: np.ndarray      # int64 [record, counter]
    floats: np.ndarray    # float64 [record, counter]
    rows: np.ndarray      # the table row of each record
    offset: float         # seconds from the job's start to the log's


def _dict_segments(records: list[Record], side: str, rows: list[int], offset: float) -> Iterator[Segment]:
    """Records given as dicts (a Darshan log's, or built by hand): runs of
    records with the same keys and value types make one segment."""
    run: list[dict] = []
    run_rows: list[int] = []
    run_key = None
    for r, row in zip(list(records) + [None], rows + [-1]):
        c = getattr(r, side) if r is not None else None
        key = None if c is None else (tuple(c), tuple(not isinstance(v, (int, np.integer)) for v in c.values()))
        if run and key != run_key:
            keys, floats = run_key
            ni = [k for k, f in zip(keys, floats) if not f]
            nf = [k for k, f in zip(keys, floats) if f]
            where, fi, ii = [], 0, 0
            for f in floats:
                where.append((f, fi if f else ii))
                fi, ii = fi + f, ii + (not f)
            yield Segment(Layout(keys, tuple(where)),
                          np.array([[d[k] for k in ni] for d in run], dtype=np.int64).reshape(len(run), len(ni)),
                          np.array([[d[k] for k in nf] for d in run], dtype=np.float64).reshape(len(run), len(nf)),
                          np.array(run_rows, dtype=np.intp), offset)
            run, run_rows = [], []
        run_key = key
        if c is not None:
            run.append(c)
            run_rows.append(row)


@dataclass
class _Block:
    """A read log's block of records; its values are loaded when merged."""
    block: RecordBlock
    layout: Layout
    rows: np.ndarray
    offset: float


def _plan(logs: list[Log], start_ns: int | None, row_of: Callable[[Log, str], int]) -> list:
    """Every record of the logs, in order, with its row assigned: a _Block
    per block of a read log, a pair of segment lists (app, fs) per log of
    Records given as dicts."""
    items: list = []
    for l in logs:
        offset = 0.0 if start_ns is None else (l.start_ns - start_ns) / 1e9
        if isinstance(l.records, Records):
            for b in l.records.blocks:
                if len(b):
                    items.append(_Block(b, module_layout(b.module),
                                        np.array([row_of(l, p) for p in b.paths], dtype=np.intp), offset))
        else:
            recs = list(l.records)
            rows = [row_of(l, r.path) for r in recs]
            items.append(tuple(list(_dict_segments(recs, side, rows, offset)) for side in ("app", "fs")))
    return items


def _same(a: list[Segment], b: list[Segment]) -> bool:
    """Whether two sides' segments hold the same keys and the same bits."""
    return len(a) == len(b) and all(
        x.layout == y.layout and np.array_equal(x.rows, y.rows) and np.array_equal(x.ints, y.ints)
        and np.array_equal(x.floats.view(np.int64), y.floats.view(np.int64)) for x, y in zip(a, b))


def merge_tables(logs: list[Log], start_ns: int | None, row_of: Callable[[Log, str], int],
                 zero: dict[str, float], sides: tuple[str, ...] = ("app", "fs"), nrows: int = 0) -> dict[str, Table]:
    """The records of the logs merged into tables of rows (row_of(log, path)
    gives a record's row; timestamps moved to count from start_ns, None:
    left as they are), one table per side, of at least `nrows` rows. A block's values are loaded (a
    compressed one inflated) only while it is merged. While fs holds the
    same values as app (profile mode), one table serves both."""
    rows: list[int] = []

    def counted(l: Log, path: str) -> int:
        r = row_of(l, path)
        rows.append(r)
        return r

    items = _plan(logs, start_ns, counted)
    nrows = max([nrows - 1] + rows) + 1
    layouts = [i.layout for i in items if isinstance(i, _Block)] + \
        [seg.layout for i in items if not isinstance(i, _Block) for segs in i for seg in segs]
    app = Table(nrows, layouts, zero)
    fs: Table | None = None
    for item in items:
        if isinstance(item, _Block):
            ints, floats = item.block.arrays()
            pair = [[Segment(item.layout, ints[:, s, :], floats[:, s, :], item.rows, item.offset)] for s in (0, 1)]
        else:
            pair = list(item)
        if fs is None and "fs" in sides and not _same(*pair):
            fs = app.copy()
        for seg in pair[0]:
            app.add(seg)
        if fs is not None:
            for seg in pair[1]:
                fs.add(seg)
    return {"app": app, "fs": fs or app}


class KeySet:
    """The keys of one row's dict in order, the column of each, and where
    each is in the row's values (its int columns, then its float columns)."""
    __slots__ = ("keys", "index", "icols", "fcols", "pos", "ints_first", "_template", "_halves")

    def __init__(self, keys: list[str], columns: dict[str, tuple[bool, int]]) -> None:
        self.keys = keys
        self.index = {k: columns[k] for k in keys}
        kinds = [f for f, _ in self.index.values()]
        self.icols = np.array([c for f, c in self.index.values() if not f], dtype=np.intp)
        self.fcols = np.array([c for f, c in self.index.values() if f], dtype=np.intp)
        ni = len(self.icols)
        seen = [0, 0]
        self.pos: dict[str, int] = {}
        for k, f in zip(keys, kinds):
            self.pos[k] = seen[f] + (ni if f else 0)
            seen[f] += 1
        self.ints_first = kinds == sorted(kinds)
        self._template: str | None = None
        self._halves: tuple[str, str] | None = None

    def template(self) -> str:
        if self._template is None:
            self._template = _template(self.keys)
        return self._template

    def halves(self) -> tuple[str, str]:
        """The template cut between the int keys and the float keys (ints
        first, both present): the two %-formatted and joined give template()."""
        if self._halves is None:
            ni = len(self.icols)
            line = [f"    {json.dumps(k).replace('%', '%%')}: %s" for k in self.keys]
            self._halves = ("{\n" + ",\n".join(line[:ni]) + ",\n", ",\n".join(line[ni:]) + "\n   }")
        return self._halves


class Counters(Mapping):
    """One row of a Table read as the dict a merge of dicts would give; its
    values become Python numbers when first asked for."""
    __slots__ = ("_pos", "_keys", "_table", "_row", "_vals")

    def __init__(self, keys: KeySet, table: "Table", row: int) -> None:
        self._pos, self._keys, self._table, self._row = keys.pos, keys, table, row
        self._vals: list | None = None

    def _values(self) -> list:
        ks, t = self._keys, self._table
        self._vals = t.ints[self._row, ks.icols].tolist() + t.floats[self._row, ks.fcols].tolist()
        return self._vals

    def __getitem__(self, k: str):
        vals = self._vals
        return (vals if vals is not None else self._values())[self._pos[k]]

    def get(self, k: str, default=None):
        p = self._pos.get(k)
        if p is None:
            return default
        vals = self._vals
        return (vals if vals is not None else self._values())[p]

    def __contains__(self, k: object) -> bool:
        return k in self._pos

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys.keys)

    def __len__(self) -> int:
        return len(self._keys.keys)

    def __repr__(self) -> str:
        return repr(dict(self))


def column_values(maps: list[Mapping], name: str) -> list[float]:
    """Each mapping's value under name (0 where it has none); rows of one
    Table are read as a column, without making a row's values Python numbers."""
    if maps and all(isinstance(m, Counters) and m._table is maps[0]._table for m in maps):
        rows = np.array([m._row for m in maps], dtype=np.intp)
        return maps[0]._table.column(name)[rows].tolist()
    return [m.get(name, 0) for m in maps]


def any_positive(maps: list[Mapping], names: list[str]) -> list[bool]:
    """Whether each mapping has a value above zero under one of the names;
    rows of one Table are read a column at a time."""
    if maps and all(isinstance(m, Counters) and m._table is maps[0]._table for m in maps):
        table = maps[0]._table
        rows = np.array([m._row for m in maps], dtype=np.intp)
        hit = np.zeros(len(maps), dtype=bool)
        for n in names:
            hit |= table.column(n)[rows] > 0
        return hit.tolist()
    return [any(m.get(n, 0) > 0 for n in names) for m in maps]


class Columns:
    """Counter name -> (is_float, column) in an int and a float matrix."""

    def __init__(self) -> None:
        self.of: dict[str, tuple[bool, int]] = {}
        self.names: tuple[list[str], list[str]] = ([], [])
        self._picked: dict[tuple[Layout, bool], tuple[list, list[int], bool]] = {}
        self._of_layout: dict[Layout, tuple[np.ndarray, np.ndarray]] = {}

    def add(self, name: str, is_float: bool) -> None:
        if name not in self.of:
            self.of[name] = (is_float, len(self.names[is_float]))
            self.names[is_float].append(name)

    def of_layout(self, lay: Layout) -> tuple[np.ndarray, np.ndarray]:
        """The int and the float columns of a layout's values, in its order
        (asked once the columns are all added)."""
        got = self._of_layout.get(lay)
        if got is None:
            cols: tuple[list[int], list[int]] = ([], [])
            for k in lay.keys:
                f, c = self.of[k]
                cols[f].append(c)
            got = self._of_layout[lay] = (np.array(cols[0], dtype=np.intp), np.array(cols[1], dtype=np.intp))
        return got

    def rules(self, is_float: bool) -> np.ndarray:
        return np.array([_rule(n) for n in self.names[is_float]], dtype=np.int8)

    def _picks(self, lay: Layout, is_float: bool) -> tuple[list, list[int], bool]:
        """Where a layout's values of the int (float) columns are, and whether
        they are all stored as such."""
        key = (lay, is_float)
        got = self._picked.get(key)
        if got is None:
            picks = [w for k, w in zip(lay.keys, lay.where) if self.of[k][0] == is_float]
            got = self._picked[key] = (picks, [i for _, i in picks], all(f == is_float for f, _ in picks))
        return got

    def values(self, seg: Segment, is_float: bool) -> np.ndarray:
        """The segment's values of the int (or float) columns, in layout
        order. A name stored as an int here and a float elsewhere (never in
        the logs sluice writes) is converted."""
        picks, idx, direct = self._picks(seg.layout, is_float)
        if direct:
            src = seg.floats if is_float else seg.ints
            return src if idx == list(range(src.shape[1])) else src[:, idx]
        out = np.empty((len(seg.rows), len(picks)), dtype=np.float64 if is_float else np.int64)
        for j, (f, i) in enumerate(picks):
            out[:, j] = (seg.floats if f else seg.ints)[:, i]
        return out


def _shifted(vals: np.ndarray, timestamp: np.ndarray, offset: float) -> np.ndarray:
    """Timestamps moved from the log's start to the job's (zero: never)."""
    if not offset or not timestamp.any():
        return vals
    return np.where(timestamp & (vals != 0), vals + offset, vals)


class Table:
    """Segments of one side merged into `nrows` rows (the files), and the
    total of all of them, which starts from `zero` (every counter of the
    job's schemas). `layouts`: every layout the segments will have."""

    def __init__(self, nrows: int, layouts: list[Layout], zero: dict[str, float]) -> None:
        cols, tcols = Columns(), Columns()
        for k, v in zero.items():
            tcols.add(k, isinstance(v, float))
        self._lids: dict[Layout, int] = {}
        for lay in layouts:
            if lay not in self._lids:
                self._lids[lay] = len(self._lids)
                for k, (f, _) in zip(lay.keys, lay.where):
                    cols.add(k, f)
                    tcols.add(k, f)
        self.columns, self.layouts = cols.of, list(self._lids)
        self._cols, self._tcols = cols, tcols
        self.ints = np.zeros((nrows, len(cols.names[0])), dtype=np.int64)
        self.floats = np.zeros((nrows, len(cols.names[1])), dtype=np.float64)
        # A row's dict keys are those of the layouts it met, in order: its
        # signature. A counter of a row is present iff a layout of it has it.
        self.sigs: list[tuple[int, ...]] = [()]
        self.sig = np.zeros(nrows, dtype=np.intp)
        self._steps: dict[tuple[int, int], int] = {}
        self._keysets: dict[int, KeySet] = {}
        self._lay_cols = {lay: cols.of_layout(lay) for lay in self._lids}
        self._presents: dict[tuple[int, int, int], np.ndarray] = {}
        self._rules = (cols.rules(False), cols.rules(True))
        self._trules = (tcols.rules(False), tcols.rules(True))
        self._stamp = np.array(["_TIMESTAMP" in n for n in cols.names[1]], dtype=bool)
        # timestamps are float counters; an int one would not move
        self._tstamp = (np.zeros(len(tcols.names[0]), dtype=bool),
                        np.array(["_TIMESTAMP" in n for n in tcols.names[1]], dtype=bool))
        self._total = (np.array([zero.get(n, 0) for n in tcols.names[0]], dtype=np.int64),
                       np.array([zero.get(n, 0) for n in tcols.names[1]], dtype=np.float64))
        self._in_total = tuple(np.array([n in zero for n in tcols.names[f]], dtype=bool) for f in (0, 1))
        self._total_keys = dict.fromkeys(zero)
        self._specials: dict[Layout, Special] = {}

    def copy(self) -> "Table":
        """A table in the same state, that goes on on its own."""
        t = copy.copy(self)
        t.ints, t.floats, t.sig = self.ints.copy(), self.floats.copy(), self.sig.copy()
        t.sigs, t._steps, t._keysets, t._presents = list(self.sigs), dict(self._steps), {}, dict(self._presents)
        t._total = (self._total[0].copy(), self._total[1].copy())
        t._in_total = (self._in_total[0].copy(), self._in_total[1].copy())
        t._total_keys = dict(self._total_keys)
        return t

    def add(self, seg: Segment) -> None:
        """Merge a segment's records, in their order, into the rows and the total."""
        if not len(seg.rows):
            return
        cols, tcols, rules, trules = self._cols, self._tcols, self._rules, self._trules
        lid = self._lids[seg.layout]
        sp = self._special(seg.layout)
        self._total_keys.update(dict.fromkeys(seg.layout.keys))
        tc = tcols.of_layout(seg.layout)
        total, in_total = self._total, self._in_total
        tv = tuple(_shifted(tcols.values(seg, bool(f)), self._tstamp[f][tc[f]], seg.offset) for f in (0, 1))
        before = tuple(total[f][tc[f]] for f in (0, 1))
        had = tuple(in_total[f][tc[f]] for f in (0, 1))
        res = tuple(_reduce(before[f], had[f], tv[f], trules[f][tc[f]]) for f in (0, 1))
        if sp.groups or sp.pairs:
            _special_reduce(res, before, had, tv, sp, one_by_one=False)
        for f in (0, 1):
            total[f][tc[f]] = res[f]
            in_total[f][tc[f]] = True
        c = self._lay_cols[seg.layout]
        vals = (cols.values(seg, False), _shifted(cols.values(seg, True), self._stamp[c[1]], seg.offset))
        uniq, counts = np.unique(seg.rows, return_counts=True)
        if counts.max() > len(uniq):     # few rows, many records each: a row at a time
            for row in uniq.tolist():
                sel = np.flatnonzero(seg.rows == row)
                u = int(self.sig[row])
                mats = (self.ints, self.floats)
                before = tuple(mats[f][row, c[f]] for f in (0, 1))
                had = tuple(self._present(u, lid, f) for f in (0, 1))
                v = (vals[0][sel], vals[1][sel])
                res = tuple(_reduce(before[f], had[f], v[f], rules[f][c[f]]) for f in (0, 1))
                if sp.groups or sp.pairs:
                    _special_reduce(res, before, had, v, sp, one_by_one=True)
                for f in (0, 1):
                    mats[f][row, c[f]] = res[f]
                self.sig[row] = self._step(u, lid)
            return
        for sel in _rounds(seg.rows):
            r = seg.rows if sel is None else seg.rows[sel]
            old = self.sig[r]
            for u in np.unique(old).tolist():
                at = slice(None) if u == old[0] and (old == u).all() else np.flatnonzero(old == u)
                mats = (self.ints, self.floats)
                idx = tuple(np.ix_(r[at], c[f]) for f in (0, 1))
                new = tuple((vals[f] if sel is None else vals[f][sel])[at] for f in (0, 1))
                if not self.sigs[u]:           # the rows' first record: its values as they are
                    for f in (0, 1):
                        mats[f][idx[f]] = new[f]
                else:
                    had = tuple(self._present(u, lid, f) for f in (0, 1))
                    olds = tuple(mats[f][idx[f]] for f in (0, 1))
                    res = tuple(np.where(had[f], _combine(olds[f], new[f], rules[f][c[f]]), new[f])
                                for f in (0, 1))
                    _special_pairwise(res[0], olds, new, had, sp)
                    for f in (0, 1):
                        mats[f][idx[f]] = res[f]
                self.sig[r[at]] = self._step(u, lid)

    def _special(self, lay: Layout) -> Special:
        sp = self._specials.get(lay)
        if sp is None:
            sp = self._specials[lay] = _special(lay, lambda k: self._cols.of[k][0])
        return sp

    def _present(self, sig: int, lid: int, is_float: int) -> np.ndarray:
        """Which int (float) columns of layout `lid` a row of signature `sig` has."""
        key = (sig, lid, is_float)
        mask = self._presents.get(key)
        if mask is None:
            mine = self._lay_cols[self.layouts[lid]][is_float]
            mask = np.zeros(len(mine), dtype=bool)
            for m in set(self.sigs[sig]):
                mask |= np.isin(mine, self._lay_cols[self.layouts[m]][is_float])
            self._presents[key] = mask
        return mask

    def _step(self, sig: int, lid: int) -> int:
        """The signature of a row of signature `sig` that meets layout `lid`."""
        nxt = self._steps.get((sig, lid))
        if nxt is None:
            if lid in self.sigs[sig]:
                nxt = sig
            else:
                nxt = len(self.sigs)
                self.sigs.append(self.sigs[sig] + (lid,))
            self._steps[sig, lid] = nxt
        return nxt

    def keyset(self, sig: int) -> KeySet:
        ks = self._keysets.get(sig)
        if ks is None:
            keys = list(dict.fromkeys(k for lid in self.sigs[sig] for k in self.layouts[lid].keys))
            ks = self._keysets[sig] = KeySet(keys, self.columns)
        return ks

    def all_counters(self) -> list[Counters]:
        """Counters of every row."""
        keysets = [self.keyset(s) for s in range(len(self.sigs))]
        return [Counters(keysets[s], self, row) for row, s in enumerate(self.sig.tolist())]

    def totals(self) -> dict[str, float]:
        """The sum (by the rules) of every record, as a dict."""
        vals = (self._total[0].tolist(), self._total[1].tolist())
        return {k: vals[f][c] for k in self._total_keys for f, c in (self._tcols.of[k],)}

    def column(self, name: str) -> np.ndarray:
        """One counter of every row; zeros where no row has it."""
        w = self.columns.get(name)
        if w is None:
            return np.zeros(len(self.sig), dtype=np.int64)
        return (self.floats if w[0] else self.ints)[:, w[1]]


def _rounds(rows: np.ndarray) -> Iterator[np.ndarray | None]:
    """Selections of a segment's records in which no row comes twice, in
    order (None: all of them): a file's records combine one after another."""
    if len(np.unique(rows)) == len(rows):
        yield None
        return
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    first = np.r_[True, sorted_rows[1:] != sorted_rows[:-1]]
    starts = np.flatnonzero(first)
    rank = np.empty(len(rows), dtype=np.intp)
    rank[order] = np.arange(len(rows)) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
    for k in range(int(rank.max()) + 1):
        yield np.flatnonzero(rank == k)


def _combine(a: np.ndarray, b: np.ndarray, rule: np.ndarray) -> np.ndarray:
    """model.combine of two values of each column, element-wise."""
    out = a + b
    m = rule == MAX
    if m.any():
        out[:, m] = np.maximum(a[:, m], b[:, m])
    m = rule == FIRST
    if m.any():
        x, y = a[:, m], b[:, m]
        out[:, m] = np.where(x == 0, y, np.where(y == 0, x, np.minimum(x, y)))
    return out


def _special_pairwise(res: np.ndarray, olds: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray],
                      had: tuple[np.ndarray, np.ndarray], sp: Special) -> None:
    """The grouped int counters of _combine's result `res`, from each row's
    values before (`olds`, ints and floats) and the record's (`new`)."""
    for vi, ci in sp.groups:
        if had[0][list(vi) + list(ci)].all():
            res[:, list(vi)], res[:, list(ci)] = _cv_pairwise(olds[0], new[0], vi, ci)
    for si, ti in sp.pairs:
        if had[0][si] and had[1][ti]:
            res[:, si] = np.where(new[1][:, ti] > olds[1][:, ti], new[0][:, si], olds[0][:, si])


def _reduce(total: np.ndarray, present: np.ndarray, vals: np.ndarray, rule: np.ndarray) -> np.ndarray:
    """model.combine of `total` with every row of vals, one after the other
    (a sum adds in record order, so floats round as they would in a loop);
    a column not yet present starts from its first value."""
    start = np.where(present, total, np.where(rule == SUM, 0, vals[0]))
    out = np.add.accumulate(np.vstack([start, vals]), axis=0)[-1]
    m = rule == MAX
    if m.any():
        out[m] = np.maximum(start[m], vals[:, m].max(axis=0))
    m = rule == FIRST
    if m.any():
        x = np.vstack([start[m], vals[:, m]])
        nonzero = x != 0
        big = np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).max
        low = np.where(nonzero, x, big).min(axis=0)
        out[m] = np.where(nonzero.any(axis=0), low, start[m])
    return out


def _template(keys: list[str]) -> str:
    """%-format text of one counters dict at json.dumps(indent=1) depth 3,
    one %s per key (str() of an int or a finite float is what json writes)."""
    if not keys:
        return "{}"
    return "{\n" + ",\n".join(f"    {json.dumps(k).replace('%', '%%')}: %s" for k in keys) + "\n   }"


def _counter_texts(rows: list[Counters]) -> list[tuple[str, ...]]:
    """The JSON text of each row's counters, as json.dumps(dict(row), indent=1)
    would write them inside a file entry, in one or two parts to be written
    one after the other (not joined: each byte is copied once, into the
    output); alike rows are formatted together."""
    out: list[tuple[str, ...]] = [("",)] * len(rows)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, c in enumerate(rows):
        groups.setdefault((id(c._table), id(c._keys)), []).append(i)
    for members in groups.values():
        first = rows[members[0]]
        table, ks = first._table, first._keys
        at = np.array([rows[i]._row for i in members], dtype=np.intp)
        floats = table.floats[np.ix_(at, ks.fcols)]
        iblock = table.ints[np.ix_(at, ks.icols)]
        finite = np.isfinite(floats).all(axis=1).tolist()
        if ks.ints_first and len(ks.icols) and len(ks.fcols):
            # Many files share their integer counters (opened once, the same
            # writes): that half's text is made once per distinct row.
            head_t, tail_t = ks.halves()
            heads: dict[bytes, str] = {}
            for i, row, fv, ok in zip(members, iblock, floats.tolist(), finite):
                if not ok:   # NaN or infinities: json's own spelling
                    out[i] = (json.dumps(dict(zip(ks.keys, row.tolist() + fv)), indent=1).replace("\n", "\n   "),)
                    continue
                key = row.tobytes()
                head = heads.get(key)
                if head is None:
                    head = heads[key] = head_t % tuple(row.tolist())
                out[i] = (head, tail_t % tuple(fv))
            continue
        ints = iblock.tolist()
        if ks.ints_first:
            values = [a + b for a, b in zip(ints, floats.tolist())]
        else:
            block = np.empty((len(at), len(ks.keys)), dtype=object)
            kinds = np.array([f for f, _ in ks.index.values()], dtype=bool)
            block[:, ~kinds] = np.array(ints, dtype=np.int64).reshape(len(at), -1)
            block[:, kinds] = floats
            values = block.tolist()
        template = ks.template()
        for i, vals, ok in zip(members, values, finite):
            if ok:
                out[i] = (template % tuple(vals),)
            else:  # NaN or infinities: json's own spelling
                out[i] = (json.dumps(dict(zip(ks.keys, vals)), indent=1).replace("\n", "\n   "),)
    return out


def _equal_sides(part: list) -> list[bool]:
    """Whether each file's fs counters are its app counters (the same row
    values of one table, as in profile mode): their text is written once."""
    same = [f.fs is f.app for f in part]
    groups: dict[int, list[int]] = {}
    for i, f in enumerate(part):
        a, b = f.app, f.fs
        if not same[i] and isinstance(a, Counters) and isinstance(b, Counters) and a._table is b._table \
                and a._keys is b._keys:
            groups.setdefault(id(a._table), []).append(i)
    for members in groups.values():
        t = part[members[0]].app._table
        a = np.array([part[i].app._row for i in members], dtype=np.intp)
        b = np.array([part[i].fs._row for i in members], dtype=np.intp)
        eq = (t.ints[a] == t.ints[b]).all(axis=1) & (t.floats[a].view(np.int64) == t.floats[b].view(np.int64)).all(axis=1)
        for i, e in zip(members, eq.tolist()):
            same[i] = e
    return same


def write_files_json(files: list, out: TextIO, chunk: int = 256) -> None:
    """The entries of Job.to_json()["files"], as json.dumps(indent=1) writes
    them inside the job's object, separated by ",\n", a chunk at a time."""
    for start in range(0, len(files), chunk):
        part = files[start: start + chunk]
        texts: dict[str, list[tuple[str, ...]]] = {}
        same = _equal_sides(part)
        for side in ("app", "fs"):
            todo = [i for i in range(len(part)) if side == "app" or not same[i]]
            rows = [getattr(part[i], side) for i in todo]
            if all(isinstance(c, Counters) for c in rows):
                done = _counter_texts(rows)
            else:
                done = [(json.dumps(dict(c), indent=1).replace("\n", "\n   "),) for c in rows]
            if side == "app":
                texts["app"] = done
            else:
                texts["fs"] = list(texts["app"])
                for i, text in zip(todo, done):
                    texts["fs"][i] = text
        pieces: list[str] = []
        for k, (f, a, s) in enumerate(zip(part, texts["app"], texts["fs"])):
            if k or start:
                pieces.append(",\n")
            pieces.append(f'  {{\n   "path": {json.dumps(f.path)},\n   "processes": {len(f.processes)},\n   "app": ')
            pieces.extend(a)
            pieces.append(',\n   "fs": ')
            pieces.extend(s)
            pieces.append("\n  }")
        out.write("".join(pieces))
