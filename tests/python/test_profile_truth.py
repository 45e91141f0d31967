"""The profile tells the truth: its fs side is what the kernel saw (strace,
an independent witness), its app side is the same in every mode, and every
process leaves a log, a crashed one included."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import bin_path, file_entry, report_json, sluice
from oracle import fs_side, have_strace, kernel_calls, strace_run
from sluice.logfmt import read_log

MODES = ("profile", "buffer", "stage", "auto")
needs_strace = pytest.mark.skipif(not have_strace(), reason="strace is not installed")

# Programs whose every file the fs side must account for exactly, call by
# call: stdio streams, POSIX and stdio mixed (fortified too), Fortran's
# runtime, HDF5 and netCDF-4 through their libraries.
PROGRAMS = {
    "stdio": ["stdio_mix", "{dir}"],
    "mixed": ["known_mix", "{dir}"],
    "mixed-fortified": ["known_mix_fortified", "{dir}"],
    "fortran": ["fortran_io", "{dir}"],
    "hdf5": ["h5_write", "{dir}/a.h5"],
    "netcdf4": ["nc_write", "-4", "{dir}/a.nc"],
    # `model > run.log`: stdout is a file the program did not open
    "stdout-redirected": ["/bin/sh", "-c", "exec {stdio_mix} {dir} > {dir}/run.log"],
    # MPI-IO (OMPIO) on a shared file, 2 ranks; and --mode acb too
    "mpiio": ["/usr/bin/env", "mpirun", "--oversubscribe", "-np", "2", "{mpiio_known}", "{dir}"],
}
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader"}
EXTRA_MODES = {"mpiio": ("acb",)}
# The program's own calls, where they are not all of them: an MPI-IO
# program's POSIX calls are the MPI library's, which acb and auto change.
PROGRAM_CALLS = {"mpiio": "MPIIO_"}

# What only sluice does or knows: its own bookkeeping counters, and times.
SLUICE_ONLY = ("_F_", "_TIME_SIZE", "STAGED", "FALLBACK", "AUTO_", "KERNEL_COPIES", "LAYOUT", "STRIPE",
               "OBJECT_SIZE", "FILE_ALIGNMENT", "MEM_ALIGNMENT")


def _argv(name: str, data: Path) -> list[str]:
    prog, *args = PROGRAMS[name]
    return [prog if prog.startswith("/") else bin_path(prog),
            *(a.format(dir=data, stdio_mix=bin_path("stdio_mix"), mpiio_known=bin_path("mpiio_known")) for a in args)]


def _run_traced(mode: str, name: str, tmp_path: Path) -> tuple[dict, dict, Path]:
    data, logs = tmp_path / f"data-{mode}", tmp_path / f"logs-{mode}"
    data.mkdir()
    trace = tmp_path / f"trace-{mode}.txt"
    cp = strace_run([*_sluice_argv(), "run", "--mode", mode, "--log-dir", str(logs), "--path", str(data), "--",
                     *_argv(name, data)], trace, env={**_env(), **MPI_ENV})
    assert cp.returncode == 0, cp.stderr[-2000:]
    return report_json(logs), kernel_calls(trace, str(data)), data


def _sluice_argv() -> list[str]:
    import sys
    return [sys.executable, "-m", "sluice"]


def _env() -> dict[str, str]:
    from conftest import python_env
    return python_env()


def _app(entry: dict) -> dict:
    """What the program did, as counters that moved (a module's record
    whose counters all stayed at rest says nothing the program did)."""
    return {k: v for k, v in entry["app"].items() if v not in (0, -1) and not any(s in k for s in SLUICE_ONLY)}


@needs_strace
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_fs_side_is_what_the_kernel_saw_and_app_side_is_the_same_in_every_mode(name, tmp_path):
    app_by_mode, errors = {}, {}
    for mode in MODES + EXTRA_MODES.get(name, ()):
        report, kernel, data = _run_traced(mode, name, tmp_path)
        files = {f["path"] for f in report["files"]} | set(kernel)
        assert files, f"{name} under {mode}: no file seen"
        for path in sorted(files):
            seen = {f["path"]: f for f in report["files"]}.get(path)
            got = fs_side(seen) if seen else {}
            want = {k: kernel.get(path, {}).get(k, 0) for k in got or ("opens", "reads", "writes", "seeks",
                                                                        "bytes_read", "bytes_written")}
            assert got == want, f"{name} under {mode}, {Path(path).name}: sluice's fs side {got}, strace {want}"
        app_by_mode[mode] = {Path(f["path"]).name: _app(f) for f in report["files"] if _app(f)}
        # the tiers' own look-ups (does it exist?) are not the program's errors
        errors[mode] = sum(f["fs"].get(f"{m}_ERRORS", 0) for f in report["files"] for m in ("POSIX", "STDIO"))
        assert errors[mode] == errors["profile"], f"{name}: fs-side errors {errors}"
    for mode in MODES[1:] + EXTRA_MODES.get(name, ()):
        prefix = PROGRAM_CALLS.get(name, "")
        differ = {f"{path} {k}: {v} (profile: {app_by_mode['profile'].get(path, {}).get(k)})"
                  for path, counters in app_by_mode[mode].items() for k, v in counters.items()
                  if k.startswith(prefix) and app_by_mode["profile"].get(path, {}).get(k) != v}
        assert not differ, f"{name}: the app side under {mode} differs: {sorted(differ)}"


@needs_strace
def test_buffer_mode_shows_its_cut_of_a_stream_writes(tmp_path):
    """Many small fprintf: under buffer mode the C library's writes reach
    the kernel in the buffer tier's write unit, and the report says so."""
    counts = {}
    for mode in ("profile", "buffer"):
        report, kernel, data = _run_traced(mode, "stdio", tmp_path)
        e = file_entry(report, data / "big.bin")
        counts[mode] = (e["app"]["STDIO_WRITES"], e["fs"]["STDIO_WRITES"], kernel[str(data / "big.bin")]["writes"])
    # (the program flushes once in the middle)
    assert counts["profile"] == (304, 5, 5)
    assert counts["buffer"] == (304, 2, 2)


@pytest.mark.parametrize("how,signal_name,status", [("segv", "SIGSEGV", -11), ("abort", "SIGABRT", -6),
                                                    ("bus", "SIGBUS", -7), ("fpe", "SIGFPE", -8)])
@pytest.mark.parametrize("mode", ["profile", "stage"])
def test_a_crashed_process_leaves_its_log(mode, how, signal_name, status, workdir, logdir):
    out = workdir / "out.txt"
    cp = sluice("run", "--mode", mode, "--log-dir", str(logdir), "--path", str(workdir), "--",
                bin_path("crash_after_close"), str(out), how, check=False)
    # the program still dies of its signal: sluice run exits as a shell would
    assert cp.returncode == 128 - status, cp.stderr
    plain = subprocess.run([bin_path("crash_after_close"), str(workdir / "plain.txt"), how])
    assert plain.returncode == status
    # (in stage mode the job's drainer logs too: the file the program closed
    # before it crashed is published by it, nothing is left for recover)
    logs = sorted(logdir.glob("*_crash_after_close_*.sluice"))
    assert len(logs) == 1
    log = read_log(logs[0])
    assert log.info["signal"] == signal_name
    assert log.info["uid"] == str(__import__("os").getuid())
    e = file_entry(report_json(logdir), out)
    assert (e["app"]["STDIO_OPENS"], e["app"]["STDIO_WRITES"], e["app"]["STDIO_BYTES_WRITTEN"]) == (1, 100, 790)
    assert out.read_bytes() == (workdir / "plain.txt").read_bytes()


@pytest.mark.parametrize("mode", ["profile", "buffer"])
def test_output_redirected_by_the_shell_is_profiled(mode, workdir, logdir):
    """`model > run.log`: the program writes through a descriptor it
    inherited; the writes are counted on the file it names."""
    out = workdir / "F"
    sluice("run", "--mode", mode, "--log-dir", str(logdir), "--path", str(workdir), "--",
           "bash", "-c", f"dd if=/dev/zero bs=8k count=100 > {out} 2>/dev/null; dd if=/dev/zero bs=5 count=1 >> {out} 2>/dev/null")
    assert out.stat().st_size == 819200 + 5
    e = file_entry(report_json(logdir), out)
    # the shell's two opens, the first dd's 100 writes and the second's one
    assert (e["app"]["POSIX_OPENS"], e["app"]["POSIX_WRITES"], e["app"]["POSIX_BYTES_WRITTEN"]) == (2, 101, 819205)
    assert e["app"]["POSIX_MAX_BYTE_WRITTEN"] == 819204


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_left_open_at_exit_keeps_its_bytes_and_its_write(mode, workdir, logdir):
    """exit() writes what an unclosed stream holds after the destructors:
    under stage that was after the publish, and the bytes were lost."""
    out = workdir / "out.txt"
    sluice("run", "--mode", mode, "--log-dir", str(logdir), "--path", str(workdir), "--",
           bin_path("crash_after_close"), str(out), "noclose")
    if mode in ("stage", "auto"):
        sluice("wait")
    assert out.read_bytes() == b"".join(b"line %d\n" % i for i in range(100))
    e = file_entry(report_json(logdir), out)
    assert (e["app"]["STDIO_WRITES"], e["app"]["STDIO_BYTES_WRITTEN"]) == (100, 790)
    fs_writes = e["fs"].get("STDIO_WRITES", 0) + e["fs"].get("POSIX_WRITES", 0)
    fs_bytes = e["fs"].get("STDIO_BYTES_WRITTEN", 0) + e["fs"].get("POSIX_BYTES_WRITTEN", 0)
    assert (fs_writes, fs_bytes) == (1, 790)


@pytest.mark.parametrize("prog", ["stdio_mix", "stdio_mix_fortified"])
def test_printf_puts_putchar_vprintf_on_a_redirected_stdout_are_counted_exactly(prog, workdir, logdir):
    """printf, vprintf, puts and putchar (__printf_chk and __vprintf_chk
    when fortified) write to stdout, which the shell sent to a file."""
    log = workdir / "run.log"
    sluice("run", "--log-dir", str(logdir), "--path", str(workdir), "--",
           "/bin/sh", "-c", f"exec {bin_path(prog)} {workdir} > {log}")
    text = "".join(f"summary {i}\n" for i in range(300)) + "files 11\n" + "done\n" + "\n"
    assert log.read_text() == text
    e = file_entry(report_json(logdir), log)
    # 300 printf, 1 vprintf, 1 puts, 1 putchar
    assert (e["app"]["STDIO_WRITES"], e["app"]["STDIO_BYTES_WRITTEN"]) == (303, len(text))
    assert e["app"]["STDIO_MAX_BYTE_WRITTEN"] == len(text) - 1
    # the C library's writes of its 4 KiB buffer, the last at exit
    assert (e["fs"]["STDIO_WRITES"], e["fs"]["STDIO_BYTES_WRITTEN"]) == (-(-len(text) // 4096), len(text))
