"""The farm's node-local directory, and shared read-only inputs copied into
it once per node.

The directory (`--local-dir`, default /dev/shm/sluice-farm-UID) is private
as a stage tier is: 0700, owned by the user, never a symbolic link. Inside:

  inputs/DIGEST/NAME   a copy of a shared input, DIGEST from its path, size,
                       modification time and inode, so a changed input is
                       copied again and an unchanged one is reused by every
                       task, rank and later farm on the node
  tiers/KEY.JOB.N.A/   the stage tier of attempt A of task N of farm JOB, KEY
                       the task's identity (its command and directory:
                       journal.task_key)
  out/JOB.N.A.out|err  what the attempt printed, until it ends
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from pathlib import Path

from sluice.errors import UserError
from sluice.stage.tier import check_private, mkdir_private, open_failure


def default_local_dir() -> Path:
    return Path(f"/dev/shm/sluice-farm-{os.getuid()}")


def open_local_dir(path: str | Path | None) -> Path:
    """The checked private directory, created if missing, with its subdirectories."""
    root = Path(os.path.abspath(path or default_local_dir()))
    mkdir_private(root)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise UserError(f"refusing the farm's local directory {root}: {open_failure(root, e)}") from None
    try:
        st = os.fstat(fd)
        try:
            check_private(root, st)
        except UserError as e:
            raise UserError(str(e).replace("refusing tier", "refusing the farm's local directory")) from None
        for sub in ("inputs", "tiers", "out"):
            mkdir_private(sub, dir_fd=fd)
    finally:
        os.close(fd)
    return root


def localize(inputs: list[str], local_dir: Path) -> dict[str, str]:
    """Copy each shared input to the node once; returns BASENAME -> local path."""
    copies: dict[str, str] = {}
    for name in inputs:
        src = Path(os.path.abspath(name))
        try:
            st = src.stat()
        except OSError as e:
            raise UserError(f"cannot read the input {name}: {e.strerror}") from None
        base = src.name
        if base in copies:
            raise UserError(f"two inputs named {base}: give inputs distinct base names")
        digest = hashlib.sha256(f"{src}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}".encode()).hexdigest()[:16]
        dest = local_dir / "inputs" / digest / base
        _copy_once(src, dest)
        copies[base] = str(dest)
    return copies


def _copy_once(src: Path, dest: Path) -> None:
    """Copy under a node-wide lock, so ranks on one node copy it once between them."""
    lock = os.open(dest.parent.parent / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if dest.exists():
            return
        dest.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        try:
            if src.is_dir():
                shutil.copytree(src, tmp, symlinks=True)
            else:
                shutil.copy2(src, tmp)
            os.rename(tmp, dest)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else _unlink(tmp)
            raise UserError(f"cannot copy the input {src} to {dest.parent}: {e.strerror or e}") from None
    finally:
        os.close(lock)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
