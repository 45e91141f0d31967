"""`sluice advise` on the terminal: the findings, most costly first, then one
policy for the whole job."""

from __future__ import annotations

import textwrap

from sluice.advise import auto_line, fix_of, job_times, plan
from sluice.advise.fix import program_command, run_line, toml_snippet
from sluice.advise.counters import secs
from sluice.advise.finding import Finding
from sluice.report.model import Job

WIDTH = 100


def printable(s: str) -> str:
    """Control characters made visible, as the report shows paths."""
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else {"\n": "\\n", "\t": "\\t"}.get(
        c, f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}") for c in s)


MAX_PATHS = 8


def _wrap(label: str, text: str, indent: int = 4) -> list[str]:
    head = " " * indent + (f"{label}: " if label else "- ")
    return textwrap.wrap(printable(text), width=WIDTH, initial_indent=head, subsequent_indent=" " * len(head),
                         break_long_words=False, break_on_hyphens=False) or [head.rstrip()]


def render(job: Job, findings: list[Finding], fs_profile: str | None = None) -> str:
    T, P = job_times(job)
    modes = ", ".join(sorted({l.info.get("mode", "?") for l in job.logs}))
    out = [f"sluice advise: job {printable(job.job_id)}",
           f"  processes: {job.processes}   I/O time: {secs(T)} (summed over processes"
           + (f", {100 * T / P:.0f} % of their run time" if P > 0 else "") + f")   mode: {modes}"]
    if job.partial:
        out.append("  PARTIAL: some files were folded into '<other files>'; their I/O counts in the time but "
                   "not in any finding")
    if not findings:
        out += ["", "No findings: the job recorded no file I/O to judge."]
        return "\n".join(out) + "\n"
    high = sum(1 for f in findings if f.severity == "high")
    out += ["", f"{len(findings)} finding{'s' if len(findings) != 1 else ''}, most costly first"
            + (f" ({high} high)" if high else "") + ":"]
    command = program_command(job)
    for i, f in enumerate(findings, 1):
        fix = fix_of(f, command)
        out += ["", f"{i}. {f.id} [{f.severity}]: {secs(f.cost)}, {100 * f.share:.0f} % of the I/O time"]
        shown = f.paths[:MAX_PATHS]
        more = f" and {len(f.paths) - MAX_PATHS} more" if len(f.paths) > MAX_PATHS else ""
        nfiles = f" ({len(f.files):,} file{'s' if len(f.files) != 1 else ''})"
        out += _wrap("paths", ", ".join(shown) + more + nfiles)
        out += _wrap("evidence", f.text)
        mode = f.mode + ((" (in effect, in part)" if f.partial else " (already in effect)") if f.in_effect else
                         " (in effect, did not act)" if f.had_mode and not f.policy_paths else
                         f" (in effect for {len(f.had_mode):,} of the files, did not act)" if f.had_mode else "")
        if f.mode == "profile":
            mode += " (no sluice mode helps; keep profiling)" if f.id != "nothing-to-gain" else ""
        out += _wrap("mode", mode)
        st = fix["settings"]
        if "command" in st:
            out.append("    run:    " + printable(st["command"]))
            out.append("    sluice.toml:")
            out += [("      " + printable(line)).rstrip() for line in st["toml"].splitlines()]
        for cmd in fix["layout"]:
            out.append("    layout: " + printable(cmd))
        if "mpi_info" in st:
            out += _wrap("MPI_Info", ", ".join(f"{k}={v}" for k, v in st["mpi_info"].items()))
        for h in st.get("hints", []):
            out += _wrap("", h)
        if f.gain:
            out += _wrap("expected gain", f"up to {secs(f.gain['seconds'])} "
                         f"({100 * f.gain['share_of_io_time']:.0f} % of the I/O time): {f.gain['how']}")
    rules = plan(findings)
    out.append("")
    if rules:
        out.append("For the whole job (each prefix in the mode of its most costly finding):")
        out.append("  " + printable(run_line(rules, command)))
        out.append("  sluice.toml:")
        sections: dict[str, dict[str, str]] = {}
        for f in findings:
            if f.mode != "profile" and not f.in_effect:
                for k, table in f.toml.items():
                    sections.setdefault(k, {}).update(table)
        out += [("    " + printable(line)).rstrip() for line in toml_snippet(rules, sections).splitlines()]
        auto = auto_line(job, findings, fs_profile)
        if auto:
            out += textwrap.wrap("Or, naming no paths: --mode auto stages the files the program creates, buffers "
                                 "the ones it updates or reads and aggregates MPI-IO writes, which is each "
                                 "finding's fix here:", width=WIDTH)
            out.append("  " + printable(auto))
    elif any(f.in_effect for f in findings):
        out.append("For the whole job: no mode to add; the modes of this run already act on the files of "
                   + ", ".join(dict.fromkeys(f.id for f in findings if f.in_effect)) + ".")
    elif any(f.had_mode for f in findings):
        out.append("For the whole job: no mode to add; the modes this run had for the files of "
                   + ", ".join(dict.fromkeys(f.id for f in findings if f.had_mode))
                   + " did not act, for the reasons each finding gives.")
    else:
        out.append("For the whole job: no mode to change; profile mode (the default) as it is.")
    return "\n".join(out) + "\n"
