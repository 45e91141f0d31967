"""Darshan's record id of a name: Bob Jenkins' 64-bit hash (lookup8, level 0)
of the path's bytes, so that a file exported by sluice has the id a Darshan
run gives it, and one id in every module."""

from __future__ import annotations

import struct

import numpy as np

_M = (1 << 64) - 1
_BLOCK = struct.Struct("<3Q")
# (shift, left?) of each of the twelve steps of the mix, as (a, b, c) rotate.
_STEPS = ((43, False), (9, True), (8, False), (38, False), (23, True), (5, False),
          (35, False), (49, True), (11, False), (12, False), (18, True), (22, False))


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    v = [a, b, c]
    for i, (shift, left) in enumerate(_STEPS):
        x, y, z = i % 3, (i + 1) % 3, (i + 2) % 3
        v[x] = (v[x] - v[y] - v[z]) & _M
        v[x] ^= (v[z] << shift) & _M if left else v[z] >> shift
    return v[0], v[1], v[2]


def record_id(name: str | bytes) -> int:
    k = name.encode("utf-8", "surrogateescape") if isinstance(name, str) else name
    a = b = 0
    c = 0x9E3779B97F4A7C13
    whole = len(k) - len(k) % 24
    for off in range(0, whole, 24):
        x, y, z = _BLOCK.unpack_from(k, off)
        a, b, c = _mix((a + x) & _M, (b + y) & _M, (c + z) & _M)
    tail = k[whole:].ljust(23, b"\0")
    # the lowest byte of c holds the length; the tail's last 7 bytes go above it
    a = (a + int.from_bytes(tail[0:8], "little")) & _M
    b = (b + int.from_bytes(tail[8:16], "little")) & _M
    c = (c + len(k) + (int.from_bytes(tail[16:23], "little") << 8)) & _M
    return _mix(a, b, c)[2]


def _mix_columns(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """_mix of many (a, b, c) at once (uint64 arrays wrap as the C code's)."""
    v = [a, b, c]
    for i, (shift, left) in enumerate(_STEPS):
        x, y, z = i % 3, (i + 1) % 3, (i + 2) % 3
        v[x] = v[x] - v[y] - v[z]
        v[x] = v[x] ^ ((v[z] << np.uint64(shift)) if left else (v[z] >> np.uint64(shift)))
    return v[0], v[1], v[2]


def record_ids(names: list[str] | list[bytes]) -> np.ndarray:
    """record_id() of many names at once (uint64): for a job's thousands of files."""
    keys = [k.encode("utf-8", "surrogateescape") if isinstance(k, str) else k for k in names]
    n = len(keys)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    lens = np.fromiter((len(k) for k in keys), dtype=np.int64, count=n)
    width = int(lens.max()) // 24 * 24 + 24      # room for every whole block and a tail of up to 23 bytes
    mat = np.zeros((n, width), dtype=np.uint8)
    for i, k in enumerate(keys):
        mat[i, : len(k)] = np.frombuffer(k, dtype=np.uint8)
    words = mat.view("<u8")                      # [n, width / 8]
    whole = lens // 24
    a = np.zeros(n, dtype=np.uint64)
    b = np.zeros(n, dtype=np.uint64)
    c = np.full(n, 0x9E3779B97F4A7C13, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(int(whole.max())):
            live = whole > j
            a2, b2, c2 = _mix_columns(a[live] + words[live, 3 * j], b[live] + words[live, 3 * j + 1],
                                      c[live] + words[live, 3 * j + 2])
            a[live], b[live], c[live] = a2, b2, c2
        # the tail: the bytes after the whole blocks, zero-padded to 23
        idx = (whole * 24)[:, None] + np.arange(23)[None, :]
        tail = np.where(idx < lens[:, None], np.take_along_axis(mat, np.minimum(idx, width - 1), axis=1), 0)
        tail = np.concatenate([tail, np.zeros((n, 1), dtype=np.uint8)], axis=1).astype(np.uint8).copy().view("<u8")
        a = a + tail[:, 0]
        b = b + tail[:, 1]
        c = c + lens.astype(np.uint64) + (tail[:, 2] << np.uint64(8))
        return _mix_columns(a, b, c)[2]
