"""`sluice run`: run a command under libsluice and exit with its status.

It starts before the program and waits for it, so it imports only what it
needs to: no report, advise or plotting machinery, and the stage-mode
modules only in stage mode (tests/python/test_cli_startup.py checks).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import click

from sluice.cli.output import next_steps, shown_dir
from sluice.errors import UserError
from sluice.generated import MODES as MODE_HELP
from sluice.runner import job_id_from_env, mpi_rank, new_job_id, sluice_env
from sluice.settings import MODES, RunSettings, generic_settings, load_config, parse_policy_item, setting_value

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def _prepare_log_dir(log_dir: str) -> str:
    d = os.path.abspath(log_dir)
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create the log directory {d}: {e.strerror}") from None
    if not os.access(d, os.W_OK | os.X_OK):
        raise UserError(f"the log directory {d} is not writable")
    return d


def _on_path(name: str) -> bool:
    """An executable called name in a directory of $PATH (what the exec will find)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        f = os.path.join(d or ".", name)
        if os.access(f, os.X_OK) and not os.path.isdir(f):
            return True
    return False


def run(cmd: list[str], mode: str = "profile", paths: list[str] | None = None,
        log_dir: str = "sluice-logs", job_id: str | None = None, quiet: bool = False,
        extra_env: dict[str, str] | None = None) -> int:
    """Run cmd under sluice; returns its exit status (128+N if killed by signal N)."""
    if not cmd:
        raise UserError("no command given: sluice run [OPTIONS] -- CMD [ARGS...]")
    if "/" not in cmd[0] and not _on_path(cmd[0]):
        click.echo(f"sluice: error: command not found: {cmd[0]}", err=True)
        return 127
    d = _prepare_log_dir(log_dir)
    job = job_id or job_id_from_env() or new_job_id()
    extra = dict(extra_env or {})
    if quiet:
        extra["SLUICE_QUIET"] = "1"
    env = sluice_env(dict(os.environ), mode=mode, paths=list(paths or []), log_dir=d, job_id=job,
                     extra=extra)
    started_ns = time.time_ns()
    # The child gets the terminal's signals itself; these reach it when they
    # are sent to sluice alone (a batch system signalling the job step).
    # Installed before the child starts: a signal sent as soon as the
    # program is up must not end sluice instead; one that comes before the
    # child exists is delivered to it once it does.
    child: list[subprocess.Popen] = []
    early: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if not child:
            early.append(signum)
            return
        try:
            child[0].send_signal(signum)
        except ProcessLookupError:
            pass

    old = {s: signal.signal(s, forward) for s in _FORWARDED}
    try:
        try:
            child.append(subprocess.Popen(cmd, env=env))
        except OSError as e:
            click.echo(f"sluice: error: cannot run {cmd[0]}: {e.strerror}", err=True)
            return 126 if isinstance(e, PermissionError) else 127
        for signum in early:
            forward(signum, None)
        rc = child[0].wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)

    rank = mpi_rank()
    if not quiet and (rank is None or rank == 0):
        n = _count_logs(d, job)
        click.echo(f"sluice: job {job}: {n} log{'s' if n != 1 else ''} in {shown_dir(d)}/", err=True)
        if n:
            click.echo(next_steps(d), err=True)
    unpublished = _still_staged(env, started_ns, rc, quiet)
    if rc < 0:
        return 128 - rc
    if rc == 0 and unpublished:
        return EXIT_UNPUBLISHED
    return rc


def _count_logs(log_dir: str, job: str) -> int:
    prefix = _log_prefix(job)
    with os.scandir(log_dir) as it:
        return sum(1 for e in it if e.name.startswith(prefix) and e.name.endswith(".sluice"))


# `sluice run`'s own exit status when the program succeeded but some file it
# wrote could not be published (stage mode): EX_TEMPFAIL, the data is safe
# on the tier and `sluice drain` finishes it.
EXIT_UNPUBLISHED = 75
# Modes that put files on the node-local tier (auto stages what it creates).
STAGING_MODES = ("stage", "auto")


# Paths named when files are left on the tier; the rest are counted.
SHOWN_PATHS = 3


def _still_staged(env: dict[str, str], started_ns: int, rc: int, quiet: bool) -> bool:
    """Stage mode, not detached: say which files this run staged are still
    on the tier now that the program ended, and what publishes them: files
    the library could not publish, and files of processes that ended
    without publishing them (killed, or crashed). True if there are any."""
    if env.get("SLUICE_MODE") not in STAGING_MODES and not any(
            f"={m}" in env.get("SLUICE_POLICY", "") for m in STAGING_MODES):
        return False
    if env.get("SLUICE_STAGE_DETACH", "0") == "1":
        return False
    import socket

    from sluice.stage.scan import pending, process_state
    from sluice.stage.tier import UnsafeTier, default_tier, open_tier

    try:
        tier = open_tier(env.get("SLUICE_TIER") or default_tier())
    except UnsafeTier:
        return False
    host = socket.gethostname()
    # (a process still running is another job's on the node, or one of this
    # job's left behind: its files are its own to publish)
    left = [l.entry for l in pending(tier) if l.entry and l.entry.host == host and l.entry.created_ns >= started_ns
            and not tier.written_elsewhere(l.entry.id) and process_state(l.entry) != "running"]
    left.sort(key=lambda e: e.created_ns)
    failed = [e for e in left if e.error]        # the library tried, the file system said no
    abandoned = [e for e in left if not e.error]  # their process ended without publishing them
    if left and not quiet:
        status = f"; exit status {EXIT_UNPUBLISHED}" if rc == 0 else ""
        if failed:
            click.echo(f"sluice: {_files(failed)} could not be published and "
                       f"stay{'' if len(failed) != 1 else 's'} on the tier {tier.root}: {_some_paths(failed)}",
                       err=True)
            click.echo(f"sluice: sluice drain publishes {_them(failed)}{'' if abandoned else status}", err=True)
        if abandoned:
            owners = "its process" if len({e.pid for e in abandoned}) == 1 else "their processes"
            click.echo(f"sluice: {_files(abandoned)} the program wrote {'are' if len(abandoned) != 1 else 'is'} "
                       f"still on the tier {tier.root}, not published when {owners} ended: "
                       f"{_some_paths(abandoned)}", err=True)
            still_open = any(e.state == "open" for e in abandoned)
            click.echo(f"sluice: sluice recover {tier.root} publishes {_them(abandoned)}"
                       f"{' (one still open at the end as NAME.sluice-incomplete)' if still_open else ''}{status}",
                       err=True)
    return bool(left)


def _files(entries: list) -> str:
    return f"{len(entries)} file{'s' if len(entries) != 1 else ''}"


def _them(entries: list) -> str:
    return "them" if len(entries) != 1 else "it"


def _some_paths(entries: list) -> str:
    shown = ", ".join(e.path for e in entries[:SHOWN_PATHS])
    more = len(entries) - SHOWN_PATHS
    return shown + (f" and {more} more" if more > 0 else "")


def _log_prefix(job: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in job) + "_"


def flag_help(text: str) -> str:
    """A boolean setting's help ("[context: ]1: what it does; 0: what it does
    not") for a flag that takes no value: what the flag does, then what
    happens without it."""
    head, one, rest = text.partition("1: ")
    if not one:
        return text
    on, zero, off = rest.partition("; 0: ")
    return f"{head}{on}" + (f" (without it: {off})" if zero else "")


def _generic_options(f):
    """A `sluice run` option for every setting of the table with a flag
    (src/core/config.def), besides the ones written out below."""
    for s in reversed(generic_settings()):
        if not s.flag:
            continue
        name = s.env.removeprefix("SLUICE_").lower()
        if s.type == "BOOL":
            f = click.option(s.flag, name, is_flag=True, default=None, help=flag_help(s.help))(f)
        else:
            metavar = ("SIZE" if s.default[-1:] in ("K", "M", "G") else "N") if s.type == "INT" else "VALUE"
            f = click.option(s.flag, name, default=None, metavar=metavar,
                             help=f"{s.help} [{s.default or 'none'}]")(f)
    return f


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--mode", type=click.Choice(MODES), default=None,
              help="What sluice does to the I/O: " + "; ".join(f"{m}: {h}" for m, h in MODE_HELP.items()) + ".")
@click.option("--config", "config_file", default=lambda: os.environ.get("SLUICE_CONFIG"), metavar="FILE",
              help="TOML file with the settings (docs/configuration.md lists its keys; options override it).")
@click.option("--policy", "policy", multiple=True, metavar="PREFIX=MODE",
              help="Mode for paths under PREFIX (repeatable; the longest prefix wins).")
@click.option("--path", "paths", multiple=True, metavar="PREFIX",
              help="Record only paths under PREFIX (repeatable; default: all but system paths).")
@click.option("--log-dir", default=lambda: os.environ.get("SLUICE_LOG_DIR", "sluice-logs"),
              show_default="sluice-logs", help="Where each process writes its log.")
@click.option("--job-id", default=None, help="Job identifier (default: the launcher's, else a new one).")
@click.option("-q", "--quiet", is_flag=True, help="No messages from sluice.")
@_generic_options
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED, required=True)
def command(mode: str | None, config_file: str | None, policy: tuple[str, ...], paths: tuple[str, ...],
            log_dir: str, job_id: str | None, quiet: bool, cmd: tuple[str, ...], **generic: object) -> None:
    """Run CMD unchanged under sluice and record its I/O on both sides.

    \b
    sluice run -- ./sim input.nml
    mpirun -np 4 sluice run -- ./sim        (one log per rank)
    sluice run -- mpirun -np 4 ./sim        (the same)
    """
    s = load_config(config_file) if config_file else RunSettings()
    if mode:
        s.mode = mode
    if paths:
        s.paths = list(paths)
    s.policy += [parse_policy_item(p) for p in policy]
    for setting in generic_settings():
        value = generic.get(setting.env.removeprefix("SLUICE_").lower())
        if value is not None:
            s.values[setting.env] = setting_value(setting, value, setting.flag)
    sys.exit(run(list(cmd), mode=s.mode, paths=s.paths, log_dir=log_dir, job_id=job_id, quiet=quiet,
                 extra_env=s.env()))
