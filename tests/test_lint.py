"""The linter as a test: ``ruff check`` with the rules of pyproject.toml's ``[tool.ruff]`` over
the package, the tests and the benchmarks, so ``./run.sh test`` (and CI) fails on a finding."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", "toymech", "tests", "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


def test_ruff_reads_the_projects_rules(tmp_path):
    """The rules reach ruff: a file with an unused import is a finding under this config."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--config", str(ROOT / "pyproject.toml"), str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "F401" in done.stdout, done.stdout + done.stderr
