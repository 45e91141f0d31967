"""`sluice run`: run a command under libsluice and exit with its status.

It starts before the program and waits for it, in every process of a job,
so it loads only what it needs: plain arguments are read by quick_parse()
without click (click makes the command for --help and errors), the
stage-mode modules are loaded only in stage mode, and no report, advise or
plotting machinery ever (tests/python/test_cli_startup.py checks).
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time

from sluice.cli.output import next_steps, shown_dir
from sluice.errors import UserError
from sluice.generated import MODES as MODE_HELP
from sluice.runner import job_id_from_env, mpi_rank, new_job_id, sluice_env
from sluice.settings import MODES, RunSettings, generic_settings, load_config, parse_policy_item, setting_value

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def _say(message: str) -> None:
    """One line of sluice's own on stderr (the program's output is on stdout)."""
    print(message, file=sys.stderr, flush=True)


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
        _say(f"sluice: error: command not found: {cmd[0]}")
        return 127
    d = _prepare_log_dir(log_dir)
    job = job_id or job_id_from_env() or new_job_id()
    extra = dict(extra_env or {})
    if quiet:
        extra["SLUICE_QUIET"] = "1"
    env = sluice_env(dict(os.environ), mode=mode, paths=list(paths or []), log_dir=d, job_id=job,
                     extra=extra)
    _place_tier(env, quiet)
    started_ns = time.time_ns()
    drainer = None
    # (--detach: the processes leave their files on the tier for `sluice drain`)
    if _stages(env) and env.get("SLUICE_STAGE_DETACH", "0") != "1":
        from sluice.stage import job as stage_job
        drainer = stage_job.start(env, _say)
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
            _say(f"sluice: error: cannot run {cmd[0]}: {e.strerror}")
            return 126 if isinstance(e, PermissionError) else 127
        for signum in early:
            forward(signum, None)
        rc = child[0].wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if drainer and not child:
            drainer.finish()
    if drainer:
        _drained(drainer, env, quiet)

    rank = mpi_rank()
    if not quiet and (rank is None or rank == 0):
        n = _count_logs(d, job)
        _say(f"sluice: job {job}: {n} log{'s' if n != 1 else ''} in {shown_dir(d)}/")
        if n:
            _say(next_steps(d))
    unpublished = _still_staged(env, started_ns, rc, quiet)
    _announce_leftovers(env, d)
    if rc < 0:
        return 128 - rc
    if rc == 0 and unpublished:
        return EXIT_UNPUBLISHED
    return rc


def _place_tier(env: dict[str, str], quiet: bool) -> None:
    """Stage and auto modes: the tier goes in SLUICE_TIER for the program
    and the job's drainer (--tier, else the default place: /dev/shm, else a
    local disk), with one line when it is not in memory, said by the first
    rank only and not with -q (docs/stage.md, "The tier")."""
    if _stages(env):
        from sluice.stage import placement
        placement.place(env, _say, quiet=quiet or mpi_rank() not in (None, 0))


def _announce_leftovers(env: dict[str, str], log_dir: str) -> None:
    """Files of this node still on its tier (--detach, or left by processes
    that ended without publishing): said in the log directory, which the
    other nodes share, so that `sluice wait` there waits for them
    (sluice.stage.announce)."""
    if not _stages(env):
        return
    from sluice.paths import default_tier_path, tier_journal_empty
    root = default_tier_path(env)
    empty = tier_journal_empty(root)
    if empty and not os.path.isdir(os.path.join(root, "announced")):
        return  # nothing staged, nothing said before: the stage modules need not load
    from sluice.stage import announce
    from sluice.stage.tier import UnsafeTier, open_tier

    try:
        tier = open_tier(root)
        if tier is not None:
            # (everything published: an earlier run's markers are taken back)
            if empty:
                announce.refresh(tier)
            else:
                announce.announce(tier, log_dir)
    except (UnsafeTier, OSError) as e:
        _say(f"sluice: could not say in {log_dir} what the tier still holds: {e}")


def _stages(env: dict[str, str]) -> bool:
    """Whether this run may put files on the node-local tier."""
    return env.get("SLUICE_MODE") in STAGING_MODES or any(
        f"={m}" in env.get("SLUICE_POLICY", "") for m in STAGING_MODES)


def _drained(drainer, env: dict[str, str], quiet: bool) -> None:
    """The program ended: the job's drainer publishes what is left; say
    what it did."""
    summary = drainer.finish()
    if quiet or summary is None or not (summary.published or summary.removed):
        return
    line = (f"sluice: stage: {summary.published} file{'s' if summary.published != 1 else ''} "
            f"({summary.bytes / 1048576:.1f} MiB) published")
    if summary.wait_s >= 0.05:
        line += f", {summary.wait_s:.1f} s of it after the program ended"
    if summary.removed:
        line += (f"; {summary.removed} file{'s' if summary.removed != 1 else ''} never published: "
                 "removed on the node")
    _say(line)


def _count_logs(log_dir: str, job: str) -> int:
    prefix = _log_prefix(job)
    try:
        with os.scandir(log_dir) as it:
            return sum(1 for e in it if e.name.startswith(prefix) and e.name.endswith(".sluice"))
    except OSError:   # the program removed it, say
        return 0


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
    if not _stages(env):
        return False
    if env.get("SLUICE_STAGE_DETACH", "0") == "1":
        return False
    from sluice.paths import default_tier_path, tier_journal_empty
    if tier_journal_empty(default_tier_path(env)):
        return False   # everything published: the stage modules need not load
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
            _say(f"sluice: {_files(failed)} could not be published and "
                       f"stay{'' if len(failed) != 1 else 's'} on the tier {tier.root}: {_some_paths(failed)}")
            _say(f"sluice: sluice drain publishes {_them(failed)}{'' if abandoned else status}")
        if abandoned:
            owners = "its process" if len({e.pid for e in abandoned}) == 1 else "their processes"
            _say(f"sluice: {_files(abandoned)} the program wrote {'are' if len(abandoned) != 1 else 'is'} "
                       f"still on the tier {tier.root}, not published when {owners} ended: "
                       f"{_some_paths(abandoned)}")
            still_open = any(e.state == "open" for e in abandoned)
            _say(f"sluice: sluice recover {tier.root} publishes {_them(abandoned)}"
                       f"{' (one still open at the end as NAME.sluice-incomplete)' if still_open else ''}{status}")
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
    if not zero:
        return f"{head}{on}"
    if on.count("(") > on.count(")"):   # "1: ... (a cost; 0: ...)"
        return f"{head}{on}; without it: {off}"
    return f"{head}{on} (without it: {off})"


# `sluice run`'s options, once: (flags, name, kind, metavar, help). kind:
# "flag" (no value), "value", "many" (repeatable), "mode" (one of MODES).
# Both the click command (help, and every error) and quick_parse() are made
# from it, and from the settings table for the rest.
OPTIONS = (
    (("--mode",), "mode", "mode", None,
     "What sluice does to the I/O: " + "; ".join(f"{m}: {h}" for m, h in MODE_HELP.items()) + "."),
    (("--config",), "config_file", "value", "FILE",
     "TOML file with the settings (docs/configuration.md lists its keys; options override it)."),
    (("--policy",), "policy", "many", "PREFIX=MODE", "Mode for paths under PREFIX (repeatable; the longest prefix wins)."),
    (("--path",), "paths", "many", "PREFIX", "Record only paths under PREFIX (repeatable; default: all but system paths)."),
    (("--fs",), "fs_profile", "value", "FS.json",
     "A file-system profile (sluice bench calibrate -o FS.json): on that file system, --mode auto and stage send "
     "a new file straight through from the first-write size the profile measured a staged write no cheaper at "
     "(docs/predict.md); elsewhere auto's --auto-large, and stage keeps every file on the tier."),
    (("--log-dir",), "log_dir", "value", None, "Where each process writes its log."),
    (("--job-id",), "job_id", "value", None, "Job identifier (default: the launcher's, else a new one)."),
    (("-q", "--quiet"), "quiet", "flag", None, "No messages from sluice."),
)


def _defaults() -> dict[str, object]:
    values: dict[str, object] = {
        "mode": None, "config_file": os.environ.get("SLUICE_CONFIG"), "fs_profile": None, "policy": (), "paths": (),
        "log_dir": os.environ.get("SLUICE_LOG_DIR", "sluice-logs"), "job_id": None, "quiet": False}
    values.update((_generic_name(s), None) for s in generic_settings() if s.flag)
    return values


def _generic_name(s) -> str:
    return s.env.removeprefix("SLUICE_").lower()


def quick_parse(args: list[str]) -> dict[str, object] | None:
    """The options and command of `sluice run ARGS` as the click command
    would give them, without loading click (a few tens of milliseconds per
    process of a job). None when click has to see the arguments: --help,
    an unknown option, a missing or bad value, no command."""
    kinds = {flag: (name, kind) for flags, name, kind, _, _ in OPTIONS for flag in flags}
    kinds.update({s.flag: (_generic_name(s), "flag" if s.type == "BOOL" else "value")
                  for s in generic_settings() if s.flag})
    values = _defaults()
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--"):
        name, eq, inline = args[i].partition("=") if args[i].startswith("--") else (args[i], "", "")
        if name not in kinds:
            return None
        dest, kind = kinds[name]
        if kind == "flag":
            if eq:
                return None
            values[dest] = True
        else:
            if not eq:
                i += 1
                if i == len(args):
                    return None
            value = inline if eq else args[i]
            if kind == "mode" and value not in MODES:
                return None
            values[dest] = values[dest] + (value,) if kind == "many" else value   # type: ignore[operator]
        i += 1
    cmd = args[i + 1:] if i < len(args) and args[i] == "--" else args[i:]
    if not cmd:
        return None
    values["cmd"] = tuple(cmd)
    return values


def run_from_options(mode: str | None, config_file: str | None, policy: tuple[str, ...], paths: tuple[str, ...],
                     log_dir: str, job_id: str | None, quiet: bool, cmd: tuple[str, ...],
                     fs_profile: str | None = None, **generic: object) -> int:
    """`sluice run` with its parsed options; the exit status."""
    s = load_config(config_file) if config_file else RunSettings()
    if mode:
        s.mode = mode
    if paths:
        s.paths = list(paths)
    s.policy += [parse_policy_item(p) for p in policy]
    for setting in generic_settings():
        value = generic.get(_generic_name(setting))
        if value is not None:
            s.values[setting.env] = setting_value(setting, value, setting.flag)
    if fs_profile:
        auto_large_by_profile(s, fs_profile, quiet)
    return run(list(cmd), mode=s.mode, paths=s.paths, log_dir=log_dir, job_id=job_id, quiet=quiet,
               extra_env=s.env())


def auto_large_by_profile(s: RunSettings, fs_profile: str, quiet: bool) -> None:
    """--fs: auto's first-write size on the profiled file system by the
    model (sluice.autolarge), as the first SLUICE_DIRECT_FROM rule (the
    user's own, given too, come after it and win for the same prefix);
    said once, by the first rank, when some path runs in auto or stage mode
    (stage, too, sends a file straight through by it)."""
    from sluice import autolarge
    a = autolarge.auto_large_of(autolarge.read_profile(fs_profile))
    if a is None:
        raise UserError(f"{fs_profile} holds no timings of staged against direct writes (made by an older "
                        "sluice bench calibrate): calibrate again to use it with --fs")
    own = s.values.get("SLUICE_DIRECT_FROM", "")
    s.values["SLUICE_DIRECT_FROM"] = ",".join(x for x in (a.rule(), own) if x)
    if a.nothing_to_gain and s.mode == "auto" and all(p != a.mount for p, _ in s.policy):
        s.policy.insert(0, (a.mount, "profile"))   # (the user's own rules still win where longer)
    if not quiet and mpi_rank() in (None, 0) and {"auto", "stage"} & {s.mode, *(m for _, m in s.policy)}:
        _say(f"sluice: {autolarge.describe(a)}")


HELP = """Run CMD unchanged under sluice and record its I/O on both sides.

    \b
    sluice run -- ./sim input.nml
    mpirun -np 4 sluice run -- ./sim        (one log per rank)
    sluice run -- mpirun -np 4 ./sim        (the same)
    """


@functools.cache
def _click_command():
    """The click command, made from OPTIONS and the settings table."""
    import click

    def command(**options: object) -> None:
        sys.exit(run_from_options(**options))   # type: ignore[arg-type]

    command.__doc__ = HELP
    f = click.argument("cmd", nargs=-1, type=click.UNPROCESSED, required=True)(command)
    for s in reversed(generic_settings()):
        if not s.flag:
            continue
        if s.type == "BOOL":
            f = click.option(s.flag, _generic_name(s), is_flag=True, default=None, help=flag_help(s.help))(f)
        else:
            metavar = ("SIZE" if s.default[-1:] in ("K", "M", "G") else "N") if s.type == "INT" else "VALUE"
            f = click.option(s.flag, _generic_name(s), default=None, metavar=metavar,
                             help=f"{s.help} [{s.default or 'none'}]")(f)
    for flags, name, kind, metavar, helptext in reversed(OPTIONS):
        default = (lambda n=name: _defaults()[n]) if name in ("config_file", "log_dir") else None
        if kind == "flag":
            f = click.option(*flags, name, is_flag=True, help=helptext)(f)
        else:
            f = click.option(*flags, name, multiple=kind == "many", metavar=metavar, default=default,
                             type=click.Choice(MODES) if kind == "mode" else None, help=helptext,
                             show_default="sluice-logs" if name == "log_dir" else False)(f)
    return click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})(f)


def __getattr__(name: str) -> object:
    # `command`, the verb's click command (cli/__init__.py), made when asked
    # for: `sluice run`'s quick path never loads click
    if name == "command":
        return _click_command()
    raise AttributeError(name)
