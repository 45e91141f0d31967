"""Darshan's record id of a name: Bob Jenkins' 64-bit hash (lookup8, level 0)
of the path's bytes, so that a file exported by sluice has the id a Darshan
run gives it, and one id in every module."""

from __future__ import annotations

import struct

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
