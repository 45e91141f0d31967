"""Run settings beyond the mode: sizes, per-path policy, and the TOML file
that can hold them (``sluice run --config FILE`` or ``SLUICE_CONFIG``).

Everything ends as SLUICE_* environment variables, the library's only
input; this module validates first so that a bad value is one clear line
here rather than a default silently used in every process.

    # sluice.toml
    mode = "buffer"
    paths = ["/scratch/run42"]
    [buffer]
    size = "8M"          # write-behind unit
    readahead = "4M"     # 0: no read-ahead
    memory = "512M"      # cap per process
    [policy]
    "/scratch/run42/input" = "profile"
"""

from __future__ import annotations

from pathlib import Path

from sluice.errors import UserError

from sluice.generated import MODES as _MODE_HELP
from sluice.generated import SETTINGS, Setting

MODES = tuple(_MODE_HELP)

# Settings `sluice run` handles itself (lists, the job, messages); every
# other setting with a flag or TOML key is handled alike, from the table.
SPECIAL = {"SLUICE_MODE", "SLUICE_POLICY", "SLUICE_PATHS", "SLUICE_LOG_DIR", "SLUICE_JOB_ID", "SLUICE_QUIET"}
# Settings that are paths: made absolute, since the program may chdir.
PATH_SETTINGS = {"SLUICE_TIER"}


def generic_settings() -> list[Setting]:
    return [s for s in SETTINGS if s.env not in SPECIAL and (s.flag or s.toml)]


_SHIFTS = {"": 0, "k": 10, "m": 20, "g": 30}


def parse_size(text: str | int, what: str) -> int:
    """'4M' -> 4194304; the library's K/M/G suffixes (powers of 1024)."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    number = str(text).strip()
    suffix = number[-1:].lower() if number[-1:].lower() in ("k", "m", "g") else ""
    digits = number[:len(number) - len(suffix)].rstrip()
    if not (digits.isascii() and digits.isdigit()):
        raise UserError(f"{what}: '{text}' is not a size (a number with an optional K, M or G suffix)")
    return int(digits) << _SHIFTS[suffix]


def parse_policy_item(item: str) -> tuple[str, str]:
    """'PREFIX=MODE' -> (absolute prefix, mode)."""
    prefix, sep, mode = item.rpartition("=")
    if not sep or not prefix or mode not in MODES:
        raise UserError(f"--policy '{item}' is not PREFIX=MODE with MODE one of {', '.join(MODES)}")
    if "," in prefix:
        raise UserError(f"--policy '{item}': a prefix cannot contain a comma")
    return str(Path(prefix).absolute()), mode


def setting_value(s: Setting, value: object, where: str) -> str:
    """A value from the command line or a TOML file, checked as the library
    would read it, as the environment variable's text."""
    if s.type == "BOOL":
        if isinstance(value, bool):
            return "1" if value else "0"
        text = str(value).strip().lower()
        if text in ("1", "yes", "true"):
            return "1"
        if text in ("0", "no", "false"):
            return "0"
        raise UserError(f"{where}: '{value}' is not true or false")
    if s.type == "INT":
        return str(parse_size(value if isinstance(value, int) else str(value), where))
    text = str(value)
    if s.env in PATH_SETTINGS and text:
        text = str(Path(text).absolute())
    return text


class RunSettings:
    # (a plain class: dataclasses loads inspect, which `sluice run` would
    # otherwise pay for at every start)
    def __init__(self) -> None:
        self.mode = "profile"
        self.paths: list[str] = []
        self.policy: list[tuple[str, str]] = []
        self.values: dict[str, str] = {}   # SLUICE_* -> text, from the table's settings

    def env(self) -> dict[str, str]:
        """The SLUICE_* variables these settings set (besides mode and paths)."""
        out = dict(self.values)
        if self.policy:
            out["SLUICE_POLICY"] = ",".join(f"{p}={m}" for p, m in self.policy)
        return out


def load_config(path: str | Path) -> RunSettings:
    """Settings from a TOML file; every problem is one UserError line."""
    import tomllib   # here: most runs have no file, and `sluice run` starts before the program

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise UserError(f"cannot read the configuration {p}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML: {e}") from None
    except UnicodeDecodeError:
        raise UserError(f"{p}: not a text file") from None
    by_key = {s.toml: s for s in generic_settings() if s.toml}
    sections = {k.split(".")[0] for k in by_key if "." in k}
    known = {"mode", "paths", "policy"} | {k for k in by_key if "." not in k} | sections
    unknown = sorted(set(data) - known)
    if unknown:
        raise UserError(f"{p}: unknown setting '{unknown[0]}' (known: {', '.join(sorted(known))})")
    s = RunSettings()
    mode = data.get("mode", "profile")
    if mode not in MODES:
        raise UserError(f"{p}: mode '{mode}' is not one of {', '.join(MODES)}")
    s.mode = mode
    paths = data.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(x, str) for x in paths):
        raise UserError(f"{p}: paths must be a list of strings")
    s.paths = paths
    for key, value in data.items():
        if key in sections:
            if not isinstance(value, dict):
                raise UserError(f"{p}: [{key}] must be a table")
            inner = sorted(k.split(".", 1)[1] for k in by_key if k.startswith(key + "."))
            for sub, v in value.items():
                if f"{key}.{sub}" not in by_key:
                    raise UserError(f"{p}: unknown setting '{key}.{sub}' (known: {', '.join(inner)})")
                st = by_key[f"{key}.{sub}"]
                s.values[st.env] = setting_value(st, v, f"{p}: {key}.{sub}")
        elif key in by_key:
            s.values[by_key[key].env] = setting_value(by_key[key], value, f"{p}: {key}")
    pol = data.get("policy", {})
    if not isinstance(pol, dict):
        raise UserError(f"{p}: [policy] must be a table of \"PREFIX\" = \"MODE\"")
    s.policy = [parse_policy_item(f"{k}={v}") for k, v in pol.items()]
    return s
