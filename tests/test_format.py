"""The code keeps ruff's format (``ruff format``, applied once to the whole tree)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORMATTED = ("src", "tests", "benchmarks", "examples")


def test_the_tree_is_formatted() -> None:
    pytest.importorskip("ruff")
    found = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", *FORMATTED],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0, found.stdout + found.stderr
