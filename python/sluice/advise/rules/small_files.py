"""file-per-process-small-files: many small files, each used by one process
(created, written, reopened, renamed or deleted): stage mode's case."""

from __future__ import annotations

from collections import defaultdict
from posixpath import dirname

from sluice.advise import thresholds as th
from sluice.advise.context import Context
from sluice.advise.counters import extent, io_time, meta_time, n, secs, staged, uses_mpiio, v, v_sum
from sluice.advise.finding import Finding
from sluice.advise.gain import gain
from sluice.report.model import FileTotals
from sluice.report.text import human_bytes

ID = "file-per-process-small-files"


def _small_file(ctx: Context, f: FileTotals) -> bool:
    a = f.app
    if uses_mpiio(a) or ctx.procs(f) != 1 or v(a, "POSIX_OPENS", "STDIO_OPENS") == 0:
        return False
    touched = v(a, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN") > 0 or v(a, "POSIX_UNLINKS", "POSIX_RENAMES") > 0
    return touched and max(extent(a, "WRITTEN"), extent(a, "READ")) <= th.SMALL_FILE_BYTES


def check(ctx: Context, files: list[FileTotals]) -> list[Finding]:
    chosen = [f for f in files if _small_file(ctx, f)]
    # a pattern of directories: a lone small file elsewhere is another case (small-writes, say)
    per_dir: dict[str, int] = defaultdict(int)
    for f in chosen:
        per_dir[dirname(f.path)] += 1
    chosen = [f for f in chosen if per_dir[dirname(f.path)] >= th.SMALL_FILES_PER_DIR]
    if len(chosen) < th.SMALL_FILES_MIN:
        return []
    done = [f for f in chosen if staged(f)]
    todo = [f for f in chosen if not staged(f)] or done
    cost = sum(io_time(f.app) for f in todo)
    opens = v_sum(todo, "POSIX_OPENS", "STDIO_OPENS")
    mt, wt = sum(meta_time(f.app) for f in todo), v_sum(todo, "POSIX_F_WRITE_TIME", "STDIO_F_WRITE_TIME")
    nbytes = v_sum(todo, "POSIX_BYTES_WRITTEN", "STDIO_BYTES_WRITTEN")
    writers = set().union(*(ctx.writers(f) for f in todo))
    unl, ren = v_sum(todo, "POSIX_UNLINKS"), v_sum(todo, "POSIX_RENAMES")
    in_effect = todo is done
    text = (f"{n(len(todo))} files of at most {human_bytes(th.SMALL_FILE_BYTES)}, each used by one process "
            f"({n(len(writers))} process{'es' if len(writers) != 1 else ''} in all): {n(opens)} opens, "
            f"{human_bytes(nbytes)} written"
            + (f", {n(unl)} unlinks" if unl else "") + (f", {n(ren)} renames" if ren else "")
            + f"; {secs(mt)} in metadata calls and {secs(wt)} in writes")
    if in_effect:
        text += "; stage mode is in effect (the file system saw each file only after the program closed it)"
    elif done:
        text += f"; {n(len(done))} more were already staged"
    f = Finding(ID, [x.path for x in todo], cost, "stage", text,
                {"files": len(todo), "POSIX_OPENS": v_sum(todo, "POSIX_OPENS"),
                 "STDIO_OPENS": v_sum(todo, "STDIO_OPENS"), "POSIX_BYTES_WRITTEN": v_sum(todo, "POSIX_BYTES_WRITTEN"),
                 "POSIX_UNLINKS": unl, "POSIX_RENAMES": ren, "POSIX_F_META_TIME": v_sum(todo, "POSIX_F_META_TIME"),
                 "POSIX_F_WRITE_TIME": v_sum(todo, "POSIX_F_WRITE_TIME")},
                in_effect=in_effect)
    f.layout = ["lfs setstripe -c 1 {dir}"]
    f.hints = ["Lustre 2.11 or later: Data-on-MDT keeps files this small on the metadata server "
               "(lfs setstripe -E 1M -L mdt -E -1 -c 1 DIR, on an empty directory)",
               "in the code: fewer, larger files (one file per process per output step, or a shared file)"]
    if not in_effect:
        f.gain = gain(ctx, todo, cost,
                      f"the {secs(cost)} the program spent creating, writing and closing these files; in stage "
                      "mode close returns once the file is on the node-local tier and background drainers "
                      "publish it (the tier's own, local cost is not subtracted)")
    return [f]
