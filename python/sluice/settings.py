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

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sluice.errors import UserError

MODES = ("profile", "buffer", "stage", "acb")

_SIZE = re.compile(r"^\s*(\d+)\s*([kKmMgG]?)\s*$")


def parse_size(text: str | int, what: str) -> int:
    """'4M' -> 4194304; the library's K/M/G suffixes (powers of 1024)."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise UserError(f"{what}: '{text}' is not a size (a number with an optional K, M or G suffix)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def parse_policy_item(item: str) -> tuple[str, str]:
    """'PREFIX=MODE' -> (absolute prefix, mode)."""
    prefix, sep, mode = item.rpartition("=")
    if not sep or not prefix or mode not in MODES:
        raise UserError(f"--policy '{item}' is not PREFIX=MODE with MODE one of {', '.join(MODES)}")
    if "," in prefix:
        raise UserError(f"--policy '{item}': a prefix cannot contain a comma")
    return str(Path(prefix).absolute()), mode


@dataclass
class RunSettings:
    mode: str = "profile"
    paths: list[str] = field(default_factory=list)
    buffer_size: int | None = None
    readahead: int | None = None
    buffer_memory: int | None = None
    policy: list[tuple[str, str]] = field(default_factory=list)
    tier: str | None = None
    detach: bool = False
    stage_delay_ms: int | None = None

    def env(self) -> dict[str, str]:
        """The SLUICE_* variables these settings set (besides mode and paths)."""
        out: dict[str, str] = {}
        if self.buffer_size is not None:
            out["SLUICE_BUFFER_SIZE"] = str(self.buffer_size)
        if self.readahead is not None:
            out["SLUICE_READAHEAD"] = str(self.readahead)
        if self.buffer_memory is not None:
            out["SLUICE_BUFFER_MEMORY"] = str(self.buffer_memory)
        if self.tier:
            out["SLUICE_TIER"] = str(Path(self.tier).absolute())
        if self.detach:
            out["SLUICE_STAGE_DETACH"] = "1"
        if self.stage_delay_ms is not None:
            out["SLUICE_STAGE_DELAY_MS"] = str(self.stage_delay_ms)
        if self.policy:
            out["SLUICE_POLICY"] = ",".join(f"{p}={m}" for p, m in self.policy)
        return out


def load_config(path: str | Path) -> RunSettings:
    """Settings from a TOML file; every problem is one UserError line."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise UserError(f"cannot read the configuration {p}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML: {e}") from None
    except UnicodeDecodeError:
        raise UserError(f"{p}: not a text file") from None
    known = {"mode", "paths", "buffer", "policy", "stage"}
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
    buf = data.get("buffer", {})
    if not isinstance(buf, dict):
        raise UserError(f"{p}: [buffer] must be a table")
    for key in buf:
        if key not in ("size", "readahead", "memory"):
            raise UserError(f"{p}: unknown setting 'buffer.{key}' (known: size, readahead, memory)")
    if "size" in buf:
        s.buffer_size = parse_size(buf["size"], f"{p}: buffer.size")
    if "readahead" in buf:
        s.readahead = parse_size(buf["readahead"], f"{p}: buffer.readahead")
    if "memory" in buf:
        s.buffer_memory = parse_size(buf["memory"], f"{p}: buffer.memory")
    stage = data.get("stage", {})
    if not isinstance(stage, dict) or any(k not in ("tier", "detach", "delay_ms") for k in stage):
        raise UserError(f"{p}: [stage] takes tier, detach and delay_ms")
    s.tier = stage.get("tier")
    s.detach = bool(stage.get("detach", False))
    if "delay_ms" in stage:
        s.stage_delay_ms = int(stage["delay_ms"])
    pol = data.get("policy", {})
    if not isinstance(pol, dict):
        raise UserError(f"{p}: [policy] must be a table of \"PREFIX\" = \"MODE\"")
    s.policy = [parse_policy_item(f"{k}={v}") for k, v in pol.items()]
    return s
