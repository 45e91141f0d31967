#!/usr/bin/env python3
"""TCP ping-pong round-trip time, one byte each way, TCP_NODELAY.

usage: rtt.py probe HOST [N]          server and client in one go (forks)
       rtt.py server HOST PORT        echo server for one client
       rtt.py client HOST PORT [N]    N round trips against a server

probe and client print one JSON object: n, median_us, p10_us, p90_us, p99_us.
Run it inside the testbed's namespace to see the delay the daemons see:
    nsenter --net=/run/netns/sluice-pfs python3 rtt.py probe 10.213.0.1
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import time


def _nodelay(s: socket.socket) -> socket.socket:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _listen(host: str, port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(1)
    return s


def _echo(listener: socket.socket) -> None:
    conn, _ = listener.accept()
    _nodelay(conn)
    while data := conn.recv(64):
        conn.sendall(data)


def _ping(host: str, port: int, n: int) -> dict[str, float]:
    c = _nodelay(socket.create_connection((host, port), timeout=10))
    ts: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        c.sendall(b"x")
        c.recv(64)
        ts.append((time.perf_counter_ns() - t0) / 1000)
    c.close()
    ts.sort()
    return {
        "n": n,
        "median_us": round(statistics.median(ts), 1),
        "p10_us": round(ts[n // 10], 1),
        "p90_us": round(ts[9 * n // 10], 1),
        "p99_us": round(ts[99 * n // 100], 1),
    }


def probe(host: str, n: int) -> dict[str, float]:
    listener = _listen(host, 0)
    port = listener.getsockname()[1]
    child = os.fork()
    if child == 0:
        try:
            _echo(listener)
        finally:
            os._exit(0)
    listener.close()
    try:
        return _ping(host, port, n)
    finally:
        os.waitpid(child, 0)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("probe", "server", "client"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    mode, host = argv[0], argv[1]
    if mode == "probe":
        result = probe(host, int(argv[2]) if len(argv) > 2 else 3000)
    elif mode == "server":
        _echo(_listen(host, int(argv[2])))
        return 0
    else:
        result = _ping(host, int(argv[2]), int(argv[3]) if len(argv) > 3 else 3000)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
