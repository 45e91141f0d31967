"""The reference pages generated from the C lists are up to date, and the
README still starts with the two commands CI relies on."""

import subprocess
import sys

from conftest import REPO


def test_generated_docs_are_current():
    cp = subprocess.run([sys.executable, str(REPO / "scripts" / "gen-docs"), "--check"], capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr


def test_readme_commands_and_ci_agree():
    readme = (REPO / "README.md").read_text()
    blocks = readme.split("```sh\n")[1].split("```")[0].splitlines()
    assert blocks[0].startswith("scripts/setup && .venv/bin/sluice demo")
    assert blocks[1].startswith("scripts/setup && scripts/test")
    ci = (REPO / ".ci" / "run").read_text()
    assert "scripts/setup && scripts/test" in ci
