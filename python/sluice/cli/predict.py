"""`sluice predict`: what each mode would make of a job, on a file system."""

from __future__ import annotations

import json
from pathlib import Path

import click


def _n(x: float) -> str:
    return f"{x:,.0f}"


@click.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--fs", "fs_profile", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The file system's profile (sluice bench calibrate); without it, built-in figures for its type.")
@click.option("--scale", type=click.IntRange(1), help="Predict for this many processes, each repeating the "
              "logged pattern (weak scaling).")
@click.option("--nodes", type=click.IntRange(1), help="The nodes the (scaled) job runs on: acb's aggregators, "
              "one a node, and its rules for ranks on several hosts (default: the logged hosts).")
@click.option("--plan", "plan_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a `sluice run --config` file: auto, with each file the model finds cheaper in another "
              "mode put in that mode.")
@click.option("--job", "job_id", help="The job to read when the inputs hold several.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: file_system, job, modes.")
@click.option("--no-replay", is_flag=True, help="Buffer mode from the counters alone, even where the logs hold a "
              "trace (the replay runs the traced calls through buffer mode on scratch files in /dev/shm).")
def command(inputs: tuple[Path, ...], fs_profile: Path | None, scale: int | None, nodes: int | None,
            plan_out: Path | None, job_id: str | None, as_json: bool, no_replay: bool) -> None:
    """Predict, from a profile-mode run's logs, the calls and bytes each mode
    would send to the file system and the I/O time they would take there
    (docs/predict.md)."""
    from sluice import predict as pr
    from sluice.report.model import load_job

    doc = pr.predict(load_job(list(inputs), job_id), pr.load(fs_profile), scale, replay=not no_replay,
                     nodes=nodes, every_file=plan_out is not None)
    if plan_out is not None:
        text, left = pr.plan(doc)
        try:
            plan_out.write_text(text)
        except OSError as e:
            raise click.ClickException(f"cannot write the plan {plan_out}: {e.strerror}") from None
    doc["choice"].pop("all_files", None)
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    click.echo(render(doc), nl=False)


def render(doc: dict) -> str:
    """The prediction as text: the job, the file system, a row per mode."""
    lines = []
    j = doc["job"]
    lines.append(f"job {j['id']}: {j['processes']} process(es), {j['files']} file(s)"
                 + (f"; predicted for {j['predicted_for']} processes" if j["predicted_for"] != j["processes"] else ""))
    lines.append(f"file system: {doc['file_system']['name']}")
    if j.get("replay_failed"):
        lines.append(f"buffer mode: from the counters; the trace's replay gave nothing: {j['replay_failed']}")
    elif j.get("replayed_files"):
        lines.append(f"buffer mode: {j['replayed_files']} file(s) replayed from the trace, the rest from the counters")
    else:
        lines.append("buffer mode: from the counters (run with --trace N for a replay of the calls)")
    rows = [("mode", "writes", "reads", "metadata ops", "I/O time")]
    for mode, m in doc["modes"].items():
        if not m["modelled"]:
            rows.append((mode, "", "", "", f"({m['why']})"))
            continue
        fs = m["fs"]
        rows.append((mode, _n(fs["POSIX_WRITES"] + fs["STDIO_WRITES"]), _n(fs["POSIX_READS"] + fs["STDIO_READS"]),
                     _n(m["metadata_ops"]), f"{m['io_time_s']:.3g} s"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 or not c or c.startswith("(") else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    c = doc.get("choice")
    if c and c["files_by_mode"]:
        picks = ", ".join(f"{n} {m}" for m, n in sorted(c["files_by_mode"].items(), key=lambda x: -x[1]))
        lines.append(f"each file in its cheapest mode by the model ({picks}): {c['io_time_s']:.3g} s "
                     f"(auto's rules: {doc['modes']['auto']['io_time_s']:.3g} s)")
    return "\n".join(lines) + "\n"
