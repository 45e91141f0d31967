"""A process that runs file operations one at a time, as told on stdin (one
JSON object per line), and answers each on stdout (tests/python/test_stage.py's
multi-process differential test). Every answer is what a program would see:
bytes, sizes, modes, names, or the errno name of a failure.

    {"op": "write", "path": P, "data": S, "how": "trunc" | "excl" | "append"}
    {"op": "read", "path": P}          {"op": "stat", "path": P}
    {"op": "list", "path": DIR}        {"op": "rename", "path": P, "to": Q}
    {"op": "unlink", "path": P}        {"op": "chmod", "path": P, "mode": M}
    {"op": "hold", "path": P}          open P for appending and keep it open
    {"op": "append", "data": S}        write through the held descriptor
    {"op": "release"}                  close it
"""

from __future__ import annotations

import errno
import json
import os
import sys

FLAGS = {"trunc": os.O_CREAT | os.O_TRUNC, "excl": os.O_CREAT | os.O_EXCL, "append": os.O_CREAT | os.O_APPEND}


def run(cmd: dict, held: list[int]) -> object:
    op, path = cmd["op"], cmd.get("path", "")
    if op == "write":
        fd = os.open(path, os.O_WRONLY | FLAGS[cmd["how"]], 0o644)
        try:
            os.write(fd, cmd["data"].encode())
        finally:
            os.close(fd)
        return "ok"
    if op == "read":
        with open(path, "rb") as f:
            return f.read().decode()
    if op == "stat":
        st = os.stat(path)
        return [st.st_size, oct(st.st_mode & 0o7777)]
    if op == "list":
        return sorted(os.listdir(path))
    if op == "rename":
        os.rename(path, cmd["to"])
        return "ok"
    if op == "unlink":
        os.unlink(path)
        return "ok"
    if op == "chmod":
        os.chmod(path, cmd["mode"])
        return "ok"
    if op == "hold":
        held.append(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        return "ok"
    if op == "append":
        os.write(held[-1], cmd["data"].encode())
        return "ok"
    if op == "release":
        os.close(held.pop())
        return "ok"
    raise SystemExit(f"unknown op {op}")


def main() -> None:
    held: list[int] = []
    for line in sys.stdin:
        try:
            answer = run(json.loads(line), held)
        except OSError as e:
            answer = "E" + errno.errorcode.get(e.errno, str(e.errno))
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
