#!/usr/bin/env python3
"""Regenerate the seed corpus of the log reader's fuzz target.

    python3 tests/fuzz/make_corpus.py

From the golden logs of tests/vectors: each log as it is, cut at every
region boundary and at a few other points, with a few flipped bits, and
rebuilt with valid checksums around the cases a reader must handle (newer
minor version, unknown region type, unknown module, repeated names, counts
that do not fit, ...). Deterministic: the same vectors give the same files.
Only the gen-* files are rewritten. Inputs found by libFuzzer are kept
beside them: crash-* (each made a bug visible, now fixed), seed-* (made the
fuzz target's own checks fail), writer-* (logs of the C writer, compressed),
fuzz-* (the smallest set reaching every edge
the fuzzer found beyond the gen-* files: `fuzz_logfmt -merge=1
-use_counters=0 NEW_DIR FUZZ_DIR` on a copy of this folder).
"""

from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parents[0] / "vectors"
OUT = HERE / "corpus" / "logfmt"


def split(data: bytes) -> tuple[dict, list[tuple[int, int, bytes]]]:
    """Header fields and (type, version, body) of each region."""
    major, minor, _hsize, nreg, flags, _fsize, toff = struct.unpack_from("<HHIIIQI", data, 8)
    regions = []
    for i in range(nreg):
        t, v, off, ln, _crc, _z = struct.unpack_from("<IIQQII", data, toff + 32 * i)
        regions.append((t, v, data[off : off + ln]))
    return {"major": major, "minor": minor, "flags": flags}, regions


def build(regions: list[tuple[int, int, bytes]], major: int = 1, minor: int = 0, flags: int = 0,
          table_off: int = 64, nreg: int | None = None, fix: dict | None = None) -> bytes:
    """A log with valid checksums; `fix` overrides table entries {i: (off, len)}."""
    n = len(regions) if nreg is None else nreg
    pos = table_off + 32 * len(regions)
    table, bodies = b"", b""
    for i, (t, v, body) in enumerate(regions):
        off, ln = (fix or {}).get(i, (pos, len(body)))
        table += struct.pack("<IIQQII", t, v, off, ln, zlib.crc32(body), 0)
        bodies += body
        pos += len(body)
    head = bytearray(64)
    head[:8] = b"SLUICELG"
    struct.pack_into("<HHIIIQI", head, 8, major, minor, 64, n, flags, pos, table_off)
    pad = b"\0" * (table_off - 64)
    crc = zlib.crc32(bytes(head[:60]) + table[: 32 * n])
    struct.pack_into("<I", head, 60, crc)
    return bytes(head) + pad + table + bodies


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("gen-*"):
        old.unlink()
    rng = random.Random(20240601)
    out: dict[str, bytes] = {}
    vectors = sorted(VECTORS.glob("*.sluice"))
    for vec in vectors:
        data = vec.read_bytes()
        stem = vec.stem
        out[f"gen-{stem}"] = data
        hdr, regions = split(data)
        # Truncations: inside the header, at the end of the table, at each
        # region's start and middle.
        nreg = len(regions)
        cuts = {0, 8, 63, 64, 64 + 32 * nreg - 1, 64 + 32 * nreg}
        _, _, _, _, _, _, toff = struct.unpack_from("<HHIIIQI", data, 8)
        for i in range(nreg):
            off, ln = struct.unpack_from("<QQ", data, toff + 32 * i + 8)
            cuts |= {off, off + ln // 2, off + ln - 1}
        for k, cut in enumerate(sorted(c for c in cuts if c < len(data))):
            if k % 3 == 0 or cut < 70:
                out[f"gen-{stem}-cut{cut}"] = data[:cut]
        for k in range(4):
            b = bytearray(data)
            pos = rng.randrange(len(b))
            b[pos] ^= 1 << rng.randrange(8)
            out[f"gen-{stem}-flip{pos}"] = bytes(b)

    hdr, regions = split((VECTORS / "posix_stdio.sluice").read_bytes())
    proc = [r for r in regions if r[0] == 1]
    schema = [r for r in regions if r[0] == 2]
    names = [r for r in regions if r[0] == 3]
    mods = [r for r in regions if r[0] == 4]
    out["gen-rebuilt"] = build(regions, flags=hdr["flags"])
    out["gen-minor9"] = build(regions, minor=9)
    out["gen-major2"] = build(regions, major=2)       # 2.0 with plain regions: read
    out["gen-major3"] = build(regions, major=3)       # 3.0 with rows and names by id: read
    out["gen-major4"] = build(regions, major=4)
    out["gen-table-far"] = build(regions, table_off=200)
    out["gen-unknown-region"] = build(regions + [(99, 1, b"future data")])
    # A module region of an id the schema does not describe.
    out["gen-unknown-module"] = build(regions + [(4, 1, struct.pack("<HHI", 77, 0, 1) + b"\x01" * 40)])
    # The schema given twice, the names given twice.
    out["gen-schema-twice"] = build(proc + schema + schema + names + mods)
    out["gen-names-twice"] = build(proc + schema + names + names + mods)
    out["gen-no-names"] = build(proc + schema + mods)
    out["gen-no-schema"] = build(proc + names + mods)
    out["gen-no-process"] = build(schema + names + mods)
    out["gen-process-only"] = build(proc)
    out["gen-empty"] = build([])
    # Counts that do not fit the region.
    pbody = proc[0][2]
    out["gen-nstrings-huge"] = build([(1, 1, pbody[:60] + struct.pack("<I", 0xFFFFFFFF) + pbody[64:])] + regions[1:])
    mb = mods[0][2]
    out["gen-nrecords-huge"] = build(proc + schema + names + [(4, 1, mb[:4] + struct.pack("<I", 0xFFFFFFFF) + mb[8:])])
    out["gen-nmodules-huge"] = build(proc + [(2, 1, struct.pack("<I", 0xFFFFFFFF) + schema[0][2][4:])] + names + mods)
    out["gen-nnames-huge"] = build(proc + schema + [(3, 1, struct.pack("<I", 0xFFFFFFFF) + names[0][2][4:])] + mods)
    # Trailing bytes after the data of each region (allowed: a newer minor
    # version may append fields).
    out["gen-trailing"] = build([(t, v, b + b"\0\0\0") for t, v, b in regions])
    # Region bounds: overlapping the table, past the end, wrapping 64 bits.
    out["gen-region-in-table"] = build(regions, fix={0: (64, 10)})
    out["gen-region-past-end"] = build(regions, fix={1: (100, 1 << 40)})
    out["gen-region-wrap"] = build(regions, fix={1: (0xFFFFFFFFFFFFFFF0, 0x20)})
    # More regions announced than the table holds / than allowed.
    out["gen-nreg-65"] = build(regions, nreg=65)
    # A schema with ni = nf = 65535 counters and no room for their names.
    out["gen-schema-wide"] = build(proc + [(2, 1, struct.pack("<IHHH5sHH", 1, 1, 1, 5, b"POSIX", 65535, 65535))] + names)
    # Invalid UTF-8, control characters and repeated keys in strings.
    kv = b""
    for k, v in [(b"exe", b"\xff\xfe\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82"), (b"a\x00b", b"\x01\x1f\x7f"),
                 (b"exe", b"second"), (b"\xc3\xa9", b"\"\\\n\t")]:
        kv += struct.pack("<H", len(k)) + k + struct.pack("<I", len(v)) + v
    out["gen-strings"] = build([(1, 1, pbody[:60] + struct.pack("<I", 4) + kv)] + regions[1:])
    # Format 2.0: regions stored compressed (DEFLATE), read and refused.
    def deflated(rtype: int, body: bytes, raw: int | None = None, stream: bytes | None = None) -> bytes:
        stream = zlib.compress(body) if stream is None else stream
        return struct.pack("<IIQ", rtype, 0, len(body) if raw is None else raw) + stream

    out["gen-z-all"] = build([(5, v, deflated(t, b)) for t, v, b in regions], major=2)
    out["gen-z-empty-unknown"] = build(regions + [(5, 1, deflated(42, b""))], major=2)
    nb = names[0][2]
    z = zlib.compress(nb)
    gz = zlib.compressobj(wbits=31)
    for what, region in {
        "short": b"\3\0\0\0\0\0\0\0",
        "nested": deflated(5, nb),
        "long": deflated(3, nb, raw=len(nb) + 1),
        "short-raw": deflated(3, nb, raw=len(nb) - 1),
        "ratio": deflated(3, nb, raw=1032 * (len(z) + 1)),
        "huge": deflated(3, nb, raw=0xFFFFFFFF),
        "trailing": deflated(3, nb, stream=z + b"\0"),
        "cut": deflated(3, nb, stream=z[:-5]),
        "adler": deflated(3, nb, stream=z[:-1] + bytes([z[-1] ^ 1])),
        "gzip": deflated(3, nb, stream=gz.compress(nb) + gz.flush()),
        "empty": deflated(3, nb, stream=b""),
    }.items():
        out[f"gen-z-{what}"] = build(proc + schema + [(5, 1, region)] + mods, major=2)
    # Format 3.0: records in columns (layout 1), names without ids.
    hdr3, regions3 = split((VECTORS / "columns_buffer.sluice").read_bytes())
    proc3, schema3, names3, mods3 = ([r for r in regions3 if r[0] == t] for t in (1, 2, 3, 4))
    cb = mods3[0][2]
    nb3 = names3[0][2]
    for what, region in {
        "group0": cb[:8] + struct.pack("<I", 0) + cb[12:],
        "group1": cb[:8] + struct.pack("<I", 1) + cb[12:],
        "group2": cb[:8] + struct.pack("<I", 2) + cb[12:],
        "group-huge": cb[:8] + struct.pack("<I", 0xFFFFFFFF) + cb[12:],
        "layout2": cb[:2] + struct.pack("<H", 2) + cb[4:],
        "layout0": cb[:2] + struct.pack("<H", 0) + cb[4:],
        "nrecords-huge": cb[:4] + struct.pack("<I", 0xFFFFFFFF) + cb[8:],
        "no-group": cb[:8],
    }.items():
        out[f"gen-v3-{what}"] = build(proc3 + schema3 + names3 + [(4, 1, region)], major=3)
    out["gen-v3-names-huge"] = build(proc3 + schema3 + [(3, 2, struct.pack("<I", 0xFFFFFFFF) + nb3[4:])] + mods3,
                                     major=3)
    out["gen-v3-names-v1"] = build(proc3 + schema3 + [(3, 1, nb3)] + mods3, major=3)
    out["gen-v3-names-twice"] = build(proc3 + schema3 + names3 + names3 + mods3, major=3)
    out["gen-v3-as-2"] = build(regions3, major=2)
    out["gen-v3-z-all"] = build([(5, v, deflated(t, b)) for t, v, b in regions3], major=3)
    # 3.1: a TRACE region of three segments naming the log's entries 0..2, and damaged ones
    def trace(n: int, idx: list[int], dropped: int = 0) -> bytes:
        return (struct.pack("<QQ", n, dropped) + b"".join(struct.pack("<I", i) for i in idx) + bytes([1] * len(idx))
                + bytes([1, 0, 1][: len(idx)]) + b"".join(struct.pack("<q", v) for v in range(4 * len(idx))))
    for what, body in {"ok": trace(3, [0, 1, 2], 7), "empty": trace(0, []), "count": trace(4, [0, 1, 2]),
                       "index": trace(3, [0, 9, 2]), "short": trace(3, [0, 1, 2])[:12]}.items():
        out[f"gen-v31-trace-{what}"] = build(regions3 + [(6, 1, body)], major=3, minor=1)
    for name, data in out.items():
        (OUT / name).write_bytes(data)
    print(f"{len(out)} files in {OUT}")


if __name__ == "__main__":
    main()
