"""The job, not the interpreter: the interpreter's own files (its
installation prefix, virtualenvs, conda prefixes, site-packages,
__pycache__ and .pyc files, R and Julia library trees) are left out of the
profile by default, and `sluice run --include-runtime` keeps them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from conftest import bin_path, report_json, sluice

H5PY_JOB = """\
import h5py
import numpy as np

with h5py.File("data/out.h5", "w") as f:
    f.create_dataset("x", data=np.arange(1000.0))
with h5py.File("data/out.h5", "r") as f:
    total = float(f["x"][:].sum())
with open("data/result.txt", "w") as out:
    out.write(f"{total}\\n")
"""


def files(log_dir: Path) -> set[str]:
    return {f["path"] for f in report_json(log_dir)["files"]}


def run_io(log_dir: Path, *ops: str, prog: str | None = None, cwd: Path | None = None,
           env: dict[str, str] | None = None, keep: bool = False) -> set[str]:
    sluice("run", "--log-dir", str(log_dir), *(["--include-runtime"] if keep else []), "--",
           prog or bin_path("sluice-io"), *ops, cwd=cwd, env=env)
    return files(log_dir)


@pytest.fixture
def h5py_job(workdir: Path) -> Path:
    pytest.importorskip("h5py")
    (workdir / "data").mkdir()
    (workdir / "job.py").write_text(H5PY_JOB)
    return workdir


def test_h5py_job_reports_its_data_files_only(h5py_job, logdir):
    # -E: the job does not see the PYTHONPATH the test suite runs sluice with
    sluice("run", "--log-dir", str(logdir), "--", sys.executable, "-E", "job.py", cwd=h5py_job)
    # the script, its directory (the first entry of sys.path, which the
    # import system lists) and the data: nothing of the interpreter
    assert files(logdir) == {str(h5py_job), str(h5py_job / "job.py"), str(h5py_job / "data" / "out.h5"),
                             str(h5py_job / "data" / "result.txt")}
    # what was left out is said, in one line and in --json
    left_out = report_json(logdir)["runtime_calls_left_out"]
    assert left_out > 100   # h5py's and numpy's modules, their .pyc and the interpreter's own
    text = sluice("report", str(logdir)).stdout
    assert f"interpreter's own files: {left_out:,} calls on them left out" in text


def test_include_runtime_keeps_the_interpreters_files(h5py_job, logdir):
    sluice("run", "--log-dir", str(logdir), "--include-runtime", "--", sys.executable, "-E", "job.py",
           cwd=h5py_job)
    paths = files(logdir)
    assert {str(h5py_job / "job.py"), str(h5py_job / "data" / "out.h5")} <= paths
    assert report_json(logdir)["runtime_calls_left_out"] == 0
    h5py_dir = Path(sys.modules["h5py"].__file__).parent
    assert str(h5py_dir / "__init__.py") in paths
    assert any(p.startswith(str(h5py_dir / "__pycache__") + "/") and p.endswith(".pyc") for p in paths)
    if sys.prefix != sys.base_prefix:   # a virtualenv: the interpreter reads its pyvenv.cfg first
        assert str(Path(sys.prefix) / "pyvenv.cfg") in paths


def test_environment_variable_keeps_them_too(h5py_job, logdir):
    sluice("run", "--log-dir", str(logdir), "--", sys.executable, "-E", "job.py", cwd=h5py_job,
           env={"SLUICE_RUNTIME_FILES": "1"})
    h5py_dir = Path(sys.modules["h5py"].__file__).parent
    assert str(h5py_dir / "__init__.py") in files(logdir)


def test_names_that_mark_runtime_trees(workdir, logdir):
    kept = [workdir / "data" / "packages" / "a", workdir / "my-library" / "b", workdir / "site-packages-old" / "c",
            workdir / "x.pyc.txt", workdir / "Rx" / "x86_64-pc-linux-gnu-library" / "d"]
    left_out = [workdir / "lib" / "python3.11" / "site-packages" / "pkg" / "mod.py",
                workdir / "usr" / "lib" / "python3" / "dist-packages" / "pkg" / "data.bin",
                workdir / "src" / "__pycache__" / "mod.cpython-311.pyc.140021",
                workdir / "src" / "mod.cpython-311.pyc",
                workdir / "env" / "python311.zip",
                workdir / "env" / "bin" / "python._pth",
                workdir / "env" / "bin" / "pybuilddir.txt",
                workdir / "R" / "x86_64-pc-linux-gnu-library" / "4.2" / "pkg" / "DESCRIPTION",
                workdir / "rlib" / "site-library" / "pkg" / "DESCRIPTION"]
    for p in kept + left_out:
        p.parent.mkdir(parents=True, exist_ok=True)
    ops = [f"creat:{p}" for p in kept + left_out]
    assert run_io(logdir, *ops) == {str(p) for p in kept}
    assert run_io(logdir.with_name("kept"), *ops, keep=True) == {str(p) for p in kept + left_out}


def test_a_virtualenv_is_the_directory_of_the_pyvenv_cfg_read(workdir, logdir):
    venv = workdir / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "tool").write_text("#!/usr/bin/env python3\n")
    data = workdir / "data.txt"
    # as an interpreter starts: the probe beside the executable (absent),
    # the venv's own, then anything of the venv is the interpreter's
    got = run_io(logdir, f"stat:{venv}/bin/pyvenv.cfg", f"open:{venv}/pyvenv.cfg:r", f"open:{venv}/bin/tool:r",
                 f"creat:{data}")
    assert got == {str(data)}


def test_a_pyvenv_cfg_that_does_not_exist_marks_nothing(workdir, logdir):
    # an interpreter probes ../pyvenv.cfg from its bin directory: a probe
    # that finds nothing must not make that directory a venv
    got = run_io(logdir, f"stat:{workdir}/pyvenv.cfg", f"creat:{workdir}/data.txt")
    assert got == {str(workdir / "data.txt")}


def test_trees_from_the_environment(workdir, logdir, tmp_path):
    trees = {name: tmp_path / name.lower() for name in
             ("VIRTUAL_ENV", "CONDA_PREFIX", "R_LIBS_USER", "JULIA_DEPOT_PATH")}
    home = tmp_path / "home"
    (home / ".julia" / "logs").mkdir(parents=True)
    for d in trees.values():
        d.mkdir()
    env = {k: str(v) for k, v in trees.items()} | {"HOME": str(home)}
    inside = [d / "f" for d in trees.values()] + [home / ".julia" / "logs" / "manifest_usage.toml"]
    data = [workdir / "out.dat", home / "results.txt"]
    ops = [f"creat:{p}" for p in inside + data]
    assert run_io(logdir, *ops, env=env) == {str(p) for p in data}


def test_the_working_directory_is_never_a_runtime_tree(workdir, logdir):
    # a virtualenv made in the job's own directory (python -m venv .):
    # the job's files there are still its own
    env = {"VIRTUAL_ENV": str(workdir)}
    got = run_io(logdir, f"creat:{workdir}/out.dat", env=env, cwd=workdir)
    assert got == {str(workdir / "out.dat")}


def _installed_copy(prefix: Path, name: str) -> str:
    """sluice-io installed as PREFIX/bin/NAME (a copy: the library finds a
    program's prefix from /proc/self/exe, which names the real file)."""
    (prefix / "bin").mkdir(parents=True)
    dest = prefix / "bin" / name
    shutil.copy2(bin_path("sluice-io"), dest)
    return str(dest)


def test_an_interpreters_installation_prefix(workdir, logdir, tmp_path):
    prefix = tmp_path / "opt" / "python3.99"
    prog = _installed_copy(prefix, "python3.99")
    (prefix / "lib" / "python3.99").mkdir(parents=True)
    got = run_io(logdir, f"creat:{prefix}/lib/python3.99/os.py", f"creat:{workdir}/out.dat", prog=prog)
    assert got == {str(workdir / "out.dat")}
    # a program whose name only starts like an interpreter's
    model = tmp_path / "model"
    prog = _installed_copy(model, "python_model")
    (model / "out").mkdir()
    assert run_io(logdir.with_name("model-logs"), f"creat:{model}/out/a.dat", prog=prog) == {f"{model}/out/a.dat"}


def test_a_conda_prefix(workdir, logdir, tmp_path):
    prefix = tmp_path / "conda" / "envs" / "gis"
    prog = _installed_copy(prefix, "gdalinfo")
    (prefix / "conda-meta").mkdir()
    (prefix / "share" / "proj").mkdir(parents=True)
    ops = [f"creat:{prefix}/share/proj/proj.db", f"creat:{workdir}/out.dat"]
    assert run_io(logdir, *ops, prog=prog) == {str(workdir / "out.dat")}
    # the same program outside a conda prefix: its prefix is the job's
    other = tmp_path / "plain"
    prog = _installed_copy(other, "gdalinfo")
    (other / "share").mkdir()
    assert run_io(logdir.with_name("plain-logs"), f"creat:{other}/share/x", prog=prog) == {f"{other}/share/x"}


def test_a_program_started_inside_its_prefix_keeps_its_files(workdir, logdir, tmp_path):
    prefix = tmp_path / "conda"
    prog = _installed_copy(prefix, "python3")
    (prefix / "conda-meta").mkdir()
    (prefix / "run").mkdir()
    got = run_io(logdir, f"creat:{prefix}/run/out.dat", prog=prog, cwd=prefix / "run")
    assert got == {str(prefix / "run" / "out.dat")}


def test_toml_key(workdir, logdir, tmp_path):
    cfg = tmp_path / "sluice.toml"
    cfg.write_text("runtime_files = true\n")
    p = workdir / "lib" / "site-packages" / "m.py"
    p.parent.mkdir(parents=True)
    sluice("run", "--config", str(cfg), "--log-dir", str(logdir), "--", bin_path("sluice-io"), f"creat:{p}")
    assert files(logdir) == {str(p)}


def test_help_names_the_flag():
    assert "--include-runtime" in sluice("run", "--help").stdout
